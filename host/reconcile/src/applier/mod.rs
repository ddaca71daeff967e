//! Turns a plugin's outcome into API writes: server-side apply with one field manager per
//! plugin, nothing sent when the cache already holds what the plugin wants, deletes only of
//! objects we manage, status through the status subresource, finalizers, Events.
//!
//! The applier is a Kubernetes writer and nothing else: the outcome it gets was checked
//! against the plugin's write capabilities when the plugin returned it (`plugin::LoadedPlugin`),
//! and kinds are resolved through the caches' memo, so a no-op reconcile sends no request.

mod adopt;
mod apply;
mod create;
mod delete;
mod events;
mod primary;
mod staged;

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::future::join_all;
use kube::api::DynamicObject;
use kube::runtime::events::{Recorder, Reporter};
use kube::{Client, ResourceExt};

use crate::cache::{Caches, ResolvedKind};
use odh_plugin_runtime::gvk::Gvk;
use odh_plugin_runtime::wire::{Desired, FinalizerAction, Outcome};

use apply::LastApplied;
pub use apply::contains;
pub use staged::{StagedPrimary, StagedWriter};

/// Writes of one outcome in flight at once: enough to hide round trips, few enough that one
/// large outcome does not crowd out every other client of the API server.
const PARALLEL_WRITES: usize = 8;

/// Kinds other objects can depend on when they are admitted (a namespace for the objects in
/// it, a definition for its custom resources, a role for the binding the RBAC escalation check
/// reads it for, a service account for a workload).
const FIRST_WAVE_KINDS: [&str; 5] = [
    "Namespace",
    "CustomResourceDefinition",
    "ServiceAccount",
    "ClusterRole",
    "Role",
];

/// The desired objects in the order they are applied: those of [`FIRST_WAVE_KINDS`] first, then
/// the others; each wave in the plugin's order.
fn waves(desired: &[Desired]) -> [Vec<&Desired>; 2] {
    let first = |d: &&Desired| {
        d.object
            .get("kind")
            .and_then(serde_json::Value::as_str)
            .is_some_and(|k| FIRST_WAVE_KINDS.contains(&k))
    };
    let (a, b) = desired.iter().partition(first);
    [a, b]
}

/// Field manager of a plugin's writes.
pub fn field_manager(plugin: &str) -> String {
    format!("odh-model-controller/{plugin}")
}

/// The primary object a reconcile was about.
pub struct Primary<'a> {
    pub kind: &'a ResolvedKind,
    /// `None` when the object is gone.
    pub object: Option<&'a DynamicObject>,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
}

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("{what}: {source}")]
    Kube { what: String, source: kube::Error },
    #[error("{0}")]
    Invalid(String),
}

impl ApplyError {
    /// The API server refused a write made against an older `resourceVersion` (409): someone
    /// else wrote the object meanwhile, so the next attempt starts from a newer state.
    pub fn is_conflict(&self) -> bool {
        matches!(self, ApplyError::Kube { source: kube::Error::Api(s), .. } if s.code == 409)
    }
}

pub struct Applier {
    client: Client,
    caches: Arc<Caches>,
    recorder: Recorder,
    /// Hash of what each plugin last applied per object: a changed desired state is applied
    /// even when the cache still "contains" it, so fields a plugin stops declaring are removed.
    last_applied: Mutex<LastApplied>,
    writes: AtomicU64,
    /// Field managers of a controller this one replaces (the Go controller's `manager`): their
    /// fields are taken over on first apply, their objects count as ours for deletes.
    legacy_managers: Vec<String>,
}

impl Applier {
    pub fn new(client: Client, caches: Arc<Caches>, instance: Option<String>) -> Self {
        let reporter = Reporter {
            controller: "odh-model-controller".into(),
            instance,
        };
        Self {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            caches,
            last_applied: Mutex::new(LastApplied::new(apply::MAX_REMEMBERED)),
            writes: AtomicU64::new(0),
            legacy_managers: Vec::new(),
        }
    }

    /// Takes over the objects of these field managers (see `adopt.rs`); none by default.
    pub fn adopting(mut self, managers: impl IntoIterator<Item = String>) -> Self {
        self.legacy_managers = managers.into_iter().filter(|m| !m.is_empty()).collect();
        self
    }

    /// Write requests sent so far (applies, deletes, status and finalizer patches, Events):
    /// for tests that prove a no-op reconcile writes nothing; not part of the API.
    #[doc(hidden)]
    pub fn write_count(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }

    fn wrote(&self) {
        self.writes.fetch_add(1, Ordering::Relaxed);
    }

    async fn resolve(&self, gvk: &Gvk) -> Result<Option<ResolvedKind>, ApplyError> {
        self.caches
            .resolve(gvk)
            .await
            .map_err(|e| ApplyError::Invalid(format!("{e:#}")))
    }

