//! Writes a reconcile makes while it runs (WIT 0.1.5 `writes`), each answered. The sandbox
//! checks them against the plugin's capabilities ([`crate::call_state`]); a [`Writer`] makes
//! them: the controller's, over the API server, or [`Simulated`] where nothing may be written
//! (`plugin eval`, `plugin replay`, a reconcile called without a controller).

use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::cluster_view::ClusterView;
use crate::gvk::Gvk;
use crate::wire::{Desired, ObjectKey};
use odh_label_selector::LabelSelector;

/// The API server's refusal of a write: its `Status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiStatus {
    pub code: u16,
    pub reason: String,
    pub message: String,
}

impl std::fmt::Display for ApiStatus {
    /// What Go's client prints for an API status error: its message.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// A read that leaves the process fails with its API status as this error (in the `anyhow`
/// chain a [`ClusterView`] returns), so an admission answer can unwrap it as Go's does.
impl std::error::Error for ApiStatus {}

/// Why a write was not made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteError {
    /// The API server refused it.
    Refused(ApiStatus),
    /// Not sent: outside the plugin's grants, malformed, not allowed in this call.
    Denied(String),
    /// No answer (a timeout, a connection failure).
    Failed(String),
}

impl WriteError {
    pub fn not_found(message: String) -> Self {
        WriteError::Refused(ApiStatus {
            code: 404,
            reason: "NotFound".into(),
            message,
        })
    }
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteError::Refused(s) => f.write_str(&s.message),
            WriteError::Denied(m) | WriteError::Failed(m) => f.write_str(m),
        }
    }
}

/// Makes one reconcile's writes. `within` bounds each function's wait for the API server.
/// Objects and keys arrive checked against the plugin's capabilities.
pub trait Writer: Send + Sync {
    /// The uid of the primary the reconcile is about (owner references may name only it).
    fn primary_uid(&self) -> Option<String>;

    /// Server-side applies each object; answers the stored objects in order.
    fn apply(
        &self,
        plugin: &str,
        objects: Vec<Desired>,
        within: Duration,
    ) -> Vec<Result<Value, WriteError>>;

    /// Deletes each object the host manages (a shared one is released): true when written.
    fn delete(
        &self,
        plugin: &str,
        keys: Vec<ObjectKey>,
        within: Duration,
    ) -> Vec<Result<bool, WriteError>>;

    /// Deletes each object whose live labels match `selector`, whoever manages it.
    fn delete_unmanaged(
        &self,
        keys: Vec<ObjectKey>,
        selector: &LabelSelector,
        within: Duration,
    ) -> Vec<Result<bool, WriteError>>;

    /// Merge-patches an object's labels and annotations (`patch` is the `metadata` object) if
    /// it still has `resource_version`.
    fn patch_metadata(
        &self,
        key: ObjectKey,
        resource_version: &str,
        patch: Value,
        within: Duration,
    ) -> Result<Value, WriteError>;

    /// The same writer sending dry runs: a shadow call's.
    fn dry_run(&self) -> Arc<dyn Writer>;
}

/// Writes nothing: answers from a cluster view as the API server would have, for calls whose
/// writes are looked at, not made. An applied object comes back as desired, with the uid and
/// resourceVersion of the object the view holds, or a uid derived from its key.
pub struct Simulated {
    pub cluster: Arc<dyn ClusterView>,
}

impl Simulated {
    fn existing(&self, key: &ObjectKey, within: Duration) -> Result<Option<Value>, WriteError> {
        let text = self
            .cluster
            .get(&key.gvk, key.namespace.as_deref(), &key.name, within)
            .map_err(|e| WriteError::Failed(format!("{e:#}")))?;
        text.map(|t| serde_json::from_str(&t).map_err(|e| WriteError::Failed(e.to_string())))
            .transpose()
    }
}

/// The key an applied object names (its namespace, when it has none, left out).
fn key_of(object: &Value) -> Option<ObjectKey> {
    Some(ObjectKey {
        gvk: Gvk::of_object(object)?,
        namespace: object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .map(str::to_string),
        name: object.pointer("/metadata/name")?.as_str()?.to_string(),
    })
}

