//! Resource requests and limits from a profile's identifiers.

use odh_plugin_sdk::Value;
use odh_plugin_sdk::serde_json::Map;

use super::HardwareProfile;
use odh_plugin_sdk::json::as_object;

/// Fills `resources.requests`/`limits` of a container-like object (an ISVC's predictor model,
/// an LLMISVC's main container) without overriding the user: a missing request gets the
/// profile's count, then a missing limit gets the request (the user's own one when set), so a
/// user's limit-only value stays a limit. No identifiers, no change at all.
pub fn apply_resources(container: &mut Map<String, Value>, profile: &HardwareProfile) {
    if profile.identifiers.is_empty() {
        return;
    }
    let resources = as_object(container.entry("resources").or_insert(Value::Null));
    for id in &profile.identifiers {
        let requests = object_mut_in(resources, "requests");
        let request = requests
            .entry(id.identifier.clone())
            .or_insert_with(|| (&id.default_count).into())
            .clone();
        object_mut_in(resources, "limits")
            .entry(id.identifier.clone())
            .or_insert(request);
    }
}

fn object_mut_in<'a>(map: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    as_object(map.entry(key).or_insert(Value::Null))
}
