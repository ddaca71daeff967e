//! Shared caches: one reflector per kind, shared by every controller and by the plugins'
//! `cluster` reads. `managedFields` are stripped; Secrets and Pods are cached only with
//! upstream's label filters, which changes what plugins can see exactly as upstream.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, TypeMeta};
use kube::discovery::{self, Scope};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use tokio::sync::{broadcast, watch};

use crate::gvk::Gvk;
use crate::label_selector::LabelSelector;
use crate::plugin::ClusterView;

/// Upstream caches these kinds only with a label selector (spec part 2, §2.5).
pub fn cache_label_selector(gvk: &Gvk) -> Option<&'static str> {
    match (gvk.group.as_str(), gvk.kind.as_str()) {
        ("", "Secret") => Some("opendatahub.io/managed=true"),
        ("", "Pod") => Some("component=predictor"),
        _ => None,
    }
}

/// A change seen by a kind's watch.
#[derive(Debug, Clone)]
pub struct Change {
    pub object: Arc<DynamicObject>,
    pub deleted: bool,
}

/// The cache of one kind.
pub struct KindCache {
    pub gvk: Gvk,
    pub resource: ApiResource,
    pub namespaced: bool,
    store: Store<DynamicObject>,
    changes: broadcast::Sender<Change>,
    synced: watch::Receiver<bool>,
}

impl KindCache {
    pub fn get(&self, namespace: Option<&str>, name: &str) -> Option<Arc<DynamicObject>> {
        let mut r = ObjectRef::<DynamicObject>::new_with(name, self.resource.clone());
        if let Some(ns) = namespace.filter(|_| self.namespaced) {
            r = r.within(ns);
        }
        self.store.get(&r)
    }

    pub fn list(&self) -> Vec<Arc<DynamicObject>> {
        self.store.state()
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
}

/// Every kind cache of the process, started on demand.
pub struct Caches {
    client: Client,
    kinds: Mutex<HashMap<Gvk, Option<Arc<KindCache>>>>,
    /// Discovery answers for direct reads: a served kind's resource for good, "not served"
    /// for [`UNSERVED_TTL`] (so a reconcile that probes a missing CRD costs no request).
    resolved: Mutex<HashMap<Gvk, (Served, std::time::Instant)>>,
}

/// A kind's resource and whether it is namespaced; `None` when the cluster does not serve it.
type Served = Option<(ApiResource, bool)>;

/// How long a kind found not served is believed so before discovery is asked again.
const UNSERVED_TTL: std::time::Duration = std::time::Duration::from_secs(30);

impl Caches {
    pub fn new(client: Client) -> Arc<Self> {
        Arc::new(Self {
            client,
            kinds: Mutex::new(HashMap::new()),
            resolved: Mutex::new(HashMap::new()),
        })
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The cache of `gvk`, started if needed; `None` when the cluster does not serve the kind.
    pub async fn ensure(self: &Arc<Self>, gvk: &Gvk) -> anyhow::Result<Option<Arc<KindCache>>> {
        if let Some(known) = self.kinds.lock().expect("caches lock").get(gvk) {
            return Ok(known.clone());
        }
        let resolved = resolve(&self.client, gvk).await?;
        let mut kinds = self.kinds.lock().expect("caches lock");
        if let Some(known) = kinds.get(gvk) {
            return Ok(known.clone());
        }
        let cache =
            resolved.map(|(resource, namespaced)| self.start(gvk.clone(), resource, namespaced));
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

    /// True once every started cache has listed its kind.
    pub fn all_synced(&self) -> bool {
        self.kinds
            .lock()
            .expect("caches lock")
            .values()
            .flatten()
            .all(|c| c.is_synced())
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

    fn start(&self, gvk: Gvk, resource: ApiResource, namespaced: bool) -> Arc<KindCache> {
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
        let mut config = watcher::Config::default();
        if let Some(selector) = cache_label_selector(&gvk) {
            config = config.labels(selector);
        }
        let writer = reflector::store::Writer::new(resource.clone());
        let store = writer.as_reader();
        let (changes, _) = broadcast::channel(1024);
        let (synced_tx, synced) = watch::channel(false);
        let types = types_of(&resource);
        let tx = changes.clone();
        let kind = gvk.to_string();
        let stream = watcher(api, config)
            .default_backoff()
            .modify(move |obj: &mut DynamicObject| for_plugins(obj, &types))
            .reflect(writer);
        tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                match event {
                    Ok(watcher::Event::Apply(o)) | Ok(watcher::Event::InitApply(o)) => {
                        let _ = tx.send(Change {
                            object: Arc::new(o),
                            deleted: false,
                        });
                    }
                    Ok(watcher::Event::Delete(o)) => {
                        let _ = tx.send(Change {
                            object: Arc::new(o),
                            deleted: true,
                        });
                    }
                    Ok(watcher::Event::InitDone) => {
                        let _ = synced_tx.send(true);
                    }
                    Ok(watcher::Event::Init) => {}
                    Err(e) => tracing::warn!(kind = %kind, "watch failed, retrying: {e}"),
                }
            }
        });
        Arc::new(KindCache {
            gvk,
            resource,
            namespaced,
            store,
            changes,
            synced,
        })
    }
}

/// The ApiResource of a kind and whether it is namespaced; `None` when not served.
pub async fn resolve(client: &Client, gvk: &Gvk) -> anyhow::Result<Option<(ApiResource, bool)>> {
    let kgvk = kube::api::GroupVersionKind::gvk(&gvk.group, &gvk.version, &gvk.kind);
    match discovery::pinned_kind(client, &kgvk).await {
        Ok((resource, caps)) => Ok(Some((resource, caps.scope == Scope::Namespaced))),
        Err(e) if crate::discovery::not_served(&e) => Ok(None),
        Err(kube::Error::Discovery(_)) => Ok(None),
        Err(e) => Err(anyhow::anyhow!("discovery of {gvk} failed: {e}")),
    }
}

fn to_json(obj: &DynamicObject) -> anyhow::Result<String> {
    Ok(serde_json::to_string(obj)?)
}

impl Caches {
    /// Reads the API server directly, from a plugin call on the blocking pool. Used where the
    /// cache cannot answer: a kind not served when its cache was started (a CRD installed
    /// later), or an object a label-filtered cache (Secrets) does not hold.
    fn live<T>(
        &self,
        gvk: &Gvk,
        namespace: Option<&str>,
        read: impl AsyncFnOnce(Api<DynamicObject>, TypeMeta) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let handle = tokio::runtime::Handle::try_current()
            .map_err(|_| anyhow::anyhow!("{gvk} is not cached by the host"))?;
        let client = self.client.clone();
        let known = self
            .resolved
            .lock()
            .expect("resolved lock")
            .get(gvk)
            .filter(|(found, at)| found.is_some() || at.elapsed() < UNSERVED_TTL)
            .map(|(found, _)| found.clone());
        handle.block_on(async move {
            let found = match known {
                Some(found) => found,
                None => {
                    let found = resolve(&client, gvk).await?;
                    self.resolved
                        .lock()
                        .expect("resolved lock")
                        .insert(gvk.clone(), (found.clone(), std::time::Instant::now()));
                    found
                }
            };
            let Some((resource, namespaced)) = found else {
                anyhow::bail!(
                    "no matches for kind \"{}\" in version \"{}\"",
                    gvk.kind,
                    gvk.api_version()
                );
            };
            let api = match namespace {
                Some(ns) if namespaced => Api::namespaced_with(client, ns, &resource),
                _ => Api::all_with(client, &resource),
            };
            read(api, types_of(&resource)).await
        })
    }

