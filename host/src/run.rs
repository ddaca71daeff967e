//! `odh-model-controller run`: load the plugins, serve probes, metrics, webhooks and the
//! plugins' API routes on every replica, and run the controllers on the leader. The process
//! environment is read here, once ([`crate::profile`], [`crate::builtins`]).

use std::sync::Arc;

use anyhow::Context;
use kube::{Client, Config, config::KubeConfigOptions};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::api_server::{AccessReviewer, ApiRoutes};
use crate::applier::Applier;
use crate::builtins;
use crate::cache::{CacheFilters, Caches};
use crate::cli::RunArgs;
use crate::controller::{self, ControllerContext};
use crate::leader::{ElectionEnd, LeaderElector, LeaseConfig, lease_namespace};
use crate::metrics::Metrics;
use crate::plugin::{
    EngineOptions, LoadRequest, LoadedPlugin, PluginEngine, PluginSet, PluginSlot, Source,
};
use crate::profile::ProcessEnv;
use crate::registry::Registry;
use crate::servers::{self, Readiness, parse_bind_address};
use crate::webhook::config_sync::{CaSource, Endpoint, WebhookConfigSync};
use crate::webhook::{self, LiveWebhookTable, TlsServer, TlsServerConfig, WebhookTable};

type Servers = JoinSet<anyhow::Result<()>>;

