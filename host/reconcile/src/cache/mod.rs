//! Shared caches: one watch per kind, shared by every controller and by the plugins'
//! `cluster` reads, holding each object as the JSON plugins get ([`CachedObject`]).
//!
//! A kind's cache holds what the plugins declare they watch ([`CacheFilters`]): the union of
//! the label selectors on their primaries and watches of that kind. Reads are complete
//! whatever the filter: an object a filtered cache does not hold, or a list the filter does not
//! cover, is read from the API server, so a plugin sees what its native tests see.

mod object;
mod store;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, TypeMeta};
use kube::discovery::{self, Scope};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::{broadcast, watch};

use odh_label_selector::LabelSelector;
use odh_plugin_runtime::ClusterView;
use odh_plugin_runtime::gvk::Gvk;
use odh_plugin_runtime::wire::Manifest;

pub use object::CachedObject;
use object::for_plugins;
use store::Objects;

/// A kind's API resource and whether it is namespaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedKind {
    pub resource: ApiResource,
    pub namespaced: bool,
}

/// The label filter of each kind's cache, derived from the plugins' manifests. A kind no
/// plugin watches with a selector is cached whole.
#[derive(Debug, Clone, Default)]
pub struct CacheFilters {
    by_kind: HashMap<Gvk, LabelSelector>,
}

impl CacheFilters {
    /// The union of what `manifests` declare per kind: a primary's `primary-label-selector`, a
    /// watch's `label-selector`; an owned kind, or a declaration without a selector, asks for
    /// everything. Selectors that differ cannot be expressed as one and make the cache whole
    /// too (logged). Kinds that are only read do not shape a cache.
    pub fn from_manifests<'a>(manifests: impl IntoIterator<Item = &'a Manifest>) -> Self {
        let mut declared: HashMap<Gvk, Vec<Option<String>>> = HashMap::new();
        for m in manifests {
            for c in &m.controllers {
                let mut add = |gvk: &Gvk, selector: Option<&String>| {
                    declared
                        .entry(gvk.clone())
                        .or_default()
                        .push(selector.cloned());
                };
                add(&c.primary, c.primary_label_selector.as_ref());
                for gvk in &c.owns {
                    add(gvk, None);
                }
                for w in &c.watches {
                    add(&w.gvk, w.label_selector.as_ref());
                }
            }
        }
        let mut by_kind = HashMap::new();
        for (gvk, selectors) in declared {
            let parsed: Option<Vec<LabelSelector>> = selectors
                .iter()
                .map(|s| s.as_deref().and_then(|s| LabelSelector::parse(s).ok()))
                .collect();
            let Some(parsed) = parsed else { continue };
            let first = &parsed[0];
            if parsed
                .iter()
                .all(|s| s.is_within(first) && first.is_within(s))
            {
                if !first.is_everything() {
                    by_kind.insert(gvk, first.clone());
                }
            } else {
                tracing::info!(kind = %gvk, "plugins watch this kind with different label selectors; it is cached whole");
            }
        }
        Self { by_kind }
    }

    /// The selector `gvk` is cached with; `None`: every object.
    pub fn of(&self, gvk: &Gvk) -> Option<&LabelSelector> {
        self.by_kind.get(gvk)
    }
}

/// A change seen by a kind's watch.
#[derive(Debug, Clone)]
pub struct Change {
    pub object: Arc<CachedObject>,
    /// The object as the cache held it before this change: none for an object it did not
    /// hold (a creation, the initial list).
    pub old: Option<Arc<CachedObject>>,
    pub deleted: bool,
}

/// The cache of one kind.
pub struct KindCache {
    pub gvk: Gvk,
    pub kind: ResolvedKind,
    /// What the cache holds: every object, or those matching this selector.
    pub filter: Option<LabelSelector>,
    store: Arc<RwLock<Objects>>,
    changes: broadcast::Sender<Change>,
    synced: watch::Receiver<bool>,
    awaited: Arc<AwaitedVersions>,
}

