//! The LLMInferenceService mutating webhooks (docs/plugins/llm-gateway.md, "Webhooks"), v1alpha2
//! and v1alpha1: ConnectionsAPI then HardwareProfile, both from the `odh-serving-admission` library
//! the InferenceService webhook shares.

use odh_kinds::gvk;
use odh_plugin_sdk::admission::Expect;
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{AdmissionDecision, AdmissionRequest, Gvk, Object, conditions};
use odh_serving_admission::{Admission, default_llm_inference_service};

pub const MUTATING_PATH_V1ALPHA2: &str = "/mutate-serving-kserve-io-v1alpha2-llminferenceservice";
pub const MUTATING_PATH_V1ALPHA1: &str = "/mutate-serving-kserve-io-v1alpha1-llminferenceservice";

/// What controller-runtime's decoder checks before the defaulter runs (a 400 otherwise).
const EXPECT: Expect =
    Expect::kind("LLMInferenceService", "a LLMInferenceService").with_old_object();

/// The v1alpha1 LLMInferenceService (the v1alpha2 one is `odh_kinds::gvk`'s).
pub fn llm_inference_service_v1alpha1() -> Gvk {
    let mut v1alpha1 = gvk::llm_inference_service();
    v1alpha1.version = "v1alpha1".into();
    v1alpha1
}

pub fn mutate(request: &AdmissionRequest, cluster: &dyn Cluster) -> AdmissionDecision {
    let decoded = match request.decode_as(&EXPECT) {
        Ok(Some(decoded)) => decoded,
        // Nothing to default (never sent for CREATE/UPDATE).
        Ok(None) => return AdmissionDecision::allow(),
        Err(refused) => return refused,
    };
    let admission = Admission {
        operation: request.operation,
        old: decoded.old_object.as_ref().map(Object::as_value),
        namespace: &decoded.namespace,
        dry_run: request.dry_run,
    };
    let mut value = decoded.object.into_value();
    let defaulted =
        default_llm_inference_service(&mut value, &admission, cluster, &conditions::now());
    // Upstream denies any defaulter error with 403 and its text.
    AdmissionDecision::from_defaulted(value, defaulted)
}
