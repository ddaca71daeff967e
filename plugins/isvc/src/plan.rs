//! What one reconcile decided, collected step by step. Every step runs even when an earlier
//! one failed (upstream aggregates the errors); a failed step adds nothing but its error.

use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{Error, Gvk, ObjectKey, Outcome, Ownership, Value, object_key};

#[derive(Default)]
pub struct Plan {
    pub apply: Vec<(Value, Ownership)>,
    pub delete: Vec<ObjectKey>,
    pub errors: Vec<Error>,
}

impl Plan {
    /// Owned by the InferenceService as its controller (removed with it).
    pub fn apply_owned(&mut self, object: Value) {
        self.apply.push((object, Ownership::Controller));
    }

    /// Co-owned by every InferenceService that needs it.
    pub fn apply_shared(&mut self, object: Value) {
        self.apply.push((object, Ownership::Owner));
    }

    /// Not owned: outlives the InferenceService (e.g. a cluster-scoped binding).
    pub fn apply_unowned(&mut self, object: Value) {
        self.apply.push((object, Ownership::None));
    }

    /// Deleted if the host manages it; a shared object other owners still hold is released.
    pub fn delete(&mut self, key: ObjectKey) {
        if !self.delete.contains(&key) {
            self.delete.push(key);
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

    /// Runs one step, recording its failure; the next steps run regardless.
    pub fn step(&mut self, step: impl FnOnce(&mut Plan) -> Result<(), Error>) {
        if let Err(e) = step(self) {
            self.errors.push(e);
        }
    }

    pub fn into_outcome(self, mut outcome: Outcome) -> Outcome {
        for (object, ownership) in self.apply {
            outcome = outcome.apply(object, ownership);
        }
        for key in self.delete {
            outcome = outcome.delete(key);
        }
        for e in self.errors {
            outcome = outcome.fail(e);
        }
        outcome
    }
}
