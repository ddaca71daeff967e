//! The model-serving-api (spec §8): the HTTPS server of the plugins' API routes, run as
//! upstream deploys it (`odh-model-controller model-serving-api`, its own Deployment, with
//! upstream's environment) or inside the controller (`--model-serving-api-bind-address`).
//!
//! The routes' decisions are the plugins' (`llm-gateway`: `/api/v1/gateways`,
//! `/api/v1/samples/llm-d`); the host owns what is around them, in upstream's middleware
//! order, outermost first ([`router`]):
//!
//! 1. metrics: `http_server_*` histograms ([`metrics`]);
//! 2. recovery: a panic is logged and answered with 500 `{"error":"internal server error"}`;
//! 3. security headers on every response ([`crate::api_server::secured`]);
//! 4. one `request completed` log record per request (method, path, status, duration;
//!    `/healthz` and `/readyz` at debug level);
//! 5. the write timeout, then the routes: `/healthz` and `/readyz` (any method, 200
//!    `{"status":"ok"}`), the plugins' routes (bearer routes authenticated by
//!    [`crate::api_server`]), and `404 page not found` for anything else.
//!
//! Standalone ([`run`]) the process reads upstream's environment ([`config`]), serves the
//! routes on `LISTEN_ADDR` and `/metrics` on `METRICS_ADDR`, both over TLS with the
//! certificate of `TLS_CERT_DIR` (reloaded 250 ms after it changes), reads the cluster
//! uncached as its own ServiceAccount, and runs no controller, webhook or leader election.

pub mod config;
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
use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, warn};

use crate::api_server::{AccessReviewer, ApiRoutes, json_error, secured};
use crate::cache::{CacheFilters, Caches};
use crate::metrics::Metrics;
use crate::plugin::PluginSlot;
use crate::servers::parse_bind_address;
use crate::webhook::{
    DEBOUNCE_INTERVAL, ReloadingCert, ServerTuning, TlsPolicy, TlsServer, TlsServerConfig,
};
use config::ServerConfig;
use metrics::{ApiMetrics, RequestRecord};

/// Upstream's `ReadHeaderTimeout`.
pub const READ_HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// Upstream's `MaxHeaderBytes` (8 KiB; Go allows 4 KiB more for the request line).
pub const MAX_HEADER_BYTES: usize = 8 * 1024 + 4096;
/// Upstream's graceful-shutdown timeout.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);
/// The plugin whose routes the standalone server serves by default.
pub const DEFAULT_PLUGIN: &str = "llm-gateway";

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
        [(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)],
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
    let duration = started.elapsed();
    if path == "/healthz" || path == "/readyz" {
        debug!(method = %method, path, status, ?duration, "request completed");
    } else {
        info!(method = %method, path, status, ?duration, "request completed");
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

/// The server's TLS parameters, timeouts and limits (spec §8.2).
pub fn tuning() -> ServerTuning {
    ServerTuning {
        tls_policy: TlsPolicy::ModelServingApi,
        header_read_timeout: READ_HEADER_TIMEOUT,
        max_header_bytes: Some(MAX_HEADER_BYTES),
        shutdown_grace: SHUTDOWN_TIMEOUT,
        // The write deadline (10 s by default) cuts a slow body off first.
        ..ServerTuning::default()
    }
}

/// A reloader of `dir` with upstream's debounce; the first pair must load.
pub fn certificate(dir: &std::path::Path) -> anyhow::Result<Arc<ReloadingCert>> {
    let cert = ReloadingCert::try_new(dir, crate::webhook::crypto_provider(), DEBOUNCE_INTERVAL)
        .context("failed to load TLS key pair")?;
    Ok(Arc::new(cert.debounced()))
}

/// The standalone process's arguments (its configuration is the environment).
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// A kubeconfig; otherwise KUBECONFIG, in-cluster, then `~/.kube/config`.
    pub kubeconfig: Option<std::path::PathBuf>,
    /// The plugins whose routes are served (built-in names or `.wasm` files); none: the
    /// `llm-gateway` plugin.
    pub plugins: Vec<String>,
    pub plugin_cache_dir: Option<std::path::PathBuf>,
    pub plugin_precompiled_dir: Option<std::path::PathBuf>,
}

