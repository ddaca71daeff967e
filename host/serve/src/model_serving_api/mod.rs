//! The model-serving-api: the HTTPS server of the plugins' API routes, run as upstream deploys
//! it (`odh-model-controller model-serving-api`, its own Deployment, with upstream's
//! environment) or inside the controller (`--model-serving-api-bind-address`).
//!
//! The routes' decisions are the plugins' (docs/plugins/llm-gateway.md, "model-serving-api");
//! the host owns what is around them, in upstream's middleware order, outermost first
//! ([`router`]):
//!
//! 1. metrics: `http_server_*` histograms ([`metrics`]);
//! 2. recovery: a panic is logged and answered with 500 `{"error":"internal server error"}`;
//! 3. security headers on every response ([`crate::api_routes::secured`]);
//! 4. one `request completed` log record per request (method, path, status, duration;
//!    `/healthz` and `/readyz` at debug level);
//! 5. the write timeout, then the routes: `/healthz` and `/readyz` (any method, 200
//!    `{"status":"ok"}`), the plugins' routes (bearer routes authenticated by
//!    [`crate::api_routes`]), and `404 page not found` for anything else.
//!
//! Standalone (the application's `model-serving-api` command) the process serves the routes on
//! `LISTEN_ADDR` and [`metrics_router`] on `METRICS_ADDR`, both over TLS ([`tuning`],
//! [`certificate`]), reads the cluster uncached as its own ServiceAccount, and runs no
//! controller, webhook or leader election.

pub mod metrics;

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use axum::Router;
use axum::body::{Body, HttpBody};
use axum::extract::{Request, State};
use axum::http::{StatusCode, Version, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use futures::FutureExt;
use tracing::{debug, error, info};

use crate::api_routes::{json_error, secured};
use crate::tls::{DEBOUNCE_INTERVAL, ReloadingCert, ServerTuning, TlsPolicy};
use metrics::{ApiMetrics, RequestRecord};
use odh_host_metrics::Metrics;

/// Upstream's `LISTEN_ADDR` default.
pub const DEFAULT_LISTEN_ADDR: &str = ":8443";
/// Upstream's `METRICS_ADDR` default.
pub const DEFAULT_METRICS_ADDR: &str = ":8080";
/// Upstream's `ReadHeaderTimeout`.
pub const READ_HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// Upstream's `MaxHeaderBytes` (8 KiB; Go allows 4 KiB more for the request line).
pub const MAX_HEADER_BYTES: usize = 8 * 1024 + 4096;
/// Upstream's graceful-shutdown timeout.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// What the routes are wrapped with.
#[derive(Clone, Debug)]
pub struct RouterOptions {
    pub metrics: ApiMetrics,
    /// How long one request may take to be answered (`WRITE_TIMEOUT`).
    pub write_timeout: Duration,
}

impl Default for RouterOptions {
    fn default() -> Self {
        Self {
            metrics: ApiMetrics::new(false),
            write_timeout: Duration::from_secs(10),
        }
    }
}

/// The server's routes and middleware (see the module docs) around `plugin_routes`.
pub fn router(plugin_routes: Router, options: RouterOptions) -> Router {
    let write_timeout = options.write_timeout;
    plugin_routes
        .route("/healthz", any(health))
        .route("/readyz", any(health))
        .fallback(not_found)
        .layer(middleware::from_fn(move |req: Request, next: Next| {
            deadline(write_timeout, req, next)
        }))
        .layer(middleware::from_fn(log_request))
        .layer(middleware::map_response(
            |r: Response| async move { secured(r) },
        ))
        .layer(middleware::from_fn(recover))
        .layer(middleware::from_fn_with_state(options.metrics, measure))
}

/// The metrics server's routes: `/metrics` only, the process's metrics registry.
pub fn metrics_router(metrics: Metrics) -> Router {
    Router::new()
        .route("/metrics", get(serve_metrics))
        .fallback(not_found)
        .with_state(metrics)
}

async fn serve_metrics(State(metrics): State<Metrics>) -> Response {
    (
        [(header::CONTENT_TYPE, odh_host_metrics::CONTENT_TYPE)],
        Body::from(metrics.render()),
    )
        .into_response()
}

/// `/healthz` and `/readyz`: no dependency checks.
async fn health() -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        r#"{"status":"ok"}"#,
    )
        .into_response()
}