pub async fn run(args: RunArgs) -> anyhow::Result<()> {
    let env = ProcessEnv::from_env();
    if parse_bind_address(&args.model_serving_api_bind_address)?.is_some()
        && let Some(selector) = std::env::var("GATEWAY_LABEL_SELECTOR")
            .ok()
            .filter(|v| !v.is_empty())
    {
        crate::model_serving_api::config::parse_gateway_label_selector(&selector)
            .map_err(|e| anyhow::anyhow!("invalid GATEWAY_LABEL_SELECTOR: {e}"))?;
    }
    let terminated = termination()?;
    let (config, client, bearer_token) = connect(args.kubeconfig.as_deref()).await?;
    let version = client
        .apiserver_version()
        .await
        .context("unable to reach the API server")?;
    info!(version = %version.git_version, "connected to the API server");
    info!("{}", env.profile.describe());

    let (engine, plugins) = load_plugins(&args, bearer_token.as_deref())?;
    // Webhooks, API routes and controllers call whatever version a slot holds: the registry
    // swaps them, and adds and removes plugins in the set.
    let slots: Vec<PluginSlot> = plugins.iter().cloned().map(PluginSlot::new).collect();
    let set = PluginSet::new(slots.iter().cloned());
    let shutdown = CancellationToken::new();
    // The servers stop after the controllers: they drain first (see `Stopping`).
    let servers_stop = CancellationToken::new();
    let (ready_tx, ready_flag) = watch::channel(false);
    let metrics = Metrics::global().clone();
    let caches = Caches::new(
        client.clone(),
        CacheFilters::from_manifests(plugins.iter().map(LoadedPlugin::manifest)),
    );
    let applier = Arc::new(
        Applier::new(
            client.clone(),
            caches.clone(),
            std::env::var("POD_NAME").ok(),
        )
        .adopting(args.adopt_field_managers.clone()),
    );

    // Every listener is bound before anything serves: an address in use stops the process
    // here, with its server named, as controller-runtime does.
    let mut readiness = Readiness::new(ready_flag.clone());
    let live_table = LiveWebhookTable::default();
    let draining = Draining::default();
    readiness = readiness.with_check("shutting-down", draining.ready_check());
    let webhooks = if env.webhooks_enabled {
        bind_webhooks(&args, &env, &slots, &caches, &applier, &live_table).await?
    } else {
        info!("Webhooks are disabled via environment variable.");
        None
    };
    let webhooks_served = webhooks.is_some();
    if let Some((server, _)) = &webhooks {
        let cert = server.certificate();
        readiness = readiness.with_check("webhook-certificate", Arc::new(move || cert.is_loaded()));
    }
    let api = bind_model_serving_api(&args, &config, &slots, &caches).await?;
    if let Some((server, _)) = &api {
        let cert = server.certificate();
        readiness = readiness.with_check(
            "model-serving-api-certificate",
            Arc::new(move || cert.is_loaded()),
        );
    }
    let health = match parse_bind_address(&args.health_probe_bind_address)? {
        Some(addr) => Some(servers::bind_health(addr, readiness).await?),
        None => None,
    };
    let metrics_server = match parse_bind_address(&args.metrics_bind_address)? {
        Some(addr) => Some(servers::bind_metrics(addr, metrics.clone()).await?),
        None => None,
    };

    let mut servers = Servers::new();
    for server in health.into_iter().chain(metrics_server) {
        servers.spawn(server.serve(servers_stop.clone().cancelled_owned()));
    }
    let drain = if webhooks.is_some() || api.is_some() {
        args.shutdown_drain_duration
    } else {
        std::time::Duration::ZERO
    };
    for (server, router) in webhooks.into_iter().chain(api) {
        let stop = servers_stop.clone();
        let router = draining.closing_connections(router);
        servers.spawn(async move { server.serve(router, stop.cancelled_owned()).await });
    }
    let stopping = Stopping {
        shutdown: shutdown.clone(),
        servers_stop: servers_stop.clone(),
        servers,
        draining,
        drain,
    };

    if webhooks_served {
        tokio::spawn(keep_webhook_table(
            set.clone(),
            live_table.clone(),
            env.profile,
            shutdown.clone(),
        ));
        if args.sync_webhook_configurations {
            let sync = config_sync(&args, &env, client.clone())?;
            tokio::spawn(sync.run(live_table.clone(), shutdown.clone()));
        }
    } else if args.sync_webhook_configurations {
        info!("no webhook is served: the webhook configurations are not synced");
    }
    // Every replica follows the plugins ConfigMap: a standby's webhooks serve the versions the
    // leader's controllers run.
    match &env.pod_namespace {
        Some(namespace) => {
            let check = serve_check(env.profile, webhooks_served, caches.clone());
            let registry = Registry::new(client.clone(), namespace.clone(), engine, set.clone())
                .with_extra_roots(plugin_source_roots()?)
                .with_serve_check(check);
            tokio::spawn(Arc::new(registry).run(REGISTRY_RETRY, shutdown.clone()));
        }
        None => info!("POD_NAMESPACE is not set: the plugins ConfigMap is not watched"),
    }

    // With the plugins ConfigMap watched, a plugin with controllers may arrive at any time.
    let controllers_wanted = env.profile.runs_controllers()
        && (env.pod_namespace.is_some()
            || plugins.iter().any(|p| !p.manifest().controllers.is_empty()));
    let ctx = ControllerContext::new(caches.clone(), applier, args.max_concurrent_reconciles);
    // The election ends after the controllers stopped, so a lease released on shutdown is
    // released when nothing of ours reconciles any more.
    let election_stop = CancellationToken::new();
    let mut election = None;
    let mut controllers = None;
    if controllers_wanted {
        if args.leader_elect {
            let namespace = lease_namespace(env.pod_namespace.clone())?;
            let lease = LeaseConfig {
                lease_duration: args.leader_elect_lease_duration,
                renew_deadline: args.leader_elect_renew_deadline,
                retry_period: args.leader_elect_retry_period,
                release_on_cancel: args.leader_elect_release_on_cancel,
                ..LeaseConfig::new(namespace)
            };
            let elector = LeaderElector::new(client.clone(), lease)?;
            let (mut leader, handle) = elector.run(election_stop.clone().cancelled_owned());
            election = Some(handle);
            // Not ready to reconcile yet, but plugins and webhooks are: a standby is ready.
            let _ = ready_tx.send(true);
            tokio::select! {
                _ = leader.wait_for(|l| *l) => {}
                _ = terminated.cancelled() => {
                    return stopping.stop(None, election_stop, election).await;
                }
            }
            metrics.set_leader(true);
            info!("became the leader; starting controllers");
        }
        controllers = Some(controller::supervise(ctx, set.clone(), shutdown.clone()).await?);
        // A stop asked for meanwhile does not wait for every cache to sync.
        tokio::select! {
            _ = caches.wait_all_synced() => {}
            _ = terminated.cancelled() => {}
        }
    }
    let _ = ready_tx.send(true);
    info!(plugins = plugins.len(), "starting manager");

    let lost = match &mut election {
        Some(handle) => tokio::select! {
            end = handle => matches!(end, Ok(ElectionEnd::LostLeadership)),
            _ = terminated.cancelled() => false,
        },
        None => {
            terminated.cancelled().await;
            false
        }
    };
    if lost {
        // Another replica leads now: stop at once, reconciling nothing more (as
        // controller-runtime exits), and say so with a non-zero status.
        stopping.shutdown.cancel();
        stopping.servers_stop.cancel();
        anyhow::bail!("leader election lost");
    }
    stopping.stop(controllers, election_stop, election).await
}

