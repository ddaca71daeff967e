//! Logging set-up, mapped from upstream's zap flags (the controller) and slog's JSON handler
//! (the standalone model-serving-api).

mod slog_json;

use tracing_subscriber::{EnvFilter, Layer};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Encoder {
    Json,
    Console,
}

/// How a log line's time is written: zap's encodings (`--zap-time-encoding`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TimeEncoding {
    /// Seconds since the epoch, with a fraction.
    Epoch,
    /// Milliseconds since the epoch, with a fraction.
    Millis,
    /// Nanoseconds since the epoch.
    Nano,
    /// `2006-01-02T15:04:05.000Z0700`.
    Iso8601,
    /// `2006-01-02T15:04:05Z07:00`.
    Rfc3339,
    /// RFC 3339 with nanoseconds, trailing zeros dropped.
    Rfc3339nano,
}

impl TimeEncoding {
    fn format(self, now: std::time::SystemTime) -> String {
        let since = now
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let ts = k8s_openapi::jiff::Timestamp::try_from(now).unwrap_or_default();
        match self {
            Self::Epoch => format!("{}.{:09}", since.as_secs(), since.subsec_nanos()),
            Self::Millis => format!(
                "{}.{:06}",
                since.as_millis(),
                since.subsec_nanos() % 1_000_000
            ),
            Self::Nano => since.as_nanos().to_string(),
            Self::Iso8601 => ts.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
            Self::Rfc3339 => ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            Self::Rfc3339nano => {
                let nanos = format!("{:09}", ts.subsec_nanosecond());
                let nanos = nanos.trim_end_matches('0');
                let fraction = if nanos.is_empty() {
                    String::new()
                } else {
                    format!(".{nanos}")
                };
                format!("{}{fraction}Z", ts.strftime("%Y-%m-%dT%H:%M:%S"))
            }
        }
    }
}

impl tracing_subscriber::fmt::time::FormatTime for TimeEncoding {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> std::fmt::Result {
        w.write_str(&self.format(std::time::SystemTime::now()))
    }
}

/// The host's crates: their events are logged at the chosen level, everything else's at `warn`.
const HOST_CRATES: &[&str] = &[
    "odh_model_controller",
    "odh_serve",
    "odh_reconcile",
    "odh_plugin_sources",
    "odh_plugin_runtime",
    "odh_host_metrics",
    "odh_crypto",
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
/// a terminal: a pod's log (a pipe) gets plain text. `traces`: the OTLP exporter's layer, which
/// alone sees the trace spans ([`crate::traces::TARGET`]); the log never shows them.
pub fn init(
    encoder: Encoder,
    level: &str,
    time: Option<TimeEncoding>,
    traces: Option<crate::traces::OtlpLayer>,
) {
    use std::io::IsTerminal;
    let fmt = tracing_subscriber::fmt::layer()
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let fmt: BoxedLayer = match (encoder, time) {
        (Encoder::Json, None) => fmt.json().flatten_event(true).boxed(),
        (Encoder::Json, Some(t)) => fmt.json().flatten_event(true).with_timer(t).boxed(),
        (Encoder::Console, None) => fmt.boxed(),
        (Encoder::Console, Some(t)) => fmt.with_timer(t).boxed(),
    };
    install(fmt, level, traces);
}

/// The model-serving-api's logging (docs/plugins/llm-gateway.md, "Running it"): JSON lines on
/// stdout at `level` (`RUST_LOG` overrides it when set), in slog's shape as upstream's server
/// writes them.
pub fn init_json_stdout(level: &str, traces: Option<crate::traces::OtlpLayer>) {
    let fmt = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .with_writer(std::io::stdout)
        .event_format(slog_json::SlogJson)
        .boxed();
    install(fmt, level, traces);
}

type BoxedLayer = Box<dyn Layer<tracing_subscriber::Registry> + Send + Sync>;

fn install(fmt: BoxedLayer, level: &str, traces: Option<crate::traces::OtlpLayer>) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| default_filter(level));
    // A second init (e.g. from tests) keeps the first subscriber. `try_init` also forwards the
    // `log` crate's records (wasmtime's, among others) to it, up to its level.
    use tracing_subscriber::util::SubscriberInitExt as _;
    let _ = subscriber(fmt, filter, traces).try_init();
}

