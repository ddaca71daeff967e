//! HardwareProfile on an InferenceService: resources on `spec.predictor.model`, node scheduling
//! on `spec.predictor`, the Kueue label on the object.

use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{Error, Operation, Value};

use super::{
    apply_kueue_label, apply_node_scheduling, apply_resources, forget_switched_profile,
    own_namespace, profile_changed, profile_ref, remove_profile, resolve, stamp_profile_namespace,
};
use odh_plugin_sdk::json::{existing_object_mut, object_mut};

use crate::IsvcAdmission;

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
    let own_namespace = own_namespace(isvc, admission);
    let (name, profile_namespace) = profile_ref(isvc, &own_namespace);
    if name.is_empty() {
        if matches!(op, Operation::Update) {
            return Ok(remove_profile(isvc, old, cluster, &PREDICTOR));
        }
        return Ok(Vec::new());
    }
    let Some(profile) = resolve(cluster, &name, &profile_namespace)? else {
        return Ok(Vec::new());
    };
    stamp_profile_namespace(isvc, &profile_namespace);
    let changed = profile_changed(op, old, &name, &profile_namespace);
    if changed {
        forget_switched_profile(isvc, &PREDICTOR);
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