/// A TLS server bound and the router it will serve.
type Bound = (TlsServer, axum::Router);

/// The admission webhooks the profile serves, bound (none when no plugin serves one).
async fn bind_webhooks(
    args: &RunArgs,
    env: &ProcessEnv,
    slots: &[PluginSlot],
    caches: &Arc<Caches>,
    applier: &Arc<Applier>,
    live: &LiveWebhookTable,
) -> anyhow::Result<Option<Bound>> {
    let table = env
        .profile
        .webhooks(WebhookTable::from_slots(slots).context("unable to create webhookSetup")?);
    if table.is_empty() {
        return Ok(None);
    }
    live.set(table);
    let bind = parse_bind_address(&args.webhook_bind_address)?
        .context("the webhook server needs an address")?;
    let config = TlsServerConfig {
        bind,
        cert_dir: args.webhook_cert_dir.clone(),
        enable_http2: args.enable_http2,
        ..Default::default()
    };
    let router = webhook::live_webhook_router(live.clone(), caches.clone(), applier.clone());
    Ok(Some((TlsServer::bind(config).await?, router)))
}

/// Rebuilds the served webhook table whenever a plugin is added, removed or moved to a new
/// slot.
async fn keep_webhook_table(
    set: Arc<PluginSet>,
    live: LiveWebhookTable,
    profile: crate::profile::Profile,
    shutdown: CancellationToken,
) {
    let mut changes = set.changes();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            changed = changes.changed() => if changed.is_err() { return },
        }
        match WebhookTable::from_slots(&set.slots()) {
            Ok(table) => {
                let table = profile.webhooks(table);
                info!(
                    paths = ?table.routes().map(|r| r.path.as_str()).collect::<Vec<_>>(),
                    "webhook routes updated"
                );
                live.set(table);
            }
            // The registry checks a plugin's paths before adding it; this is a defect.
            Err(e) => tracing::error!("the webhook routes were not updated: {e}"),
        }
    }
}

/// What a plugin added at run time (or moved to a new slot) must fit: its webhook paths next to
/// the others' (and a webhook server to serve them), its watches within what the caches hold.
fn serve_check(
    profile: crate::profile::Profile,
    webhooks_served: bool,
    caches: Arc<Caches>,
) -> crate::registry::swap::ServeCheck {
    Arc::new(move |candidate: &LoadedPlugin, others: &[PluginSlot]| {
        let mut slots = others.to_vec();
        slots.push(PluginSlot::new(candidate.clone()));
        let table = profile.webhooks(WebhookTable::from_slots(&slots).map_err(|e| e.to_string())?);
        let serves = table.routes().any(|r| r.plugin.name() == candidate.name());
        if serves && !webhooks_served {
            return Err("the plugin has webhooks and this host serves none (webhooks are disabled or no plugin served one at start-up); restart it with the plugin".into());
        }
        caches.admit(
            slots
                .iter()
                .map(|s| s.current().manifest().clone())
                .collect::<Vec<_>>()
                .iter(),
        )
    })
}

