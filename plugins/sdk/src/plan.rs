//! [`Plan`]: the one way to build a reconcile [`Outcome`].
//!
//! A reconcile is a sequence of steps that each decide part of the world; upstream
//! controllers run them all and aggregate the errors, so a failed step must not hold back the
//! others. A plan collects what the steps decide (objects to apply and delete, the finalizer,
//! a requeue, a patch of the primary's metadata, status, events) and every failure, and turns
//! into the [`Outcome`] the host applies: everything decided first, then the joined error.
//!
//! ```
//! use odh_plugin_sdk::{Error, Plan, core_gvk, json};
//!
//! let mut plan = Plan::new();
//! plan.add_finalizer();
//! plan.step(|plan| {
//!     plan.apply_owned(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}));
//!     Ok(())
//! });
//! plan.step(|_| Err(Error::transient("the registry is down")));
//! plan.requeue_within(60_000);
//! plan.requeue_within(30_000);
//! let outcome = plan.into_outcome();
//! assert_eq!(outcome.apply.len(), 1);
//! assert_eq!(outcome.requeue_after_ms, Some(30_000));
//! assert_eq!(outcome.error, Some(Error::Transient("the registry is down".into())));
//! ```

use serde::Serialize;
use serde_json::{Map, Value};

use crate::cluster::Cluster;
use crate::outcome::to_json;
use crate::{
    Desired, Error, Event, EventType, FinalizerAction, Gvk, ObjectKey, Outcome, Ownership,
    object_key,
};

/// What one reconcile decided, collected step by step.
#[derive(Debug, Default)]
pub struct Plan {
    outcome: Outcome,
    /// The merged patch of the primary's metadata, kept as JSON until the end.
    metadata: Option<Value>,
    /// The deletions asked for so far (group, version, kind, namespace, name): asking twice is
    /// asking once, without a scan of the list per deletion.
    deleting: std::collections::HashSet<DeleteKey>,
}

type DeleteKey = (String, String, String, Option<String>, String);

fn delete_key(key: &ObjectKey) -> DeleteKey {
    (
        key.gvk.group.clone(),
        key.gvk.version.clone(),
        key.gvk.kind.clone(),
        key.namespace.clone(),
        key.name.clone(),
    )
}

impl Plan {
    /// Nothing decided yet.
    pub fn new() -> Plan {
        Plan::default()
    }

    /// Makes `object` exist with these fields (server-side apply), tied to the primary by
    /// `ownership`.
    pub fn apply(&mut self, object: impl Serialize, ownership: Ownership) {
        self.outcome.apply.push(Desired::new(object, ownership));
    }

    /// Owned by the primary as its controller (removed with it).
    pub fn apply_owned(&mut self, object: impl Serialize) {
        self.apply(object, Ownership::Controller);
    }

    /// Co-owned by every primary that needs it (a plain owner reference each).
    pub fn apply_shared(&mut self, object: impl Serialize) {
        self.apply(object, Ownership::Owner);
    }

    /// Not owned: outlives the primary (e.g. a cluster-scoped binding).
    pub fn apply_unowned(&mut self, object: impl Serialize) {
        self.apply(object, Ownership::None);
    }

    /// Deletes the object if it exists and the host manages it; a shared object other owners
    /// still hold is released instead. Asking twice is asking once.
    pub fn delete(&mut self, key: ObjectKey) {
        if self.deleting.insert(delete_key(&key)) {
            self.outcome.delete.push(key);
        }
    }