/// A stable made-up uid for an object that does not exist yet.
fn simulated_uid(key: &ObjectKey) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.gvk.hash(&mut h);
    key.namespace.hash(&mut h);
    key.name.hash(&mut h);
    format!(
        "00000000-0000-4000-8000-{:012x}",
        h.finish() & 0xffff_ffff_ffff
    )
}

fn labels_match(object: &Value, selector: &LabelSelector) -> bool {
    selector.matches_json(object.pointer("/metadata/labels"))
}

impl Writer for Simulated {
    fn primary_uid(&self) -> Option<String> {
        None
    }

    fn apply(
        &self,
        _plugin: &str,
        objects: Vec<Desired>,
        within: Duration,
    ) -> Vec<Result<Value, WriteError>> {
        objects
            .into_iter()
            .map(|d| {
                let mut object = d.object;
                let key = key_of(&object)
                    .ok_or_else(|| WriteError::Denied("an object without a name".into()))?;
                let existing = self.existing(&key, within)?;
                let meta = |p: &str| existing.as_ref().and_then(|e| e.pointer(p)).cloned();
                object["metadata"]["uid"] =
                    meta("/metadata/uid").unwrap_or_else(|| Value::from(simulated_uid(&key)));
                if let Some(rv) = meta("/metadata/resourceVersion") {
                    object["metadata"]["resourceVersion"] = rv;
                }
                Ok(object)
            })
            .collect()
    }

    fn delete(
        &self,
        _plugin: &str,
        keys: Vec<ObjectKey>,
        within: Duration,
    ) -> Vec<Result<bool, WriteError>> {
        keys.iter()
            .map(|k| Ok(self.existing(k, within)?.is_some()))
            .collect()
    }

    fn delete_unmanaged(
        &self,
        keys: Vec<ObjectKey>,
        selector: &LabelSelector,
        within: Duration,
    ) -> Vec<Result<bool, WriteError>> {
        keys.iter()
            .map(|k| {
                Ok(self
                    .existing(k, within)?
                    .is_some_and(|o| labels_match(&o, selector)))
            })
            .collect()
    }

    fn patch_metadata(
        &self,
        key: ObjectKey,
        resource_version: &str,
        patch: Value,
        within: Duration,
    ) -> Result<Value, WriteError> {
        let Some(mut object) = self.existing(&key, within)? else {
            return Err(WriteError::not_found(format!(
                "{} {:?} not found",
                key.gvk.kind, key.name
            )));
        };
        let rv = object
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str);
        if rv.is_some_and(|rv| rv != resource_version) {
            return Err(WriteError::Refused(ApiStatus {
                code: 409,
                reason: "Conflict".into(),
                message: format!(
                    "Operation cannot be fulfilled on {} {:?}: the object has been modified; please apply your changes to the latest version and try again",
                    key.gvk.kind, key.name
                ),
            }));
        }
        merge_patch(&mut object["metadata"], &patch);
        Ok(object)
    }

    fn dry_run(&self) -> Arc<dyn Writer> {
        Arc::new(Simulated {
            cluster: self.cluster.clone(),
        })
    }
}