type Subscriber = Box<dyn tracing::Subscriber + Send + Sync>;

/// The log layer under `filter`, and the exporter's layer when there is one.
fn subscriber(
    fmt: BoxedLayer,
    filter: EnvFilter,
    traces: Option<crate::traces::OtlpLayer>,
) -> Subscriber {
    use tracing_subscriber::filter::{FilterExt as _, Targets, filter_fn};
    use tracing_subscriber::layer::SubscriberExt as _;
    // Per-layer filters: without the exporter no layer wants a trace span, so their callsites
    // stay disabled and cost nothing. (Not through an `Option` layer: a `None` layer enables
    // every callsite, so each admission request's two spans were made and closed with nobody
    // to see them.)
    // The hint keeps the filter's own level as the process's maximum (a filter without one makes
    // it TRACE): `log` records below it (wasmtime writes some on every instantiation) are then
    // skipped where they are written instead of reaching the subscriber to be dropped there.
    let logged = filter.and(
        filter_fn(|m| m.target() != crate::traces::TARGET)
            .with_max_level_hint(tracing::level_filters::LevelFilter::TRACE),
    );
    let traced = Targets::new().with_target(crate::traces::TARGET, tracing::Level::INFO);
    let logs = tracing_subscriber::registry().with(fmt.with_filter(logged));
    match traces {
        Some(traces) => Box::new(logs.with(traces.with_filter(traced))),
        None => Box::new(logs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without the exporter a trace span is never made (nor a log line below the level);
    /// with it the exporter's layer gets the trace spans.
    #[test]
    fn trace_spans_exist_only_for_the_exporter() {
        let quiet = || -> BoxedLayer {
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::sink)
                .boxed()
        };
        let without = subscriber(quiet(), default_filter("info"), None);
        tracing::subscriber::with_default(without, || {
            let span = tracing::info_span!(target: "odh_trace", "admission");
            assert!(span.is_disabled(), "a trace span without the exporter");
            assert!(
                !tracing::enabled!(tracing::Level::DEBUG),
                "debug below info"
            );
            assert!(tracing::enabled!(tracing::Level::INFO));
        });
        let (tx, _rx) = std::sync::mpsc::sync_channel(8);
        let layer = crate::traces::OtlpLayer::new(tx, Default::default());
        let with = subscriber(quiet(), default_filter("info"), Some(layer));
        tracing::subscriber::with_default(with, || {
            let span = tracing::info_span!(target: "odh_trace", "admission");
            assert!(!span.is_disabled(), "a trace span for the exporter");
        });
    }

    #[test]
    fn time_encodings_write_zaps_formats() {
        let at = std::time::UNIX_EPOCH + std::time::Duration::new(1_764_849_600, 120_000_000);
        let cases = [
            (TimeEncoding::Epoch, "1764849600.120000000"),
            (TimeEncoding::Millis, "1764849600120.000000"),
            (TimeEncoding::Nano, "1764849600120000000"),
            (TimeEncoding::Iso8601, "2025-12-04T12:00:00.120Z"),
            (TimeEncoding::Rfc3339, "2025-12-04T12:00:00Z"),
            (TimeEncoding::Rfc3339nano, "2025-12-04T12:00:00.12Z"),
        ];
        for (encoding, expected) in cases {
            assert_eq!(encoding.format(at), expected, "{encoding:?}");
        }
        let whole = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_764_849_600);
        assert_eq!(
            TimeEncoding::Rfc3339nano.format(whole),
            "2025-12-04T12:00:00Z"
        );
    }

    /// Every crate of the host logs at the chosen level: a crate missing here would log only its
    /// warnings (as the model-serving-api's request log did when it moved to a crate of its own).
    #[test]
    fn every_host_crate_logs_at_the_chosen_level() {
        let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let host = manifest.parent().expect("host/app sits in host/");
        let mut crates: Vec<String> = std::fs::read_dir(host)
            .expect("host/")
            .filter_map(|e| {
                let dir = e.ok()?.path();
                let toml = std::fs::read_to_string(dir.join("Cargo.toml")).ok()?;
                // A `no_std` crate (the musl build's `memcpy`) has no logger to reach.
                let lib = std::fs::read_to_string(dir.join("src/lib.rs")).unwrap_or_default();
                if lib.contains("#![no_std]") {
                    return None;
                }
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
