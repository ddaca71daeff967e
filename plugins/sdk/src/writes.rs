//! Writes made while a reconcile runs, each answered (the WIT `writes` import, 0.1.5).
//!
//! An [`Outcome`](crate::Outcome)'s writes are made after the reconcile returns, all of them.
//! Where upstream's code acts on each write's result (stop at the first failed step with that
//! step's Event, put the uid of an object it just made into a status, keep a finalizer until a
//! delete succeeded), write through [`Ctx::writes`](crate::Ctx) instead:
//!
//! ```
//! use odh_plugin_sdk::writes::Writes;
//! use odh_plugin_sdk::{Desired, Error, Object, Ownership};
//!
//! fn step(writes: &dyn Writes, desired: Object, existed: bool) -> Result<Object, Error> {
//!     let verb = if existed { "update" } else { "create" };
//!     writes
//!         .apply_one(Desired::new(&desired, Ownership::Controller))
//!         .map_err(|e| Error::from(e).context(format!("failed to {verb} ConfigMap")))
//! }
//! ```
//!
//! `apply` and `delete` are an outcome's `apply` and `delete` made now: the same checks (kinds in
//! the manifest's `writes` and granted), field manager and ownership; `delete` removes only
//! objects the host manages. [`Writes::delete_unmanaged`] and [`Writes::patch_metadata`] reach
//! objects someone else made and need the admin's `grants.foreignWrites` for the kind.
//!
//! Only a reconcile writes; a shadow call's writes are dry runs and `plugin eval` answers from
//! its state. Native tests pass a [`testing::FakeWrites`](crate::testing::FakeWrites).

use serde_json::Value;

pub use crate::bindings::odh::controller::writes::ApiStatus;
use crate::{Desired, Error, Object, ObjectKey};

/// Why a write was not made.
#[derive(Clone, Debug, PartialEq)]
pub enum WriteError {
    /// The API server refused it: its status (code, reason, message).
    Refused(ApiStatus),
    /// The host did not send it: outside the plugin's grants, malformed, not a reconcile.
    Denied(String),
    /// No answer: a timeout, a connection failure, the call's time budget spent.
    Failed(String),
}

impl WriteError {
    /// What Go's client prints for the error: the status message when the API server answered.
    pub fn message(&self) -> &str {
        match self {
            WriteError::Refused(s) => &s.message,
            WriteError::Denied(m) | WriteError::Failed(m) => m,
        }
    }

    /// The API server's status, when it answered.
    pub fn status(&self) -> Option<&ApiStatus> {
        match self {
            WriteError::Refused(s) => Some(s),
            _ => None,
        }
    }

    /// A 404.
    pub fn is_not_found(&self) -> bool {
        self.status().is_some_and(|s| s.code == 404)
    }

    /// A 409 (a stale resourceVersion, or an object that exists).
    pub fn is_conflict(&self) -> bool {
        self.status().is_some_and(|s| s.code == 409)
    }
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

/// A refused or unanswered write is [`Error::Transient`] (retried with back-off); one the host
/// did not send is [`Error::Denied`].
impl From<WriteError> for Error {
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::Denied(m) => Error::Denied(m),
            other => Error::Transient(other.message().to_string()),
        }
    }
}

/// Writes made now. Answers come in the order asked.
pub trait Writes {
    /// Server-side applies each object; answers the object as stored (with its uid and
    /// resourceVersion).
    fn apply(&self, objects: Vec<Desired>) -> Vec<Result<Object, WriteError>>;

    /// Deletes each object the host manages (a shared one is released by the primary): true
    /// when it did, false when there was none or it is not ours.
    fn delete(&self, keys: Vec<ObjectKey>) -> Vec<Result<bool, WriteError>>;

    /// Deletes each object whose live labels match `label_selector`, whoever made it:
    /// true when deleted, false when absent or not matching. Needs `grants.foreignWrites`.
    fn delete_unmanaged(
        &self,
        keys: Vec<ObjectKey>,
        label_selector: &str,
    ) -> Vec<Result<bool, WriteError>>;

