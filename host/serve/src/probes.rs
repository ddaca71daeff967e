//! The process's plain-HTTP servers: health probes and metrics (the TLS ones are [`crate::tls`]),
//! and the parsing of Go-style listen addresses every server shares.
//!
//! Each server is built in two steps so tests can bind port 0 and learn the port:
//! [`Server::bind`] (or a `bind_*` helper) takes the address, [`Server::serve`] runs it until a
//! shutdown future completes, then finishes the requests in flight.
//!
//! * **Health probes** (`--health-probe-bind-address`, default `:8081`): `GET /healthz` and
//!   `/healthz/healthz` answer `200 ok` once the server is up; `GET /readyz` and `/readyz/readyz`
//!   answer `200 ok` while the readiness flag is `true`, else `500` (bodies in controller-runtime's
//!   `healthz` format; `?verbose` lists the checks).
//! * **Metrics** (`--metrics-bind-address`, default `:8080`, `0` disables): `GET /metrics` in the
//!   Prometheus text format 0.0.4; with `--metrics-secure`, over HTTPS (a self-signed
//!   certificate made at start) for callers the API server authenticates and authorizes
//!   ([`crate::metrics_auth`]), as upstream's.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use anyhow::Context;
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::info;

use odh_host_metrics::Metrics;

/// Upstream's `--health-probe-bind-address` default.
pub const DEFAULT_HEALTH_PROBE_BIND_ADDRESS: &str = ":8081";
/// Upstream's `--metrics-bind-address` default.
pub const DEFAULT_METRICS_BIND_ADDRESS: &str = ":8080";

/// Parses a Go-style listen address as controller-runtime accepts it.
///
/// * `""` or `"0"`: the server is disabled (`Ok(None)`).
/// * `":8081"`: port 8081 on every interface (`[::]:8081`, dual-stack on Linux;
///   [`Server::bind`] falls back to `0.0.0.0` where IPv6 is unavailable).
/// * `"127.0.0.1:8080"`, `"[::1]:80"`, `"localhost:8080"`: that address.
///
/// Anything else is an error. Host names other than `localhost` are not resolved.
pub fn parse_bind_address(addr: &str) -> anyhow::Result<Option<SocketAddr>> {
    if addr.is_empty() || addr == "0" {
        return Ok(None);
    }
    if let Ok(sa) = addr.parse::<SocketAddr>() {
        return Ok(Some(sa));
    }
    let (host, port) = addr
        .rsplit_once(':')
        .with_context(|| format!("invalid bind address {addr:?}: expected [host]:port"))?;
    let port: u16 = port
        .parse()
        .with_context(|| format!("invalid port in bind address {addr:?}"))?;
    let ip = match host {
        "" => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        "localhost" => IpAddr::V4(Ipv4Addr::LOCALHOST),
        h => {
            let h = h
                .strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .unwrap_or(h);
            h.parse().with_context(|| {
                format!("invalid host in bind address {addr:?}: expected an IP address")
            })?
        }
    };
    Ok(Some(SocketAddr::new(ip, port)))
}

/// A server bound to its address, not yet serving.
pub struct Server {
    name: &'static str,
    listener: TcpListener,
    router: Router,
    /// Served over TLS with this certificate; plain HTTP without.
    tls: Option<std::sync::Arc<crate::tls::ReloadingCert>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.name)
            .field("local_addr", &self.listener.local_addr().ok())
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Binds `addr` for `router`. `name` appears in logs and errors.
    pub async fn bind(
        name: &'static str,
        addr: SocketAddr,
        router: Router,
    ) -> anyhow::Result<Self> {
        let listener = match TcpListener::bind(addr).await {
            Ok(l) => l,
            // `:port` means every interface; without IPv6, every IPv4 interface.
            Err(_) if addr.ip() == IpAddr::V6(Ipv6Addr::UNSPECIFIED) => {
                let v4 = SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), addr.port());
                TcpListener::bind(v4)
                    .await
                    .with_context(|| format!("{name} server: listening on {v4}"))?
            }
            Err(e) => {
                return Err(e).with_context(|| format!("{name} server: listening on {addr}"));
            }
        };
        Ok(Self {
            name,
            listener,
            router,
            tls: None,
        })
    }

    /// Serves over TLS with `cert`.
    pub fn with_tls(mut self, cert: std::sync::Arc<crate::tls::ReloadingCert>) -> Self {
        self.tls = Some(cert);
        self
    }

    /// The address actually bound (the port chosen when binding port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound TCP listener has a local address")
    }

    /// Serves until `shutdown` completes, then lets the requests in flight finish.
    pub async fn serve<F>(self, shutdown: F) -> anyhow::Result<()>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let addr = self.local_addr();
        if let Some(cert) = self.tls {
            let config = crate::tls::TlsServerConfig {
                name: self.name,
                bind: addr,
                cert_dir: Default::default(),
                enable_http2: false,
                body_limit: 64 * 1024,
            };
            return crate::tls::TlsServer::on_with_certificate(self.listener, config, cert)
                .serve(self.router, shutdown)
                .await;
        }
        info!(server = self.name, %addr, "serving");
        axum::serve(self.listener, self.router)
            .with_graceful_shutdown(shutdown)
            .await
            .with_context(|| format!("{} server on {addr}", self.name))?;
        info!(server = self.name, %addr, "stopped");
        Ok(())
    }
}