    fn live_get(
        &self,
        gvk: &Gvk,
        namespace: Option<&str>,
        name: &str,
    ) -> anyhow::Result<Option<String>> {
        let name = name.to_string();
        self.live(gvk, namespace, async move |api, types| {
            match api.get_opt(&name).await? {
                Some(mut o) => {
                    for_plugins(&mut o, &types);
                    Ok(Some(to_json(&o)?))
                }
                None => Ok(None),
            }
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

/// An object as plugins get it, cached or read directly: without managedFields (noise, and
/// large), with `apiVersion`/`kind` (list items come without them).
fn for_plugins(obj: &mut DynamicObject, types: &TypeMeta) {
    obj.managed_fields_mut().clear();
    obj.types = Some(types.clone());
}

/// Whether an object is in a `list` call's namespace (none: every namespace) and selector.
fn in_scope(obj: &DynamicObject, namespace: Option<&str>, selector: &LabelSelector) -> bool {
    (namespace.is_none() || obj.metadata.namespace.as_deref() == namespace)
        && selector.matches(obj.labels())
}

impl ClusterView for Caches {
    fn get(
        &self,
        gvk: &Gvk,
        namespace: Option<&str>,
        name: &str,
    ) -> anyhow::Result<Option<String>> {
        match self.get(gvk) {
            Some(cache) => match cache.get(namespace, name) {
                Some(o) => to_json(&o).map(Some),
                None if cache_label_selector(gvk).is_some() => self.live_get(gvk, namespace, name),
                None => Ok(None),
            },
            None => self.live_get(gvk, namespace, name),
        }
    }

    fn list(
        &self,
        gvk: &Gvk,
        namespace: Option<&str>,
        selector: &LabelSelector,
    ) -> anyhow::Result<Vec<String>> {
        let Some(cache) = self.get(gvk) else {
            let scope = namespace.map(str::to_string);
            let selector = selector.clone();
            return self.live(gvk, namespace, async move |api, types| {
                let mut items = api.list(&Default::default()).await?.items;
                items.retain(|o| in_scope(o, scope.as_deref(), &selector));
                items
                    .iter_mut()
                    .map(|o| {
                        for_plugins(o, &types);
                        to_json(o)
                    })
                    .collect()
            });
        };
        cache
            .list()
            .iter()
            .filter(|o| in_scope(o, namespace, selector))
            .map(|o| to_json(o))
            .collect()
    }
}