/// Go's `http.NotFound`.
pub async fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        "404 page not found\n",
    )
        .into_response()
}

async fn deadline(limit: Duration, req: Request, next: Next) -> Response {
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(response) => response,
        Err(_) => {
            let mut r = json_error(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
            r.headers_mut().insert(
                header::CONNECTION,
                header::HeaderValue::from_static("close"),
            );
            r
        }
    }
}

async fn log_request(req: Request, next: Next) -> Response {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let started = Instant::now();
    let response = next.run(req).await;
    let status = response.status().as_u16();
    // Nanoseconds, as slog's JSON handler writes a `time.Duration`.
    let duration = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
    if path == "/healthz" || path == "/readyz" {
        debug!(method = %method, path, status, duration, "request completed");
    } else {
        info!(method = %method, path, status, duration, "request completed");
    }
    response
}

async fn recover(req: Request, next: Next) -> Response {
    match AssertUnwindSafe(next.run(req)).catch_unwind().await {
        Ok(response) => response,
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-string panic payload".into());
            error!(
                panic = message,
                stack = %std::backtrace::Backtrace::force_capture(),
                "panic recovered"
            );
            json_error(StatusCode::INTERNAL_SERVER_ERROR, "internal server error")
        }
    }
}

async fn measure(State(metrics): State<ApiMetrics>, req: Request, next: Next) -> Response {
    let method = req.method().to_string();
    let protocol_version = match req.version() {
        Version::HTTP_10 => "1.0",
        Version::HTTP_2 => "2",
        _ => "1.1",
    };
    let request_body_bytes = req.body().size_hint().exact().unwrap_or_else(|| {
        req.headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse().ok())
            .unwrap_or(0)
    });
    let started = Instant::now();
    let response = next.run(req).await;
    metrics.record(&RequestRecord {
        method: &method,
        status: response.status().as_u16(),
        protocol_version,
        duration: started.elapsed(),
        request_body_bytes,
        response_body_bytes: response.body().size_hint().exact().unwrap_or(0),
    });
    response
}

/// Upstream's `READ_TIMEOUT` default.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Upstream's `IDLE_TIMEOUT` default.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// The server's TLS parameters, timeouts and limits (docs/plugins/llm-gateway.md, "Server
/// behaviour"), with `READ_TIMEOUT` and `IDLE_TIMEOUT`: Go's `http.Server` deadlines. A request's
/// head has 5 s from its first byte, its body `read_timeout` from the head (Go's read deadline
/// counts both from the first byte), and a keep-alive connection waits `idle_timeout` for the
/// next request.
pub fn tuning(read_timeout: Duration, idle_timeout: Duration) -> ServerTuning {
    ServerTuning {
        tls_policy: TlsPolicy::ModelServingApi,
        header_read_timeout: READ_HEADER_TIMEOUT,
        idle_timeout: Some(idle_timeout),
        body_read_timeout: read_timeout,
        max_header_bytes: Some(MAX_HEADER_BYTES),
        shutdown_grace: SHUTDOWN_TIMEOUT,
        ..ServerTuning::default()
    }
}

/// A reloader of `dir` with upstream's debounce; the first pair must load.
pub fn certificate(dir: &std::path::Path) -> anyhow::Result<Arc<ReloadingCert>> {
    let cert = ReloadingCert::try_new(dir, crate::tls::crypto_provider(), DEBOUNCE_INTERVAL)
        .context("failed to load TLS key pair")?;
    Ok(Arc::new(cert.debounced()))
}
