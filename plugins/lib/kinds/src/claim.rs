//! Deleting an object the plugin may not have written.
//!
//! The host deletes only objects it manages (owned by the primary, or carrying the plugin's
//! field manager). Upstream deletes some objects by name, whoever made them (storage's
//! `odh-kserve-custom-ca-bundle` and `storage-config`, X-5: a user's bundle goes too;
//! servingruntime's Ray TLS Secrets). So such a delete is preceded, in the same outcome, by an
//! apply that claims one field of the object under the plugin's field manager; the host applies
//! before it deletes, and then the object is ours.

use crate::label;
use odh_plugin_sdk::{Object, Plan};

/// Claims `existing` (the object as read) and deletes it. The claim is the managed label
/// (`"true"` on everything these controllers delete) with `existing`'s uid and resourceVersion,
/// so it applies to that object as read only: a different object under the same name, or this
/// one changed since (unmanaged by a user before the cache shows it), is refused by the API
/// server, and the next reconcile starts from the newer state.
pub fn claim_and_delete(plan: &mut Plan, existing: &Object) {
    let mut claim = Object::new(&existing.gvk(), existing.namespace(), existing.name())
        .with_label(label::MANAGED, "true");
    if let Some(uid) = existing.uid() {
        claim.set(&["metadata", "uid"], uid);
    }
    if let Some(version) = existing.resource_version() {
        claim.set(&["metadata", "resourceVersion"], version);
    }
    plan.apply_unowned(claim);
    plan.delete(existing.key());
}

#[cfg(test)]
mod tests {
    use super::*;
    use odh_plugin_sdk::{Ownership, core_gvk, json};

    #[test]
    fn the_claim_is_applied_before_the_delete_and_names_the_uid() {
        let existing = Object(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "odh-kserve-custom-ca-bundle", "namespace": "ns", "uid": "u-1",
                         "annotations": {"a": "b"}},
            "data": {"cabundle.crt": "x"},
        }));
        let mut plan = Plan::new();
        claim_and_delete(&mut plan, &existing);
        let outcome = plan.into_outcome();
        let applied = outcome
            .applied("ConfigMap", "odh-kserve-custom-ca-bundle")
            .unwrap();
        assert_eq!(applied.ownership, Ownership::None);
        assert_eq!(
            applied.object.0,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "odh-kserve-custom-ca-bundle", "namespace": "ns",
                                "uid": "u-1", "labels": {"opendatahub.io/managed": "true"}}})
        );
        assert!(outcome.deleted("ConfigMap", "odh-kserve-custom-ca-bundle"));
        assert_eq!(outcome.delete[0].gvk, core_gvk("ConfigMap"));
    }
}
