//! Logging set-up, mapped from upstream's zap flags.

use tracing_subscriber::EnvFilter;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Encoder {
    Json,
    Console,
}

/// The host's crates: their events are logged at the chosen level, everything else's at `warn`.
const HOST_CRATES: &[&str] = &[
    "odh_model_controller",
    "odh_serve",
    "odh_reconcile",
    "odh_plugin_sources",
    "odh_plugin_runtime",
    "odh_host_metrics",
];

/// The default filter: `warn`, and `level` for the host's crates.
fn default_filter(level: &str) -> EnvFilter {
    let mut directives = String::from("warn");
    for krate in HOST_CRATES {
        directives.push_str(&format!(",{krate}={level}"));
    }
    EnvFilter::new(directives)
}

/// Installs the global subscriber. `RUST_LOG` overrides the level when set. Colours only on
/// a terminal: a pod's log (a pipe) gets plain text.
pub fn init(encoder: Encoder, level: &str) {
    use std::io::IsTerminal;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| default_filter(level));
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

/// The model-serving-api's logging (docs/plugins/llm-gateway.md, "Running it"): JSON lines on
/// stdout at `level` (`RUST_LOG` overrides it when set).
pub fn init_json_stdout(level: &str) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| default_filter(level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(std::io::stdout)
        .json()
        .flatten_event(true)
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every crate of the host logs at the chosen level: a crate missing here would log only its
    /// warnings (as the model-serving-api's request log did when it moved to a crate of its own).
    #[test]
    fn every_host_crate_logs_at_the_chosen_level() {
        let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let host = manifest.parent().expect("host/app sits in host/");
        let mut crates: Vec<String> = std::fs::read_dir(host)
            .expect("host/")
            .filter_map(|e| {
                let toml = std::fs::read_to_string(e.ok()?.path().join("Cargo.toml")).ok()?;
                let name = toml
                    .lines()
                    .find_map(|l| l.strip_prefix("name = "))?
                    .trim_matches('"')
                    .replace('-', "_");
                Some(name)
            })
            .collect();
        crates.sort();
        let mut listed: Vec<String> = HOST_CRATES.iter().map(|c| c.to_string()).collect();
        listed.sort();
        assert_eq!(crates, listed);
        let filter = default_filter("debug").to_string();
        for krate in HOST_CRATES {
            assert!(filter.contains(&format!("{krate}=debug")), "{filter}");
        }
    }
}
