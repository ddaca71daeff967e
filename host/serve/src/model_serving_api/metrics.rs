//! The model-serving-api's metrics (docs/plugins/llm-gateway.md, "Server behaviour"): the HTTP server histograms upstream's
//! OpenTelemetry instrumentation exports through Prometheus, with the same names, labels and
//! default buckets; `target_info` with the service name; and the process collector's
//! `process_*` gauges (Linux `/proc`). Go's `go_*` runtime metrics have no equivalent here.
//!
//! | metric | labels |
//! |---|---|
//! | `http_server_request_duration_seconds` (histogram) | `http_request_method`, `http_response_status_code`, `network_protocol_name`, `network_protocol_version`, `url_scheme` |
//! | `http_server_request_body_size_bytes` (histogram) | the same |
//! | `http_server_response_body_size_bytes` (histogram) | the same |
//! | `target_info` | `service_name`, `telemetry_sdk_language`, `telemetry_sdk_name`, `telemetry_sdk_version` |
//! | `process_cpu_seconds_total`, `process_resident_memory_bytes`, `process_virtual_memory_bytes`, `process_open_fds`, `process_max_fds`, `process_start_time_seconds` | — |

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

/// The service name upstream's telemetry reports.
pub const SERVICE_NAME: &str = "model-serving-api";

/// OpenTelemetry's default buckets for `http.server.request.duration` (semantic conventions).
pub const DURATION_BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];

/// OpenTelemetry's default explicit buckets (the body size histograms use them).
pub const SIZE_BUCKETS: [f64; 15] = [
    0.0, 5.0, 10.0, 25.0, 50.0, 75.0, 100.0, 250.0, 500.0, 750.0, 1000.0, 2500.0, 5000.0, 7500.0,
    10000.0,
];

/// The HTTP methods OpenTelemetry names; others are `_OTHER`.
const KNOWN_METHODS: [&str; 9] = [
    "CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE",
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    http_request_method: String,
    http_response_status_code: u16,
    network_protocol_name: &'static str,
    network_protocol_version: &'static str,
    url_scheme: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TargetLabels {
    service_name: &'static str,
    telemetry_sdk_language: &'static str,
    telemetry_sdk_name: &'static str,
    telemetry_sdk_version: &'static str,
}

type Histograms = Family<RequestLabels, Histogram, fn() -> Histogram>;

/// One finished request, as the metrics middleware saw it.
#[derive(Debug, Clone)]
pub struct RequestRecord<'a> {
    pub method: &'a str,
    pub status: u16,
    /// `1.0`, `1.1` or `2`.
    pub protocol_version: &'static str,
    pub duration: Duration,
    pub request_body_bytes: u64,
    pub response_body_bytes: u64,
}

/// The server's metrics. Cloning is cheap and clones share the values.
#[derive(Clone)]
pub struct ApiMetrics {
    registry: Arc<Registry>,
    duration: Histograms,
    request_size: Histograms,
    response_size: Histograms,
    process: bool,
}

impl std::fmt::Debug for ApiMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiMetrics").finish_non_exhaustive()
    }
}

impl ApiMetrics {
    /// The HTTP server histograms; with `standalone`, also `target_info` and the process
    /// gauges (the model-serving-api process's own; inside the controller the process is the
    /// controller's).
    pub fn new(standalone: bool) -> Self {
        let mut registry = Registry::default();
        let duration: Histograms =
            Family::new_with_constructor(|| Histogram::new(DURATION_BUCKETS));
        registry.register(
            "http_server_request_duration_seconds",
            "Duration of HTTP server requests.",
            duration.clone(),
        );
        let request_size: Histograms =
            Family::new_with_constructor(|| Histogram::new(SIZE_BUCKETS));
        registry.register(
            "http_server_request_body_size_bytes",
            "Size of HTTP server request bodies.",
            request_size.clone(),
        );
        let response_size: Histograms =
            Family::new_with_constructor(|| Histogram::new(SIZE_BUCKETS));
        registry.register(
            "http_server_response_body_size_bytes",
            "Size of HTTP server response bodies.",
            response_size.clone(),
        );
        if standalone {
            registry.register(
                "target",
                "Target metadata",
                Info::new(TargetLabels {
                    service_name: SERVICE_NAME,
                    telemetry_sdk_language: "rust",
                    telemetry_sdk_name: "odh-model-controller",
                    telemetry_sdk_version: env!("CARGO_PKG_VERSION"),
                }),
            );
        }
        Self {
            registry: Arc::new(registry),
            duration,
            request_size,
            response_size,
            process: standalone,
        }
    }

    /// Records one request.
    pub fn record(&self, r: &RequestRecord<'_>) {
        let method = if KNOWN_METHODS.contains(&r.method) {
            r.method.to_string()
        } else {
            "_OTHER".to_string()
        };
        let labels = RequestLabels {
            http_request_method: method,
            http_response_status_code: r.status,
            network_protocol_name: "http",
            network_protocol_version: r.protocol_version,
            url_scheme: "https",
        };
        self.duration
            .get_or_create(&labels)
            .observe(r.duration.as_secs_f64());
        self.request_size
            .get_or_create(&labels)
            .observe(r.request_body_bytes as f64);
        self.response_size
            .get_or_create(&labels)
            .observe(r.response_body_bytes as f64);
    }

    /// The metrics in the Prometheus text format (0.0.4).
    pub fn render(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry)
            .expect("writing to a String cannot fail");
        if self.process {
            out.push_str(&odh_host_metrics::process::render());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_recorded_with_upstreams_names_and_labels() {
        let m = ApiMetrics::new(true);
        m.record(&RequestRecord {
            method: "GET",
            status: 200,
            protocol_version: "1.1",
            duration: Duration::from_millis(3),
            request_body_bytes: 0,
            response_body_bytes: 15,
        });
        m.record(&RequestRecord {
            method: "BREW",
            status: 404,
            protocol_version: "2",
            duration: Duration::from_millis(1),
            request_body_bytes: 7,
            response_body_bytes: 19,
        });
        let text = m.render();
        for needle in [
            "# TYPE http_server_request_duration_seconds histogram",
            r#"http_server_request_duration_seconds_count{http_request_method="GET",http_response_status_code="200",network_protocol_name="http",network_protocol_version="1.1",url_scheme="https"} 1"#,
            r#"http_server_request_body_size_bytes_count{http_request_method="_OTHER",http_response_status_code="404""#,
            r#"http_server_response_body_size_bytes_sum{http_request_method="GET",http_response_status_code="200",network_protocol_name="http",network_protocol_version="1.1",url_scheme="https"} 15"#,
            r#"target_info{service_name="model-serving-api",telemetry_sdk_language="rust""#,
            "# TYPE process_cpu_seconds_total counter",
            "process_resident_memory_bytes ",
            "process_start_time_seconds ",
        ] {
            assert!(text.contains(needle), "{needle} not in\n{text}");
        }
        let embedded = ApiMetrics::new(false).render();
        assert!(!embedded.contains("target_info") && !embedded.contains("process_"));
    }
}