/// Versions the host wrote and the watch has not delivered yet, per object.
///
/// Right after a write the cache still shows the object as it was (or not at all) until the
/// watch delivers the write. A reconcile in that window would take the stale copy for a change
/// and write the same content again: in a burst, one extra request per object. A watch
/// delivers the versions of an object in order, so once it delivers the written version,
/// everything before it has been seen; a relist may skip it, so a relist forgets every
/// awaited version, and so does [`AWAIT_LIMIT`] (a write the cache can never see).
///
/// A write's answer can come after the watch delivered it and a later change of the object
/// (another writer's update, a deletion): the store then holds neither that version nor
/// anything equal to it, and awaiting it would take the cache for "behind" until the limit and
/// skip a needed apply. One watch stream delivers its events in resourceVersion order, so a
/// version at or below the highest one delivered (when both are numbers, as etcd's are) has
/// been delivered already and is not awaited.
#[derive(Default)]
struct AwaitedVersions {
    /// (namespace, name) → (written resourceVersion, when).
    by_object: Mutex<HashMap<ObjectName, (String, Instant)>>,
    /// The highest numeric resourceVersion the watch delivered.
    delivered: std::sync::atomic::AtomicU64,
}

type ObjectName = (Option<String>, String);

/// How long a written version is awaited at most.
const AWAIT_LIMIT: Duration = Duration::from_secs(10);

impl AwaitedVersions {
    fn seen(&self, obj: &CachedObject) {
        if let Some(rv) = numeric_version(obj.resource_version()) {
            self.delivered
                .fetch_max(rv, std::sync::atomic::Ordering::SeqCst);
        }
        let mut map = self.by_object.lock().expect("awaited lock");
        if map.is_empty() {
            return;
        }
        let key = (obj.namespace().map(str::to_string), obj.name().to_string());
        if map.get(&key).map(|(rv, _)| rv.as_str()) == obj.resource_version() {
            map.remove(&key);
        }
    }

    fn forget_all(&self) {
        self.by_object.lock().expect("awaited lock").clear();
    }

    /// Whether the watch delivered `resource_version` already (judged by number).
    fn delivered(&self, resource_version: &str) -> bool {
        numeric_version(Some(resource_version))
            .is_some_and(|rv| rv <= self.delivered.load(std::sync::atomic::Ordering::SeqCst))
    }
}

fn numeric_version(resource_version: Option<&str>) -> Option<u64> {
    resource_version?.parse().ok()
}

impl KindCache {
    pub fn get(&self, namespace: Option<&str>, name: &str) -> Option<Arc<CachedObject>> {
        let namespace = namespace.filter(|_| self.kind.namespaced);
        self.objects().get(namespace, name)
    }

    pub fn list(&self) -> Vec<Arc<CachedObject>> {
        self.objects().all()
    }

    fn objects(&self) -> std::sync::RwLockReadGuard<'_, Objects> {
        self.store.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Notes that the host wrote `resource_version` of an object this cache holds (see
    /// [`AwaitedVersions`]).
    pub fn await_version(&self, namespace: Option<&str>, name: &str, resource_version: &str) {
        // Under the lock: the watch task updates the store before it takes the lock to mark the
        // version seen, so a version delivered already is found in the store here.
        let mut map = self.awaited.by_object.lock().expect("awaited lock");
        let cached = self.get(namespace, name);
        if cached.as_deref().and_then(CachedObject::resource_version) == Some(resource_version)
            || self.awaited.delivered(resource_version)
        {
            return;
        }
        map.insert(
            self.object_name(namespace, name),
            (resource_version.to_string(), Instant::now()),
        );
    }

    /// How [`AwaitedVersions`] names an object of this kind (the watch's objects carry no
    /// namespace when the kind is cluster-scoped).
    fn object_name(&self, namespace: Option<&str>, name: &str) -> ObjectName {
        let namespace = namespace.filter(|_| self.kind.namespaced);
        (namespace.map(str::to_string), name.to_string())
    }

    /// Whether the watch has yet to deliver a version of this object the host wrote: the
    /// cached copy (or its absence) is older than that write.
    pub fn is_behind(&self, namespace: Option<&str>, name: &str) -> bool {
        let key = self.object_name(namespace, name);
        let mut map = self.awaited.by_object.lock().expect("awaited lock");
        match map.get(&key) {
            Some((_, at)) if at.elapsed() < AWAIT_LIMIT => true,
            Some(_) => {
                map.remove(&key);
                false
            }
            None => false,
        }
    }

    /// Changes from now on (subscribe before waiting for the sync, to miss nothing).
    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
    }

    pub fn is_synced(&self) -> bool {
        *self.synced.borrow()
    }

