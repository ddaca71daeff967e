//! `odh-model-controller run`, in two steps as a policy server is: [`Host::build`] connects,
//! loads the plugins and binds every listener (an address in use stops the process there, with
//! its server named, as controller-runtime does); [`Host::serve`] serves probes, metrics,
//! webhooks and the plugins' API routes on every replica, follows the plugins ConfigMap, runs the
//! controllers on the leader, and stops gracefully. The process environment is read once, by
//! the build ([`crate::profile`], [`crate::builtins`], [`crate::startup`]).

use std::sync::Arc;

use anyhow::Context;
use kube::{Client, Config};
use odh_host_metrics::Metrics;
use odh_plugin_runtime::{LoadedPlugin, PluginEngine, PluginSet, PluginSlot};
use odh_plugin_sources::Registry;
use odh_plugin_sources::swap::ServeCheck;
use odh_reconcile::applier::Applier;
use odh_reconcile::cache::{CacheFilters, Caches};
use odh_reconcile::controller::{self, ControllerContext};
use odh_reconcile::leader::{ElectionEnd, LeaderElector, LeaseConfig, lease_namespace};
use odh_serve::api_routes::{AccessReviewer, ApiRoutes};
use odh_serve::model_serving_api::{self as msa, metrics::ApiMetrics};
use odh_serve::probes::{self, Readiness, Server, parse_bind_address};
use odh_serve::tls::{self, ReloadingCert, TlsServer, TlsServerConfig};
use odh_serve::webhook::config_sync::{CaSource, Endpoint, WebhookConfigSync};
use odh_serve::webhook::{self, LiveWebhookTable, WebhookTable};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::builtins::{self, DEPLOYMENT};
use crate::cli::RunArgs;
use crate::profile::{ProcessEnv, Profile};
use crate::shutdown::{Draining, Servers, Stopping};
use crate::startup::{self, REGISTRY_RETRY};

pub async fn run(args: RunArgs) -> anyhow::Result<()> {
    Host::build(args).await?.serve().await
}

/// A TLS server bound and the router it will serve.
type Bound = (TlsServer, axum::Router);

/// Everything the controller serves with, built and bound; nothing serves yet.
pub struct Host {
    args: RunArgs,
    env: ProcessEnv,
    /// Cancelled on SIGTERM or SIGINT (listened to from the start of the build on).
    terminated: CancellationToken,
    client: Client,
    engine: PluginEngine,
    plugins: Vec<LoadedPlugin>,
    set: Arc<PluginSet>,
    caches: Arc<Caches>,
    applier: Arc<Applier>,
    live_table: LiveWebhookTable,
    webhooks: Option<Bound>,
    api: Option<Bound>,
    probes: Vec<Server>,
    draining: Draining,
    ready: watch::Sender<bool>,
}

