//! What one reconcile decided, collected step by step. Every step runs even when an earlier
//! one failed (upstream aggregates the errors); a failed step adds nothing but its error.

use odh_plugin_sdk::{Error, ObjectKey, Outcome, Ownership, Value};

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

    /// Records a step's failure.
    pub fn step(&mut self, result: Result<(), Error>) {
        if let Err(e) = result {
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
