//! Reconcile loops built from plugin manifests: watches on the shared caches, events mapped to
//! requests, a de-duplicating queue with back-off, workers calling the plugin and the applier.

pub mod queue;

use std::sync::Arc;

use kube::ResourceExt;
use kube::api::DynamicObject;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::applier::{Applier, Primary};
use crate::cache::{Caches, Change, KindCache};
use crate::gvk::Gvk;
use crate::label_selector::LabelSelector;
use crate::metrics::{Metrics, ReconcileResult};
use crate::plugin::wire::{Controller, Event, Mapping, RequestKey};
use crate::plugin::{
    CallError, ClusterView, GuestError, Plugin, PluginSlot, ReconcileInput, WatchEventInput,
};
use queue::WorkQueue;

/// Re-queues every primary object of one controller.
type ResyncHook = Arc<dyn Fn() + Send + Sync>;

/// What every controller shares.
pub struct Shared {
    pub caches: Arc<Caches>,
    pub applier: Arc<Applier>,
    /// Workers per controller.
    pub concurrency: usize,
    /// Reconciles completed (any result), for tests and diagnostics.
    pub reconciles: std::sync::atomic::AtomicU64,
    /// Per plugin slot: re-queue every primary of its controllers (after a swap).
    resyncs: std::sync::Mutex<Vec<(String, ResyncHook)>>,
}

impl Shared {
    pub fn new(caches: Arc<Caches>, applier: Arc<Applier>, concurrency: usize) -> Arc<Self> {
        Arc::new(Self {
            caches,
            applier,
            concurrency,
            reconciles: Default::default(),
            resyncs: Default::default(),
        })
    }

    /// Re-reconciles every primary object of the controllers serving from slot `plugin`.
    pub fn resync(&self, plugin: &str) {
        let hooks: Vec<_> = self
            .resyncs
            .lock()
            .expect("resync lock")
            .iter()
            .filter(|(p, _)| p == plugin)
            .map(|(_, f)| f.clone())
            .collect();
        for hook in hooks {
            hook();
        }
    }

