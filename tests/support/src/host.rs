//! The host under test: plugins built by `make plugins`, loaded as the host loads them, and
//! controllers of those plugins running against the test cluster.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use kube::Client;
use odh_model_controller::applier::Applier;
use odh_model_controller::cache::{CacheFilters, Caches};
use odh_model_controller::controller::{self, ControllerContext};
use odh_model_controller::gvk::Gvk;
use odh_model_controller::plugin::wire::Operation;
use odh_model_controller::plugin::{
    AdmissionInput, EngineOptions, LoadRequest, LoadedPlugin, PluginEngine, PluginSlot, Source,
};
use tokio_util::sync::CancellationToken;

/// One engine per test process: compiled components are shared by its tests.
pub fn engine() -> PluginEngine {
    static ENGINE: OnceLock<PluginEngine> = OnceLock::new();
    ENGINE
        .get_or_init(|| PluginEngine::new(EngineOptions::default()).expect("wasmtime engine"))
        .clone()
}

/// The component bytes of a plugin (`target/plugins/<name>.wasm`, built if needed).
pub fn component(name: &str) -> (Source, Vec<u8>) {
    let path = crate::plugin_wasm(name).expect("plugin component");
    let bytes = std::fs::read(&path).expect("reading the plugin component");
    (Source::File(path), bytes)
}

/// A plugin loaded with the grants it declares, default limits and empty settings.
pub fn load(name: &str) -> LoadedPlugin {
    load_with(name, |r| r)
}