    pub async fn wait_synced(&self) {
        let mut rx = self.synced.clone();
        let _ = rx.wait_for(|s| *s).await;
    }

    /// Changes once for every completed list of the kind, the first and each relist after the
    /// watch broke off (from the first on when that happened before this call).
    pub fn relists(&self) -> watch::Receiver<bool> {
        // Never marked seen: a clone starts out behind every list done so far.
        self.synced.clone()
    }

    /// Whether the cache holds every object a list with `selector` asks for.
    fn covers(&self, selector: &LabelSelector) -> bool {
        self.filter.as_ref().is_none_or(|f| selector.is_within(f))
    }
}

/// Every kind cache of the process, started on demand, and the memo of kind discovery.
pub struct Caches {
    client: Client,
    /// What kinds not cached yet will be cached with; grows as plugins are added.
    filters: std::sync::RwLock<CacheFilters>,
    kinds: Mutex<HashMap<Gvk, Option<Arc<KindCache>>>>,
    /// Discovery answers: a served kind's resource for good, "not served" for
    /// [`UNSERVED_TTL`] (so a reconcile that probes a missing CRD costs no request).
    resolved: Mutex<HashMap<Gvk, (Option<ResolvedKind>, Instant)>>,
    /// Itself, for starting a cache from a read that must not wait ([`ClusterView::get_held`]).
    this: std::sync::Weak<Caches>,
    /// Kinds a held read asked for, whose cache is being started.
    held_starting: Mutex<std::collections::HashSet<Gvk>>,
}

/// How long a kind found not served is believed so before discovery is asked again.
const UNSERVED_TTL: Duration = Duration::from_secs(30);

impl Caches {
    pub fn new(client: Client, filters: CacheFilters) -> Arc<Self> {
        Arc::new_cyclic(|this| Self {
            client,
            filters: std::sync::RwLock::new(filters),
            kinds: Mutex::new(HashMap::new()),
            resolved: Mutex::new(HashMap::new()),
            this: this.clone(),
            held_starting: Mutex::new(std::collections::HashSet::new()),
        })
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Takes the watches of `manifests` (every plugin served, a new one included) into
    /// account: kinds not cached yet will be cached with their union; a kind already cached
    /// with a label filter cannot be watched beyond it without restarting its cache, which
    /// other controllers hold (an error naming the kind and the filter).
    pub fn admit<'a>(
        &self,
        manifests: impl IntoIterator<Item = &'a Manifest>,
    ) -> Result<(), String> {
        let manifests: Vec<&Manifest> = manifests.into_iter().collect();
        let wanted = CacheFilters::from_manifests(manifests.iter().copied());
        let declared: std::collections::HashSet<&Gvk> = manifests
            .iter()
            .flat_map(|m| &m.controllers)
            .flat_map(|c| {
                std::iter::once(&c.primary)
                    .chain(&c.owns)
                    .chain(c.watches.iter().map(|w| &w.gvk))
            })
            .collect();
        {
            let kinds = self.kinds.lock().expect("caches lock");
            for (gvk, cache) in kinds.iter() {
                let Some(held) = cache.as_ref().and_then(|c| c.filter.as_ref()) else {
                    continue;
                };
                if !declared.contains(gvk) {
                    continue;
                }
                let fits = wanted.of(gvk).is_some_and(|w| w.is_within(held));
                if !fits {
                    return Err(format!(
                        "the plugin watches {gvk} beyond the label selector {held} this host caches it with; start the host with the plugin to cache the kind for it"
                    ));
                }
            }
        }
        *self.filters.write().unwrap_or_else(|e| e.into_inner()) = wanted;
        Ok(())
    }

    /// The cache of `gvk`, started if needed; `None` when the cluster does not serve the kind.
    pub async fn ensure(self: &Arc<Self>, gvk: &Gvk) -> anyhow::Result<Option<Arc<KindCache>>> {
        // A kind found not served is asked about again (after the discovery memo's TTL): its
        // CRD may be installed later.
        if let Some(Some(known)) = self.kinds.lock().expect("caches lock").get(gvk) {
            return Ok(Some(known.clone()));
        }
        let resolved = self.resolve(gvk).await?;
        let mut kinds = self.kinds.lock().expect("caches lock");
        if let Some(Some(known)) = kinds.get(gvk) {
            return Ok(Some(known.clone()));
        }
        let cache = resolved.map(|kind| self.start(gvk.clone(), kind));
        kinds.insert(gvk.clone(), cache.clone());
        Ok(cache)
    }