/// The health-probe server's routes.
pub fn health_router(ready: impl Into<Readiness>) -> Router {
    let ready: Readiness = ready.into();
    Router::new()
        .route("/healthz", get(healthz))
        .route("/healthz/", get(healthz))
        .route("/healthz/healthz", get(healthz_check))
        .route("/readyz", get(readyz))
        .route("/readyz/", get(readyz))
        .route("/readyz/readyz", get(readyz_check))
        .with_state(ready)
}

/// The metrics server's routes.
pub fn metrics_router(metrics: Metrics) -> Router {
    Router::new()
        .route("/metrics", get(serve_metrics))
        .with_state(metrics)
}

/// Binds the health-probe server.
pub async fn bind_health(addr: SocketAddr, ready: impl Into<Readiness>) -> anyhow::Result<Server> {
    Server::bind("health-probe", addr, health_router(ready)).await
}

/// Binds the metrics server.
pub async fn bind_metrics(addr: SocketAddr, metrics: Metrics) -> anyhow::Result<Server> {
    Server::bind("metrics", addr, metrics_router(metrics)).await
}

/// Binds the metrics server of `--metrics-secure`: HTTPS with a self-signed certificate,
/// every request authenticated and authorized by the API server through `auth`.
pub async fn bind_secure_metrics(
    addr: SocketAddr,
    metrics: Metrics,
    auth: crate::metrics_auth::MetricsAuth,
) -> anyhow::Result<Server> {
    bind_secure_metrics_with(addr, metrics, auth, axum::Router::new()).await
}

/// [`bind_secure_metrics`] serving `extra` routes too, behind the same authentication and
/// authorization (each path its own non-resource URL, so a metrics reader reads no more).
pub async fn bind_secure_metrics_with(
    addr: SocketAddr,
    metrics: Metrics,
    auth: crate::metrics_auth::MetricsAuth,
    extra: axum::Router,
) -> anyhow::Result<Server> {
    let auth = std::sync::Arc::new(auth);
    let router = metrics_router(metrics)
        .merge(extra)
        .layer(axum::middleware::from_fn(move |req, next| {
            crate::metrics_auth::require(auth.clone(), req, next)
        }));
    let names = vec![
        "localhost".to_string(),
        std::env::var("HOSTNAME").unwrap_or_else(|_| "localhost".into()),
    ];
    let cert = crate::tls::ReloadingCert::self_signed(&names, crate::tls::crypto_provider())?;
    Ok(Server::bind("metrics", addr, router)
        .await?
        .with_tls(std::sync::Arc::new(cert)))
}

fn text(status: StatusCode, body: String) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
        .into_response()
}

/// controller-runtime's aggregated `healthz` handler for one check named `check`.
fn aggregated(check: &str, failure: Option<&str>, uri: &Uri) -> Response {
    let verbose = uri
        .query()
        .is_some_and(|q| q.split('&').any(|p| p.split('=').next() == Some("verbose")));
    match failure {
        None if !verbose => text(StatusCode::OK, "ok".into()),
        None => text(
            StatusCode::OK,
            format!("[+]{check} ok\nhealthz check passed\n"),
        ),
        // The reason is withheld, as upstream does on this unauthenticated endpoint.
        Some(_) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("[-]{check} failed: reason withheld\nhealthz check failed\n"),
        ),
    }
}