/// The webhook-configuration sync `args` ask for.
fn config_sync(
    args: &RunArgs,
    env: &ProcessEnv,
    client: kube::Client,
) -> anyhow::Result<WebhookConfigSync> {
    let endpoint = match &args.webhook_url {
        Some(url) => Endpoint::Url(url.clone()),
        None => Endpoint::Service {
            namespace: env
                .pod_namespace
                .clone()
                .context("--sync-webhook-configurations needs POD_NAMESPACE (the webhook Service's namespace) or --webhook-url")?,
            name: args.webhook_service.clone(),
            port: args.webhook_service_port,
        },
    };
    let ca = if args.webhook_ca_injected {
        CaSource::Injected
    } else {
        CaSource::CertDir(args.webhook_cert_dir.clone())
    };
    Ok(WebhookConfigSync::new(client, endpoint, ca))
}

/// The model-serving-api server with the plugins' API routes, bound (none when disabled):
/// the standalone server's routes, middleware, TLS parameters and certificate reloading
/// ([`crate::model_serving_api`]), reads from the controller's caches, its metrics on the
/// controller's `/metrics`. Unlike the standalone server it starts without a certificate
/// (the controller's `/readyz` waits for one).
async fn bind_model_serving_api(
    args: &RunArgs,
    config: &Config,
    slots: &[PluginSlot],
    caches: &Arc<Caches>,
) -> anyhow::Result<Option<Bound>> {
    use crate::model_serving_api::{self as msa, metrics::ApiMetrics};
    let Some(bind) = parse_bind_address(&args.model_serving_api_bind_address)? else {
        return Ok(None);
    };
    let routes = ApiRoutes::from_slots(slots).map_err(anyhow::Error::msg)?;
    info!(routes = ?routes.paths().collect::<Vec<_>>(), "plugin API routes");
    let cert = crate::webhook::ReloadingCert::with_interval(
        &args.model_serving_api_cert_dir,
        crate::webhook::crypto_provider(),
        crate::webhook::DEBOUNCE_INTERVAL,
    )
    .debounced();
    let server = TlsServer::bind(TlsServerConfig {
        name: "model-serving-api",
        bind,
        cert_dir: args.model_serving_api_cert_dir.clone(),
        enable_http2: args.enable_http2,
        ..Default::default()
    })
    .await?
    .with_certificate(Arc::new(cert))
    .tuned(msa::tuning());
    let api_metrics = ApiMetrics::new(false);
    {
        let api_metrics = api_metrics.clone();
        Metrics::global().add_source(Arc::new(move || api_metrics.render()));
    }
    let router = msa::router(
        routes.router(caches.clone(), AccessReviewer::new(config.clone())?),
        msa::RouterOptions {
            metrics: api_metrics,
            ..Default::default()
        },
    );
    Ok(Some((server, router)))
}

/// Whether the process is stopping: its TLS servers then close every connection after its
/// answer, and it is not ready.
#[derive(Clone, Default)]
struct Draining(Arc<std::sync::atomic::AtomicBool>);

impl Draining {
    fn start(&self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn ready_check(&self) -> servers::ReadyCheck {
        let draining = self.0.clone();
        Arc::new(move || !draining.load(std::sync::atomic::Ordering::SeqCst))
    }

    /// `router` answering with `Connection: close` once draining: a client then opens its next
    /// connection elsewhere, where a request sent on an idle connection the server is closing
    /// would fail with EOF (the apiserver does not retry a webhook call).
    fn closing_connections(&self, router: axum::Router) -> axum::Router {
        let draining = self.0.clone();
        router.layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                let draining = draining.clone();
                async move {
                    let mut response = next.run(request).await;
                    if draining.load(std::sync::atomic::Ordering::SeqCst) {
                        response.headers_mut().insert(
                            http::header::CONNECTION,
                            http::HeaderValue::from_static("close"),
                        );
                    }
                    response
                }
            },
        ))
    }
}