    /// A kind's cache if it was started.
    pub fn get(&self, gvk: &Gvk) -> Option<Arc<KindCache>> {
        self.kinds
            .lock()
            .expect("caches lock")
            .get(gvk)
            .cloned()
            .flatten()
    }

    /// The resource of `gvk`, or `None` when the cluster does not serve it: from a started
    /// cache, else from the memo, else one discovery request (remembered).
    pub async fn resolve(&self, gvk: &Gvk) -> anyhow::Result<Option<ResolvedKind>> {
        if let Some(cache) = self.get(gvk) {
            return Ok(Some(cache.kind.clone()));
        }
        let known = self
            .resolved
            .lock()
            .expect("resolved lock")
            .get(gvk)
            .filter(|(found, at)| found.is_some() || at.elapsed() < UNSERVED_TTL)
            .map(|(found, _)| found.clone());
        if let Some(found) = known {
            return Ok(found);
        }
        let found = discover(&self.client, gvk).await?;
        self.resolved
            .lock()
            .expect("resolved lock")
            .insert(gvk.clone(), (found.clone(), Instant::now()));
        Ok(found)
    }

    /// [`Caches::ensure`], asking discovery now rather than trusting a memo that `gvk` is not
    /// served: what a controller waiting for a CRD polls with.
    pub async fn ensure_fresh(
        self: &Arc<Self>,
        gvk: &Gvk,
    ) -> anyhow::Result<Option<Arc<KindCache>>> {
        self.resolved
            .lock()
            .expect("resolved lock")
            .retain(|k, (found, _)| k != gvk || found.is_some());
        self.ensure(gvk).await
    }

    pub async fn wait_all_synced(&self) {
        let caches: Vec<Arc<KindCache>> = self
            .kinds
            .lock()
            .expect("caches lock")
            .values()
            .flatten()
            .cloned()
            .collect();
        for c in caches {
            c.wait_synced().await;
        }
    }

    fn start(&self, gvk: Gvk, kind: ResolvedKind) -> Arc<KindCache> {
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &kind.resource);
        let filter = self
            .filters
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .of(&gvk)
            .cloned();
        let mut config = watcher::Config::default();
        if let Some(selector) = &filter {
            config = config.labels(&selector.to_string());
        }
        let store = Arc::new(RwLock::new(Objects::default()));
        let (changes, _) = broadcast::channel(1024);
        let (synced_tx, synced) = watch::channel(false);
        let types = types_of(&kind.resource);
        let tx = changes.clone();
        let name = gvk.to_string();
        let stream = watcher(api, config).default_backoff();
        let awaited = Arc::new(AwaitedVersions::default());
        let seen = awaited.clone();
        let held = store.clone();
        tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            // A relist's objects, held apart until it completes: until then the store holds
            // the previous list (what each listed object's change has as its old object).
            let mut relisted: Option<Objects> = None;
            let write = || held.write().unwrap_or_else(|e| e.into_inner());
            let compact = |o: DynamicObject| match CachedObject::new(o, &types) {
                Ok(o) => Some(Arc::new(o)),
                Err(e) => {
                    tracing::error!(kind = %name, "an object the cache cannot hold: {e}");
                    None
                }
            };
            while let Some(event) = stream.next().await {
                let (object, old, deleted) = match event {
                    Ok(watcher::Event::Init) => {
                        relisted = Some(Objects::default());
                        seen.forget_all();
                        continue;
                    }
                    Ok(watcher::Event::InitApply(o)) => {
                        let Some(object) = compact(o) else { continue };
                        let old = held
                            .read()
                            .unwrap_or_else(|e| e.into_inner())
                            .get(object.namespace(), object.name());
                        relisted.get_or_insert_default().insert(object.clone());
                        (object, old, false)
                    }
                    Ok(watcher::Event::InitDone) => {
                        *write() = relisted.take().unwrap_or_default();
                        seen.forget_all();
                        let _ = synced_tx.send(true);
                        continue;
                    }
                    Ok(watcher::Event::Apply(o)) => {
                        let Some(object) = compact(o) else { continue };
                        let old = write().insert(object.clone());
                        (object, old, false)
                    }
                    Ok(watcher::Event::Delete(o)) => {
                        let Some(object) = compact(o) else { continue };
                        let old = write().remove(&object);
                        (object, old, true)
                    }
                    Err(e) => {
                        tracing::warn!(kind = %name, "watch failed, retrying: {e}");
                        continue;
                    }
                };
                // After the store took the change: see `KindCache::await_version`.
                seen.seen(&object);
                let _ = tx.send(Change {
                    object,
                    old,
                    deleted,
                });
            }
        });
        Arc::new(KindCache {
            gvk,
            kind,
            filter,
            store,
            changes,
            synced,
            awaited,
        })
    }
}

