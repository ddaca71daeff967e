//! The model-serving-api's environment, read and checked as upstream's `config.Load` does, with
//! its error messages word for word. `GATEWAY_LABEL_SELECTOR` is a setting of the plugin that
//! serves the gateways (its registration entry); the plugin checks it with upstream's messages.

use std::path::PathBuf;
use std::time::Duration;

use odh_go_compat::strconv::{atoi, parse_float};
use odh_go_compat::time::parse_duration;
use odh_serve::model_serving_api::{DEFAULT_LISTEN_ADDR, DEFAULT_METRICS_ADDR};

/// The server's configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// `LISTEN_ADDR` (default `:8443`).
    pub listen_addr: String,
    /// `TLS_CERT_DIR`: required, but checked only when the server starts (after the client
    /// is built), as upstream does.
    pub tls_cert_dir: Option<PathBuf>,
    /// `LOG_LEVEL` mapped to `debug`, `info`, `warn` or `error`.
    pub log_level: &'static str,
    /// `METRICS_ADDR` (default `:8080`).
    pub metrics_addr: String,
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`: where traces are exported (OTLP/gRPC).
    pub otlp_endpoint: Option<String>,
    pub read_timeout: Duration,
    pub write_timeout: Duration,
    pub idle_timeout: Duration,
    /// `KUBE_QPS` and `KUBE_BURST`: the API client's rate limit ([`ServerConfig::rate_limit`]).
    pub kube_qps: f64,
    pub kube_burst: i64,
}

impl ServerConfig {
    /// The client's rate limit as upstream sets its REST config: `KUBE_QPS` and `KUBE_BURST`
    /// where above zero, else controller-runtime's `GetConfig` defaults (20 per second, burst
    /// 30), per API resource as the host's other clients.
    pub fn rate_limit(&self) -> odh_reconcile::api_client::RateLimit {
        let upstream = odh_reconcile::api_client::RateLimit::UPSTREAM;
        odh_reconcile::api_client::RateLimit {
            qps: if self.kube_qps > 0.0 {
                self.kube_qps
            } else {
                upstream.qps
            },
            burst: match u32::try_from(self.kube_burst) {
                Ok(burst) if burst > 0 => burst,
                _ => upstream.burst,
            },
        }
    }
}

impl ServerConfig {
    /// Reads the configuration through `env` (the process environment in `main`); the error
    /// is upstream's message.
    pub fn from_env(env: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let var = |name: &str| env(name).filter(|v| !v.is_empty());
        Ok(Self {
            listen_addr: var("LISTEN_ADDR").unwrap_or_else(|| DEFAULT_LISTEN_ADDR.into()),
            tls_cert_dir: var("TLS_CERT_DIR").map(PathBuf::from),
            log_level: log_level(var("LOG_LEVEL").as_deref()),
            metrics_addr: var("METRICS_ADDR").unwrap_or_else(|| DEFAULT_METRICS_ADDR.into()),
            otlp_endpoint: var("OTEL_EXPORTER_OTLP_ENDPOINT"),
            read_timeout: timeout("READ_TIMEOUT", var("READ_TIMEOUT"), 10)?,
            write_timeout: timeout("WRITE_TIMEOUT", var("WRITE_TIMEOUT"), 10)?,
            idle_timeout: timeout("IDLE_TIMEOUT", var("IDLE_TIMEOUT"), 120)?,
            kube_qps: match var("KUBE_QPS") {
                None => 50.0,
                Some(v) => {
                    let qps = parse_float(&v).map_err(|e| format!("invalid KUBE_QPS: {e}"))?;
                    if qps < 0.0 {
                        return Err("invalid KUBE_QPS: must be >= 0".into());
                    }
                    qps
                }
            },
            kube_burst: match var("KUBE_BURST") {
                None => 100,
                Some(v) => {
                    let burst = atoi(&v).map_err(|e| format!("invalid KUBE_BURST: {e}"))?;
                    if burst < 0 {
                        return Err("invalid KUBE_BURST: must be >= 0".into());
                    }
                    burst
                }
            },
        })
    }
}

/// `LOG_LEVEL`: `debug`, `warn` and `error` as given, anything else `info`.
pub fn log_level(value: Option<&str>) -> &'static str {
    match value {
        Some("debug") => "debug",
        Some("warn") => "warn",
        Some("error") => "error",
        _ => "info",
    }
}

fn timeout(name: &str, value: Option<String>, default_secs: u64) -> Result<Duration, String> {
    let Some(value) = value else {
        return Ok(Duration::from_secs(default_secs));
    };
    match parse_duration(&value) {
        Ok(nanos) if nanos > 0 => Ok(Duration::from_nanos(nanos as u64)),
        Ok(_) => Err(format!("invalid {name}: must be > 0")),
        Err(e) => Err(format!("invalid {name}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load(vars: &[(&str, &str)]) -> Result<ServerConfig, String> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ServerConfig::from_env(|k| vars.get(k).cloned())
    }

    #[test]
    fn defaults() {
        let c = load(&[]).unwrap();
        assert_eq!(c.listen_addr, ":8443");
        assert_eq!(c.metrics_addr, ":8080");
        assert_eq!(c.tls_cert_dir, None);
        assert_eq!(c.log_level, "info");
        assert_eq!(c.read_timeout, Duration::from_secs(10));
        assert_eq!(c.write_timeout, Duration::from_secs(10));
        assert_eq!(c.idle_timeout, Duration::from_secs(120));
        assert_eq!((c.kube_qps, c.kube_burst), (50.0, 100));
        // Empty values are the defaults.
        let c = load(&[("LISTEN_ADDR", "")]).unwrap();
        assert_eq!(c.listen_addr, ":8443");
    }

    #[test]
    fn values() {
        let c = load(&[
            ("LISTEN_ADDR", "127.0.0.1:9443"),
            ("TLS_CERT_DIR", "/tls"),
            ("LOG_LEVEL", "debug"),
            ("READ_TIMEOUT", "1m30s"),
            ("WRITE_TIMEOUT", "500ms"),
            ("IDLE_TIMEOUT", "1.5h"),
            ("KUBE_QPS", "0"),
            ("KUBE_BURST", "0"),
        ])
        .unwrap();
        assert_eq!(c.tls_cert_dir, Some(PathBuf::from("/tls")));
        assert_eq!(c.log_level, "debug");
        assert_eq!(c.read_timeout, Duration::from_secs(90));
        assert_eq!(c.write_timeout, Duration::from_millis(500));
        assert_eq!(c.idle_timeout, Duration::from_secs(5400));
        for (given, level) in [
            ("warn", "warn"),
            ("error", "error"),
            ("trace", "info"),
            ("DEBUG", "info"),
        ] {
            assert_eq!(load(&[("LOG_LEVEL", given)]).unwrap().log_level, level);
        }
    }

    #[test]
    fn timeout_errors() {
        for name in ["READ_TIMEOUT", "WRITE_TIMEOUT", "IDLE_TIMEOUT"] {
            for zero in ["0", "0s", "-5s"] {
                assert_eq!(
                    load(&[(name, zero)]),
                    Err(format!("invalid {name}: must be > 0"))
                );
            }
            assert_eq!(
                load(&[(name, "abc")]),
                Err(format!("invalid {name}: time: invalid duration \"abc\""))
            );
        }
        assert_eq!(
            load(&[("READ_TIMEOUT", "10")]),
            Err("invalid READ_TIMEOUT: time: missing unit in duration \"10\"".into())
        );
        assert_eq!(
            load(&[("READ_TIMEOUT", "10x")]),
            Err("invalid READ_TIMEOUT: time: unknown unit \"x\" in duration \"10x\"".into())
        );
    }

    #[test]
    fn kube_client_limits() {
        assert_eq!(load(&[("KUBE_QPS", "12.5")]).unwrap().kube_qps, 12.5);
        let limit = |env: &[(&str, &str)]| {
            let l = load(env).unwrap().rate_limit();
            (l.qps, l.burst)
        };
        assert_eq!(limit(&[]), (50.0, 100));
        assert_eq!(
            limit(&[("KUBE_QPS", "12.5"), ("KUBE_BURST", "7")]),
            (12.5, 7)
        );
        assert_eq!(limit(&[("KUBE_QPS", "0"), ("KUBE_BURST", "0")]), (20.0, 30));
        assert_eq!(
            load(&[("KUBE_QPS", "-1")]),
            Err("invalid KUBE_QPS: must be >= 0".into())
        );
        assert_eq!(
            load(&[("KUBE_QPS", "fast")]),
            Err("invalid KUBE_QPS: strconv.ParseFloat: parsing \"fast\": invalid syntax".into())
        );
        assert_eq!(load(&[("KUBE_BURST", "7")]).unwrap().kube_burst, 7);
        assert_eq!(
            load(&[("KUBE_BURST", "-1")]),
            Err("invalid KUBE_BURST: must be >= 0".into())
        );
        assert_eq!(
            load(&[("KUBE_BURST", "1.5")]),
            Err("invalid KUBE_BURST: strconv.Atoi: parsing \"1.5\": invalid syntax".into())
        );
        assert_eq!(
            load(&[("KUBE_BURST", "99999999999999999999")]),
            Err("invalid KUBE_BURST: strconv.Atoi: parsing \"99999999999999999999\": value out of range".into())
        );
    }
}