/// A plugin loaded with its request adjusted by `configure` (settings, grants, limits).
pub fn load_with(
    name: &str,
    configure: impl FnOnce(LoadRequest<'_>) -> LoadRequest<'_>,
) -> LoadedPlugin {
    let (source, bytes) = component(name);
    // What a built-in of that name may change whoever manages it, as the host grants it (the
    // other grants stay each test's to give).
    let grants = odh_model_controller::plugin::Grants {
        foreign_writes: odh_model_controller::builtins::default_grants(name).foreign_writes,
        ..Default::default()
    };
    let request = LoadRequest::new(source, &bytes).grants(grants);
    LoadedPlugin::load(&engine(), configure(request))
        .unwrap_or_else(|e| panic!("loading plugin {name}: {e}"))
}

/// An admission request to `path` for `object` (its kind, namespace and name taken from it), as
/// the apiserver would send it: uid `test`, resource guessed from the kind, no old object.
pub fn admission(path: &str, operation: Operation, object: serde_json::Value) -> AdmissionInput {
    let gvk = Gvk::of_object(&object).expect("an object with apiVersion and kind");
    let field = |key: &str| object["metadata"][key].as_str().map(str::to_string);
    AdmissionInput {
        uid: "test".into(),
        path: path.into(),
        resource: format!("{}s", gvk.kind.to_ascii_lowercase()),
        gvk,
        sub_resource: None,
        operation,
        namespace: field("namespace"),
        name: field("name"),
        object: Some(object.into()),
        old_object: None,
        dry_run: false,
        user_info: serde_json::json!({}).into(),
    }
}

/// Controllers running on a test's runtime, and what they run with.
pub struct StartedControllers {
    pub ctx: Arc<ControllerContext>,
    /// One slot per plugin, in the order given: swap a version in through these.
    pub slots: Vec<PluginSlot>,
    /// The controller tasks: dropping them stops the controllers.
    pub tasks: tokio::task::JoinSet<()>,
}

/// The controllers of `plugins`, started on the calling test's runtime with `client` and
/// running until `shutdown` (or until the returned tasks are dropped): caches filtered as the
/// manifests declare, `workers` per controller.
pub async fn start_controllers(
    client: Client,
    plugins: Vec<LoadedPlugin>,
    workers: usize,
    shutdown: CancellationToken,
) -> anyhow::Result<StartedControllers> {
    let filters = CacheFilters::from_manifests(plugins.iter().map(LoadedPlugin::manifest));
    start_controllers_with(client, plugins, filters, workers, shutdown).await
}

/// [`start_controllers`] with caches filtered by `filters` instead of the plugins' manifests
/// (what other plugins' manifests would make of them).
pub async fn start_controllers_with(
    client: Client,
    plugins: Vec<LoadedPlugin>,
    filters: CacheFilters,
    workers: usize,
    shutdown: CancellationToken,
) -> anyhow::Result<StartedControllers> {
    let slots: Vec<PluginSlot> = plugins.into_iter().map(PluginSlot::new).collect();
    let caches = Caches::new(client.clone(), filters);
    // As `run` starts it by default: the Go controller's `manager` is taken over.
    let applier = Arc::new(Applier::new(client, caches.clone(), None).adopting(["manager".into()]));
    let ctx = ControllerContext::new(caches, applier, workers);
    let tasks = controller::start(ctx.clone(), &slots, shutdown).await?;
    Ok(StartedControllers { ctx, slots, tasks })
}

/// What [`controllers_running`] started.
pub struct RunningControllers {
    pub ctx: Arc<ControllerContext>,
    pub slots: Vec<PluginSlot>,
}

/// What the controllers of [`controllers_running_with`] run with, made by its setup hook on the
/// controllers' own runtime.
pub struct Setup {
    /// The client the controllers use (a proxy's, say).
    pub client: Client,
    pub plugins: Vec<LoadedPlugin>,
    /// Workers per controller.
    pub workers: usize,
    /// Kept as long as the controllers run (a proxy or a stand-in serving on their runtime).
    keep: Vec<Box<dyn std::any::Any>>,
    /// Run on the controllers' runtime once they are started, before the first caller returns.
    after_start: Vec<Pin<Box<dyn Future<Output = ()>>>>,
}

impl Setup {
    /// The controllers of `plugins` on `client`, `workers` per controller.
    pub fn new(client: Client, plugins: Vec<LoadedPlugin>, workers: usize) -> Self {
        Self {
            client,
            plugins,
            workers,
            keep: Vec::new(),
            after_start: Vec::new(),
        }
    }

    /// Keeps `value` alive as long as the controllers run.
    pub fn keep(mut self, value: impl std::any::Any) -> Self {
        self.keep.push(Box::new(value));
        self
    }

    /// Runs `step` once the controllers are started (they watch), before any test goes on.
    pub fn after_start(mut self, step: impl Future<Output = ()> + 'static) -> Self {
        self.after_start.push(Box::pin(step));
        self
    }
}

/// The setup hook of [`controllers_running_with`]: given the test cluster's admin client.
type SetupHook = Box<dyn FnOnce(Client) -> Pin<Box<dyn Future<Output = Setup>>> + Send>;

/// The controllers of the test binary, started once by [`controllers_running`] or
/// [`controllers_running_with`].
static RUNNING: OnceLock<RunningControllers> = OnceLock::new();

/// Runs the controllers of `plugins` for the whole test binary, on a runtime of their own
/// (each test has its own runtime; the controllers must outlive every test), with caches
/// filtered as the plugins' manifests declare. Started once: later calls return the running
/// set, whatever they pass.
pub fn controllers_running(
    plugins: impl FnOnce() -> Vec<LoadedPlugin>,
    workers: usize,
) -> &'static RunningControllers {
    RUNNING.get_or_init(|| {
        let plugins = plugins();
        start_running(Box::new(move |client| {
            Box::pin(async move { Setup::new(client, plugins, workers) })
        }))
    })
}

/// [`controllers_running`] with a setup hook run first on the controllers' runtime: given the
/// test cluster's admin client, it returns the [`Setup`] to run with (another client, say
/// through a proxy; namespaces or a stand-in made first; values to keep; steps once started).
/// Environment variables the plugins read (test-only overrides) are set there too, before any
/// plugin runs. Started once per test binary, as [`controllers_running`], whose set it shares.
pub fn controllers_running_with<F, Fut>(setup: F) -> &'static RunningControllers
where
    F: FnOnce(Client) -> Fut + Send + 'static,
    Fut: Future<Output = Setup> + 'static,
{
    RUNNING.get_or_init(|| start_running(Box::new(move |client| Box::pin(setup(client)))))
}

