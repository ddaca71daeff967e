//! Reconcile loops built from plugin manifests: watches on the shared caches, events mapped to
//! requests, a de-duplicating queue with back-off, workers calling the plugin (through
//! [`odh_plugin_runtime::dispatch`]) and the applier.
//!
//! The host runs its own loop rather than kube-runtime's `Controller`: kinds are dynamic (one
//! loop per manifest record, on caches shared by every plugin), the queue keeps
//! controller-runtime's semantics and metric names (what upstream's dashboards read), and a
//! loop calls whatever plugin version its slot serves at that moment.

mod filter;
pub mod queue;
mod supervisor;

pub use supervisor::supervise;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use kube::ResourceExt;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::applier::{Applier, ApplyError, Primary, StagedPrimary, StagedWriter};
use crate::cache::{CachedObject, Caches, Change, KindCache};
use odh_host_metrics::{Metrics, ReconcileResult};
use odh_label_selector::LabelSelector;
use odh_plugin_runtime::dispatch;
use odh_plugin_runtime::gvk::Gvk;
use odh_plugin_runtime::wire::{ControllerSpec, Event, EventType, Mapping, RequestKey};
use odh_plugin_runtime::{
    CallEnv, CallError, ClusterView, GuestError, PluginSlot, ReconcileInput, WatchEventInput,
};
use queue::WorkQueue;

/// Requeues a plugin asks for sooner than this back off per key (5 ms doubling, at least what
/// it asked) until a reconcile ends without one; later ones come exactly when asked.
pub const MIN_PLAIN_REQUEUE: std::time::Duration = std::time::Duration::from_secs(1);

/// What every controller loop shares.
pub struct ControllerContext {
    pub caches: Arc<Caches>,
    pub applier: Arc<Applier>,
    /// Workers per controller.
    pub concurrency: usize,
    /// How often every primary is reconciled without an event (controller-runtime's cache
    /// `SyncPeriod`, with up to 10% jitter): drift in what no watch sees is repaired. `None`:
    /// never.
    pub sync_period: Option<std::time::Duration>,
    /// Reconciles completed (any result), for tests and diagnostics.
    reconciles: std::sync::atomic::AtomicU64,
}

/// controller-runtime's default `SyncPeriod`.
pub const DEFAULT_SYNC_PERIOD: std::time::Duration = std::time::Duration::from_secs(10 * 3600);

impl ControllerContext {
    pub fn new(caches: Arc<Caches>, applier: Arc<Applier>, concurrency: usize) -> Arc<Self> {
        Self::with_sync_period(caches, applier, concurrency, Some(DEFAULT_SYNC_PERIOD))
    }

    pub fn with_sync_period(
        caches: Arc<Caches>,
        applier: Arc<Applier>,
        concurrency: usize,
        sync_period: Option<std::time::Duration>,
    ) -> Arc<Self> {
        Arc::new(Self {
            caches,
            applier,
            concurrency: concurrency.max(1),
            sync_period: sync_period.filter(|p| !p.is_zero()),
            reconciles: Default::default(),
        })
    }

