//! Which ServingRuntime serves an InferenceService (spec §2.1).

use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{Error, Object, Value};

use crate::kinds;

/// The exact message upstream's dashboard reconciler recognises as "unsupported".
pub const NO_SUITABLE_RUNTIME: &str = "not found error: no suitable runtime found.";

/// The runtime of `isvc`: the one it names, else the newest auto-selectable one for its model
/// format; `None` for a raw-container InferenceService (no model, or no model format).
pub fn resolve(isvc: &Object, cluster: &dyn Cluster) -> Result<Option<Object>, Error> {
    let namespace = isvc.namespace();
    let model = isvc.at(&["spec", "predictor", "model"]);
    if let Some(name) = model.and_then(|m| m.get("runtime")).and_then(Value::as_str) {
        return match cluster.get_object(&kinds::serving_runtime(), namespace, name)? {
            Some(sr) => Ok(Some(sr)),
            None => Err(Error::Transient(format!(
                "servingruntimes.serving.kserve.io \"{name}\" not found"
            ))),
        };
    }
    let format = model
        .and_then(|m| m.pointer("/modelFormat/name"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    if format.is_empty() {
        return Ok(None);
    }
    let mut runtimes = cluster.list_objects(&kinds::serving_runtime(), namespace, None)?;
    // Newest first; RFC 3339 timestamps of one precision sort as strings.
    runtimes.sort_by(|a, b| {
        let created = |o: &Object| {
            o.str_at(&["metadata", "creationTimestamp"])
                .unwrap_or_default()
                .to_string()
        };
        created(b)
            .cmp(&created(a))
            .then_with(|| a.name().cmp(b.name()))
    });
    runtimes
        .into_iter()
        .find(|sr| auto_selectable(sr, format))
        .map(Some)
        .ok_or_else(|| Error::Transient(NO_SUITABLE_RUNTIME.into()))
}

fn auto_selectable(sr: &Object, format: &str) -> bool {
    let spec = sr.at(&["spec"]);
    let flag = |key: &str| spec.and_then(|s| s.get(key)).and_then(Value::as_bool);
    if flag("disabled") == Some(true) || flag("multiModel") == Some(false) {
        return false;
    }
    spec.and_then(|s| s.get("supportedModelFormats"))
        .and_then(Value::as_array)
        .is_some_and(|formats| {
            formats.iter().any(|f| {
                f.get("autoSelect").and_then(Value::as_bool) == Some(true)
                    && f.get("name").and_then(Value::as_str) == Some(format)
            })
        })
}

/// A ServingRuntime's `spec.annotations[key]`.
pub fn spec_annotation<'a>(sr: &'a Object, key: &str) -> Option<&'a str> {
    sr.at(&["spec", "annotations", key]).and_then(Value::as_str)
}
