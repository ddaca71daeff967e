//! Which plugin answers which webhook path: built from the plugins' manifests.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use odh_label_selector::LabelSelector;

use odh_plugin_runtime::gvk::Gvk;
use odh_plugin_runtime::wire::{Operation, RawJson, WebhookType};
use odh_plugin_runtime::{AdmissionInput, LoadedPlugin, PluginSlot};

/// One webhook endpoint: the path, the plugin behind it and what the manifest declares.
#[derive(Clone)]
pub struct WebhookRoute {
    pub path: String,
    /// The slot behind the path: the version serving is looked up per request.
    pub plugin: PluginSlot,
    pub kind: WebhookType,
    /// The kind under review, as declared (informational: requests are not filtered by it).
    pub gvk: Gvk,
    /// Requests with another operation are allowed without calling the plugin.
    pub operations: Vec<Operation>,
    /// The manifest's object selector: requests whose objects do not match are allowed
    /// without calling the plugin.
    pub object_selector: Option<LabelSelector>,
    /// The manifest's namespace selector, for the webhook configuration (the API server
    /// evaluates it; the host does not read namespaces).
    pub namespace_selector: Option<LabelSelector>,
}

impl WebhookRoute {
    pub fn handles(&self, operation: Operation) -> bool {
        self.operations.contains(&operation)
    }

    /// Whether the plugin reviews this request: its operation is declared and, with an object
    /// selector, its object or old object matches.
    pub fn reviews(&self, input: &AdmissionInput) -> bool {
        self.handles(input.operation)
            && self.object_selector.as_ref().is_none_or(|s| {
                selector_admits(s, input.object.as_ref(), input.old_object.as_ref())
            })
    }
}

/// An object selector's verdict on a request, as the API server decides whether to call a
/// webhook: the object or the old object matches; an absent one (the old object of a create,
/// the object of a delete) does not.
pub fn selector_admits(
    selector: &LabelSelector,
    object: Option<&RawJson>,
    old_object: Option<&RawJson>,
) -> bool {
    [object, old_object]
        .into_iter()
        .flatten()
        .any(|o| selector.matches_json(o.metadata_labels().as_ref()))
}

impl std::fmt::Debug for WebhookRoute {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookRoute")
            .field("path", &self.path)
            .field("plugin", &self.plugin.name())
            .field("kind", &self.kind)
            .field("gvk", &self.gvk)
            .field("operations", &self.operations)
            .field(
                "object_selector",
                &self.object_selector.as_ref().map(ToString::to_string),
            )
            .finish()
    }
}

/// Why a table could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookTableError {
    #[error("webhook path {path:?} is declared by both plugin {first:?} and plugin {second:?}")]
    DuplicatePath {
        path: String,
        first: String,
        second: String,
    },
    #[error(
        "plugin {plugin:?} declares webhook path {path:?}, which is not a '/' followed by \
         characters of [A-Za-z0-9._~/-]"
    )]
    UnroutablePath { path: String, plugin: String },
    #[error("plugin {plugin:?}: webhook {path:?}: {message}")]
    BadSelector {
        path: String,
        plugin: String,
        message: String,
    },
}

/// Every webhook path of a set of plugins. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct WebhookTable {
    routes: BTreeMap<String, Arc<WebhookRoute>>,
}