    /// Reconciles completed so far, whatever their result: for tests that wait for the
    /// controllers to go quiet; not part of the API.
    #[doc(hidden)]
    pub fn reconcile_count(&self) -> u64 {
        self.reconciles.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Starts every controller of the plugins serving in `slots` (their manifests at this time);
/// each runs until `shutdown`, calls whatever version its slot holds, and re-reconciles every
/// primary object when the slot's version is swapped.
pub async fn start(
    ctx: Arc<ControllerContext>,
    slots: &[PluginSlot],
    shutdown: CancellationToken,
) -> anyhow::Result<JoinSet<()>> {
    let mut set = JoinSet::new();
    for slot in slots {
        let plugin = slot.current();
        // The kinds a plugin reads are cached before its first call.
        for gvk in &plugin.capabilities().reads {
            if ctx.caches.ensure(gvk).await?.is_none() {
                tracing::info!(plugin = plugin.name(), kind = %gvk, "a kind the plugin reads is not served; its reads will fail");
            }
        }
        for spec in plugin.manifest().controllers.clone() {
            let (ctx, slot, shutdown) = (ctx.clone(), slot.clone(), shutdown.clone());
            set.spawn(async move {
                let name = spec.name.clone();
                if let Err(e) = run(ctx, slot, spec, shutdown).await {
                    tracing::error!(controller = name, "controller stopped: {e:#}");
                }
            });
        }
    }
    Ok(set)
}

struct ControllerLoop {
    ctx: Arc<ControllerContext>,
    slot: PluginSlot,
    spec: ControllerSpec,
    primary: Arc<KindCache>,
    selector: LabelSelector,
    /// The primaries last seen inside `selector` (kept only when it selects less than
    /// everything): an update or relist that finds one outside is how the loop knows it left.
    selected: Mutex<HashSet<RequestKey>>,
    queue: Arc<WorkQueue<RequestKey>>,
}

/// Runs one controller until `shutdown`.
async fn run(
    ctx: Arc<ControllerContext>,
    slot: PluginSlot,
    spec: ControllerSpec,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let Some(primary) = served(&ctx, &spec.name, &spec.primary, "primary", &shutdown).await? else {
        return Ok(());
    };
    let selector = match &spec.primary_label_selector {
        Some(s) => LabelSelector::parse(s)?,
        None => LabelSelector::everything(),
    };
    let ctl = Arc::new(ControllerLoop {
        ctx,
        slot,
        spec,
        primary,
        selector,
        selected: Mutex::default(),
        queue: WorkQueue::new(),
    });
    let mut tasks = JoinSet::new();
    if !ctl.clone().start_watches(&mut tasks, &shutdown).await? {
        return Ok(());
    }
    ctl.ctx.caches.wait_all_synced().await;
    ctl.clone().resync_on_swap(&mut tasks);
    ctl.clone().resync_periodically(&mut tasks);
    // Everything that exists now gets one reconcile (the queue drops duplicates).
    ctl.enqueue_all(Sweep::Start);
    let mut workers = JoinSet::new();
    ctl.clone().spawn_workers(&mut workers);
    shutdown.cancelled().await;
    // No new work; a reconcile in progress finishes (its writes are not cut in half).
    ctl.queue.shutdown();
    tasks.abort_all();
    let finished = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while workers.join_next().await.is_some() {}
    })
    .await;
    if finished.is_err() {
        tracing::warn!(
            controller = ctl.spec.name,
            "reconciles still running after {SHUTDOWN_GRACE:?}; stopping them"
        );
        workers.abort_all();
    }
    Ok(())
}

/// How often a kind that is not served is looked for again, at most (from 1 s, doubling).
const UNSERVED_RETRY_MAX: std::time::Duration = std::time::Duration::from_secs(30);

/// The cache of `gvk` once the cluster serves it: at once, or after its CRD is installed
/// (discovery asked again with back-off, as upstream's manager restarts until it exists);
/// `None` when `shutdown` comes first.
async fn served(
    ctx: &ControllerContext,
    controller: &str,
    gvk: &Gvk,
    role: &str,
    shutdown: &CancellationToken,
) -> anyhow::Result<Option<Arc<KindCache>>> {
    if let Some(cache) = ctx.caches.ensure(gvk).await? {
        return Ok(Some(cache));
    }
    tracing::warn!(controller, kind = %gvk, "the {role} kind is not served; the controller waits for it");
    let mut wait = std::time::Duration::from_secs(1);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(None),
            _ = tokio::time::sleep(wait) => {}
        }
        if let Some(cache) = ctx.caches.ensure_fresh(gvk).await? {
            tracing::info!(controller, kind = %gvk, "the {role} kind is served now");
            return Ok(Some(cache));
        }
        wait = (wait * 2).min(UNSERVED_RETRY_MAX);
    }
}