fn start_running(setup: SetupHook) -> RunningControllers {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("controller runtime");
        runtime.block_on(async move {
            let config = crate::namespace::client_config()
                .await
                .expect("test cluster config");
            let client = Client::try_from(config).expect("client");
            let Setup {
                client,
                plugins,
                workers,
                keep,
                after_start,
            } = setup(client).await;
            let started = start_controllers(client, plugins, workers, CancellationToken::new())
                .await
                .expect("controllers start");
            for step in after_start {
                step.await;
            }
            tx.send((started.ctx.clone(), started.slots.clone()))
                .expect("test waiting");
            let _keep = (started.tasks, keep);
            std::future::pending::<()>().await;
        });
    });
    let (ctx, slots) = rx.recv().expect("controller thread started");
    RunningControllers { ctx, slots }
}

/// The kinds with webhooks in `table`, in the order upstream registers them: the order of the
/// registration list, then plugins that are not built in, by name.
pub fn webhook_kinds(table: &odh_model_controller::webhook::WebhookTable) -> Vec<String> {
    let rank = |plugin: &str| {
        odh_model_controller::builtins::BUILTINS
            .iter()
            .position(|b| b.name == plugin)
            .unwrap_or(usize::MAX)
    };
    // Within a plugin, the order its manifest declares its webhooks in.
    let declared = |r: &odh_model_controller::webhook::WebhookRoute| {
        r.plugin
            .current()
            .manifest()
            .webhooks
            .iter()
            .position(|w| w.path == r.path)
            .unwrap_or(usize::MAX)
    };
    let mut routes: Vec<_> = table.routes().collect();
    routes.sort_by_key(|r| {
        (
            rank(r.plugin.name()),
            r.plugin.name().to_string(),
            declared(r),
        )
    });
    let mut kinds: Vec<String> = Vec::new();
    for r in routes {
        // Upstream names the NIM Account's webhook setup `NIMAccount`.
        let kind = if r.gvk.group == "nim.opendatahub.io" && r.gvk.kind == "Account" {
            "NIMAccount".to_string()
        } else {
            r.gvk.kind.clone()
        };
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    kinds
}

/// Waits (within `timing`) until the controllers of `ctx` complete no reconcile for a whole
/// second: what was queued or retrying soon has run, so a later change is what the next
/// reconcile sees. The count is of every controller sharing `ctx`, which can only make the wait
/// longer.
pub async fn quiet(ctx: &ControllerContext, timing: crate::Timing) -> anyhow::Result<()> {
    crate::eventually("the controllers are quiet", timing, || async {
        let count = ctx.reconcile_count();
        crate::consistently(
            "no reconcile for a second",
            crate::Timing::within(std::time::Duration::from_secs(1)),
            || async {
                anyhow::ensure!(ctx.reconcile_count() == count, "still reconciling");
                Ok(())
            },
        )
        .await
    })
    .await
}

/// Records every call of `slot`'s plugin from now on, in memory: for tests that count what
/// reached a plugin.
pub fn record_every_call(slot: &PluginSlot) -> Arc<odh_model_controller::plugin::record::Recorder> {
    use odh_model_controller::plugin::record::{RecordConfig, Recorder};
    let every_call = RecordConfig {
        sample_rate: 1.0,
        ..RecordConfig::default()
    };
    let recorder = Recorder::new(every_call, None).expect("a recorder in memory");
    slot.set_recorder(Some(recorder.clone()));
    recorder
}

/// The names of the primaries `controller` reconciled in `namespace`, as `recorder` saw them
/// (one entry per call).
pub fn reconciled_names(
    recorder: &odh_model_controller::plugin::record::Recorder,
    controller: &str,
    namespace: &str,
) -> Vec<String> {
    use odh_model_controller::plugin::record::{RecordLine, RecordedCall};
    recorder
        .all_lines()
        .iter()
        .filter_map(
            |line| match serde_json::from_str::<RecordLine>(line).ok()?.call {
                RecordedCall::Reconcile { input, .. }
                    if input.controller == controller
                        && input.key.namespace.as_deref() == Some(namespace) =>
                {
                    Some(input.key.name)
                }
                _ => None,
            },
        )
        .collect()
}