    /// Applies a whole outcome of plugin `plugin`, in the documented order: finalizer add,
    /// desired objects, deletions, primary metadata, status, events, finalizer remove.
    /// Desired objects go in two waves (see [`waves`]), each wave's writes concurrently, as
    /// deletions are: one round trip per wave instead of one per object.
    ///
    /// As upstream orders them: the finalizer is added before anything else is written (a
    /// write that fails later cannot leave the object without it), and a finalizer the plugin
    /// asks to remove is removed even when a write before it failed (the object goes; the
    /// error is still returned and retried). Objects are independent: one failing write does
    /// not hold back the others; it holds back only the status, which would describe them.
    pub async fn apply_outcome(
        &self,
        plugin: &str,
        finalizer: Option<&str>,
        primary: &Primary<'_>,
        outcome: &Outcome,
    ) -> Result<(), ApplyError> {
        let manager = field_manager(plugin);
        // The primary as it is now: each metadata patch answers with the next version, which
        // the next compare-and-swap starts from.
        let mut current = primary.object.cloned();
        let seen: Vec<String> = current
            .as_ref()
            .map(|o| o.finalizers().to_vec())
            .unwrap_or_default();
        if outcome.finalizer == FinalizerAction::Add
            && let Some(updated) = self
                .add_finalizer(primary, current.as_ref(), finalizer)
                .await?
        {
            current = Some(updated);
        }
        // A metadata patch that sets the whole finalizer list carries the finalizer action
        // too: two patches of one resourceVersion would conflict.
        let now = current.as_ref().map(|o| o.finalizers()).unwrap_or_default();
        let metadata = outcome
            .primary_metadata
            .as_ref()
            .map(|m| primary::rebase_finalizers(m, &seen, now, outcome.finalizer, finalizer));
        let finalizer_in_metadata = metadata
            .as_ref()
            .is_some_and(|m| m.get("finalizers").is_some());
        let mut failed = Vec::new();
        for wave in waves(&outcome.apply) {
            for chunk in wave.chunks(PARALLEL_WRITES) {
                let mut writes = Vec::with_capacity(chunk.len());
                for d in chunk {
                    writes.push(self.apply_desired(plugin, &manager, Some(primary), d));
                }
                failed.extend(join_all(writes).await.into_iter().filter_map(Result::err));
            }
        }
        for chunk in outcome.delete.chunks(PARALLEL_WRITES) {
            let mut deletes = Vec::with_capacity(chunk.len());
            for key in chunk {
                deletes.push(self.delete_managed(&manager, primary, key));
            }
            failed.extend(join_all(deletes).await.into_iter().filter_map(Result::err));
        }
        if let (Some(patch), Some(obj)) = (&metadata, current.as_ref()) {
            match self.patch_primary_metadata(primary, obj, patch).await {
                Ok(Some(updated)) => current = Some(updated),
                Ok(None) => {}
                Err(e) => failed.push(e),
            }
        }
        if let (Some(status), Some(obj), true) =
            (&outcome.status, current.as_ref(), failed.is_empty())
        {
            self.apply_status(plugin, &manager, primary, obj, status)
                .await?;
        }
        for e in &outcome.events {
            self.event(primary, e).await;
        }
        if !finalizer_in_metadata
            && outcome.finalizer == FinalizerAction::Remove
            && let Err(e) = self
                .remove_finalizer(primary, current.as_ref(), finalizer)
                .await
        {
            failed.push(e);
        }
        if failed.is_empty() {
            return Ok(());
        }
        for later in &failed[1..] {
            tracing::error!(plugin, object = primary.name, "{later}");
        }
        Err(failed.swap_remove(0))
    }
}

impl crate::side_effects::SideEffectSink for Applier {
    fn apply<'a>(
        &'a self,
        plugin: &'a str,
        objects: Vec<Desired>,
    ) -> crate::side_effects::SideEffectFuture<'a> {
        Box::pin(async move { self.create_absent(plugin, &objects).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use odh_plugin_runtime::wire::Ownership;

    fn desired(kind: &str, name: &str) -> Desired {
        Desired {
            object: serde_json::json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": name}}),
            ownership: Ownership::None,
        }
    }

    #[test]
    fn what_others_depend_on_goes_first_and_each_wave_keeps_the_plugins_order() {
        let all = [
            desired("RoleBinding", "rb"),
            desired("Service", "s1"),
            desired("Role", "r"),
            desired("Namespace", "ns"),
            desired("ConfigMap", "c"),
            desired("Service", "s2"),
        ];
        let names = |w: &Vec<&Desired>| -> Vec<String> {
            w.iter()
                .map(|d| d.object["metadata"]["name"].as_str().unwrap().to_string())
                .collect()
        };
        let [first, second] = waves(&all);
        assert_eq!(names(&first), ["r", "ns"]);
        assert_eq!(names(&second), ["rb", "s1", "c", "s2"]);
    }
}
