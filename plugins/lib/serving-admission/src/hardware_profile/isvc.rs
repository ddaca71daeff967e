//! HardwareProfile on an InferenceService: resources on `spec.predictor.model`, node scheduling
//! on `spec.predictor`, the Kueue label on the object.

use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{Error, Operation, Value};

use super::{
    apply_kueue_label, apply_node_scheduling, apply_resources, clear_node_scheduling,
    profile_changed, profile_ref, remove_kueue_label, remove_node_scheduling, resolve,
};
use odh_plugin_sdk::json::{
    annotation, existing_object_mut, object_mut, remove_metadata_entry, set_metadata_entry, str_at,
};

use crate::IsvcAdmission;
use odh_kinds::annotation::HARDWARE_PROFILE_NAMESPACE as ANNOTATION_NAMESPACE;

const PREDICTOR: [&str; 2] = ["spec", "predictor"];

/// The HardwareProfile step of the InferenceService mutating webhook: edits `isvc` in place and
/// returns warnings worth logging. The admission's namespace is the profile namespace default
/// when the object itself names none.
///
/// With a profile annotation the profile must resolve (else Denied); without one, an UPDATE
/// that dropped the annotation takes the old profile's scheduling out again.
pub fn default_inference_service(
    isvc: &mut Value,
    admission: &IsvcAdmission,
    cluster: &dyn Cluster,
) -> Result<Vec<String>, Error> {
    let (op, old) = (admission.operation, admission.old);
    let own_namespace = match str_at(isvc, &["metadata", "namespace"]) {
        "" => admission.namespace,
        ns => ns,
    }
    .to_string();
    let (name, profile_namespace) = profile_ref(isvc, &own_namespace);
    if name.is_empty() {
        if matches!(op, Operation::Update) {
            return Ok(remove_profile(isvc, old, cluster));
        }
        return Ok(Vec::new());
    }
    let Some(profile) = resolve(cluster, &name, &profile_namespace)? else {
        return Ok(Vec::new());
    };
    if annotation(isvc, ANNOTATION_NAMESPACE).is_empty() {
        set_metadata_entry(
            isvc,
            "annotations",
            ANNOTATION_NAMESPACE,
            &profile_namespace,
        );
    }
    let changed = profile_changed(op, old, &name, &profile_namespace);
    if changed {
        if let Some(predictor) = existing_object_mut(isvc, &PREDICTOR) {
            clear_node_scheduling(predictor);
        }
        remove_kueue_label(isvc);
    }
    if let Some(model) = existing_object_mut(isvc, &["spec", "predictor", "model"]) {
        apply_resources(model, &profile);
    }
    if let Some(queue) = &profile.kueue_queue {
        return Ok(apply_kueue_label(isvc, queue, &name, changed));
    }
    let has_scheduling = !profile.node_selector.is_empty() || !profile.tolerations.is_empty();
    let predictor = if has_scheduling {
        Some(object_mut(isvc, &PREDICTOR))
    } else {
        existing_object_mut(isvc, &PREDICTOR)
    };
    Ok(predictor
        .map(|p| apply_node_scheduling(p, &profile, &name, changed))
        .unwrap_or_default())
}

/// The annotation was removed on UPDATE: undo what the old profile injected where it can still
/// be recognised. If the old profile cannot be read any more, only the namespace annotation is
/// dropped and the request is admitted (a warning says why). Injected resources stay.
fn remove_profile(isvc: &mut Value, old: Option<&Value>, cluster: &dyn Cluster) -> Vec<String> {
    let Some(old) = old.filter(|o| o.is_object()) else {
        return Vec::new();
    };
    let (old_name, old_namespace) = profile_ref(old, str_at(old, &["metadata", "namespace"]));
    let mut warnings = Vec::new();
    match resolve(cluster, &old_name, &old_namespace) {
        Ok(None) => return warnings,
        Ok(Some(profile)) => {
            if let Some(predictor) = existing_object_mut(isvc, &PREDICTOR) {
                remove_node_scheduling(predictor, &profile);
            }
            if profile.kueue_queue.is_some() {
                remove_kueue_label(isvc);
            }
        }
        Err(e) => warnings.push(format!(
            "could not fetch old HardwareProfile {old_namespace}/{old_name} for cleanup, its scheduling may remain in the spec: {}",
            e.message()
        )),
    }
    remove_metadata_entry(isvc, "annotations", ANNOTATION_NAMESPACE);
    warnings
}
