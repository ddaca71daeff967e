//! [`FakeWrites`]: writes made now, recorded, for native tests of reconciles that use
//! [`Ctx::writes`](crate::Ctx).

use std::cell::RefCell;

use serde_json::Value;

use crate::writes::{ApiStatus, WriteError, Writes};
use crate::{Desired, Gvk, Object, ObjectKey, Outcome};

/// Records every write and answers it: an applied object comes back as given, with the uid
/// `uid-<name>` when it has none; a delete answers true. [`FakeWrites::fail`] makes the writes
/// of one kind fail, as the API server would refuse them.
#[derive(Default)]
pub struct FakeWrites {
    failures: Vec<(Gvk, WriteError)>,
    applied: RefCell<Vec<Desired>>,
    deleted: RefCell<Vec<ObjectKey>>,
    deleted_unmanaged: RefCell<Vec<(ObjectKey, String)>>,
    patched: RefCell<Vec<(ObjectKey, String, Value)>>,
}

impl FakeWrites {
    pub fn new() -> Self {
        Self::default()
    }

    /// Every write of `gvk` fails with `error`.
    pub fn fail(mut self, gvk: Gvk, error: WriteError) -> Self {
        self.failures.push((gvk, error));
        self
    }

    /// The API server's refusal with `code`, `reason` and `message`.
    pub fn refused(code: u16, reason: &str, message: &str) -> WriteError {
        WriteError::Refused(ApiStatus {
            code,
            reason: reason.into(),
            message: message.into(),
        })
    }

    fn failure(&self, gvk: &Gvk) -> Option<WriteError> {
        self.failures
            .iter()
            .find(|(g, _)| g == gvk)
            .map(|(_, e)| e.clone())
    }

    /// The objects applied so far (those that did not fail), in order.
    pub fn applied(&self) -> Vec<Desired> {
        self.applied.borrow().clone()
    }

    /// The keys deleted so far by `delete` (those that did not fail), in order.
    pub fn deleted(&self) -> Vec<ObjectKey> {
        self.deleted.borrow().clone()
    }

    /// The keys and selectors of `delete_unmanaged` so far.
    pub fn deleted_unmanaged(&self) -> Vec<(ObjectKey, String)> {
        self.deleted_unmanaged.borrow().clone()
    }

    /// The `patch_metadata` calls so far: key, resourceVersion, patch.
    pub fn patched(&self) -> Vec<(ObjectKey, String, Value)> {
        self.patched.borrow().clone()
    }

    /// `outcome` with what was applied and deleted now added to its `apply` and `delete`: for
    /// assertions that do not care when a write was made.
    pub fn folded_into(&self, mut outcome: Outcome) -> Outcome {
        let mut apply = self.applied();
        apply.append(&mut outcome.apply);
        outcome.apply = apply;
        let mut delete = self.deleted();
        delete.extend(self.deleted_unmanaged().into_iter().map(|(k, _)| k));
        delete.append(&mut outcome.delete);
        outcome.delete = delete;
        outcome
    }
}

impl Writes for FakeWrites {
    fn apply(&self, objects: Vec<Desired>) -> Vec<Result<Object, WriteError>> {
        objects
            .into_iter()
            .map(|d| {
                let mut object = Object::parse(&d.object)
                    .map_err(|e| WriteError::Denied(format!("not a JSON object: {e}")))?;
                let gvk = object.gvk();
                if let Some(e) = self.failure(&gvk) {
                    return Err(e);
                }
                self.applied.borrow_mut().push(d);
                if object.0.pointer("/metadata/uid").is_none() {
                    let uid = format!("uid-{}", object.name());
                    object.0["metadata"]["uid"] = Value::String(uid);
                }
                Ok(object)
            })
            .collect()
    }

    fn delete(&self, keys: Vec<ObjectKey>) -> Vec<Result<bool, WriteError>> {
        keys.into_iter()
            .map(|k| {
                if let Some(e) = self.failure(&k.gvk) {
                    return Err(e);
                }
                self.deleted.borrow_mut().push(k);
                Ok(true)
            })
            .collect()
    }

    fn delete_unmanaged(
        &self,
        keys: Vec<ObjectKey>,
        label_selector: &str,
    ) -> Vec<Result<bool, WriteError>> {
        keys.into_iter()
            .map(|k| {
                if let Some(e) = self.failure(&k.gvk) {
                    return Err(e);
                }
                self.deleted_unmanaged
                    .borrow_mut()
                    .push((k, label_selector.to_string()));
                Ok(true)
            })
            .collect()
    }

    fn patch_metadata(
        &self,
        key: &ObjectKey,
        resource_version: &str,
        patch: &Value,
    ) -> Result<Object, WriteError> {
        if let Some(e) = self.failure(&key.gvk) {
            return Err(e);
        }
        self.patched
            .borrow_mut()
            .push((key.clone(), resource_version.to_string(), patch.clone()));
        Ok(Object(serde_json::json!({"metadata": {"name": key.name}})))
    }
}
