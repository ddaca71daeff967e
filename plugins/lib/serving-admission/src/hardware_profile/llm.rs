//! HardwareProfile on an LLMInferenceService (docs/plugins/llm-gateway.md, "Webhooks"): resources
//! on the `main` container of `spec.template`, node scheduling on `spec.template`, the Kueue label
//! on the object. A template whose containers include none named `main` gets nothing but a Warning
//! Event saying why.

use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::json::{as_object, object_mut, str_at};
use odh_plugin_sdk::{Error, Operation, Value, json};

use super::{
    HardwareProfile, apply_kueue_label, apply_node_scheduling, apply_resources,
    forget_switched_profile, own_namespace, profile_changed, profile_ref, remove_profile, resolve,
    stamp_profile_namespace,
};
use crate::IsvcAdmission;

const TEMPLATE: [&str; 2] = ["spec", "template"];
const MAIN: &str = "main";

/// What the HardwareProfile step decided besides editing the object.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LlmProfileOutcome {
    /// Worth logging (overwritten scheduling, an old profile that could not be read).
    pub warnings: Vec<String>,
    /// The `ContainerNameMismatch` Event to create, when the profile was skipped.
    pub event: Option<Value>,
}

/// The HardwareProfile step of the LLMInferenceService mutating webhook: edits `llmisvc` in
/// place. `now` (RFC 3339) stamps the container-mismatch Event.
pub fn default_llm_inference_service(
    llmisvc: &mut Value,
    admission: &IsvcAdmission,
    cluster: &dyn Cluster,
    now: &str,
) -> Result<LlmProfileOutcome, Error> {
    let (op, old) = (admission.operation, admission.old);
    let own_namespace = own_namespace(llmisvc, admission);
    let (name, profile_namespace) = profile_ref(llmisvc, &own_namespace);
    if name.is_empty() {
        let warnings = match op {
            Operation::Update => remove_profile(llmisvc, old, cluster, &TEMPLATE),
            _ => Vec::new(),
        };
        return Ok(LlmProfileOutcome {
            warnings,
            event: None,
        });
    }
    let Some(profile) = resolve(cluster, &name, &profile_namespace)? else {
        return Ok(LlmProfileOutcome::default());
    };
    stamp_profile_namespace(llmisvc, &profile_namespace);
    if lacks_main_container(llmisvc) {
        return Ok(LlmProfileOutcome {
            warnings: Vec::new(),
            event: Some(container_mismatch_event(
                llmisvc,
                &own_namespace,
                &name,
                now,
            )),
        });
    }
    let changed = profile_changed(op, old, &name, &profile_namespace);
    if changed {
        forget_switched_profile(llmisvc, &TEMPLATE);
    }
    apply_main_resources(llmisvc, &profile);
    if let Some(queue) = &profile.kueue_queue {
        return Ok(LlmProfileOutcome {
            warnings: apply_kueue_label(llmisvc, queue, &name, changed),
            event: None,
        });
    }
    let mut warnings = Vec::new();
    if !profile.node_selector.is_empty() || !profile.tolerations.is_empty() {
        let template = object_mut(llmisvc, &TEMPLATE);
        warnings = apply_node_scheduling(template, &profile, &name, changed);
    }
    Ok(LlmProfileOutcome {
        warnings,
        event: None,
    })
}

/// A template with containers, none of them `main`: upstream will not guess which container
/// serves the model.
fn lacks_main_container(llmisvc: &Value) -> bool {
    match json::at(llmisvc, &["spec", "template", "containers"]).and_then(Value::as_array) {
        Some(containers) if !containers.is_empty() => !containers
            .iter()
            .any(|c| c.get("name").and_then(Value::as_str) == Some(MAIN)),
        _ => false,
    }
}

/// The profile's identifiers as requests and limits of the `main` container, which is created
/// (with the template) when there are no containers at all.
fn apply_main_resources(llmisvc: &mut Value, profile: &HardwareProfile) {
    if profile.identifiers.is_empty() {
        return;
    }
    let template = object_mut(llmisvc, &TEMPLATE);
    let containers = template.entry("containers").or_insert(json!([]));
    if containers.as_array().is_none_or(|c| c.is_empty()) {
        *containers = json!([{"name": MAIN}]);
    }
    let containers = containers.as_array_mut().expect("just made an array");
    if let Some(main) = containers
        .iter_mut()
        .find(|c| c.get("name").and_then(Value::as_str) == Some(MAIN))
    {
        apply_resources(as_object(main), profile);
    }
}

/// Upstream's Event for a skipped profile, created under a fixed name (a repeat is refused
/// as AlreadyExists, which upstream only logs).
pub fn container_mismatch_event(
    llmisvc: &Value,
    namespace: &str,
    profile: &str,
    now: &str,
) -> Value {
    let name = str_at(llmisvc, &["metadata", "name"]);
    let api_version = match str_at(llmisvc, &["apiVersion"]) {
        "" => "serving.kserve.io/v1alpha2",
        v => v,
    };
    json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": format!("{name}.hwp-container-name-mismatch"), "namespace": namespace},
        "involvedObject": {
            "apiVersion": api_version,
            "kind": "LLMInferenceService",
            "namespace": namespace,
            "name": name,
            "uid": str_at(llmisvc, &["metadata", "uid"]),
        },
        "reason": "ContainerNameMismatch",
        "type": "Warning",
        "source": {"component": "hardwareprofile-webhook"},
        "count": 1,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "message": format!(
            "HardwareProfile \"{profile}\" was not applied: no container named \"main\" found in spec.template.containers. Rename a container to \"main\" to enable HWP injection."
        ),
    })
}
