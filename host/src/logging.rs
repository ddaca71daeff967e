//! Logging set-up, mapped from upstream's zap flags.

use tracing_subscriber::EnvFilter;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Encoder {
    Json,
    Console,
}

/// Installs the global subscriber. `RUST_LOG` overrides the level when set.
pub fn init(encoder: Encoder, level: &str) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(format!("warn,odh_model_controller={level}")));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // A second init (e.g. from tests) keeps the first subscriber.
    let _ = match encoder {
        Encoder::Json => builder.json().flatten_event(true).try_init(),
        Encoder::Console => builder.try_init(),
    };
}