impl Host {
    /// Connects, loads the plugins the process starts with (a built-in refusing the settings
    /// the environment gives it stops the start) and binds every listener.
    pub async fn build(args: RunArgs) -> anyhow::Result<Self> {
        let env = ProcessEnv::from_env();
        // A mistyped ceiling stops the start, not the first ConfigMap change.
        args.plugin_ceiling()?;
        let terminated = startup::termination()?;
        let limit = odh_reconcile::api_client::RateLimit {
            qps: args.kube_api_qps,
            burst: args.kube_api_burst,
        };
        let (config, client, identity) =
            startup::connect(args.kubeconfig.as_deref(), Some(limit)).await?;
        let version = client
            .apiserver_version()
            .await
            .context("unable to reach the API server")?;
        info!(version = %version.git_version, "connected to the API server");
        info!("{}", env.profile.describe());

        let (engine, plugins) = startup::load_plugins(&args, identity)?;
        // Webhooks, API routes and controllers call whatever version a slot holds: the registry
        // swaps them, and adds and removes plugins in the set.
        let slots: Vec<PluginSlot> = plugins.iter().cloned().map(PluginSlot::new).collect();
        let set = PluginSet::new(slots.iter().cloned());
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

        let (ready, ready_flag) = watch::channel(false);
        let mut readiness = Readiness::new(ready_flag);
        let live_table = LiveWebhookTable::default();
        let draining = Draining::default();
        readiness = readiness.with_check("shutting-down", draining.ready_check());
        let webhooks = if env.webhooks_enabled {
            bind_webhooks(&args, env.profile, &slots, &caches, &applier, &live_table).await?
        } else {
            info!("Webhooks are disabled via environment variable.");
            None
        };
        if let Some((server, _)) = &webhooks {
            let cert = server.certificate();
            readiness =
                readiness.with_check("webhook-certificate", Arc::new(move || cert.is_loaded()));
        }
        let api = bind_model_serving_api(&args, &config, &slots, &caches).await?;
        if let Some((server, _)) = &api {
            let cert = server.certificate();
            readiness = readiness.with_check(
                "model-serving-api-certificate",
                Arc::new(move || cert.is_loaded()),
            );
        }
        let mut bound_probes = Vec::new();
        if let Some(addr) = parse_bind_address(&args.health_probe_bind_address)? {
            bound_probes.push(probes::bind_health(addr, readiness).await?);
        }
        if let Some(addr) = parse_bind_address(&args.metrics_bind_address)? {
            let metrics = Metrics::global().clone();
            bound_probes.push(if args.metrics_secure {
                let auth = odh_serve::metrics_auth::MetricsAuth::new(client.clone());
                let records = crate::record_route::router(set.clone());
                probes::bind_secure_metrics_with(addr, metrics, auth, records).await?
            } else {
                probes::bind_metrics(addr, metrics).await?
            });
        }
        Ok(Self {
            args,
            env,
            terminated,
            client,
            engine,
            plugins,
            set,
            caches,
            applier,
            live_table,
            webhooks,
            api,
            probes: bound_probes,
            draining,
            ready,
        })
    }

