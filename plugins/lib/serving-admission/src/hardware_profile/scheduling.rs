//! Node scheduling (`nodeSelector`, `tolerations` of a pod-spec-like object) and the Kueue
//! queue label.
//!
//! A workload may carry scheduling the user set by hand next to what a profile injected; the
//! rules below keep the user's part: merging lets the profile win only on the keys it names,
//! and removal takes out only entries that still equal the profile's.

use std::collections::BTreeSet;

use odh_plugin_sdk::Value;
use odh_plugin_sdk::serde_json::Map;

use super::{HardwareProfile, Toleration};
use odh_kinds::label::KUEUE_QUEUE as KUEUE_QUEUE_LABEL;
use odh_plugin_sdk::go;
use odh_plugin_sdk::json::{label, remove_metadata_entry, set_metadata_entry, set_or_remove};

const NODE_SELECTOR: &str = "nodeSelector";
const TOLERATIONS: &str = "tolerations";

/// Drops all node scheduling, for a profile switch: the previous profile's entries cannot be
/// told apart from the user's, so the new profile starts from a clean slate.
pub fn clear_node_scheduling(pod_spec: &mut Map<String, Value>) {
    pod_spec.remove(NODE_SELECTOR);
    pod_spec.remove(TOLERATIONS);
}

/// Applies a node-scheduling profile. After a switch (`changed`) the profile's values replace
/// the existing ones; otherwise they merge: the profile wins conflicting nodeSelector keys (one
/// warning each) and its tolerations come first, followed by the existing ones it does not
/// already contain. Empty results are removed. Returns the warnings.
pub fn apply_node_scheduling(
    pod_spec: &mut Map<String, Value>,
    profile: &HardwareProfile,
    profile_name: &str,
    changed: bool,
) -> Vec<String> {
    let mut warnings = Vec::new();
    let mut selector = if changed {
        Map::new()
    } else {
        pod_spec
            .get(NODE_SELECTOR)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    for (key, value) in &profile.node_selector {
        if let Some(existing) = selector.get(key).filter(|e| e.as_str() != Some(value)) {
            warnings.push(format!(
                "nodeSelector key {} has value {} which will be overwritten by HardwareProfile {} with value {}",
                go::quote(key),
                go::quote(&value_text(existing)),
                go::quote(profile_name),
                go::quote(value)
            ));
        }
        selector.insert(key.clone(), value.clone().into());
    }
    set_or_remove(pod_spec, NODE_SELECTOR, non_empty_map(selector));

    let ids: BTreeSet<String> = profile
        .tolerations
        .iter()
        .map(Toleration::identity)
        .collect();
    let mut tolerations: Vec<Value> = profile
        .tolerations
        .iter()
        .map(Toleration::to_json)
        .collect();
    if !changed {
        tolerations.extend(
            existing_tolerations(pod_spec)
                .iter()
                .filter(|t| !ids.contains(&Toleration::from_json(t).identity()))
                .cloned(),
        );
    }
    set_or_remove(pod_spec, TOLERATIONS, non_empty_list(tolerations));
    warnings
}

/// Takes an old profile's scheduling out after its annotation was removed: nodeSelector keys
/// whose value still equals the profile's (a value the user changed stays) and tolerations
/// identical to the profile's. Emptied fields are removed.
pub fn remove_node_scheduling(pod_spec: &mut Map<String, Value>, profile: &HardwareProfile) {
    if let Some(selector) = pod_spec
        .get_mut(NODE_SELECTOR)
        .and_then(Value::as_object_mut)
    {
        for (key, value) in &profile.node_selector {
            if selector.get(key).and_then(Value::as_str) == Some(value) {
                selector.remove(key);
            }
        }
        if selector.is_empty() {
            pod_spec.remove(NODE_SELECTOR);
        }
    }
    if let Some(tolerations) = pod_spec.get_mut(TOLERATIONS).and_then(Value::as_array_mut) {
        let ids: BTreeSet<String> = profile
            .tolerations
            .iter()
            .map(Toleration::identity)
            .collect();
        tolerations.retain(|t| !ids.contains(&Toleration::from_json(t).identity()));
        if tolerations.is_empty() {
            pod_spec.remove(TOLERATIONS);
        }
    }
}

/// Sets the Kueue queue label, always overwriting; overwriting a different value is worth a
/// warning unless the profile just switched (then the old value was the old profile's).
pub fn apply_kueue_label(
    object: &mut Value,
    queue: &str,
    profile_name: &str,
    changed: bool,
) -> Vec<String> {
    let existing = label(object, KUEUE_QUEUE_LABEL);
    let mut warnings = Vec::new();
    if !changed && !existing.is_empty() && existing != queue {
        warnings.push(format!(
            "label {} has value {} which will be overwritten by HardwareProfile {} with value {}",
            go::quote(KUEUE_QUEUE_LABEL),
            go::quote(existing),
            go::quote(profile_name),
            go::quote(queue)
        ));
    }
    set_metadata_entry(object, "labels", KUEUE_QUEUE_LABEL, queue);
    warnings
}

/// Removes the Kueue queue label (and the labels map if that empties it).
pub fn remove_kueue_label(object: &mut Value) {
    remove_metadata_entry(object, "labels", KUEUE_QUEUE_LABEL);
}

fn existing_tolerations(pod_spec: &Map<String, Value>) -> &[Value] {
    pod_spec
        .get(TOLERATIONS)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn value_text(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_string)
}

fn non_empty_map(map: Map<String, Value>) -> Option<Value> {
    (!map.is_empty()).then_some(Value::Object(map))
}

fn non_empty_list(list: Vec<Value>) -> Option<Value> {
    (!list.is_empty()).then_some(Value::Array(list))
}

#[cfg(test)]
mod tests {
    use super::*;
    use odh_plugin_sdk::json;

    fn profile(selector: &[(&str, &str)], tolerations: &[Value]) -> HardwareProfile {
        HardwareProfile {
            node_selector: selector
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            tolerations: tolerations.iter().map(Toleration::from_json).collect(),
            ..Default::default()
        }
    }

    fn spec(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn merge_keeps_user_entries_and_warns_on_conflicts() {
        let p = profile(&[("zone", "eu"), ("tier", "gpu")], &[json!({"key": "h"})]);
        let mut s = spec(json!({
            "nodeSelector": {"zone": "us", "mine": "x"},
            "tolerations": [{"key": "m", "custom": 1}, {"key": "h"}],
            "other": true,
        }));
        let warnings = apply_node_scheduling(&mut s, &p, "hwp", false);
        assert_eq!(
            Value::Object(s),
            json!({
                "nodeSelector": {"zone": "eu", "tier": "gpu", "mine": "x"},
                "tolerations": [{"key": "h"}, {"key": "m", "custom": 1}],
                "other": true,
            })
        );
        assert_eq!(
            warnings,
            [
                r#"nodeSelector key "zone" has value "us" which will be overwritten by HardwareProfile "hwp" with value "eu""#
            ]
        );
    }

    #[test]
    fn switch_replaces_and_empty_results_are_removed() {
        let mut s = spec(json!({"nodeSelector": {"a": "b"}, "tolerations": [{"key": "x"}]}));
        apply_node_scheduling(&mut s, &profile(&[], &[]), "hwp", true);
        assert_eq!(Value::Object(s), json!({}));
        let mut s = spec(json!({"nodeSelector": {}, "tolerations": []}));
        apply_node_scheduling(&mut s, &profile(&[], &[]), "hwp", false);
        assert_eq!(Value::Object(s), json!({}));
    }

    #[test]
    fn removal_is_surgical() {
        let p = profile(&[("zone", "eu"), ("tier", "gpu")], &[json!({"key": "h"})]);
        let mut s = spec(json!({
            "nodeSelector": {"zone": "eu", "tier": "cpu"},
            "tolerations": [{"key": "h"}, {"key": "m"}],
        }));
        remove_node_scheduling(&mut s, &p);
        assert_eq!(
            Value::Object(s.clone()),
            json!({"nodeSelector": {"tier": "cpu"}, "tolerations": [{"key": "m"}]})
        );
        let all = profile(&[("tier", "cpu")], &[json!({"key": "m"})]);
        remove_node_scheduling(&mut s, &all);
        assert_eq!(Value::Object(s), json!({}));
    }

    #[test]
    fn kueue_label() {
        let mut o = json!({"metadata": {"labels": {(KUEUE_QUEUE_LABEL): "user"}}});
        let warnings = apply_kueue_label(&mut o, "q", "hwp", false);
        assert_eq!(label(&o, KUEUE_QUEUE_LABEL), "q");
        assert_eq!(warnings.len(), 1);
        assert!(apply_kueue_label(&mut o, "r", "hwp", true).is_empty());
        remove_kueue_label(&mut o);
        assert_eq!(o, json!({"metadata": {}}));
    }
}