/// What a stop needs.
struct Stopping {
    /// Controllers and background tasks.
    shutdown: CancellationToken,
    /// The servers (probes, metrics, webhooks, model-serving API).
    servers_stop: CancellationToken,
    servers: Servers,
    draining: Draining,
    /// How long the TLS servers drain before they stop accepting.
    drain: std::time::Duration,
}

impl Stopping {
    /// A graceful stop. The process turns not ready and its TLS servers answer with
    /// `Connection: close` for the drain; meanwhile the controllers finish the reconciles in
    /// progress (bounded) and the leader election ends (releasing the lease when configured
    /// to), so a successor is not held up by the drain. Then the servers stop accepting and let
    /// the requests in flight finish.
    async fn stop(
        self,
        controllers: Option<JoinSet<()>>,
        election_stop: CancellationToken,
        election: Option<tokio::task::JoinHandle<ElectionEnd>>,
    ) -> anyhow::Result<()> {
        let Self {
            shutdown,
            servers_stop,
            mut servers,
            draining,
            drain,
        } = self;
        info!(drain = ?drain, "shutting down");
        let drained = tokio::time::Instant::now() + drain;
        draining.start();
        shutdown.cancel();
        if let Some(mut controllers) = controllers {
            let grace = controller::SHUTDOWN_GRACE + std::time::Duration::from_secs(1);
            let stopped = tokio::time::timeout(grace, async {
                while controllers.join_next().await.is_some() {}
            })
            .await;
            if stopped.is_err() {
                tracing::warn!("controllers still running after {grace:?}; stopping them");
            }
        }
        election_stop.cancel();
        if let Some(handle) = election {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), handle).await;
        }
        tokio::time::sleep_until(drained).await;
        servers_stop.cancel();
        while let Some(r) = servers.join_next().await {
            if let Ok(Err(e)) = r {
                tracing::warn!("a server stopped with an error: {e:#}");
            }
        }
        info!("stopped");
        Ok(())
    }
}

/// Extra certificate authorities for `https://` plugin sources: the PEM file named by
/// `ODH_PLUGIN_SOURCE_CA_FILE` (a private mirror), if set.
fn plugin_source_roots() -> anyhow::Result<Vec<rustls::pki_types::CertificateDer<'static>>> {
    use rustls::pki_types::pem::PemObject;
    let Some(path) = std::env::var_os("ODH_PLUGIN_SOURCE_CA_FILE") else {
        return Ok(Vec::new());
    };
    rustls::pki_types::CertificateDer::pem_file_iter(&path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .with_context(|| {
            format!(
                "reading ODH_PLUGIN_SOURCE_CA_FILE {}",
                std::path::Path::new(&path).display()
            )
        })
}

/// How often a rejected plugin candidate (e.g. an unreachable source) is tried again.
const REGISTRY_RETRY: std::time::Duration = std::time::Duration::from_secs(30);

/// The plugins this process starts with: the default built-ins (what upstream runs) unless
/// `--no-default-plugins`, and the `--plugin` names (built-in) or `.wasm` files. A built-in starts with the settings
/// its registration entry derives from the environment.
fn load_plugins(
    args: &RunArgs,
    bearer_token: Option<&str>,
) -> anyhow::Result<(PluginEngine, Vec<LoadedPlugin>)> {
    let mut wanted: Vec<String> = if args.no_default_plugins {
        Vec::new()
    } else {
        builtins::defaults().map(|b| b.name.to_string()).collect()
    };
    for plugin in &args.plugins {
        if !wanted.contains(plugin) {
            wanted.push(plugin.clone());
        }
    }
    let options = EngineOptions {
        cache_dir: args.plugin_cache_dir.clone(),
        precompiled_dir: Some(args.plugin_precompiled_dir.clone()),
        ..Default::default()
    };
    load_plugins_named(&wanted, options, bearer_token)
}