    /// Asks for the removal of an object the cluster holds now (no request for one that is
    /// already gone). A failed read is returned: the caller decides whether it matters.
    pub fn delete_existing(
        &mut self,
        cluster: &dyn Cluster,
        gvk: &Gvk,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<(), Error> {
        if cluster.get(gvk, namespace, name)?.is_some() {
            self.delete(object_key(gvk, namespace, name));
        }
        Ok(())
    }

    /// Runs one step, recording its failure; the next steps run regardless. What a failed
    /// step decided before failing stays decided.
    pub fn step(&mut self, step: impl FnOnce(&mut Plan) -> Result<(), Error>) {
        if let Err(e) = step(self) {
            self.fail(e);
        }
    }

    /// Records a failure: the outcome is still applied, then the host reports the (joined)
    /// error and retries with back-off.
    pub fn fail(&mut self, error: Error) {
        self.outcome.error = Some(match self.outcome.error.take() {
            None => error,
            Some(first) => first.join(error),
        });
    }

    /// The failures recorded so far, joined.
    pub fn error(&self) -> Option<&Error> {
        self.outcome.error.as_ref()
    }

    /// Makes sure the manifest's finalizer is on the primary (the host adds it before
    /// applying anything).
    pub fn add_finalizer(&mut self) {
        self.outcome.finalizer = FinalizerAction::Add;
    }

    /// Removes the manifest's finalizer once everything else is done: deletion may proceed.
    pub fn remove_finalizer(&mut self) {
        self.outcome.finalizer = FinalizerAction::Remove;
    }

    /// Reconcile again within `ms` milliseconds even if nothing changes; of several asks the
    /// soonest wins.
    pub fn requeue_within(&mut self, ms: u64) {
        let soonest = self
            .outcome
            .requeue_after_ms
            .map_or(ms, |mine| mine.min(ms));
        self.outcome.requeue_after_ms = Some(soonest);
    }

    /// Merge-patches the primary's own `metadata` (labels, annotations, the whole
    /// `finalizers` list), sent with its resourceVersion as a precondition. Several patches
    /// merge; a later one wins where they overlap (`null` removes a key).
    pub fn patch_primary_metadata(&mut self, patch: Value) {
        self.metadata = Some(match self.metadata.take() {
            None => patch,
            Some(mut earlier) => {
                compose(&mut earlier, patch);
                earlier
            }
        });
    }

    /// Sets (`Some`) or removes (`None`) one label of the primary.
    pub fn set_primary_label(&mut self, key: &str, value: Option<&str>) {
        self.patch_primary_entry("labels", key, value);
    }

    /// Sets (`Some`) or removes (`None`) one annotation of the primary.
    pub fn set_primary_annotation(&mut self, key: &str, value: Option<&str>) {
        self.patch_primary_entry("annotations", key, value);
    }

    /// Replaces the primary's whole `finalizers` list (for finalizers other than the
    /// manifest's, which [`Plan::add_finalizer`] and [`Plan::remove_finalizer`] handle).
    pub fn set_primary_finalizers(&mut self, finalizers: &[String]) {
        self.patch_primary_metadata(serde_json::json!({ "finalizers": finalizers }));
    }

    fn patch_primary_entry(&mut self, map: &str, key: &str, value: Option<&str>) {
        let mut entries = Map::new();
        entries.insert(key.into(), value.map_or(Value::Null, Value::from));
        let mut patch = Map::new();
        patch.insert(map.into(), Value::Object(entries));
        self.patch_primary_metadata(Value::Object(patch));
    }

    /// Sets the primary's whole `status`.
    pub fn status(&mut self, status: impl Serialize) {
        self.outcome.status = Some(to_json(status));
    }

    /// Records an Event; `regarding` none means the primary.
    pub fn event(
        &mut self,
        type_: EventType,
        reason: &str,
        message: impl Into<String>,
        regarding: Option<ObjectKey>,
    ) {
        self.outcome.events.push(Event {
            type_,
            reason: reason.into(),
            message: message.into(),
            regarding,
        });
    }

    /// Records a Normal Event on the primary.
    pub fn event_normal(&mut self, reason: &str, message: impl Into<String>) {
        self.event(EventType::Normal, reason, message, None);
    }

    /// Records a Warning Event on the primary.
    pub fn event_warning(&mut self, reason: &str, message: impl Into<String>) {
        self.event(EventType::Warning, reason, message, None);
    }

    /// The outcome decided so far (without the metadata patch), for inspection.
    pub fn outcome(&self) -> &Outcome {
        &self.outcome
    }

    /// The outcome for the host.
    pub fn into_outcome(self) -> Outcome {
        Outcome {
            primary_metadata: self.metadata.map(to_json),
            ..self.outcome
        }
    }
}

/// Composes two merge patches into one that does what applying both in order does: objects
/// merge key by key, anything else (`null` included, which must still remove) replaces.
fn compose(earlier: &mut Value, later: Value) {
    match (earlier, later) {
        (Value::Object(earlier), Value::Object(later)) => {
            for (key, value) in later {
                match earlier.get_mut(&key) {
                    Some(slot) if slot.is_object() && value.is_object() => compose(slot, value),
                    _ => {
                        earlier.insert(key, value);
                    }
                }
            }
        }
        (earlier, later) => *earlier = later,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::FakeCluster;
    use crate::{core_gvk, json};

    fn cm(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}})
    }

    #[test]
    fn ownership_and_deletes() {
        let mut plan = Plan::new();
        plan.apply_owned(cm("a"));
        plan.apply_shared(cm("b"));
        plan.apply_unowned(cm("c"));
        let key = object_key(&core_gvk("ConfigMap"), Some("ns"), "d");
        plan.delete(key.clone());
        plan.delete(key.clone());
        let cluster = FakeCluster::new().with(cm("e"));
        plan.delete_existing(&cluster, &core_gvk("ConfigMap"), Some("ns"), "e")
            .unwrap();
        plan.delete_existing(&cluster, &core_gvk("ConfigMap"), Some("ns"), "gone")
            .unwrap();
        let denied = FakeCluster::new().deny(core_gvk("ConfigMap"));
        assert!(
            plan.delete_existing(&denied, &core_gvk("ConfigMap"), Some("ns"), "e")
                .is_err()
        );
        let o = plan.into_outcome();
        let owners: Vec<Ownership> = o.apply.iter().map(|d| d.ownership).collect();
        assert_eq!(
            owners,
            [Ownership::Controller, Ownership::Owner, Ownership::None]
        );
        let deleted: Vec<&str> = o.delete.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(deleted, ["d", "e"]);
        assert_eq!(o.error, None);
    }

    #[test]
    fn every_step_runs_and_errors_join() {
        let mut plan = Plan::new();
        plan.step(|_| Err(Error::invalid("first")));
        plan.step(|p| {
            p.apply_owned(cm("kept"));
            Err(Error::transient("second"))
        });
        plan.step(|p| {
            p.apply_owned(cm("later"));
            Ok(())
        });
        assert!(plan.error().is_some());
        let o = plan.into_outcome();
        assert_eq!(o.apply.len(), 2, "what a failed step decided stays decided");
        assert_eq!(o.error, Some(Error::Transient("first\nsecond".into())));
    }

    #[test]
    fn finalizer_requeue_status_and_events() {
        let mut plan = Plan::new();
        assert_eq!(plan.outcome().finalizer, FinalizerAction::Keep);
        plan.add_finalizer();
        assert_eq!(plan.outcome().finalizer, FinalizerAction::Add);
        plan.remove_finalizer();
        plan.requeue_within(5_000);
        plan.requeue_within(9_000);
        plan.status(json!({"ready": true}));
        plan.event_normal("Created", "made it");
        plan.event_warning("Failed", "not quite");
        let o = plan.into_outcome();
        assert_eq!(o.finalizer, FinalizerAction::Remove);
        assert_eq!(o.requeue_after_ms, Some(5_000));
        assert_eq!(o.status.as_deref(), Some(r#"{"ready":true}"#));
        let types: Vec<EventType> = o.events.iter().map(|e| e.type_).collect();
        assert_eq!(types, [EventType::Normal, EventType::Warning]);
        assert_eq!(Plan::new().into_outcome(), Outcome::default());
    }

    #[test]
    fn metadata_patches_merge() {
        let mut plan = Plan::new();
        plan.set_primary_label("a", Some("1"));
        plan.set_primary_label("b", Some("2"));
        plan.set_primary_annotation("n", Some("x"));
        plan.set_primary_finalizers(&["f1".to_string()]);
        plan.set_primary_label("b", None);
        plan.set_primary_finalizers(&["f2".to_string()]);
        let o = plan.into_outcome();
        let patch: Value = serde_json::from_str(o.primary_metadata.as_deref().unwrap()).unwrap();
        assert_eq!(
            patch,
            json!({"labels": {"a": "1", "b": null}, "annotations": {"n": "x"}, "finalizers": ["f2"]})
        );
    }
}
