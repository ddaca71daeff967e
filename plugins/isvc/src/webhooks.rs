//! The InferenceService admission webhooks (docs/plugins/isvc.md, "Webhooks"): validation of names,
//! the protected namespace and canaries; defaulting of connection credentials and hardware
//! profiles.

use odh_kinds::{DscInitialization, InferenceService, gvk};
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{AdmissionDecision, AdmissionRequest, Error, Object, Operation};
use odh_serving_admission::{IsvcAdmission, default_inference_service};

use crate::settings::Settings;

pub const VALIDATING_PATH: &str = "/validate-serving-kserve-io-v1beta1-inferenceservice";
pub const MUTATING_PATH: &str = "/mutate-serving-kserve-io-v1beta1-inferenceservice";

/// 63 (a Service name) minus `-predictor`.
pub const MAX_NAME_LENGTH: usize = 53;
const MAX_CANARIES: usize = 3;
const UNPROCESSABLE: u16 = 422;

fn invalid(name: &str, field: &str, value: &str, detail: &str) -> AdmissionDecision {
    AdmissionDecision::deny_with_code(
        format!(
            "InferenceService.serving.kserve.io \"{name}\" is invalid: {field}: Invalid value: \"{value}\": {detail}"
        ),
        UNPROCESSABLE,
    )
}

/// The namespace of the platform itself: `POD_NAMESPACE`, overridden by any
/// DSCInitialization's `spec.applicationsNamespace` (the last non-empty one wins).
pub fn application_namespace(settings: &Settings, cluster: &dyn Cluster) -> Result<String, Error> {
    let mut namespace = settings.pod_namespace.clone().unwrap_or_default();
    let dscis = cluster
        .list_objects(&gvk::dsc_initialization(), None, None)
        .map_err(|e| {
            Error::Denied(format!(
                "not able to read DSCInitializationList: {}",
                e.message()
            ))
        })?;
    for dsci in &dscis {
        if let Some(ns) = DscInitialization::of(dsci).applications_namespace() {
            namespace = ns.to_string();
        }
    }
    Ok(namespace)
}

pub fn validate(
    request: &AdmissionRequest,
    settings: &Settings,
    cluster: &dyn Cluster,
) -> Result<AdmissionDecision, Error> {
    validate_object(request, request.object()?, settings, cluster)
}

/// [`validate`] of the request's object parsed already (the plugin's entry point decoded it).
pub fn validate_object(
    request: &AdmissionRequest,
    object: Option<Object>,
    settings: &Settings,
    cluster: &dyn Cluster,
) -> Result<AdmissionDecision, Error> {
    let Some(isvc) = object else {
        return Ok(AdmissionDecision::allow());
    };
    if request.operation == Operation::Create {
        let name = isvc.name();
        if name.len() > MAX_NAME_LENGTH {
            return Ok(invalid(
                name,
                "metadata.name",
                name,
                &format!(
                    "InferenceService name is too long. The name exceeds the maximum length of {MAX_NAME_LENGTH} characters (current length: {})",
                    name.len()
                ),
            ));
        }
        let namespace = isvc
            .namespace()
            .or(request.namespace.as_deref())
            .unwrap_or_default();
        if namespace == application_namespace(settings, cluster)? {
            return Ok(invalid(
                name,
                "metadata.namespace",
                namespace,
                "specified namespace is protected",
            ));
        }
    }
    let canaries = InferenceService::of(&isvc).canaries().len();
    if canaries > MAX_CANARIES {
        return Ok(AdmissionDecision::deny(format!(
            "canary count {canaries} exceeds maximum of {MAX_CANARIES} (OpenShift Route alternateBackends limit)"
        )));
    }
    Ok(AdmissionDecision::allow())
}

pub fn mutate(
    request: &AdmissionRequest,
    cluster: &dyn Cluster,
) -> Result<AdmissionDecision, Error> {
    mutate_objects(request, request.object()?, request.old_object()?, cluster)
}

/// [`mutate`] of the request's objects parsed already (the plugin's entry point decoded them).
/// An object the defaulting leaves as it was is answered without it: the host would only find
/// an empty patch after parsing it back and diffing, the answer the apiserver gets either way.
pub fn mutate_objects(
    request: &AdmissionRequest,
    object: Option<Object>,
    old: Option<Object>,
    cluster: &dyn Cluster,
) -> Result<AdmissionDecision, Error> {
    let Some(isvc) = object else {
        return Ok(AdmissionDecision::allow());
    };
    if isvc.is_deleting() {
        return Ok(AdmissionDecision::allow());
    }
    let namespace = request.namespace_of(&isvc);
    let admission = IsvcAdmission {
        operation: request.operation,
        old: old.as_ref().map(Object::as_value),
        namespace: &namespace,
        dry_run: request.dry_run,
    };
    let original = isvc.as_value().clone();
    let mut object = isvc.into_value();
    let defaulted = default_inference_service(&mut object, &admission, cluster)?;
    if object == original {
        return Ok(AdmissionDecision::from_defaulted_unchanged(defaulted));
    }
    Ok(AdmissionDecision::from_defaulted(object, defaulted))
}
