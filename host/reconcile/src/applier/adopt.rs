//! Taking over what the Go controller wrote, on a cluster upgraded in place.
//!
//! The Go controller wrote with Update requests under controller-runtime's default field
//! manager (the binary's name, `manager`). Server-side apply removes only the fields its own
//! manager owns, so after the switch a field the Go controller set and our plugin no longer
//! declares would stay forever (a Route's `alternateBackends` of removed canaries). The first
//! time we apply an object that still carries such a legacy manager, its field set is moved
//! into ours in `managedFields` (client-go's `csaupgrade` technique) and the object is applied
//! again, which removes what we do not declare. Objects a legacy manager created count as ours
//! for deletes.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

/// Whether a `managedFields` entry was written by one of the `legacy` managers with an
/// Update (what the Go controller did; an Apply entry of that name is someone else's).
pub fn is_legacy(entry: &ManagedFieldsEntry, legacy: &[String]) -> bool {
    entry.operation.as_deref() == Some("Update")
        && entry
            .manager
            .as_deref()
            .is_some_and(|m| legacy.iter().any(|l| l == m))
}

/// `managedFields` with every legacy entry of the main resource folded into `manager`'s Apply
/// entry; `None` when there is nothing to take over.
pub fn taken_over(
    entries: &[ManagedFieldsEntry],
    legacy: &[String],
    manager: &str,
) -> Option<Vec<ManagedFieldsEntry>> {
    let main = |e: &ManagedFieldsEntry| e.subresource.as_deref().unwrap_or("").is_empty();
    let (old, mut kept): (Vec<_>, Vec<_>) = entries
        .iter()
        .cloned()
        .partition(|e| main(e) && is_legacy(e, legacy));
    if old.is_empty() {
        return None;
    }
    let ours = kept.iter_mut().find(|e| {
        main(e) && e.manager.as_deref() == Some(manager) && e.operation.as_deref() == Some("Apply")
    });
    let ours = match ours {
        Some(entry) => entry,
        None => {
            kept.push(ManagedFieldsEntry {
                manager: Some(manager.to_string()),
                operation: Some("Apply".into()),
                api_version: old[0].api_version.clone(),
                fields_type: Some("FieldsV1".into()),
                fields_v1: None,
                subresource: None,
                time: old[0].time.clone(),
            });
            kept.last_mut().expect("just pushed")
        }
    };
    let mut fields = ours.fields_v1.take().map_or_else(|| json!({}), |f| f.0);
    for entry in &old {
        if let Some(theirs) = &entry.fields_v1 {
            merge(&mut fields, &theirs.0);
        }
    }
    ours.fields_v1 = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1(
        fields,
    ));
    Some(kept)
}

/// Unions two `FieldsV1` sets (nested objects of field keys).
fn merge(into: &mut Value, from: &Value) {
    let (Some(into), Some(from)) = (into.as_object_mut(), from.as_object()) else {
        return;
    };
    for (key, value) in from {
        match into.get_mut(key) {
            Some(existing) => merge(existing, value),
            None => {
                into.insert(key.clone(), value.clone());
            }
        }
    }
}

/// Replaces `object`'s managedFields with `entries` (a request that sets managedFields is
/// stored as given), if its resourceVersion is still the one read: a concurrent change fails
/// (409) and the reconcile retries.
pub async fn replace_managed_fields(
    api: &Api<DynamicObject>,
    object: &DynamicObject,
    entries: &[ManagedFieldsEntry],
) -> Result<(), kube::Error> {
    let patch = json!({"metadata": {
        "resourceVersion": object.resource_version(),
        "managedFields": entries,
    }});
    api.patch(
        &object.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1;

    fn entry(manager: &str, operation: &str, fields: Value) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some(operation.into()),
            api_version: Some("routes.example.com/v1".into()),
            fields_type: Some("FieldsV1".into()),
            fields_v1: Some(FieldsV1(fields)),
            subresource: None,
            time: None,
        }
    }

    #[test]
    fn the_legacy_field_set_moves_into_ours_and_others_stay() {
        let legacy = vec!["manager".to_string()];
        let entries = vec![
            entry(
                "manager",
                "Update",
                json!({"f:spec": {"f:alternateBackends": {}, "f:to": {"f:weight": {}}}}),
            ),
            entry(
                "odh-model-controller/isvc",
                "Apply",
                json!({"f:spec": {"f:to": {"f:name": {}}}}),
            ),
            entry(
                "kubectl",
                "Update",
                json!({"f:metadata": {"f:labels": {"f:team": {}}}}),
            ),
            entry("manager", "Apply", json!({"f:spec": {"f:host": {}}})),
        ];
        let out = taken_over(&entries, &legacy, "odh-model-controller/isvc").unwrap();
        let managers: Vec<_> = out
            .iter()
            .map(|e| (e.manager.clone().unwrap(), e.operation.clone().unwrap()))
            .collect();
        assert_eq!(
            managers,
            [
                ("odh-model-controller/isvc".to_string(), "Apply".to_string()),
                ("kubectl".into(), "Update".into()),
                ("manager".into(), "Apply".into()),
            ],
            "only the legacy Update entry goes"
        );
        assert_eq!(
            out[0].fields_v1.as_ref().unwrap().0,
            json!({"f:spec": {"f:to": {"f:name": {}, "f:weight": {}}, "f:alternateBackends": {}}})
        );
        assert!(taken_over(&out, &legacy, "odh-model-controller/isvc").is_none());
        assert!(taken_over(&entries, &[], "odh-model-controller/isvc").is_none());
    }

    #[test]
    fn without_an_entry_of_ours_one_is_made() {
        let legacy = vec!["manager".to_string()];
        let entries = vec![entry(
            "manager",
            "Update",
            json!({"f:data": {"f:metrics": {}}}),
        )];
        let out = taken_over(&entries, &legacy, "odh-model-controller/isvc").unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].manager.as_deref(), Some("odh-model-controller/isvc"));
        assert_eq!(out[0].operation.as_deref(), Some("Apply"));
        assert_eq!(
            out[0].fields_v1.as_ref().unwrap().0,
            json!({"f:data": {"f:metrics": {}}})
        );
    }
}
