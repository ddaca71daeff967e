//! The `writes` import (WIT 0.1.5): a reconcile's writes made while it runs. Each object or key
//! is checked as an outcome's would be (kinds it may write, owner references only to the
//! primary; `grants.foreignWrites` for objects the host does not manage) and refused alone: a
//! refused one does not hold back the others, and the plugin sees why in its answer.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::bindings::{types, writes as wit};
use crate::call_state::CallState;
use crate::gvk::Gvk;
use crate::wire::{Desired, ObjectKey, Ownership};
use crate::writes::{WriteError, Writer};
use odh_label_selector::LabelSelector;

impl From<WriteError> for wit::WriteError {
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::Refused(s) => wit::WriteError::Refused(wit::ApiStatus {
                code: s.code,
                reason: s.reason,
                message: s.message,
            }),
            WriteError::Denied(m) => wit::WriteError::Denied(m),
            WriteError::Failed(m) => wit::WriteError::Failed(m),
        }
    }
}

type Answer<T> = Result<T, wit::WriteError>;

impl CallState {
    /// The writer and the time left, or why this call may not write.
    fn write_window(
        &mut self,
        what: &str,
        count: usize,
    ) -> Result<(Arc<dyn Writer>, Duration), WriteError> {
        let Some(writer) = self.writer.clone() else {
            return Err(WriteError::Denied(format!(
                "{what}: only a reconcile may write (map, admission, API and settings calls return what they decide)"
            )));
        };
        if count > crate::wire::MAX_OUTCOME_ENTRIES {
            return Err(WriteError::Denied(format!(
                "{what}: more than {} objects in one call",
                crate::wire::MAX_OUTCOME_ENTRIES
            )));
        }
        let within = self
            .host_call_window(what)
            .map_err(|e| WriteError::Failed(crate::GuestError::from(e).message().to_string()))?;
        Ok((writer, within))
    }

    fn may_write(&self, gvk: &Gvk, foreign: bool) -> Result<(), WriteError> {
        if !self.caps.may_write(gvk) {
            return Err(WriteError::Denied(format!(
                "plugin {:?} may not write {gvk}: declare it in the manifest's writes and have it granted",
                &*self.plugin
            )));
        }
        if foreign && !self.caps.may_write_foreign(gvk) {
            return Err(WriteError::Denied(format!(
                "plugin {:?} may not change {gvk} objects it does not manage: the admin grants that kind in grants.foreignWrites",
                &*self.plugin
            )));
        }
        Ok(())
    }

    /// Keys of kinds the plugin may write (`foreign`: objects it does not manage too), each
    /// checked alone.
    fn checked_keys(
        &self,
        keys: Vec<types::ObjectKey>,
        foreign: bool,
    ) -> Vec<Result<ObjectKey, WriteError>> {
        keys.into_iter()
            .map(|k| {
                let k = ObjectKey::from(k);
                self.may_write(&k.gvk, foreign).map(|()| k)
            })
            .collect()
    }

    /// One desired object, checked: JSON object, a kind it may write, owner references (on an
    /// unowned object) only to the primary.
    fn checked_desired(
        &self,
        d: crate::bindings::reconcile_types::Desired,
        primary_uid: Option<&str>,
    ) -> Result<Desired, WriteError> {
        let d = crate::wire::desired_from(d, "the object").map_err(WriteError::Denied)?;
        let gvk = Gvk::of_object(&d.object)
            .ok_or_else(|| WriteError::Denied("an object without apiVersion/kind".into()))?;
        self.may_write(&gvk, false)?;
        if d.ownership == Ownership::None
            && let Some(refs) = d
                .object
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
            && refs.iter().any(|r| {
                primary_uid.is_none() || r.get("uid").and_then(Value::as_str) != primary_uid
            })
        {
            return Err(WriteError::Denied(format!(
                "plugin {:?} may set owner references only to the primary it reconciles",
                &*self.plugin
            )));
        }
        Ok(d)
    }
}