impl Caches {
    /// An object of `cache`'s kind as the API server has it now, as plugins see objects: for
    /// what a filtered cache does not hold.
    pub async fn read_live(
        &self,
        cache: &KindCache,
        namespace: Option<&str>,
        name: &str,
    ) -> kube::Result<Option<DynamicObject>> {
        let resource = &cache.kind.resource;
        let api: Api<DynamicObject> = match namespace {
            Some(ns) if cache.kind.namespaced => {
                Api::namespaced_with(self.client.clone(), ns, resource)
            }
            _ => Api::all_with(self.client.clone(), resource),
        };
        let mut found = api.get_opt(name).await?;
        if let Some(obj) = found.as_mut() {
            for_plugins(obj, &types_of(resource));
        }
        Ok(found)
    }
}

/// One discovery request for `gvk`: its resource, or `None` when not served.
async fn discover(client: &Client, gvk: &Gvk) -> anyhow::Result<Option<ResolvedKind>> {
    let kgvk = kube::api::GroupVersionKind::gvk(&gvk.group, &gvk.version, &gvk.kind);
    match discovery::pinned_kind(client, &kgvk).await {
        Ok((resource, caps)) => Ok(Some(ResolvedKind {
            resource,
            namespaced: caps.scope == Scope::Namespaced,
        })),
        Err(e) if crate::discovery::not_served(&e) => Ok(None),
        Err(kube::Error::Discovery(_)) => Ok(None),
        Err(e) => Err(anyhow::anyhow!("discovery of {gvk} failed: {e}")),
    }
}

/// A read the API server refused fails with its status ([`ApiStatus`]), which an admission
/// answer passes on as upstream's webhooks do.
///
/// [`ApiStatus`]: odh_plugin_runtime::writes::ApiStatus
fn api_status(e: anyhow::Error) -> anyhow::Error {
    match e.downcast::<kube::Error>() {
        Ok(kube::Error::Api(s)) => anyhow::Error::new(crate::api_client::api_status(*s)),
        Ok(other) => other.into(),
        Err(e) => e,
    }
}

fn to_json(obj: &DynamicObject) -> anyhow::Result<String> {
    Ok(serde_json::to_string(obj)?)
}

impl Caches {
    /// Reads the API server directly, from a plugin call on the blocking pool, within
    /// `within`. Used where the cache cannot answer: a kind not served when its cache was
    /// started (a CRD installed later), or objects a label-filtered cache does not hold.
    fn live<T>(
        &self,
        gvk: &Gvk,
        namespace: Option<&str>,
        within: Duration,
        read: impl AsyncFnOnce(Api<DynamicObject>, TypeMeta) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let handle = tokio::runtime::Handle::try_current()
            .map_err(|_| anyhow::anyhow!("{gvk} is not cached by the host"))?;
        let client = self.client.clone();
        let work = async move {
            let Some(kind) = self.resolve(gvk).await? else {
                anyhow::bail!(
                    "no matches for kind \"{}\" in version \"{}\"",
                    gvk.kind,
                    gvk.api_version()
                );
            };
            let api = match namespace {
                Some(ns) if kind.namespaced => Api::namespaced_with(client, ns, &kind.resource),
                _ => Api::all_with(client, &kind.resource),
            };
            read(api, types_of(&kind.resource)).await
        };
        odh_plugin_runtime::host_wait::block_on(&handle, async move {
            tokio::time::timeout(within, work)
                .await
                .map_err(|_| anyhow::anyhow!("no answer from the API server within {within:?}"))?
        })
        .map_err(api_status)
    }