    pub fn reconcile_count(&self) -> u64 {
        self.reconciles.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Starts every controller of every plugin, each plugin in a slot of its own.
pub async fn start_all(
    shared: Arc<Shared>,
    plugins: &[Plugin],
    shutdown: CancellationToken,
) -> anyhow::Result<JoinSet<()>> {
    let slots: Vec<PluginSlot> = plugins.iter().cloned().map(PluginSlot::new).collect();
    start_slots(shared, &slots, shutdown).await
}

/// Starts every controller of the plugins serving in `slots` (their manifests at this time);
/// each runs until `shutdown` and calls whatever version its slot holds.
pub async fn start_slots(
    shared: Arc<Shared>,
    slots: &[PluginSlot],
    shutdown: CancellationToken,
) -> anyhow::Result<JoinSet<()>> {
    let mut set = JoinSet::new();
    for slot in slots {
        let plugin = slot.current();
        // The kinds a plugin reads must be cached before its first call.
        for gvk in &plugin.capabilities().reads {
            if shared.caches.ensure(gvk).await?.is_none() {
                tracing::info!(plugin = plugin.name(), kind = %gvk, "a kind the plugin reads is not served; its reads will fail");
            }
        }
        for spec in plugin.manifest().controllers.clone() {
            let (shared, plugin, shutdown) = (shared.clone(), slot.clone(), shutdown.clone());
            set.spawn(async move {
                let name = spec.name.clone();
                if let Err(e) = run(shared, plugin, spec, shutdown).await {
                    tracing::error!(controller = name, "controller stopped: {e:#}");
                }
            });
        }
    }
    Ok(set)
}

struct Loop {
    shared: Arc<Shared>,
    plugin: PluginSlot,
    spec: Controller,
    primary: Arc<KindCache>,
    selector: LabelSelector,
    queue: Arc<WorkQueue<RequestKey>>,
}

/// Runs one controller until `shutdown`.
pub async fn run(
    shared: Arc<Shared>,
    plugin: PluginSlot,
    spec: Controller,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let Some(primary) = shared.caches.ensure(&spec.primary).await? else {
        tracing::warn!(controller = spec.name, kind = %spec.primary, "the primary kind is not served; controller disabled");
        return Ok(());
    };
    let selector = match &spec.primary_label_selector {
        Some(s) => LabelSelector::parse(s)?,
        None => LabelSelector::everything(),
    };
    let ctl = Arc::new(Loop {
        shared,
        plugin,
        spec,
        primary,
        selector,
        queue: WorkQueue::new(),
    });
    let mut tasks = JoinSet::new();

    ctl.clone()
        .watch(&mut tasks, ctl.primary.clone(), Source::Primary);
    for gvk in ctl.spec.owns.clone() {
        match ctl.shared.caches.ensure(&gvk).await? {
            Some(cache) => ctl.clone().watch(&mut tasks, cache, Source::Owned),
            None => {
                tracing::info!(controller = ctl.spec.name, kind = %gvk, "owned kind not served; not watched")
            }
        }
    }
    for w in ctl.spec.watches.clone() {
        match ctl.shared.caches.ensure(&w.gvk).await? {
            Some(cache) => ctl.clone().watch(
                &mut tasks,
                cache,
                Source::Watch(
                    w.mapping,
                    w.label_selector
                        .as_deref()
                        .map(LabelSelector::parse)
                        .transpose()?,
                ),
            ),
            None if w.optional => {
                tracing::info!(controller = ctl.spec.name, kind = %w.gvk, "optional kind not served; not watched")
            }
            None => {
                tracing::warn!(controller = ctl.spec.name, kind = %w.gvk, "a required watched kind is not served; controller disabled");
                return Ok(());
            }
        }
    }
    ctl.shared.caches.wait_all_synced().await;
    {
        let weak = Arc::downgrade(&ctl);
        let hook: ResyncHook = Arc::new(move || {
            if let Some(ctl) = weak.upgrade() {
                for obj in ctl.primary.list() {
                    ctl.enqueue_primary(&obj);
                }
            }
        });
        let name = ctl.plugin.name().to_string();
        ctl.shared
            .resyncs
            .lock()
            .expect("resync lock")
            .push((name, hook));
    }
    // Everything that exists now gets one reconcile (the queue drops duplicates).
    for obj in ctl.primary.list() {
        ctl.enqueue_primary(&obj);
    }
    Metrics::global().register_controller(&ctl.spec.name, ctl.shared.concurrency.max(1));
    tracing::info!(
        controller = ctl.spec.name,
        workers = ctl.shared.concurrency,
        "controller started"
    );
    for _ in 0..ctl.shared.concurrency.max(1) {
        let ctl = ctl.clone();
        tasks.spawn(async move {
            while let Some(key) = ctl.queue.get().await {
                let metrics = Metrics::global();
                metrics.workqueue_depth(&ctl.spec.name, ctl.queue.len());
                let started = std::time::Instant::now();
                let result = {
                    let _active = metrics.active_worker(&ctl.spec.name);
                    ctl.reconcile(&key).await
                };
                if let Some(result) = result {
                    metrics.reconcile_done(&ctl.spec.name, result, started.elapsed());
                }
                ctl.shared
                    .reconciles
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                ctl.queue.done(&key);
            }
        });
    }
    shutdown.cancelled().await;
    ctl.queue.shutdown();
    tasks.abort_all();
    Ok(())
}

#[derive(Clone)]
enum Source {
    Primary,
    /// An owned kind: mapped through its controller owner reference.
    Owned,
    /// A watched kind with its mapping and label filter.
    Watch(Mapping, Option<LabelSelector>),
}

fn key_of(obj: &DynamicObject) -> RequestKey {
    RequestKey {
        namespace: obj.namespace(),
        name: obj.name_any(),
    }
}

impl Loop {
    fn watch(self: Arc<Self>, tasks: &mut JoinSet<()>, cache: Arc<KindCache>, source: Source) {
        let mut rx = cache.subscribe();
        let gvk = cache.gvk.clone();
        tasks.spawn(async move {
            loop {
                match rx.recv().await {
                    Ok(change) => self.map_change(&gvk, &source, change).await,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                        // Missed changes: reconcile everything rather than miss one.
                        tracing::warn!(controller = self.spec.name, kind = %gvk, missed = n, "watch fell behind; re-reconciling all");
                        for obj in self.primary.list() {
                            self.enqueue_primary(&obj);
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
            }
        });
    }

    fn enqueue_primary(&self, obj: &DynamicObject) {
        if self.selector.matches(obj.labels()) {
            self.queue.add(key_of(obj));
        }
    }

    fn owners_of(&self, obj: &DynamicObject, controller_only: bool) -> Vec<RequestKey> {
        let primary = &self.primary.resource;
        obj.owner_references()
            .iter()
            .filter(|r| r.kind == primary.kind && r.api_version == primary.api_version)
            .filter(|r| !controller_only || r.controller == Some(true))
            .map(|r| RequestKey {
                namespace: obj.namespace(),
                name: r.name.clone(),
            })
            .collect()
    }

    async fn map_change(&self, gvk: &Gvk, source: &Source, change: Change) {
        let obj = &change.object;
        let keys = match source {
            Source::Primary => return self.enqueue_primary(obj),
            Source::Owned => self.owners_of(obj, true),
            Source::Watch(mapping, filter) => {
                if filter.as_ref().is_some_and(|f| !f.matches(obj.labels())) {
                    return;
                }
                match mapping {
                    Mapping::Owner => self.owners_of(obj, false),
                    Mapping::SameName => vec![key_of(obj)],
                    Mapping::All => self
                        .primary
                        .list()
                        .iter()
                        .filter(|p| self.selector.matches(p.labels()))
                        .map(|p| key_of(p))
                        .collect(),
                    Mapping::Custom => self.custom_map(gvk, &change).await,
                }
            }
        };
        for k in keys {
            self.queue.add(k);
            Metrics::global().workqueue_add(&self.spec.name);
        }
    }

    async fn custom_map(&self, gvk: &Gvk, change: &Change) -> Vec<RequestKey> {
        let input = WatchEventInput {
            controller: self.spec.name.clone(),
            gvk: gvk.clone(),
            object: serde_json::to_string(&*change.object).unwrap_or_default(),
            deleted: change.deleted,
        };
        match self.plugin.current().map(input, self.cluster()).await {
            Ok(keys) => keys,
            Err(e) => {
                tracing::error!(
                    controller = self.spec.name,
                    "mapping a watched change failed: {e}"
                );
                vec![]
            }
        }
    }

    /// Runs the shadow candidate on the same request in the background and records whether its
    /// outcome differs. Nothing it decides is applied.
    fn compare_in_shadow(
        &self,
        shadow: Plugin,
        input: ReconcileInput,
        active: &Result<crate::plugin::wire::Outcome, CallError>,
    ) {
        let active = active
            .as_ref()
            .map(|o| serde_json::to_value(o).unwrap_or_default())
            .map_err(|e| e.metric_label());
        let cluster = self.cluster();
        let controller = self.spec.name.clone();
        tokio::spawn(async move {
            let key = format!(
                "{}/{}",
                input.key.namespace.as_deref().unwrap_or(""),
                input.key.name
            );
            let candidate = shadow
                .reconcile(input, cluster)
                .await
                .map(|o| serde_json::to_value(o).unwrap_or_default());
            let candidate = candidate.as_ref().map_err(|e| e.metric_label()).cloned();
            if candidate != active {
                Metrics::global().shadow_difference(shadow.name(), "reconcile");
                tracing::warn!(
                    plugin = shadow.name(),
                    controller,
                    object = key,
                    ?active,
                    ?candidate,
                    "shadow candidate decided differently"
                );
            }
        });
    }

    fn cluster(&self) -> Arc<dyn ClusterView> {
        self.shared.caches.clone()
    }

    /// Reconciles one key; `None` when there was nothing to do (filtered out).
    async fn reconcile(&self, key: &RequestKey) -> Option<ReconcileResult> {
        let object = self.primary.get(key.namespace.as_deref(), &key.name);
        if let Some(obj) = &object {
            if !self.selector.matches(obj.labels()) {
                return None;
            }
            let ours = self
                .spec
                .finalizer
                .as_ref()
                .is_some_and(|f| obj.finalizers().iter().any(|x| x == f));
            if obj.metadata.deletion_timestamp.is_some() && !ours {
                return None; // being deleted and nothing of ours holds it: nothing left to do
            }
        }
        let json = match object.as_deref().map(serde_json::to_string).transpose() {
            Ok(j) => j,
            Err(e) => {
                tracing::error!(controller = self.spec.name, "serializing {}: {e}", key.name);
                return Some(ReconcileResult::TerminalError);
            }
        };
        let input = ReconcileInput {
            controller: self.spec.name.clone(),
            key: key.clone(),
            object: json,
        };
        let primary = Primary {
            resource: &self.primary.resource,
            namespaced: self.primary.namespaced,
            object: object.as_deref(),
            namespace: key.namespace.as_deref(),
            name: &key.name,
        };
        // One version decides and its grants check the writes, even if a swap happens meanwhile.
        let plugin = self.plugin.current();
        let shadow_input = self.plugin.shadow().map(|s| (s, input.clone()));
        let result = plugin.reconcile(input, self.cluster()).await;
        if let Some((shadow, input)) = shadow_input {
            self.compare_in_shadow(shadow, input, &result);
        }
        let outcome = match result {
            Ok(o) => o,
            Err(e) => {
                return Some(
                    self.failed(
                        key,
                        &primary,
                        "ReconcileFailed",
                        &e.to_string(),
                        retryable(&e),
                    )
                    .await,
                );
            }
        };
        match self
            .shared
            .applier
            .apply_outcome(&plugin, self.spec.finalizer.as_deref(), &primary, &outcome)
            .await
        {
            Ok(()) if outcome.error.is_some() => {
                let error = outcome.error.as_ref().expect("checked");
                let message = format!(
                    "plugin {:?} reconcile failed ({}): {}",
                    plugin.name(),
                    error.kind(),
                    error.message()
                );
                let retry = !matches!(error, GuestError::Invalid(_));
                Some(
                    self.failed(key, &primary, "ReconcileFailed", &message, retry)
                        .await,
                )
            }
            Ok(()) => {
                self.queue.forget(key);
                match outcome.requeue_after_ms {
                    Some(ms) => {
                        self.queue
                            .add_after(key.clone(), std::time::Duration::from_millis(ms));
                        Some(ReconcileResult::RequeueAfter)
                    }
                    None => Some(ReconcileResult::Success),
                }
            }
            Err(e) => {
                let reason = match &e {
                    crate::applier::ApplyError::Refused { plugin, kind } => {
                        Metrics::global().refused_write(plugin, &kind.to_string());
                        "WriteRefused"
                    }
                    _ => "ApplyFailed",
                };
                Some(
                    self.failed(key, &primary, reason, &e.to_string(), true)
                        .await,
                )
            }
        }
    }

    async fn failed(
        &self,
        key: &RequestKey,
        primary: &Primary<'_>,
        reason: &str,
        message: &str,
        retry: bool,
    ) -> ReconcileResult {
        tracing::error!(
            controller = self.spec.name,
            namespace = key.namespace.as_deref().unwrap_or_default(),
            name = key.name,
            reason,
            "{message}"
        );
        if primary.object.is_some() {
            let ev = Event {
                type_: "Warning".into(),
                reason: reason.into(),
                message: message.into(),
                regarding: None,
            };
            self.shared.applier.event(primary, &ev).await;
        }
        if retry {
            self.queue.add_rate_limited(key.clone());
            Metrics::global().workqueue_retry(&self.spec.name);
            ReconcileResult::Error
        } else {
            ReconcileResult::TerminalError
        }
    }
}

/// `invalid` input will not get better by retrying; everything else is retried with back-off.
fn retryable(e: &CallError) -> bool {
    !matches!(e.guest_error(), Some(GuestError::Invalid(_)))
}
