//! The reconcile records' constructors: [`Desired`] and the empty [`Outcome`]. Outcomes are
//! built with a [`Plan`](crate::Plan).

use serde::Serialize;

use crate::{Desired, FinalizerAction, Outcome, Ownership};

pub(crate) fn to_json(value: impl Serialize) -> String {
    serde_json::to_string(&value).expect("value serializes to JSON (maps need string keys)")
}

impl Desired {
    /// An object to apply (`apiVersion`, `kind` and `metadata.name` required).
    pub fn new(object: impl Serialize, ownership: Ownership) -> Desired {
        Desired {
            object: to_json(object),
            ownership,
        }
    }
}

impl Default for Outcome {
    /// Nothing to do: no objects, status untouched, finalizers kept, no requeue.
    fn default() -> Self {
        Outcome {
            apply: Vec::new(),
            delete: Vec::new(),
            status: None,
            finalizer: FinalizerAction::Keep,
            events: Vec::new(),
            requeue_after_ms: None,
            primary_metadata: None,
            error: None,
        }
    }
}