    /// Serves until SIGTERM or SIGINT (a graceful stop) or until another replica takes the
    /// lead (an error, as controller-runtime exits).
    pub async fn serve(mut self) -> anyhow::Result<()> {
        let webhooks_served = self.webhooks.is_some();
        let stopping = self.spawn_servers();
        self.follow_plugins(webhooks_served, &stopping.shutdown)?;
        let election_stop = CancellationToken::new();
        let (controllers, mut election) =
            match self.lead_and_reconcile(&stopping, &election_stop).await? {
                Led::Reconciling {
                    controllers,
                    election,
                } => (controllers, election),
                Led::StoppedFirst { election } => {
                    return stopping.stop(None, election_stop, Some(election)).await;
                }
            };
        let _ = self.ready.send(true);
        info!(plugins = self.plugins.len(), "starting manager");

        let lost = match &mut election {
            Some(handle) => tokio::select! {
                end = handle => matches!(end, Ok(ElectionEnd::LostLeadership)),
                _ = self.terminated.cancelled() => false,
            },
            None => {
                self.terminated.cancelled().await;
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

    /// Every bound server serving, and what stops them: the TLS servers drain before they stop,
    /// and stop after the controllers.
    fn spawn_servers(&mut self) -> Stopping {
        let servers_stop = CancellationToken::new();
        let mut servers = Servers::new();
        for server in std::mem::take(&mut self.probes) {
            servers.spawn(server.serve(servers_stop.clone().cancelled_owned()));
        }
        let tls = self.webhooks.take().into_iter().chain(self.api.take());
        let mut drain = std::time::Duration::ZERO;
        for (server, router) in tls {
            drain = self.args.shutdown_drain_duration;
            let stop = servers_stop.clone();
            let router = self.draining.closing_connections(router);
            servers.spawn(async move { server.serve(router, stop.cancelled_owned()).await });
        }
        Stopping {
            shutdown: CancellationToken::new(),
            servers_stop,
            servers,
            draining: self.draining.clone(),
            drain,
        }
    }

    /// The served webhooks follow the plugin set (and the cluster's configurations follow them
    /// when asked to); every replica follows the plugins ConfigMap, so a standby's webhooks
    /// serve the versions the leader's controllers run.
    fn follow_plugins(
        &self,
        webhooks_served: bool,
        shutdown: &CancellationToken,
    ) -> anyhow::Result<()> {
        if webhooks_served {
            tokio::spawn(keep_webhook_table(
                self.set.clone(),
                self.live_table.clone(),
                self.env.profile,
                shutdown.clone(),
            ));
            if self.args.sync_webhook_configurations {
                let sync = config_sync(&self.args, &self.env, self.client.clone())?;
                tokio::spawn(sync.run(self.live_table.clone(), shutdown.clone()));
            }
        } else if self.args.sync_webhook_configurations {
            info!("no webhook is served: the webhook configurations are not synced");
        }
        match &self.env.pod_namespace {
            Some(namespace) => {
                let check = serve_check(self.env.profile, webhooks_served, self.caches.clone());
                let registry = Registry::new(
                    self.client.clone(),
                    namespace.clone(),
                    self.engine.clone(),
                    self.set.clone(),
                    builtins::catalog(),
                )
                .with_extra_roots(startup::plugin_source_roots()?)
                .with_file_dir(self.args.plugin_file_dir.clone())
                .with_record_dir(
                    self.args
                        .plugin_cache_dir
                        .as_ref()
                        .map(|d| d.join("records")),
                )
                .with_ceiling(self.args.plugin_ceiling()?)
                .with_serve_check(check);
                tokio::spawn(Arc::new(registry).run(REGISTRY_RETRY, shutdown.clone()));
            }
            None => info!("POD_NAMESPACE is not set: the plugins ConfigMap is not watched"),
        }
        Ok(())
    }

    /// The controllers, on the leader only when electing (a standby is ready meanwhile: its
    /// plugins and webhooks are), with the election's task.
    async fn lead_and_reconcile(
        &self,
        stopping: &Stopping,
        election_stop: &CancellationToken,
    ) -> anyhow::Result<Led> {
        // With the plugins ConfigMap watched, a plugin with controllers may arrive at any time.
        let wanted = self.env.profile.runs_controllers()
            && (self.env.pod_namespace.is_some()
                || self
                    .plugins
                    .iter()
                    .any(|p| !p.manifest().controllers.is_empty()));
        if !wanted {
            return Ok(Led::Reconciling {
                controllers: None,
                election: None,
            });
        }
        let mut election = None;
        if self.args.leader_elect {
            let namespace = lease_namespace(self.env.pod_namespace.clone())?;
            let lease = LeaseConfig {
                lease_duration: self.args.leader_elect_lease_duration,
                renew_deadline: self.args.leader_elect_renew_deadline,
                retry_period: self.args.leader_elect_retry_period,
                release_on_cancel: self.args.leader_elect_release_on_cancel,
                ..LeaseConfig::new(namespace, DEPLOYMENT.lease_name)
            };
            // The election ends after the controllers stopped, so a lease released on shutdown
            // is released when nothing of ours reconciles any more.
            let elector = LeaderElector::new(self.client.clone(), lease)?;
            // A standby says so, as client-go's election does.
            Metrics::global().set_leader(DEPLOYMENT.lease_name, false);
            let (mut leader, handle) = elector.run(election_stop.clone().cancelled_owned());
            let _ = self.ready.send(true);
            tokio::select! {
                _ = leader.wait_for(|l| *l) => {}
                _ = self.terminated.cancelled() => {
                    return Ok(Led::StoppedFirst { election: handle });
                }
            }
            election = Some(handle);
            Metrics::global().set_leader(DEPLOYMENT.lease_name, true);
            info!("became the leader; starting controllers");
        }
        let ctx = ControllerContext::with_sync_period(
            self.caches.clone(),
            self.applier.clone(),
            self.args.max_concurrent_reconciles,
            Some(self.args.sync_period),
        );
        let controllers =
            controller::supervise(ctx, self.set.clone(), stopping.shutdown.clone()).await?;
        // A stop asked for meanwhile does not wait for every cache to sync.
        tokio::select! {
            _ = self.caches.wait_all_synced() => {}
            _ = self.terminated.cancelled() => {}
        }
        Ok(Led::Reconciling {
            controllers: Some(controllers),
            election,
        })
    }
}

/// Where the controllers stand once `serve` started them.
enum Led {
    /// Reconciling (or nothing to reconcile), with the election's task when electing.
    Reconciling {
        controllers: Option<JoinSet<()>>,
        election: Option<JoinHandle<ElectionEnd>>,
    },
    /// A stop came before this replica led.
    StoppedFirst { election: JoinHandle<ElectionEnd> },
}

/// The admission webhooks the profile serves, bound (none when no plugin serves one).
async fn bind_webhooks(
    args: &RunArgs,
    profile: Profile,
    slots: &[PluginSlot],
    caches: &Arc<Caches>,
    applier: &Arc<Applier>,
    live: &LiveWebhookTable,
) -> anyhow::Result<Option<Bound>> {
    let table =
        profile.webhooks(WebhookTable::from_slots(slots).context("unable to create webhookSetup")?);
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
    let limit = match args.webhook_max_requests_in_flight {
        Some(n) => webhook::InFlightLimit::new(usize::try_from(n).unwrap_or(usize::MAX)),
        None => webhook::InFlightLimit::for_table(&live.current()),
    };
    info!(
        max_requests_in_flight = limit.requests,
        "admission requests beyond the webhook server's room queue for up to {:?}", limit.max_wait
    );
    let router = webhook::gated_webhook_router(
        live.clone(),
        caches.clone(),
        applier.clone(),
        webhook::AdmissionGate::new(limit),
    );
    Ok(Some((TlsServer::bind(config).await?, router)))
}

/// Rebuilds the served webhook table whenever a plugin is added, removed or moved to a new
/// slot.
async fn keep_webhook_table(
    set: Arc<PluginSet>,
    live: LiveWebhookTable,
    profile: Profile,
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
fn serve_check(profile: Profile, webhooks_served: bool, caches: Arc<Caches>) -> ServeCheck {
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
    Ok(
        WebhookConfigSync::new(client, builtins::webhook_names(), endpoint, ca)
            .excluding(
                env.pod_namespace
                    .clone()
                    .into_iter()
                    .chain(args.webhook_excluded_namespaces.iter().cloned()),
            )
            .excluding_labelled(
                DEPLOYMENT
                    .control_plane_namespace_labels
                    .iter()
                    .map(|l| l.to_string()),
            ),
    )
}

/// The model-serving-api server with the plugins' API routes, bound (none when disabled):
/// the standalone server's routes, middleware, TLS parameters and certificate reloading
/// ([`odh_serve::model_serving_api`]), reads from the controller's caches, its metrics on the
/// controller's `/metrics`. Unlike the standalone server it starts without a certificate
/// (the controller's `/readyz` waits for one).
async fn bind_model_serving_api(
    args: &RunArgs,
    config: &Config,
    slots: &[PluginSlot],
    caches: &Arc<Caches>,
) -> anyhow::Result<Option<Bound>> {
    let Some(bind) = parse_bind_address(&args.model_serving_api_bind_address)? else {
        return Ok(None);
    };
    let routes = ApiRoutes::from_slots(slots).map_err(anyhow::Error::msg)?;
    info!(routes = ?routes.paths().collect::<Vec<_>>(), "plugin API routes");
    let cert = ReloadingCert::with_interval(
        &args.model_serving_api_cert_dir,
        tls::crypto_provider(),
        tls::DEBOUNCE_INTERVAL,
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
    .tuned(msa::tuning(
        msa::DEFAULT_READ_TIMEOUT,
        msa::DEFAULT_IDLE_TIMEOUT,
    ));
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
