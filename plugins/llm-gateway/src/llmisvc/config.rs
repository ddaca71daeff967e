//! `baseRefs` config resolution and the spec merge (docs/plugins/llm-gateway.md, "Controller
//! `llminferenceservice`", step 3).
//!
//! The merged spec lives in a private copy only; the stored object is never written.

use odh_kinds::gvk;
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::serde_json::Map;
use odh_plugin_sdk::{Error, Object, Value, go};

/// The specs of the service's `baseRefs` configs, in order: each looked for in the service's
/// namespace, then (only when `system_namespace` is known) in the system namespace. Without a
/// system namespace a missing config is skipped silently.
pub fn base_specs(
    service: &Object,
    system_namespace: Option<&str>,
    cluster: &dyn Cluster,
) -> Result<Vec<Value>, Error> {
    let namespace = service.namespace().unwrap_or_default();
    let config = gvk::llm_inference_service_config();
    let mut specs = Vec::new();
    for base_ref in service.array_at(&["spec", "baseRefs"]) {
        let name = base_ref
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let found = match cluster.get(&config, Some(namespace), name) {
            Ok(Some(found)) => Some(found),
            Ok(None) => match system_namespace {
                None => None,
                Some(system) => {
                    let fallback = cluster
                        .get(&config, Some(system), name)
                        .and_then(|found| found.ok_or_else(|| Error::Transient(not_found(name))));
                    Some(fallback.map_err(|e| {
                        e.context(format!(
                            "failed to get config: failed to get LLMInferenceServiceConfig {} from namespaces [{}, {}]",
                            go::quote(name),
                            go::quote(namespace),
                            go::quote(system)
                        ))
                    })?)
                }
            },
            Err(e) => {
                return Err(e.context(format!(
                    "failed to get config: failed to get LLMInferenceServiceConfig {namespace}/{name}"
                )));
            }
        };
        if let Some(found) = found {
            specs.push(found.get("spec").cloned().unwrap_or(Value::Null));
        }
    }
    Ok(specs)
}

fn not_found(name: &str) -> String {
    format!(
        "llminferenceserviceconfigs.serving.kserve.io {} not found",
        go::quote(name)
    )
}

/// The service with its spec replaced by `[config specs..., own spec]` folded left to right,
/// each later spec merged over the earlier (the service wins).
pub fn merged(service: &Object, base_specs: Vec<Value>) -> Object {
    let own = service.at(&["spec"]).cloned().unwrap_or(Value::Null);
    let mut specs = base_specs.into_iter().chain(std::iter::once(own));
    let mut spec = specs.next().unwrap_or(Value::Null);
    for over in specs {
        merge(&mut spec, &over);
    }
    let mut copy = service.clone();
    copy.set(&["spec"], spec);
    copy
}

/// Lists whose entries are merged by `name` in the Kubernetes strategic-merge metadata the
/// LLMInferenceService spec embeds (pod specs and containers); every other list is replaced.
const MERGED_BY_NAME: [&str; 6] = [
    "containers",
    "initContainers",
    "volumes",
    "volumeMounts",
    "env",
    "imagePullSecrets",
];

/// A strategic merge of `over` onto `base` as kserve's `MergeSpecs` does it for the fields an
/// override sets: objects merge key by key, `null` (an unset field) changes nothing, lists of
/// named entries merge by name, anything else is replaced.
pub fn merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (_, Value::Null) => {}
        (Value::Object(base), Value::Object(over)) => merge_maps(base, over),
        (base, over) => *base = over.clone(),
    }
}

fn merge_maps(base: &mut Map<String, Value>, over: &Map<String, Value>) {
    for (key, value) in over {
        match base.get_mut(key) {
            Some(Value::Array(existing)) if MERGED_BY_NAME.contains(&key.as_str()) => {
                if let Value::Array(entries) = value {
                    merge_named(existing, entries);
                } else if !value.is_null() {
                    base.insert(key.clone(), value.clone());
                }
            }
            Some(slot) => merge(slot, value),
            None if !value.is_null() => {
                base.insert(key.clone(), value.clone());
            }
            None => {}
        }
    }
}

fn merge_named(existing: &mut Vec<Value>, entries: &[Value]) {
    let name = |v: &Value| v.get("name").and_then(Value::as_str).map(str::to_string);
    for entry in entries {
        match name(entry).and_then(|n| existing.iter_mut().find(|e| name(e).as_deref() == Some(&n)))
        {
            Some(slot) => merge(slot, entry),
            None => existing.push(entry.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use odh_plugin_sdk::json;

    #[test]
    fn later_specs_win_and_objects_merge() {
        let mut base = json!({"router": {"route": {"http": {"refs": [{"name": "a"}]}}, "gateway": {}},
                              "replicas": 1});
        merge(
            &mut base,
            &json!({"router": {"route": {"http": {"refs": [{"name": "b"}]}}},
                                 "replicas": null, "model": {"uri": "hf://m"}}),
        );
        assert_eq!(
            base,
            json!({"router": {"route": {"http": {"refs": [{"name": "b"}]}}, "gateway": {}},
                   "replicas": 1, "model": {"uri": "hf://m"}})
        );
    }

    #[test]
    fn containers_merge_by_name() {
        let mut base =
            json!({"template": {"containers": [{"name": "main", "image": "a", "args": ["x"]}]}});
        merge(
            &mut base,
            &json!({"template": {"containers": [{"name": "main", "image": "b"}, {"name": "side"}]}}),
        );
        assert_eq!(
            base,
            json!({"template": {"containers": [{"name": "main", "image": "b", "args": ["x"]}, {"name": "side"}]}})
        );
    }
}