    fn live_get(
        &self,
        gvk: &Gvk,
        namespace: Option<&str>,
        name: &str,
        within: Duration,
    ) -> anyhow::Result<Option<String>> {
        let name = name.to_string();
        self.live(gvk, namespace, within, async move |api, types| {
            match api.get_opt(&name).await? {
                Some(mut o) => {
                    for_plugins(&mut o, &types);
                    Ok(Some(to_json(&o)?))
                }
                None => Ok(None),
            }
        })
    }

    fn live_list(
        &self,
        gvk: &Gvk,
        namespace: Option<&str>,
        selector: &LabelSelector,
        within: Duration,
    ) -> anyhow::Result<Vec<String>> {
        let params = kube::api::ListParams {
            label_selector: (!selector.is_everything()).then(|| selector.to_string()),
            ..Default::default()
        };
        self.live(gvk, namespace, within, async move |api, types| {
            api.list(&params)
                .await?
                .items
                .iter_mut()
                .map(|o| {
                    for_plugins(o, &types);
                    to_json(o)
                })
                .collect()
        })
    }
}

/// A kind's `apiVersion` and `kind`.
fn types_of(resource: &ApiResource) -> TypeMeta {
    TypeMeta {
        api_version: resource.api_version.clone(),
        kind: resource.kind.clone(),
    }
}

/// Whether an object is in a `list` call's namespace (none: every namespace) and selector.
fn in_scope(obj: &CachedObject, namespace: Option<&str>, selector: &LabelSelector) -> bool {
    (namespace.is_none() || obj.namespace() == namespace) && selector.matches(obj.labels())
}