/// controller-runtime's handler for a single named check.
fn single(failure: Option<&str>) -> Response {
    match failure {
        None => text(StatusCode::OK, "ok".into()),
        Some(reason) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("internal server error: {reason}\n"),
        ),
    }
}

/// What `/readyz` reports: the process's own flag (plugins loaded and, on the leader, caches
/// synced) and the checks its servers add (a TLS server is ready once it serves a
/// certificate).
#[derive(Clone)]
pub struct Readiness {
    flag: watch::Receiver<bool>,
    checks: Vec<(&'static str, ReadyCheck)>,
}

/// One readiness check: true when ready.
pub type ReadyCheck = std::sync::Arc<dyn Fn() -> bool + Send + Sync>;

impl Readiness {
    pub fn new(flag: watch::Receiver<bool>) -> Self {
        Self {
            flag,
            checks: Vec::new(),
        }
    }

    /// Adds a check named `name` (reported when it fails).
    pub fn with_check(mut self, name: &'static str, check: ReadyCheck) -> Self {
        self.checks.push((name, check));
        self
    }

    /// Why the process is not ready, if it is not. A named check (a missing certificate) is
    /// reported before the general flag: it is what an operator can act on.
    pub fn failure(&self) -> Option<&'static str> {
        let check = self
            .checks
            .iter()
            .find(|(_, check)| !check())
            .map(|(name, _)| *name);
        check.or_else(|| (!*self.flag.borrow()).then_some("not ready"))
    }
}

impl From<watch::Receiver<bool>> for Readiness {
    fn from(flag: watch::Receiver<bool>) -> Self {
        Self::new(flag)
    }
}

fn readiness(ready: &Readiness) -> Option<&'static str> {
    ready.failure()
}

async fn healthz(uri: Uri) -> Response {
    aggregated("healthz", None, &uri)
}

async fn healthz_check() -> Response {
    single(None)
}

async fn readyz(State(ready): State<Readiness>, uri: Uri) -> Response {
    aggregated("readyz", readiness(&ready), &uri)
}

async fn readyz_check(State(ready): State<Readiness>) -> Response {
    single(readiness(&ready))
}

async fn serve_metrics(State(metrics): State<Metrics>) -> Response {
    (
        [(header::CONTENT_TYPE, odh_host_metrics::CONTENT_TYPE)],
        Body::from(metrics.render()),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(s: &str) -> Option<SocketAddr> {
        parse_bind_address(s).unwrap_or_else(|e| panic!("{s:?}: {e:#}"))
    }

    #[test]
    fn go_style_bind_addresses() {
        assert_eq!(parsed(":8081"), Some("[::]:8081".parse().unwrap()));
        assert_eq!(parsed("127.0.0.1:0"), Some("127.0.0.1:0".parse().unwrap()));
        assert_eq!(parsed("[::1]:80"), Some("[::1]:80".parse().unwrap()));
        assert_eq!(
            parsed("0.0.0.0:8080"),
            Some("0.0.0.0:8080".parse().unwrap())
        );
        assert_eq!(
            parsed("localhost:9000"),
            Some("127.0.0.1:9000".parse().unwrap())
        );
        assert_eq!(parsed("0"), None, "0 disables");
        assert_eq!(parsed(""), None, "empty disables");
    }

    #[test]
    fn garbage_bind_addresses_are_errors() {
        for bad in [
            "garbage",
            "8080",
            ":http",
            ":65536",
            ":-1",
            "1.2.3:80",
            "example.com:80",
            "[::1:80",
            "::1:80x",
            " :8080",
        ] {
            assert!(parse_bind_address(bad).is_err(), "{bad:?} should not parse");
        }
        let err = parse_bind_address("nonsense").unwrap_err().to_string();
        assert!(err.contains("nonsense"), "{err}");
    }

    #[test]
    fn defaults_parse() {
        for d in [
            DEFAULT_HEALTH_PROBE_BIND_ADDRESS,
            DEFAULT_METRICS_BIND_ADDRESS,
            crate::model_serving_api::DEFAULT_LISTEN_ADDR,
        ] {
            assert!(parsed(d).is_some_and(|a| a.ip().is_unspecified()), "{d}");
        }
    }
}
