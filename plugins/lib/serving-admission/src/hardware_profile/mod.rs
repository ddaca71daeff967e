//! HardwareProfile injection: resources, node scheduling or a Kueue queue from the
//! `infrastructure.opendatahub.io/v1` HardwareProfile named by an annotation
//! (docs/plugins/isvc.md and docs/plugins/llm-gateway.md, "Webhooks").
//!
//! [`resolve`] reads and parses a profile; [`apply_resources`] and the scheduling functions
//! work on the JSON fragments both workload kinds share (a container-like object with
//! `resources`, a pod-spec-like object with `nodeSelector`/`tolerations`, the object's
//! labels); [`isvc`] wires them to an InferenceService.

pub mod isvc;
pub mod llm;
mod profile;
mod resources;
mod scheduling;

use odh_kinds::annotation::{
    HARDWARE_PROFILE_NAME as ANNOTATION_NAME, HARDWARE_PROFILE_NAMESPACE as ANNOTATION_NAMESPACE,
};
use odh_plugin_sdk::{Operation, Value};

pub use isvc::default_inference_service;
pub use profile::{HardwareProfile, Identifier, Toleration, parse, resolve};
pub use resources::apply_resources;
pub use scheduling::{
    apply_kueue_label, apply_node_scheduling, clear_node_scheduling, remove_kueue_label,
    remove_node_scheduling,
};

use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::json::{
    annotation, existing_object_mut, remove_metadata_entry, set_metadata_entry, str_at,
};

use crate::Admission;

// The annotations naming the profile (`opendatahub.io/hardware-profile-name`, and
// `-namespace`, which defaults to the workload's and is stamped on injection so later readers
// need not know the default) and the Kueue queue label are in `odh_kinds`.

/// The profile an object references: (name, namespace), the namespace defaulting to
/// `default_namespace`. An empty name means no profile.
pub fn profile_ref(object: &Value, default_namespace: &str) -> (String, String) {
    let name = annotation(object, ANNOTATION_NAME);
    let namespace = match annotation(object, ANNOTATION_NAMESPACE) {
        "" => default_namespace,
        ns => ns,
    };
    (name.into(), namespace.into())
}

/// Whether an admission switched profiles, which replaces (rather than merges) the old
/// profile's scheduling. CREATE never switches; a first assignment on UPDATE merges; an UPDATE
/// without a usable old object is treated as a switch.
pub fn profile_changed(
    op: Operation,
    old: Option<&Value>,
    new_name: &str,
    new_namespace: &str,
) -> bool {
    if matches!(op, Operation::Create) {
        return false;
    }
    let Some(old) = old.filter(|o| o.is_object()) else {
        return true;
    };
    let old_namespace = str_at(old, &["metadata", "namespace"]);
    let (old_name, old_namespace) = profile_ref(old, old_namespace);
    if old_name.is_empty() {
        return false;
    }
    old_name != new_name || old_namespace != new_namespace
}

/// The namespace a profile reference defaults to: the object's own, else the admission's (an
/// object under CREATE may lack one).
fn own_namespace(object: &Value, admission: &Admission) -> String {
    match str_at(object, &["metadata", "namespace"]) {
        "" => admission.namespace,
        ns => ns,
    }
    .to_string()
}

/// Stamps the profile's namespace on the object unless it names one already.
fn stamp_profile_namespace(object: &mut Value, profile_namespace: &str) {
    if annotation(object, ANNOTATION_NAMESPACE).is_empty() {
        set_metadata_entry(
            object,
            "annotations",
            ANNOTATION_NAMESPACE,
            profile_namespace,
        );
    }
}

/// A switch of profiles: the old profile's node scheduling is cleared from the pod spec at
/// `pod_spec` (when there is one) and the Kueue label removed, so the new profile replaces
/// rather than merges.
fn forget_switched_profile(object: &mut Value, pod_spec: &[&str]) {
    if let Some(spec) = existing_object_mut(object, pod_spec) {
        clear_node_scheduling(spec);
    }
    remove_kueue_label(object);
}

/// The annotation was removed on UPDATE: undo what the old profile injected where it can still
/// be recognised (its node scheduling on the pod spec at `pod_spec`, its queue label). If the
/// old profile cannot be read any more, only the namespace annotation is dropped and the
/// request is admitted (a warning says why). Injected resources stay.
fn remove_profile(
    object: &mut Value,
    old: Option<&Value>,
    cluster: &dyn Cluster,
    pod_spec: &[&str],
) -> Vec<String> {
    let Some(old) = old.filter(|o| o.is_object()) else {
        return Vec::new();
    };
    let (old_name, old_namespace) = profile_ref(old, str_at(old, &["metadata", "namespace"]));
    let mut warnings = Vec::new();
    match resolve(cluster, &old_name, &old_namespace) {
        Ok(None) => return warnings,
        Ok(Some(profile)) => {
            if let Some(spec) = existing_object_mut(object, pod_spec) {
                remove_node_scheduling(spec, &profile);
            }
            if profile.kueue_queue.is_some() {
                remove_kueue_label(object);
            }
        }
        Err(e) => warnings.push(format!(
            "could not fetch old HardwareProfile {old_namespace}/{old_name} for cleanup, its scheduling may remain in the spec: {}",
            e.message()
        )),
    }
    remove_metadata_entry(object, "annotations", ANNOTATION_NAMESPACE);
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;
    use odh_plugin_sdk::json;

    fn obj(annotations: Value) -> Value {
        json!({"metadata": {"namespace": "ns", "annotations": annotations}})
    }

    #[test]
    fn refs_and_changes() {
        let a = obj(json!({ANNOTATION_NAME: "a"}));
        assert_eq!(profile_ref(&a, "ns"), ("a".into(), "ns".into()));
        let update = Operation::Update;
        assert!(!profile_changed(Operation::Create, Some(&a), "b", "ns"));
        assert!(profile_changed(update, None, "a", "ns"));
        assert!(profile_changed(update, Some(&json!("x")), "a", "ns"));
        assert!(!profile_changed(update, Some(&obj(json!({}))), "a", "ns"));
        assert!(!profile_changed(update, Some(&a), "a", "ns"));
        assert!(profile_changed(update, Some(&a), "b", "ns"));
        assert!(profile_changed(update, Some(&a), "a", "other"));
        let with_ns = obj(json!({ANNOTATION_NAME: "a", ANNOTATION_NAMESPACE: "x"}));
        assert!(!profile_changed(update, Some(&with_ns), "a", "x"));
    }
}