impl WebhookTable {
    /// Collects the webhooks of every plugin, each in a slot of its own; two plugins declaring
    /// the same path is an error.
    pub fn new<'a>(
        plugins: impl IntoIterator<Item = &'a LoadedPlugin>,
    ) -> Result<Self, WebhookTableError> {
        let slots: Vec<PluginSlot> = plugins.into_iter().cloned().map(PluginSlot::new).collect();
        Self::from_slots(&slots)
    }

    /// Collects the webhooks of the plugins serving in `slots` (their manifests at this time).
    pub fn from_slots(slots: &[PluginSlot]) -> Result<Self, WebhookTableError> {
        let mut routes: BTreeMap<String, Arc<WebhookRoute>> = BTreeMap::new();
        for slot in slots {
            let plugin = slot.current();
            for w in &plugin.manifest().webhooks {
                if !routable(&w.path) {
                    return Err(WebhookTableError::UnroutablePath {
                        path: w.path.clone(),
                        plugin: plugin.name().to_string(),
                    });
                }
                if let Some(existing) = routes.get(&w.path) {
                    return Err(WebhookTableError::DuplicatePath {
                        path: w.path.clone(),
                        first: existing.plugin.name().to_string(),
                        second: plugin.name().to_string(),
                    });
                }
                let selector = |s: &Option<String>| match s.as_deref().map(LabelSelector::parse) {
                    None => Ok(None),
                    Some(Ok(s)) => Ok(Some(s)),
                    Some(Err(e)) => Err(WebhookTableError::BadSelector {
                        path: w.path.clone(),
                        plugin: plugin.name().to_string(),
                        message: e.to_string(),
                    }),
                };
                let object_selector = selector(&w.object_selector)?;
                let namespace_selector = selector(&w.namespace_selector)?;
                routes.insert(
                    w.path.clone(),
                    Arc::new(WebhookRoute {
                        path: w.path.clone(),
                        plugin: slot.clone(),
                        kind: w.type_,
                        gvk: w.gvk.clone(),
                        operations: w.operations.clone(),
                        object_selector,
                        namespace_selector,
                    }),
                );
            }
        }
        Ok(Self { routes })
    }

    /// Keeps only the routes `keep` accepts.
    pub fn retain(&mut self, keep: impl Fn(&WebhookRoute) -> bool) {
        self.routes.retain(|_, r| keep(r));
    }

    /// The route of `path`, if a plugin serves it.
    pub fn route(&self, path: &str) -> Option<&Arc<WebhookRoute>> {
        self.routes.get(path)
    }

    /// Every route, ordered by path.
    pub fn routes(&self) -> impl Iterator<Item = &Arc<WebhookRoute>> {
        self.routes.values()
    }

    pub fn len(&self) -> usize {
        self.routes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }
}

/// The table a webhook server answers from: replaced whole when plugins come and go, so a
/// request sees either the old set of routes or the new one.
#[derive(Clone, Debug)]
pub struct LiveWebhookTable {
    table: Arc<RwLock<Arc<WebhookTable>>>,
    /// Paths dropped from the table, and when: the apiserver may call them until it sees the
    /// webhook configuration change.
    retired: Arc<RwLock<BTreeMap<String, std::time::Instant>>>,
    generation: Arc<tokio::sync::watch::Sender<u64>>,
}

/// How long a path dropped from the table is still answered (admitting the request unchanged):
/// the apiserver's view of the webhook configurations lags behind the host's.
pub const RETIRED_PATH_GRACE: std::time::Duration = std::time::Duration::from_secs(60);

impl Default for LiveWebhookTable {
    fn default() -> Self {
        Self::new(WebhookTable::default())
    }
}

impl LiveWebhookTable {
    pub fn new(table: WebhookTable) -> Self {
        Self {
            table: Arc::new(RwLock::new(Arc::new(table))),
            retired: Default::default(),
            generation: Arc::new(tokio::sync::watch::Sender::new(0)),
        }
    }

    pub fn current(&self) -> Arc<WebhookTable> {
        self.table.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn set(&self, table: WebhookTable) {
        let previous = std::mem::replace(
            &mut *self.table.write().unwrap_or_else(|e| e.into_inner()),
            Arc::new(table),
        );
        {
            let current = self.current();
            let now = std::time::Instant::now();
            let mut retired = self.retired.write().unwrap_or_else(|e| e.into_inner());
            retired.retain(|path, at| {
                current.route(path).is_none() && now.duration_since(*at) < RETIRED_PATH_GRACE
            });
            for route in previous.routes() {
                if current.route(&route.path).is_none() {
                    retired.insert(route.path.clone(), now);
                }
            }
        }
        self.generation.send_modify(|g| *g += 1);
    }

    /// Whether `path` was served until less than [`RETIRED_PATH_GRACE`] ago.
    pub fn recently_retired(&self, path: &str) -> bool {
        self.retired
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(path)
            .is_some_and(|at| at.elapsed() < RETIRED_PATH_GRACE)
    }

    /// Changes after every [`LiveWebhookTable::set`].
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.generation.subscribe()
    }
}

/// Paths the router can register verbatim: no axum captures (`{x}`, `*x`, `:x`), no query.
pub fn routable(path: &str) -> bool {
    path.starts_with('/')
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~/".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::routable;

    #[test]
    fn upstream_paths_are_routable_and_captures_are_not() {
        for p in [
            "/mutate--v1-pod",
            "/validate-example-com-v1beta1-widget",
            "/mutate-hello-configmap",
        ] {
            assert!(routable(p), "{p}");
        }
        for p in ["", "mutate", "/{id}", "/a/*rest", "/a?b=c", "/a b"] {
            assert!(!routable(p), "{p}");
        }
    }
}