/// How long reconciles in progress may take to finish once shutdown begins
/// (controller-runtime's graceful shutdown timeout).
pub const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// Why every primary is enqueued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sweep {
    /// The controller starts: the initial list.
    Start,
    /// A resync (periodic, a swapped version, a new kind, a watch that fell behind).
    Resync,
}

#[derive(Clone)]
enum WatchedAs {
    Primary,
    /// An owned kind: mapped through its controller owner reference.
    Owned,
    /// A watched kind with its mapping and label filter.
    Watch(Mapping, Option<LabelSelector>),
}

/// Whether the key of a reconcile names an object that exists outside the selector (handed to
/// the plugin as gone).
enum Outside {
    No,
    Cached(Arc<CachedObject>),
    /// Not in the cache: gone, or outside a cache filtered by the selector.
    Unknown,
}

/// `period` plus up to 10% of it, at random.
fn jittered(period: std::time::Duration) -> std::time::Duration {
    use std::hash::{BuildHasher, Hasher};
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    period + period.mul_f64((random % 1000) as f64 / 10_000.0)
}

fn key_of(obj: &CachedObject) -> RequestKey {
    RequestKey {
        namespace: obj.namespace().map(str::to_string),
        name: obj.name().to_string(),
    }
}

impl ControllerLoop {
    /// Subscribes to the primary, owned and watched kinds. A required watched kind that is not
    /// served is waited for (the controller starts once it is); an owned or optional one is
    /// watched once it is. False when `shutdown` came first.
    async fn start_watches(
        self: Arc<Self>,
        tasks: &mut JoinSet<()>,
        shutdown: &CancellationToken,
    ) -> anyhow::Result<bool> {
        self.clone()
            .watch(tasks, self.primary.clone(), WatchedAs::Primary);
        for gvk in self.spec.owns.clone() {
            match self.ctx.caches.ensure(&gvk).await? {
                Some(cache) => self.clone().watch(tasks, cache, WatchedAs::Owned),
                None => self
                    .clone()
                    .watch_when_served(tasks, gvk, WatchedAs::Owned, shutdown),
            }
        }
        for w in self.spec.watches.clone() {
            let filter = w
                .label_selector
                .as_deref()
                .map(LabelSelector::parse)
                .transpose()?;
            let source = WatchedAs::Watch(w.mapping, filter);
            match self.ctx.caches.ensure(&w.gvk).await? {
                Some(cache) => self.clone().watch(tasks, cache, source),
                None if w.optional => {
                    self.clone()
                        .watch_when_served(tasks, w.gvk.clone(), source, shutdown)
                }
                None => match served(
                    &self.ctx,
                    &self.spec.name,
                    &w.gvk,
                    "required watched",
                    shutdown,
                )
                .await?
                {
                    Some(cache) => self.clone().watch(tasks, cache, source),
                    None => return Ok(false),
                },
            }
        }
        Ok(true)
    }

    /// Watches `gvk` once the cluster serves it, then reconciles every primary (objects of the
    /// new kind may concern any of them).
    fn watch_when_served(
        self: Arc<Self>,
        tasks: &mut JoinSet<()>,
        gvk: Gvk,
        source: WatchedAs,
        shutdown: &CancellationToken,
    ) {
        let shutdown = shutdown.clone();
        tasks.spawn(async move {
            let role = match source {
                WatchedAs::Owned => "owned",
                _ => "optional watched",
            };
            match served(&self.ctx, &self.spec.name, &gvk, role, &shutdown).await {
                Ok(Some(cache)) => {
                    let changes = self.clone().watch_loop(cache.clone(), source);
                    cache.wait_synced().await;
                    self.enqueue_all(Sweep::Resync);
                    changes.await;
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(controller = self.spec.name, kind = %gvk, "looking for the kind failed: {e:#}")
                }
            }
        });
    }

    /// Every sync period (jittered by up to 10%, so controllers and replicas do not all
    /// relist at once), every primary is reconciled.
    fn resync_periodically(self: Arc<Self>, tasks: &mut JoinSet<()>) {
        let Some(period) = self.ctx.sync_period else {
            return;
        };
        tasks.spawn(async move {
            loop {
                tokio::time::sleep(jittered(period)).await;
                tracing::debug!(controller = self.spec.name, "periodic resync");
                self.enqueue_all(Sweep::Resync);
            }
        });
    }

