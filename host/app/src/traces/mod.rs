//! OpenTelemetry traces: when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, the host's trace spans —
//! one per admission review, reconcile, plugin call and model-serving-api request — go to that
//! OTLP collector over gRPC, as upstream's model-serving-api exports its request spans. Without
//! it no span of the trace target is ever created (the callsites stay disabled), so tracing
//! costs nothing when off.

mod export;
mod layer;
pub mod proto;

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

pub use export::Endpoint;
pub use layer::{OtlpLayer, parse_traceparent};

/// The `tracing` target of the spans exported as traces; logs never show them.
pub const TARGET: &str = "odh_trace";

/// Spans waiting for the exporter at most; more are dropped (and counted).
const QUEUE: usize = 4096;

/// The OTLP settings of the environment (the OpenTelemetry variables upstream reads).
#[derive(Debug, Clone, PartialEq)]
pub struct TraceConfig {
    pub endpoint: Endpoint,
    pub service: String,
    pub ca_files: Vec<std::path::PathBuf>,
}

impl TraceConfig {
    /// From `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`,
    /// `OTEL_EXPORTER_OTLP_INSECURE`, `OTEL_SERVICE_NAME` (else `default_service`) and
    /// `OTEL_EXPORTER_OTLP_CERTIFICATE` plus the cluster's service CA when mounted; none
    /// when no endpoint is set.
    pub fn from_env(
        var: impl Fn(&str) -> Option<String>,
        default_service: &str,
    ) -> anyhow::Result<Option<TraceConfig>> {
        let Some(endpoint) = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .or_else(|| var("OTEL_EXPORTER_OTLP_ENDPOINT"))
            .filter(|v| !v.trim().is_empty())
        else {
            return Ok(None);
        };
        let insecure = var("OTEL_EXPORTER_OTLP_TRACES_INSECURE")
            .or_else(|| var("OTEL_EXPORTER_OTLP_INSECURE"))
            .is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let mut ca_files: Vec<std::path::PathBuf> = var("OTEL_EXPORTER_OTLP_CERTIFICATE")
            .into_iter()
            .map(Into::into)
            .collect();
        let service_ca = std::path::Path::new(crate::startup::SERVICE_CA_FILE);
        if service_ca.is_file() {
            ca_files.push(service_ca.into());
        }
        Ok(Some(TraceConfig {
            endpoint: Endpoint::parse(&endpoint, insecure)?,
            service: var("OTEL_SERVICE_NAME").unwrap_or_else(|| default_service.to_string()),
            ca_files,
        }))
    }

    /// The layer to add to the subscriber; its exporter thread runs from now on.
    pub fn start(self) -> anyhow::Result<OtlpLayer> {
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
        let dropped = Arc::new(AtomicU64::new(0));
        export::Exporter {
            endpoint: self.endpoint,
            service: self.service,
            ca_files: self.ca_files,
            dropped: dropped.clone(),
        }
        .spawn(rx)?;
        Ok(OtlpLayer::new(tx, dropped))
    }
}

/// A server span per model-serving-api request, named as upstream's `otelhttp` handler names
/// them (its operation, `model-serving-api`).
pub async fn http_span(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use tracing::Instrument as _;
    let span = tracing::info_span!(
        target: "odh_trace",
        "model-serving-api",
        otel.kind = "server",
        traceparent = request
            .headers()
            .get("traceparent")
            .and_then(|v| v.to_str().ok()),
        http.request.method = %request.method(),
        url.path = %request.uri().path(),
        http.response.status_code = tracing::field::Empty,
    );
    let response = next.run(request).instrument(span.clone()).await;
    span.record("http.response.status_code", response.status().as_u16());
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_decides_whether_and_where_traces_go() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(TraceConfig::from_env(env(&[]), "svc").unwrap(), None);
        assert_eq!(
            TraceConfig::from_env(env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")]), "svc").unwrap(),
            None
        );
        let c = TraceConfig::from_env(
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4317"),
                ("OTEL_EXPORTER_OTLP_INSECURE", "true"),
                ("OTEL_SERVICE_NAME", "odh"),
            ]),
            "svc",
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.endpoint.to_string(), "http://collector:4317");
        assert_eq!(c.service, "odh");
        let traces_first = TraceConfig::from_env(
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "a:1"),
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "b:2"),
            ]),
            "svc",
        )
        .unwrap()
        .unwrap();
        assert_eq!(traces_first.endpoint.host, "b");
        assert_eq!(traces_first.service, "svc");
        assert!(
            traces_first.endpoint.tls,
            "TLS unless said insecure, as upstream"
        );
    }
}