/// Loads `wanted` (built-in names or `.wasm` files), each built-in with the settings its
/// registration entry derives from the environment.
pub(crate) fn load_plugins_named(
    wanted: &[String],
    options: EngineOptions,
    bearer_token: Option<&str>,
) -> anyhow::Result<(PluginEngine, Vec<LoadedPlugin>)> {
    let engine = PluginEngine::new(options)?;
    let mut sources = Vec::new();
    for spec in wanted {
        let path = std::path::Path::new(spec);
        if path.exists() {
            sources.push((Source::File(path.to_path_buf()), std::fs::read(path)?));
        } else if let Some(bytes) = builtins::component(spec) {
            sources.push((Source::Builtin(spec.clone()), bytes.to_vec()));
        } else {
            anyhow::bail!("--plugin {spec:?} is neither a file nor a built-in plugin");
        }
    }
    // Compile every distinct component in parallel, then load each.
    let bytes: Vec<&[u8]> = sources.iter().map(|(_, b)| b.as_slice()).collect();
    for compiled in engine.compile_all(&bytes) {
        compiled?;
    }
    let mut plugins = Vec::new();
    for (source, bytes) in &sources {
        let settings = match source {
            Source::Builtin(name) => builtins::find(name)
                .map(|b| b.starting_settings(|k| std::env::var(k).ok(), bearer_token))
                .unwrap_or_default(),
            _ => serde_json::json!({}),
        };
        let (grants, limits) = match source {
            Source::Builtin(name) => (
                builtins::default_grants(name),
                builtins::default_limits(name),
            ),
            _ => Default::default(),
        };
        let plugin = LoadedPlugin::load(
            &engine,
            LoadRequest::new(source.clone(), bytes)
                .settings(settings)
                .grants(grants)
                .limits(limits),
        )
        .map_err(|e| anyhow::anyhow!("loading plugin {source}: {e}"))?;
        info!(
            plugin = plugin.name(),
            version = plugin.manifest().version,
            sha256 = plugin.sha256(),
            "plugin loaded"
        );
        plugins.push(plugin);
    }
    // A `--plugin` file carrying a default built-in's name serves in its place.
    let mut seen = std::collections::BTreeSet::new();
    let mut unique = Vec::new();
    for plugin in plugins.into_iter().rev() {
        if seen.insert(plugin.name().to_string()) {
            unique.push(plugin);
        } else {
            info!(
                plugin = plugin.name(),
                "a later --plugin of the same name replaces this one"
            );
        }
    }
    unique.reverse();
    if unique.is_empty() {
        info!("no plugins enabled (use --plugin)");
    }
    Ok((engine, unique))
}

/// The bearer token of the process's own identity, captured once as upstream does: a
/// kubeconfig's static token, else the in-cluster ServiceAccount token file.
fn bearer_token(config: &Config) -> Option<String> {
    use secrecy::ExposeSecret;
    config
        .auth_info
        .token
        .as_ref()
        .map(|t| t.expose_secret().to_string())
        .or_else(|| {
            std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/token")
                .ok()
                .map(|t| t.trim().to_string())
        })
        .filter(|t| !t.is_empty())
}

/// Kube config resolution as upstream: `--kubeconfig`, then KUBECONFIG, in-cluster, ~/.kube/config.
pub(crate) async fn connect(
    kubeconfig: Option<&std::path::Path>,
) -> anyhow::Result<(Config, Client, Option<String>)> {
    let config = match kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?
        }
        None => Config::infer()
            .await
            .context("unable to load kube config")?,
    };
    let token = bearer_token(&config);
    Ok((
        config.clone(),
        crate::api_client::counted_client(config)?,
        token,
    ))
}

/// Cancelled on SIGTERM or SIGINT. Both are listened to from the call on, for the life of the
/// process: once a handler is installed the default action (exit) is gone, so a signal that came
/// while nothing listened (e.g. between winning the lease and starting the controllers) would be
/// lost and the process would hold its lease until SIGKILL.
pub(crate) fn termination() -> anyhow::Result<CancellationToken> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = interrupt.recv() => {}
        }
        cancel.cancel();
    });
    Ok(token)
}