    /// After the slot swaps in another version, every primary is reconciled by it.
    fn resync_on_swap(self: Arc<Self>, tasks: &mut JoinSet<()>) {
        let mut swaps = self.slot.swaps();
        tasks.spawn(async move {
            while swaps.changed().await.is_ok() {
                self.enqueue_all(Sweep::Resync);
            }
        });
    }

    fn spawn_workers(self: Arc<Self>, tasks: &mut JoinSet<()>) {
        Metrics::global().register_controller(&self.spec.name, self.ctx.concurrency);
        tracing::info!(
            controller = self.spec.name,
            workers = self.ctx.concurrency,
            "controller started"
        );
        // client-go updates the in-progress gauges every 500 ms: a stuck worker shows as a
        // growing `workqueue_unfinished_work_seconds`.
        let ctl = self.clone();
        tasks.spawn(async move {
            let mut tick = tokio::time::interval(std::time::Duration::from_millis(500));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = ctl.queue.shut_down() => return,
                }
                let (total, longest) = ctl.queue.in_progress();
                Metrics::global().workqueue_in_progress(&ctl.spec.name, total, longest);
            }
        });
        for _ in 0..self.ctx.concurrency {
            let ctl = self.clone();
            tasks.spawn(async move {
                while let Some((key, waited)) = ctl.queue.get_timed().await {
                    let metrics = Metrics::global();
                    metrics.workqueue_waited(&ctl.spec.name, waited);
                    metrics.workqueue_depth(&ctl.spec.name, ctl.queue.len());
                    let started = std::time::Instant::now();
                    let span = tracing::info_span!(
                        target: "odh_trace",
                        "reconcile",
                        odh.controller = %ctl.spec.name,
                        k8s.namespace.name = key.namespace.as_deref(),
                        odh.name = %key.name,
                        odh.result = tracing::field::Empty,
                    );
                    let result = {
                        use tracing::Instrument as _;
                        let _active = metrics.active_worker(&ctl.spec.name);
                        ctl.reconcile(&key).instrument(span.clone()).await
                    };
                    let outcome = result.map_or("skipped".to_string(), |r| format!("{r:?}"));
                    span.record("odh.result", outcome);
                    if let Some(result) = result {
                        metrics.reconcile_done(&ctl.spec.name, result, started.elapsed());
                    }
                    ctl.ctx
                        .reconciles
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if let Some(worked) = ctl.queue.done(&key) {
                        metrics.workqueue_worked(&ctl.spec.name, worked);
                    }
                }
            });
        }
    }

    fn watch(self: Arc<Self>, tasks: &mut JoinSet<()>, cache: Arc<KindCache>, source: WatchedAs) {
        tasks.spawn(self.watch_loop(cache, source));
    }

    /// Maps every change of `cache`'s kind to the primaries it concerns, until the cache closes.
    fn watch_loop(
        self: Arc<Self>,
        cache: Arc<KindCache>,
        source: WatchedAs,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut rx = cache.subscribe();
        let gvk = cache.gvk.clone();
        // A relist reports no deletes and no objects that left: the primary's watch compares
        // what it knows with the cache after each one (and once at start, to learn it).
        let mut relists = (matches!(source, WatchedAs::Primary) && !self.selector.is_everything())
            .then(|| cache.relists());
        async move {
            loop {
                let relisted = async {
                    match relists.as_mut() {
                        Some(r) => r.changed().await.is_ok(),
                        None => std::future::pending().await,
                    }
                };
                let relists_ended = tokio::select! {
                    biased;
                    change = rx.recv() => {
                        match change {
                            Ok(change) => self.map_change(&gvk, &source, change).await,
                            Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                                // Missed changes: reconcile everything rather than miss one.
                                tracing::warn!(controller = self.spec.name, kind = %gvk, missed = n, "watch fell behind; re-reconciling all");
                                if matches!(source, WatchedAs::Primary) {
                                    self.recheck_selection();
                                }
                                self.enqueue_all(Sweep::Resync);
                            }
                            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                        }
                        false
                    }
                    open = relisted => {
                        if open {
                            self.recheck_selection();
                        }
                        !open
                    }
                };
                if relists_ended {
                    relists = None;
                }
            }
        }
    }

    /// Every primary inside the selector, and admitted by the primary's event filter: its
    /// names always, its creations at start (the initial list is a list of creations to
    /// controller-runtime's predicates).
    fn enqueue_all(&self, sweep: Sweep) {
        let filter = self.spec.filter_of(&self.spec.primary);
        if sweep == Sweep::Start && filter.is_some_and(|f| !f.create) {
            return;
        }
        for obj in self.primary.list() {
            if filter.is_none_or(|f| f.admits_name(obj.name())) {
                self.enqueue_primary(&obj);
            }
        }
    }

    fn enqueue_primary(&self, obj: &CachedObject) {
        if self.selector.matches(obj.labels()) {
            self.queue.add(key_of(obj));
        }
    }

    /// A change of the primary kind. An object inside the selector is reconciled; one that
    /// leaves it is reconciled once more, as controller-runtime's label-filtered informer
    /// reports it (deleted). From a cache filtered by the selector that is a delete already,
    /// reconciled as any delete. The primary's event filter decides last (an object leaving
    /// the selector is a deletion to it).
    fn primary_changed(&self, change: &Change) {
        let obj = &change.object;
        let filter = self.spec.filter_of(&self.spec.primary);
        let passes = |seen| filter.is_none_or(|f| filter::passes(f, change, seen));
        if self.selector.is_everything() {
            if passes(filter::Seen::of(change)) {
                self.enqueue_primary(obj);
            }
            return;
        }
        let key = key_of(obj);
        let inside = !change.deleted && self.selector.matches(obj.labels());
        let was_inside = {
            let mut selected = self.selected.lock().expect("selected lock");
            if inside {
                !selected.insert(key.clone())
            } else {
                selected.remove(&key)
            }
        };
        let seen = if was_inside && !inside {
            filter::Seen::Deleted
        } else {
            filter::Seen::of(change)
        };
        if (inside || was_inside || (change.deleted && self.selector.matches(obj.labels())))
            && passes(seen)
        {
            self.queue.add(key);
        }
    }

    /// Relearns which primaries are inside the selector from the cache, and reconciles those
    /// that were and no longer are (left it or went while their changes were not seen).
    fn recheck_selection(&self) {
        let inside: HashSet<RequestKey> = self
            .primary
            .list()
            .iter()
            .filter(|o| self.selector.matches(o.labels()))
            .map(|o| key_of(o))
            .collect();
        let left: Vec<RequestKey> = {
            let mut selected = self.selected.lock().expect("selected lock");
            let left = selected.difference(&inside).cloned().collect();
            *selected = inside;
            left
        };
        for key in left {
            self.queue.add(key);
        }
    }

    fn owners_of(&self, obj: &CachedObject, controller_only: bool) -> Vec<RequestKey> {
        let primary = &self.primary.kind.resource;
        obj.owner_references()
            .iter()
            .filter(|r| r.kind == primary.kind && r.api_version == primary.api_version)
            .filter(|r| !controller_only || r.controller == Some(true))
            .map(|r| RequestKey {
                namespace: obj.namespace().map(str::to_string),
                name: r.name.clone(),
            })
            .collect()
    }

    async fn map_change(&self, gvk: &Gvk, source: &WatchedAs, change: Change) {
        let obj = &change.object;
        // The primary's filter is applied with its selector (`primary_changed`).
        if !matches!(source, WatchedAs::Primary)
            && let Some(f) = self.spec.filter_of(gvk)
            && !filter::passes(f, &change, filter::Seen::of(&change))
        {
            return;
        }
        let keys = match source {
            WatchedAs::Primary => return self.primary_changed(&change),
            WatchedAs::Owned => self.owners_of(obj, true),
            WatchedAs::Watch(mapping, filter) => {
                // A shared cache may hold more than this watch declared: it sees only its own,
                // and a change that takes an object out of its selector (what a label-filtered
                // informer reports as a deletion).
                let seen_by = |f: &LabelSelector| {
                    f.matches(obj.labels())
                        || change.old.as_ref().is_some_and(|o| f.matches(o.labels()))
                };
                if filter.as_ref().is_some_and(|f| !seen_by(f)) {
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
            object: change.object.json().to_string(),
            // Only a component exporting `change-mapping` receives it: not copied for others.
            old_object: change
                .old
                .as_deref()
                .filter(|_| self.slot.current().maps_changes())
                .map(|o| o.json().to_string()),
            deleted: change.deleted,
        };
        match dispatch::map(&self.slot, input, CallEnv::live(self.cluster())).await {
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

    fn cluster(&self) -> Arc<dyn ClusterView> {
        self.ctx.caches.clone()
    }

    /// Reconciles one key; `None` when there was nothing to do (filtered out).
    async fn reconcile(&self, key: &RequestKey) -> Option<ReconcileResult> {
        let (object, outside) = match self.primary.get(key.namespace.as_deref(), &key.name) {
            // Outside the selector an object is, to this controller, gone: what a cache
            // filtered by the selector shows (and upstream's), whatever other plugins made the
            // shared cache hold.
            Some(obj) if !self.selector.matches(obj.labels()) => (None, Outside::Cached(obj)),
            // A deleting object is handed to the plugin whatever finalizers it carries, as
            // controller-runtime hands it to a reconciler: a plugin may hold it by another
            // finalizer (the Model Registry's) that only it can let go of.
            Some(obj) => (Some(obj), Outside::No),
            None => (None, Outside::Unknown),
        };
        let input = ReconcileInput {
            controller: self.spec.name.clone(),
            key: key.clone(),
            object: object.as_deref().map(|o| o.json().to_string()),
        };
        // The applier reads the whole primary (finalizers, status, owner references).
        let object = match object.as_deref().map(CachedObject::to_object).transpose() {
            Ok(p) => p.map(Arc::new),
            Err(e) => {
                tracing::error!(
                    controller = self.spec.name,
                    "reading {} from the cache: {e}",
                    key.name
                );
                return Some(ReconcileResult::TerminalError);
            }
        };
        let primary = Primary {
            kind: &self.primary.kind,
            object: object.as_deref(),
            namespace: key.namespace.as_deref(),
            name: &key.name,
        };
        // One version decides and its capabilities checked the writes, even if a swap happens
        // meanwhile.
        let writer = StagedWriter::new(
            self.ctx.applier.clone(),
            StagedPrimary {
                kind: self.primary.kind.clone(),
                object: object.clone(),
                namespace: key.namespace.clone(),
                name: key.name.clone(),
            },
        );
        let env = CallEnv::live(self.cluster()).with_writer(Arc::new(writer));
        let (plugin, result) = dispatch::reconcile(&self.slot, input, env).await;
        let outcome = match result {
            Ok(o) => o,
            Err(e) => return Some(self.call_failed(key, &primary, &e).await),
        };
        let applied = self
            .ctx
            .applier
            .apply_outcome(
                plugin.name(),
                self.spec.finalizer.as_deref(),
                &primary,
                &outcome,
            )
            .await;
        match (applied, &outcome.error) {
            (Ok(()), Some(error)) => {
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
            (Ok(()), None) => {
                if let Err(e) = self.release_outside(key, outside).await {
                    return Some(
                        self.failed(key, &primary, "ApplyFailed", &e.to_string(), true)
                            .await,
                    );
                }
                match outcome
                    .requeue_after_ms
                    .map(std::time::Duration::from_millis)
                {
                    // A plugin asking again at once, every time, must not spin: soon requeues
                    // back off per key as controller-runtime's `Requeue: true` does.
                    Some(asked) if asked < MIN_PLAIN_REQUEUE => {
                        self.queue.add_rate_limited_at_least(key.clone(), asked);
                        Metrics::global().workqueue_retry(&self.spec.name);
                        Some(ReconcileResult::Requeue)
                    }
                    Some(asked) => {
                        self.queue.forget(key);
                        self.queue.add_after(key.clone(), asked);
                        Some(ReconcileResult::RequeueAfter)
                    }
                    None => {
                        self.queue.forget(key);
                        Some(ReconcileResult::Success)
                    }
                }
            }
            (Err(e), _) => {
                // A conflict means the world moved on: the back-off earned by earlier failures
                // (e.g. while an input did not exist yet) no longer says anything, and keeping
                // it would delay a compare-and-swap retry by minutes. Repeated conflicts still
                // back off, from the start.
                if e.is_conflict() {
                    self.queue.forget(key);
                }
                Some(
                    self.failed(key, &primary, "ApplyFailed", &e.to_string(), true)
                        .await,
                )
            }
        }
    }

    /// Removes the manifest finalizer from an object outside the selector once the plugin has
    /// had its reconcile of it as gone: the controller is not called for it again, so the
    /// finalizer would hold its deletion for good.
    async fn release_outside(&self, key: &RequestKey, outside: Outside) -> Result<(), ApplyError> {
        let Some(finalizer) = self.spec.finalizer.as_deref() else {
            return Ok(());
        };
        let object = match outside {
            Outside::No => return Ok(()),
            Outside::Cached(obj) => obj.to_object().map_err(|e| {
                ApplyError::Invalid(format!("{} {}: {e}", self.spec.primary, key.name))
            })?,
            // A cache filtered by the selector holds no object outside it: ask.
            Outside::Unknown if self.primary.filter.is_some() => {
                let live = self
                    .ctx
                    .caches
                    .read_live(&self.primary, key.namespace.as_deref(), &key.name)
                    .await
                    .map_err(|source| ApplyError::Kube {
                        what: format!("reading {} {}", self.spec.primary, key.name),
                        source,
                    })?;
                match live {
                    Some(obj) if !self.selector.matches(obj.labels()) => obj,
                    _ => return Ok(()),
                }
            }
            Outside::Unknown => return Ok(()),
        };
        let primary = Primary {
            kind: &self.primary.kind,
            object: Some(&object),
            namespace: key.namespace.as_deref(),
            name: &key.name,
        };
        self.ctx
            .applier
            .release_finalizer(&primary, finalizer)
            .await
    }

    /// A plugin call that returned no outcome: reported, counted, retried unless the plugin
    /// said the input is invalid.
    async fn call_failed(
        &self,
        key: &RequestKey,
        primary: &Primary<'_>,
        e: &CallError,
    ) -> ReconcileResult {
        let reason = if let Some((plugin, kind)) = e.refused_write() {
            Metrics::global().refused_write(plugin, &kind.to_string());
            "WriteRefused"
        } else {
            if let CallError::Trap { .. } = e {
                // A guest trap is the plugin's panic: counted as controller-runtime counts a
                // reconciler's.
                Metrics::global().reconcile_panicked(&self.spec.name);
            }
            "ReconcileFailed"
        };
        let retry = !matches!(e.guest_error(), Some(GuestError::Invalid(_)));
        self.failed(key, primary, reason, &e.to_string(), retry)
            .await
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
                type_: EventType::Warning,
                reason: reason.into(),
                message: message.into(),
                regarding: None,
            };
            self.ctx.applier.event(primary, &ev).await;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resyncs_are_jittered_by_up_to_a_tenth() {
        let period = std::time::Duration::from_secs(36_000);
        let spread: HashSet<std::time::Duration> = (0..50).map(|_| jittered(period)).collect();
        assert!(
            spread
                .iter()
                .all(|d| *d >= period && *d < period.mul_f64(1.1))
        );
        assert!(spread.len() > 1, "not every controller at the same instant");
    }
}
