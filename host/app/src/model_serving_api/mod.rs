//! `odh-model-controller model-serving-api`: the model-serving-api run alone, as upstream deploys
//! it (its own Deployment, upstream's environment [`config`]): the plugins' API routes on
//! `LISTEN_ADDR` and `/metrics` on `METRICS_ADDR`, both over TLS with the certificate of
//! `TLS_CERT_DIR` (reloaded 250 ms after it changes), the cluster read uncached as its own
//! ServiceAccount; no controller, webhook or leader election. The server itself is
//! [`odh_serve::model_serving_api`].

pub mod config;

use std::sync::Arc;

use anyhow::Context;
use odh_host_metrics::Metrics;
use odh_plugin_runtime::{EngineOptions, LoadedPlugin, PluginSlot};
use odh_reconcile::cache::{CacheFilters, Caches};
use odh_serve::api_routes::{AccessReviewer, ApiRoutes};
use odh_serve::model_serving_api::{
    RouterOptions, SHUTDOWN_TIMEOUT, certificate, metrics::ApiMetrics, metrics_router, router,
    tuning,
};
use odh_serve::probes::parse_bind_address;
use odh_serve::tls::{ServerTuning, TlsServer, TlsServerConfig};
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::builtins;
use crate::startup;
use config::ServerConfig;

/// The standalone process's arguments (its configuration is the environment).
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// A kubeconfig; otherwise KUBECONFIG, in-cluster, then `~/.kube/config`.
    pub kubeconfig: Option<std::path::PathBuf>,
    /// The plugins whose routes are served (built-in names or `.wasm` files); none: the
    /// built-ins the registration list marks for it.
    pub plugins: Vec<String>,
    pub plugin_cache_dir: Option<std::path::PathBuf>,
    pub plugin_precompiled_dir: Option<std::path::PathBuf>,
}

/// The plugins whose routes the standalone server serves: `--plugin`s, else the built-ins the
/// registration list marks; each built-in with the settings its entry derives from the
/// environment. A built-in refusing those is a configuration error
/// ([`crate::startup::SettingsRefused`]).
pub fn load_plugins(options: &Options) -> anyhow::Result<Vec<LoadedPlugin>> {
    let wanted: Vec<String> = if options.plugins.is_empty() {
        builtins::model_serving_api_defaults()
            .map(|b| b.name.to_string())
            .collect()
    } else {
        options.plugins.clone()
    };
    let (_engine, plugins) = startup::load_plugins_named(
        &wanted,
        EngineOptions {
            cache_dir: options.plugin_cache_dir.clone(),
            precompiled_dir: options.plugin_precompiled_dir.clone(),
            memory_budget: crate::plugin::MemoryBudget::from_container_limit(),
            ..Default::default()
        },
    )?;
    Ok(plugins)
}

/// `odh-model-controller model-serving-api`, after the configuration and the plugins loaded
/// and logging started: upstream's start-up order from the client on
/// (docs/plugins/llm-gateway.md, "model-serving-api").
pub async fn run(
    options: Options,
    config: ServerConfig,
    plugins: Vec<LoadedPlugin>,
) -> anyhow::Result<()> {
    let (kube_config, client, _identity) =
        startup::connect(options.kubeconfig.as_deref(), Some(config.rate_limit())).await?;
    if let Some(endpoint) = &config.otlp_endpoint {
        info!(endpoint, "otlp trace export enabled");
    }
    let slots: Vec<PluginSlot> = plugins.into_iter().map(PluginSlot::new).collect();
    let routes = ApiRoutes::from_slots(&slots).map_err(anyhow::Error::msg)?;
    info!(routes = ?routes.paths().collect::<Vec<_>>(), "plugin API routes");
    // Uncached: no cache is ever started, so every read goes to the API server.
    let cluster = Caches::new(client, CacheFilters::default());
    let reviewer = AccessReviewer::new(kube_config)?;

    let shutdown = startup::termination()?;
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
    .tuned(tuning(config.read_timeout, config.idle_timeout));
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
        ..tuning(config.read_timeout, config.idle_timeout)
    });
    let router = router(
        routes.router(cluster, reviewer),
        RouterOptions {
            metrics: api_metrics,
            write_timeout: config.write_timeout,
        },
    )
    .layer(axum::middleware::from_fn(crate::traces::http_span));
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