    /// A JSON merge patch of an object's labels and annotations
    /// (`{"metadata":{"annotations":{"k":null}}}`), sent only if it still has
    /// `resource_version`. Needs `grants.foreignWrites`.
    fn patch_metadata(
        &self,
        key: &ObjectKey,
        resource_version: &str,
        patch: &Value,
    ) -> Result<Object, WriteError>;

    /// [`Writes::apply`] of one object.
    fn apply_one(&self, desired: Desired) -> Result<Object, WriteError> {
        one(self.apply(vec![desired]))
    }

    /// [`Writes::delete`] of one object.
    fn delete_one(&self, key: ObjectKey) -> Result<bool, WriteError> {
        one(self.delete(vec![key]))
    }
}

fn one<T>(mut answers: Vec<Result<T, WriteError>>) -> Result<T, WriteError> {
    answers
        .pop()
        .unwrap_or_else(|| Err(WriteError::Failed("the host gave no answer".into())))
}

/// The host's writes (the WIT `writes` import). Off `wasm32` every write fails with
/// [`WriteError::Failed`]: pass a [`testing::FakeWrites`](crate::testing::FakeWrites) in tests.
#[derive(Clone, Copy, Debug, Default)]
pub struct Host;

#[cfg(target_arch = "wasm32")]
mod imp {
    use super::*;
    use crate::bindings::odh::controller::writes as wit;

    fn error(e: wit::WriteError) -> WriteError {
        match e {
            wit::WriteError::Refused(s) => WriteError::Refused(s),
            wit::WriteError::Denied(m) => WriteError::Denied(m),
            wit::WriteError::Failed(m) => WriteError::Failed(m),
        }
    }

    fn object(text: String) -> Result<Object, WriteError> {
        Object::parse(&text).map_err(|e| WriteError::Failed(format!("the host answered: {e}")))
    }

    impl Writes for Host {
        fn apply(&self, objects: Vec<Desired>) -> Vec<Result<Object, WriteError>> {
            wit::apply(&objects)
                .into_iter()
                .map(|r| r.map_err(error).and_then(object))
                .collect()
        }

        fn delete(&self, keys: Vec<ObjectKey>) -> Vec<Result<bool, WriteError>> {
            wit::delete(&keys)
                .into_iter()
                .map(|r| r.map_err(error))
                .collect()
        }

        fn delete_unmanaged(
            &self,
            keys: Vec<ObjectKey>,
            label_selector: &str,
        ) -> Vec<Result<bool, WriteError>> {
            wit::delete_unmanaged(&keys, label_selector)
                .into_iter()
                .map(|r| r.map_err(error))
                .collect()
        }

        fn patch_metadata(
            &self,
            key: &ObjectKey,
            resource_version: &str,
            patch: &Value,
        ) -> Result<Object, WriteError> {
            wit::patch_metadata(key, resource_version, &patch.to_string())
                .map_err(error)
                .and_then(object)
        }
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl Writes for Host {
    fn apply(&self, objects: Vec<Desired>) -> Vec<Result<Object, WriteError>> {
        objects.iter().map(|_| Err(outside())).collect()
    }

    fn delete(&self, keys: Vec<ObjectKey>) -> Vec<Result<bool, WriteError>> {
        keys.iter().map(|_| Err(outside())).collect()
    }

    fn delete_unmanaged(&self, keys: Vec<ObjectKey>, _: &str) -> Vec<Result<bool, WriteError>> {
        keys.iter().map(|_| Err(outside())).collect()
    }

    fn patch_metadata(&self, _: &ObjectKey, _: &str, _: &Value) -> Result<Object, WriteError> {
        Err(outside())
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn outside() -> WriteError {
    WriteError::Failed("writes are only available inside the plugin host".into())
}