/// `odh-model-controller model-serving-api`, after the configuration loaded and logging
/// started: upstream's start-up order from the client on (spec §8.1).
pub async fn run(options: Options, config: ServerConfig) -> anyhow::Result<()> {
    let (kube_config, client, token) = crate::run::connect(options.kubeconfig.as_deref()).await?;
    if config.otlp_endpoint.is_some() {
        warn!("OTEL_EXPORTER_OTLP_ENDPOINT is set, but this build exports no traces");
    }
    let wanted = if options.plugins.is_empty() {
        vec![DEFAULT_PLUGIN.to_string()]
    } else {
        options.plugins.clone()
    };
    let (_engine, plugins) = crate::run::load_plugins_named(
        &wanted,
        crate::plugin::EngineOptions {
            cache_dir: options.plugin_cache_dir.clone(),
            precompiled_dir: options.plugin_precompiled_dir.clone(),
            ..Default::default()
        },
        token.as_deref(),
    )?;
    let slots: Vec<PluginSlot> = plugins.into_iter().map(PluginSlot::new).collect();
    let routes = ApiRoutes::from_slots(&slots).map_err(anyhow::Error::msg)?;
    info!(routes = ?routes.paths().collect::<Vec<_>>(), "plugin API routes");
    // Uncached: no cache is ever started, so every read goes to the API server.
    let cluster = Caches::new(client, CacheFilters::default());
    let reviewer = AccessReviewer::new(kube_config)?;

    let shutdown = crate::run::termination()?;
    let Some(cert_dir) = config.tls_cert_dir.clone() else {
        anyhow::bail!("TLS is required: set TLS_CERT_DIR");
    };
    let cert = certificate(&cert_dir)?;

    let api_metrics = ApiMetrics::new(true);
    let metrics = Metrics::global().clone();
    {
        let api_metrics = api_metrics.clone();
        metrics.add_source(Arc::new(move || api_metrics.render()));
    }
    let bind = |addr: &str, what: &str| {
        parse_bind_address(addr)?.with_context(|| format!("{what} needs an address, not {addr:?}"))
    };
    let server = TlsServer::bind(TlsServerConfig {
        name: "model-serving-api",
        bind: bind(&config.listen_addr, "LISTEN_ADDR")?,
        cert_dir: cert_dir.clone(),
        enable_http2: true,
        ..Default::default()
    })
    .await?
    .with_certificate(cert.clone())
    .tuned(tuning());
    let metrics_server = TlsServer::bind(TlsServerConfig {
        name: "model-serving-api-metrics",
        bind: bind(&config.metrics_addr, "METRICS_ADDR")?,
        cert_dir,
        enable_http2: true,
        ..Default::default()
    })
    .await?
    .with_certificate(cert)
    .tuned(ServerTuning {
        shutdown_grace: SHUTDOWN_TIMEOUT,
        ..tuning()
    });
    let router = router(
        routes.router(cluster, reviewer),
        RouterOptions {
            metrics: api_metrics,
            write_timeout: config.write_timeout,
        },
    );
    info!(
        listen = %config.listen_addr,
        metrics = %config.metrics_addr,
        "starting model-serving-api"
    );
    let main = server.serve(router, shutdown.clone().cancelled_owned());
    let metrics_stop = CancellationToken::new();
    let metrics_task = {
        let stop = metrics_stop.clone();
        tokio::spawn(async move {
            metrics_server
                .serve(metrics_router(metrics), stop.cancelled_owned())
                .await
        })
    };
    // The main server ends on a signal (after its connections finished, at most
    // SHUTDOWN_TIMEOUT) or on an error; the metrics server stops after it.
    let served = main.await;
    info!("shutting down");
    metrics_stop.cancel();
    let _ = metrics_task.await;
    served?;
    info!("stopped");
    Ok(())
}
