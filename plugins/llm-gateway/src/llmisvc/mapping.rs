//! Which service an AuthPolicy event concerns (docs/plugins/llm-gateway.md, "Manifest"): upstream's
//! `FindLLMServiceFromAuthPolicy` behind its predicates. Only policies we manage count (a user's
//! policy changing is none of our business); the service is the first owner reference of kind
//! `LLMInferenceService`, whatever its apiVersion, in the policy's namespace.

use odh_plugin_sdk::{Error, Object, RequestKey, Value, WatchEvent, request_key};

use crate::predicates::is_managed_by_open_data_hub;

pub fn map(event: &WatchEvent) -> Result<Vec<RequestKey>, Error> {
    if event.gvk.kind != "AuthPolicy" {
        return Ok(Vec::new());
    }
    let policy = event.object()?;
    if !is_managed_by_open_data_hub(&policy) {
        return Ok(Vec::new());
    }
    Ok(owning_service(&policy).into_iter().collect())
}

/// The first `LLMInferenceService` owner reference, as a request in the policy's namespace.
pub fn owning_service(policy: &Object) -> Option<RequestKey> {
    policy
        .owner_references()
        .iter()
        .find(|r| r.get("kind").and_then(Value::as_str) == Some("LLMInferenceService"))
        .and_then(|r| r.get("name").and_then(Value::as_str))
        .map(|name| request_key(policy.namespace(), name))
}
