//! HardwareProfile injection: resources, node scheduling or a Kueue queue from the
//! `infrastructure.opendatahub.io/v1` HardwareProfile named by an annotation (spec `isvc.md`
//! §4.5, `llm.md` §7.4).
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

use odh_plugin_sdk::json::{annotation, str_at};

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