/// RFC 7386 JSON merge patch of `target` by `patch`.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Some(fields) = patch.as_object() else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Default::default());
    }
    let map = target.as_object_mut().expect("made an object above");
    for (k, v) in fields {
        if v.is_null() {
            map.remove(k);
        } else {
            merge_patch(map.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

/// A `patch-metadata` patch changes labels and annotations only.
pub fn check_metadata_patch(patch: &Value) -> Result<(), String> {
    let Some(fields) = patch.as_object() else {
        return Err("the patch must be a JSON object".into());
    };
    let Some(metadata) = fields.get("metadata").and_then(Value::as_object) else {
        return Err("the patch must be {\"metadata\": {...}}".into());
    };
    if let Some(other) = fields.keys().find(|k| *k != "metadata") {
        return Err(format!(
            "patch-metadata may only change metadata.labels and metadata.annotations, not {other:?}"
        ));
    }
    match metadata
        .keys()
        .find(|k| !matches!(k.as_str(), "labels" | "annotations"))
    {
        Some(other) => Err(format!(
            "patch-metadata may only change metadata.labels and metadata.annotations, not metadata.{other}"
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster_view::MemoryCluster;
    use serde_json::json;

    fn cm(name: &str, labels: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                            "resourceVersion": "7", "labels": labels}})
    }

    fn key(name: &str) -> ObjectKey {
        ObjectKey {
            gvk: Gvk::new("", "v1", "ConfigMap"),
            namespace: Some("ns".into()),
            name: name.into(),
        }
    }

    fn simulated() -> Simulated {
        let mut cluster = MemoryCluster::default();
        cluster.insert(cm("a", json!({"team": "x"}))).unwrap();
        Simulated {
            cluster: Arc::new(cluster),
        }
    }

    #[test]
    fn a_simulated_apply_keeps_the_existing_uid_and_makes_a_stable_one_for_a_new_object() {
        let w = simulated();
        let desired = |name: &str| Desired {
            object: json!({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": name, "namespace": "ns"}, "data": {"k": "v"}}),
            ownership: crate::wire::Ownership::None,
        };
        let out = w.apply(
            "p",
            vec![desired("a"), desired("b")],
            Duration::from_secs(1),
        );
        let a = out[0].as_ref().unwrap();
        assert_eq!(a["metadata"]["uid"], "uid-a");
        assert_eq!(a["metadata"]["resourceVersion"], "7");
        assert_eq!(a["data"]["k"], "v");
        let b = out[1].as_ref().unwrap()["metadata"]["uid"].clone();
        let again = w.apply("p", vec![desired("b")], Duration::from_secs(1));
        assert_eq!(again[0].as_ref().unwrap()["metadata"]["uid"], b);
        assert_ne!(b, "uid-a");
    }

    #[test]
    fn simulated_deletes_answer_what_the_view_holds() {
        let w = simulated();
        let within = Duration::from_secs(1);
        let deleted = w.delete("p", vec![key("a"), key("gone")], within);
        assert_eq!(deleted, vec![Ok(true), Ok(false)]);
        let team_x = LabelSelector::parse("team=x").unwrap();
        let team_y = LabelSelector::parse("team=y").unwrap();
        assert_eq!(
            w.delete_unmanaged(vec![key("a")], &team_x, within),
            vec![Ok(true)]
        );
        assert_eq!(
            w.delete_unmanaged(vec![key("a")], &team_y, within),
            vec![Ok(false)]
        );
    }

    #[test]
    fn a_simulated_metadata_patch_needs_the_version_and_merges() {
        let w = simulated();
        let within = Duration::from_secs(1);
        let patch = json!({"labels": {"team": null, "new": "1"}});
        let patched = w
            .patch_metadata(key("a"), "7", patch.clone(), within)
            .unwrap();
        assert_eq!(patched["metadata"]["labels"], json!({"new": "1"}));
        let stale = w.patch_metadata(key("a"), "6", patch.clone(), within);
        assert!(matches!(stale, Err(WriteError::Refused(ref s)) if s.code == 409));
        let absent = w.patch_metadata(key("gone"), "1", patch, within);
        assert!(matches!(absent, Err(WriteError::Refused(ref s)) if s.reason == "NotFound"));
    }

    #[test]
    fn metadata_patches_touch_labels_and_annotations_only() {
        assert!(check_metadata_patch(&json!({"metadata": {"annotations": {"a": null}}})).is_ok());
        assert!(check_metadata_patch(&json!({"metadata": {"finalizers": []}})).is_err());
        assert!(check_metadata_patch(&json!({"spec": {}})).is_err());
        assert!(check_metadata_patch(&json!({"metadata": {"labels": {}}, "data": {}})).is_err());
        assert!(check_metadata_patch(&json!([])).is_err());
    }
}
