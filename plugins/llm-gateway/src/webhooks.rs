//! The LLMInferenceService mutating webhooks (spec §7), v1alpha2 and v1alpha1: ConnectionsAPI
//! then HardwareProfile, both from the `odh-serving-admission` library the InferenceService
//! webhook shares.

use odh_kinds::gvk;
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{
    AdmissionDecision, AdmissionRequest, Error, Gvk, Object, Ownership, conditions, log,
};
use odh_serving_admission::{Admission, default_llm_inference_service};

pub const MUTATING_PATH_V1ALPHA2: &str = "/mutate-serving-kserve-io-v1alpha2-llminferenceservice";
pub const MUTATING_PATH_V1ALPHA1: &str = "/mutate-serving-kserve-io-v1alpha1-llminferenceservice";

const FORBIDDEN: u16 = 403;
const BAD_REQUEST: u16 = 400;

/// The v1alpha1 LLMInferenceService (the v1alpha2 one is `odh_kinds::gvk`'s).
pub fn llm_inference_service_v1alpha1() -> Gvk {
    let mut v1alpha1 = gvk::llm_inference_service();
    v1alpha1.version = "v1alpha1".into();
    v1alpha1
}

pub fn mutate(request: &AdmissionRequest, cluster: &dyn Cluster) -> AdmissionDecision {
    let decoded = request
        .object()
        .and_then(|o| Ok((o, request.old_object()?)));
    let (object, old) = match decoded {
        Ok((Some(object), old)) => (object, old),
        // Nothing to default (never sent for CREATE/UPDATE).
        Ok((None, _)) => return AdmissionDecision::allow(),
        Err(e) => return AdmissionDecision::deny_with_code(e.message(), BAD_REQUEST),
    };
    if object.kind() != "LLMInferenceService" {
        return AdmissionDecision::deny_with_code(
            format!(
                "expected a LLMInferenceService object but got {}, Kind={}",
                object.api_version(),
                object.kind()
            ),
            BAD_REQUEST,
        );
    }
    let namespace = request
        .namespace
        .clone()
        .or_else(|| object.namespace().map(str::to_string))
        .unwrap_or_default();
    let admission = Admission {
        operation: request.operation,
        old: old.as_ref().map(Object::as_value),
        namespace: &namespace,
        dry_run: request.dry_run,
    };
    let mut value = object.into_value();
    let defaulted =
        default_llm_inference_service(&mut value, &admission, cluster, &conditions::now());
    for warning in &defaulted.warnings {
        log::log(log::Level::Warn, warning);
    }
    let mut decision = match defaulted.denied {
        Some(e) => deny(&e),
        None => AdmissionDecision::mutated(value),
    };
    for object in defaulted.side_effects {
        decision = decision.side_effect(object, Ownership::None);
    }
    decision
}

/// Upstream denies any defaulter error with 403 and its text.
fn deny(error: &Error) -> AdmissionDecision {
    AdmissionDecision::deny_with_code(error.message(), FORBIDDEN)
}
