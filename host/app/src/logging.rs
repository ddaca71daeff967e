//! Logging set-up, mapped from upstream's zap flags.

use tracing_subscriber::EnvFilter;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Encoder {
    Json,
    Console,
}

/// Installs the global subscriber. `RUST_LOG` overrides the level when set. Colours only on
/// a terminal: a pod's log (a pipe) gets plain text.
pub fn init(encoder: Encoder, level: &str) {
    use std::io::IsTerminal;
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(format!("warn,odh_model_controller={level}")));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    // A second init (e.g. from tests) keeps the first subscriber.
    let _ = match encoder {
        Encoder::Json => builder.json().flatten_event(true).try_init(),
        Encoder::Console => builder.try_init(),
    };
}

/// The model-serving-api's logging (docs/plugins/llm-gateway.md, "Running it"): JSON lines on stdout at `level` (`RUST_LOG`
/// overrides it when set).
pub fn init_json_stdout(level: &str) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(format!("warn,odh_model_controller={level}")));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(std::io::stdout)
        .json()
        .flatten_event(true)
        .try_init();
}