/// Runs `write` on the items that passed their checks and puts the answers back in order.
fn partial<I, T>(
    checked: Vec<Result<I, WriteError>>,
    write: impl FnOnce(Vec<I>) -> Vec<Result<T, WriteError>>,
) -> Vec<Answer<T>> {
    let mut passed = Vec::new();
    let mut slots = Vec::with_capacity(checked.len());
    for c in checked {
        match c {
            Ok(item) => {
                passed.push(item);
                slots.push(None);
            }
            Err(e) => slots.push(Some(e)),
        }
    }
    let mut answers = write(passed).into_iter();
    slots
        .into_iter()
        .map(|slot| match slot {
            Some(e) => Err(e.into()),
            None => answers
                .next()
                .unwrap_or_else(|| Err(WriteError::Failed("no answer from the writer".into())))
                .map_err(Into::into),
        })
        .collect()
}

fn all_failed<T>(n: usize, e: WriteError) -> Vec<Answer<T>> {
    (0..n).map(|_| Err(e.clone().into())).collect()
}

impl wit::Host for CallState {
    fn apply(
        &mut self,
        objects: Vec<crate::bindings::reconcile_types::Desired>,
    ) -> Vec<Answer<String>> {
        let (writer, within) = match self.write_window("writes.apply", objects.len()) {
            Ok(w) => w,
            Err(e) => return all_failed(objects.len(), e),
        };
        let uid = writer.primary_uid();
        let checked = objects
            .into_iter()
            .map(|d| self.checked_desired(d, uid.as_deref()))
            .collect();
        let plugin = self.plugin.clone();
        partial(checked, |ok| writer.apply(&plugin, ok, within))
            .into_iter()
            .map(|r| r.map(|v| v.to_string()))
            .collect()
    }

    fn delete(&mut self, keys: Vec<types::ObjectKey>) -> Vec<Answer<bool>> {
        let (writer, within) = match self.write_window("writes.delete", keys.len()) {
            Ok(w) => w,
            Err(e) => return all_failed(keys.len(), e),
        };
        let checked = self.checked_keys(keys, false);
        let plugin = self.plugin.clone();
        partial(checked, |ok| writer.delete(&plugin, ok, within))
    }

    fn delete_unmanaged(
        &mut self,
        keys: Vec<types::ObjectKey>,
        label_selector: String,
    ) -> Vec<Answer<bool>> {
        let selector = match LabelSelector::parse(&label_selector) {
            Ok(s) if !s.is_everything() => s,
            Ok(_) => {
                let e = WriteError::Denied(
                    "writes.delete-unmanaged needs a label selector that is not empty".into(),
                );
                return all_failed(keys.len(), e);
            }
            Err(e) => return all_failed(keys.len(), WriteError::Denied(e.to_string())),
        };
        let (writer, within) = match self.write_window("writes.delete-unmanaged", keys.len()) {
            Ok(w) => w,
            Err(e) => return all_failed(keys.len(), e),
        };
        let checked = self.checked_keys(keys, true);
        partial(checked, |ok| writer.delete_unmanaged(ok, &selector, within))
    }

    fn patch_metadata(
        &mut self,
        key: types::ObjectKey,
        resource_version: String,
        patch: String,
    ) -> Answer<String> {
        let key = ObjectKey::from(key);
        let run = || -> Result<Value, WriteError> {
            let patch: Value = serde_json::from_str(&patch)
                .map_err(|e| WriteError::Denied(format!("the patch is not valid JSON: {e}")))?;
            crate::writes::check_metadata_patch(&patch).map_err(WriteError::Denied)?;
            if resource_version.is_empty() {
                return Err(WriteError::Denied(
                    "writes.patch-metadata needs the object's resourceVersion".into(),
                ));
            }
            Ok(patch)
        };
        let patch = run()?;
        self.may_write(&key.gvk, true)?;
        let (writer, within) = self.write_window("writes.patch-metadata", 1)?;
        let metadata = patch["metadata"].clone();
        writer
            .patch_metadata(key, &resource_version, metadata, within)
            .map(|v| v.to_string())
            .map_err(Into::into)
    }
}