impl Caches {
    fn start_in_background(&self, gvk: &Gvk) {
        let (Some(this), Ok(runtime)) =
            (self.this.upgrade(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        if !self
            .held_starting
            .lock()
            .expect("held lock")
            .insert(gvk.clone())
        {
            return;
        }
        let gvk = gvk.clone();
        runtime.spawn(async move {
            match this.ensure(&gvk).await {
                Ok(_) => tracing::info!(kind = %gvk, "caching a kind read from memory only"),
                Err(e) => {
                    tracing::warn!(kind = %gvk, "caching a kind read from memory only failed: {e:#}");
                    // The next held read tries again.
                    this.held_starting.lock().expect("held lock").remove(&gvk);
                }
            }
        });
    }
}

impl ClusterView for Caches {
    fn get(
        &self,
        gvk: &Gvk,
        namespace: Option<&str>,
        name: &str,
        within: Duration,
    ) -> anyhow::Result<Option<String>> {
        match self.get(gvk) {
            Some(cache) => match cache.get(namespace, name) {
                Some(o) => Ok(Some(o.json().to_string())),
                None if cache.filter.is_some() => self.live_get(gvk, namespace, name, within),
                None => Ok(None),
            },
            None => self.live_get(gvk, namespace, name, within),
        }
    }

    /// From the kind's cache once it has synced. The first held read of a kind not cached
    /// starts its cache (in the background: the read answers `None` until it has synced), so
    /// only what is asked for is watched (a rollout's namespaceSelector: Namespaces).
    fn get_held(&self, gvk: &Gvk, namespace: Option<&str>, name: &str) -> Option<Option<String>> {
        let Some(cache) = self.get(gvk) else {
            self.start_in_background(gvk);
            return None;
        };
        if !cache.is_synced() {
            return None;
        }
        match cache.get(namespace, name) {
            Some(o) => Some(Some(o.json().to_string())),
            // A filtered cache does not know about what it leaves out.
            None if cache.filter.is_some() => None,
            None => Some(None),
        }
    }

    fn list(
        &self,
        gvk: &Gvk,
        namespace: Option<&str>,
        selector: &LabelSelector,
        within: Duration,
    ) -> anyhow::Result<Vec<String>> {
        match self.get(gvk) {
            Some(cache) if cache.covers(selector) => cache
                .list()
                .iter()
                .filter(|o| in_scope(o, namespace, selector))
                .map(|o| Ok(o.json().to_string()))
                .collect(),
            _ => self.live_list(gvk, namespace, selector, within),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use odh_plugin_runtime::wire::{ControllerSpec, Mapping, Watch};

    fn versioned(name: &str, rv: &str) -> CachedObject {
        let ar = ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("", "v1", "ConfigMap"),
            "configmaps",
        );
        let mut o = DynamicObject::new(name, &ar).within("ns");
        o.metadata.resource_version = Some(rv.into());
        CachedObject::new(o, &types_of(&ar)).expect("compacts")
    }

    #[test]
    fn an_awaited_version_is_done_when_delivered_not_when_an_older_one_is() {
        let awaited = AwaitedVersions::default();
        let key = (Some("ns".to_string()), "a".to_string());
        awaited
            .by_object
            .lock()
            .unwrap()
            .insert(key.clone(), ("7".into(), Instant::now()));
        awaited.seen(&versioned("a", "6"));
        awaited.seen(&versioned("b", "7"));
        assert!(awaited.by_object.lock().unwrap().contains_key(&key));
        awaited.seen(&versioned("a", "7"));
        assert!(!awaited.by_object.lock().unwrap().contains_key(&key));
        awaited
            .by_object
            .lock()
            .unwrap()
            .insert(key.clone(), ("9".into(), Instant::now()));
        // A relist may skip the written version: nothing is awaited any more.
        awaited.forget_all();
        assert!(awaited.by_object.lock().unwrap().is_empty());
    }

    #[test]
    fn a_version_at_or_below_the_highest_delivered_one_was_delivered() {
        let awaited = AwaitedVersions::default();
        assert!(!awaited.delivered("5"));
        awaited.seen(&versioned("a", "7"));
        // Another object's later change (or this one's deletion) came after our write of 5.
        assert!(awaited.delivered("5") && awaited.delivered("7"));
        assert!(!awaited.delivered("8"));
        assert!(
            !awaited.delivered("opaque"),
            "not a number: awaited as before"
        );
    }

    fn gvk(kind: &str) -> Gvk {
        Gvk::new("", "v1", kind)
    }

    fn manifest(controllers: Vec<ControllerSpec>) -> Manifest {
        Manifest {
            name: "p".into(),
            version: "0.1.0".into(),
            description: String::new(),
            controllers,
            webhooks: vec![],
            reads: vec![],
            writes: vec![],
            http_hosts: vec![],
        }
    }

    fn controller(primary: &str, selector: Option<&str>, watches: Vec<Watch>) -> ControllerSpec {
        ControllerSpec {
            name: primary.to_lowercase(),
            primary: gvk(primary),
            primary_label_selector: selector.map(str::to_string),
            owns: vec![gvk("ConfigMap")],
            watches,
            finalizer: None,
            filters: Vec::new(),
        }
    }

    fn watch(kind: &str, selector: Option<&str>) -> Watch {
        Watch {
            gvk: gvk(kind),
            mapping: Mapping::Custom,
            label_selector: selector.map(str::to_string),
            optional: false,
        }
    }

    #[test]
    fn a_cache_holds_the_union_of_what_plugins_watch() {
        let managed = "example.com/managed=true";
        let a = manifest(vec![controller(
            "Pod",
            Some("tier=web"),
            vec![watch("Secret", Some(managed))],
        )]);
        let b = manifest(vec![controller(
            "Service",
            None,
            vec![watch("Secret", Some(managed)), watch("Namespace", None)],
        )]);
        let filters = CacheFilters::from_manifests([&a, &b]);
        assert_eq!(
            filters.of(&gvk("Secret")).map(|s| s.to_string()),
            Some(managed.into())
        );
        assert_eq!(
            filters.of(&gvk("Pod")).map(|s| s.to_string()),
            Some("tier=web".into())
        );
        assert!(filters.of(&gvk("ConfigMap")).is_none(), "owned: whole");
        assert!(filters.of(&gvk("Namespace")).is_none());
        assert!(filters.of(&gvk("Service")).is_none());

        let wider = manifest(vec![controller(
            "Service",
            None,
            vec![watch("Secret", None)],
        )]);
        assert!(
            CacheFilters::from_manifests([&a, &wider])
                .of(&gvk("Secret"))
                .is_none(),
            "one plugin watching every Secret makes the cache whole"
        );
        let other = manifest(vec![controller(
            "Service",
            None,
            vec![watch("Secret", Some("team=a"))],
        )]);
        assert!(
            CacheFilters::from_manifests([&a, &other])
                .of(&gvk("Secret"))
                .is_none(),
            "different selectors cannot be one watch"
        );
    }
}
