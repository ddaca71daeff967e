//! [`ServingRuntime`]: a view of a KServe ServingRuntime, and which one serves an
//! InferenceService (the runtime it names, else the newest one that auto-selects its model
//! format: [`resolve_runtime`]).

use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{Error, Object, Value};

use crate::{InferenceService, annotation, gvk, view};

view! {
    /// A KServe `ServingRuntime`.
    ServingRuntime
}

/// The exact message upstream's dashboard reconciler recognises as "unsupported".
pub const NO_SUITABLE_RUNTIME: &str = "not found error: no suitable runtime found.";

impl<'a> ServingRuntime<'a> {
    /// `spec.annotations[key]` (where runtimes keep their Prometheus port and flavour).
    pub fn spec_annotation(&self, key: &str) -> Option<&'a str> {
        self.object().str_at(&["spec", "annotations", key])
    }

    /// The metadata annotation `runtimes.opendatahub.io/nvidia-nim` is `true`.
    pub fn is_nim(&self) -> bool {
        self.object().annotation(annotation::NIM_RUNTIME) == Some("true")
    }

    /// `spec.disabled` is `true`.
    pub fn is_disabled(&self) -> bool {
        self.spec_flag("disabled") == Some(true)
    }

    /// `spec.multiModel`, when set.
    pub fn multi_model(&self) -> Option<bool> {
        self.spec_flag("multiModel")
    }

    /// `metadata.creationTimestamp`, `""` when unset.
    pub fn created(&self) -> &'a str {
        self.object()
            .str_at(&["metadata", "creationTimestamp"])
            .unwrap_or_default()
    }

    /// KServe's auto-selection test: enabled, not explicitly single-model, and listing
    /// `format` with `autoSelect: true`.
    pub fn auto_selects(&self, format: &str) -> bool {
        if self.is_disabled() || self.multi_model() == Some(false) {
            return false;
        }
        self.object()
            .array_at(&["spec", "supportedModelFormats"])
            .iter()
            .any(|f| {
                f.get("autoSelect").and_then(Value::as_bool) == Some(true)
                    && f.get("name").and_then(Value::as_str) == Some(format)
            })
    }

    fn spec_flag(&self, key: &str) -> Option<bool> {
        self.object().at(&["spec", key]).and_then(Value::as_bool)
    }
}

/// The runtime of `isvc`: the one it names, else the newest auto-selectable one for its model
/// format; `None` for a raw-container InferenceService (no model, or no model format).
///
/// A named runtime that does not exist is [`Error::Transient`]
/// (`servingruntimes.serving.kserve.io "<name>" not found`), as is finding no suitable one
/// ([`NO_SUITABLE_RUNTIME`]).
pub fn resolve_runtime(isvc: &Object, cluster: &dyn Cluster) -> Result<Option<Object>, Error> {
    let view = InferenceService::of(isvc);
    let namespace = isvc.namespace();
    if let Some(name) = view.runtime_name() {
        return match cluster.get_object(&gvk::serving_runtime(), namespace, name)? {
            Some(sr) => Ok(Some(sr)),
            None => Err(Error::Transient(format!(
                "servingruntimes.serving.kserve.io \"{name}\" not found"
            ))),
        };
    }
    let format = view.model_format();
    if format.is_empty() {
        return Ok(None);
    }
    let mut runtimes = cluster.list_objects(&gvk::serving_runtime(), namespace, None)?;
    // Newest first; RFC 3339 timestamps of one precision sort as strings.
    runtimes.sort_by(|a, b| {
        let (a, b) = (ServingRuntime::of(a), ServingRuntime::of(b));
        b.created()
            .cmp(a.created())
            .then_with(|| a.name().cmp(b.name()))
    });
    runtimes
        .into_iter()
        .find(|sr| ServingRuntime::of(sr).auto_selects(format))
        .map(Some)
        .ok_or_else(|| Error::Transient(NO_SUITABLE_RUNTIME.into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use odh_plugin_sdk::json;
    use odh_plugin_sdk::testing::FakeCluster;
    use odh_test_fixtures::{isvc, ovms_runtime, serving_runtime};

    #[test]
    fn reads_a_runtime() {
        let sr = Object(
            ovms_runtime()
                .annotation(annotation::NIM_RUNTIME, "true")
                .build(),
        );
        let v = ServingRuntime::of(&sr);
        assert_eq!(v.spec_annotation("prometheus.io/port"), Some("8888"));
        assert!(v.is_nim() && !v.is_disabled());
        assert_eq!(v.multi_model(), Some(false));
        assert_eq!(v.created(), "2026-01-01T00:00:00Z");
        assert!(
            !v.auto_selects("onnx"),
            "single-model runtimes are not auto-selected"
        );
        let multi = Object(serving_runtime("m").auto_selects(&["onnx"]).build());
        assert!(ServingRuntime::of(&multi).auto_selects("onnx"));
        assert!(!ServingRuntime::of(&multi).auto_selects("pytorch"));
    }

    #[test]
    fn a_named_runtime_must_exist() {
        let cluster = FakeCluster::new().with(ovms_runtime());
        let found = resolve_runtime(&Object(isvc("m").build()), &cluster).unwrap();
        assert_eq!(found.unwrap().name(), "kserve-ovms");
        let missing = resolve_runtime(&Object(isvc("m").runtime("gone").build()), &cluster);
        assert_eq!(
            missing,
            Err(Error::Transient(
                "servingruntimes.serving.kserve.io \"gone\" not found".into()
            ))
        );
    }

    #[test]
    fn auto_selection_takes_the_newest_eligible_runtime() {
        let formats = json!([{"name": "onnx", "autoSelect": true}]);
        let cluster = FakeCluster::new()
            .with(serving_runtime("older").set("/spec/supportedModelFormats", formats.clone()))
            .with(
                serving_runtime("newer")
                    .set("/spec/supportedModelFormats", formats.clone())
                    .created("2026-02-01T00:00:00Z"),
            )
            .with(
                serving_runtime("disabled")
                    .set("/spec/supportedModelFormats", formats)
                    .set("/spec/disabled", true)
                    .created("2026-03-01T00:00:00Z"),
            );
        let auto = Object(isvc("m").auto_runtime().build());
        assert_eq!(
            resolve_runtime(&auto, &cluster).unwrap().unwrap().name(),
            "newer"
        );
        assert_eq!(
            resolve_runtime(&auto, &FakeCluster::new()),
            Err(Error::Transient(NO_SUITABLE_RUNTIME.into()))
        );
        assert_eq!(
            resolve_runtime(&Object(isvc("m").raw().build()), &cluster),
            Ok(None)
        );
    }
}
