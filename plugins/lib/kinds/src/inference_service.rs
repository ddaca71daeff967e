//! [`InferenceService`]: a view of a KServe InferenceService.

use odh_plugin_sdk::Value;
use odh_plugin_sdk::go::parse_bool;

use crate::{annotation, label, view};

view! {
    /// A KServe `InferenceService`, read the way ODH's controllers read it.
    InferenceService
}

impl<'a> InferenceService<'a> {
    /// `spec.predictor.model` (none for a raw-container InferenceService).
    pub fn predictor_model(&self) -> Option<&'a Value> {
        self.object().at(&["spec", "predictor", "model"])
    }

    /// `spec.predictor.model.runtime`: the ServingRuntime it names, if any.
    pub fn runtime_name(&self) -> Option<&'a str> {
        self.object()
            .str_at(&["spec", "predictor", "model", "runtime"])
    }

    /// `spec.predictor.model.modelFormat.name`, `""` when unset.
    pub fn model_format(&self) -> &'a str {
        self.object()
            .str_at(&["spec", "predictor", "model", "modelFormat", "name"])
            .unwrap_or_default()
    }

    /// `spec.predictor.serviceAccountName`, `default` when unset or empty.
    pub fn service_account(&self) -> &'a str {
        self.object()
            .str_at(&["spec", "predictor", "serviceAccountName"])
            .filter(|s| !s.is_empty())
            .unwrap_or("default")
    }

    /// Labelled `networking.kserve.io/visibility: exposed` (it wants a Route).
    pub fn is_exposed(&self) -> bool {
        self.label(label::VISIBILITY) == Some("exposed")
    }

    /// Auth as the auth-delegator binding reads it: the annotation is exactly `true`.
    pub fn auth_enabled(&self) -> bool {
        self.annotation(annotation::ENABLE_AUTH) == Some("true")
    }

    /// Auth as the Route reads it: the annotation is a `strconv.ParseBool` truth (`1`, `t`,
    /// `True`, ...).
    pub fn auth_enabled_lenient(&self) -> bool {
        self.annotation(annotation::ENABLE_AUTH)
            .and_then(parse_bool)
            .unwrap_or(false)
    }

    /// The `serving.kserve.io/deploymentMode` annotation.
    pub fn deployment_mode(&self) -> Option<&'a str> {
        self.object().annotation(annotation::DEPLOYMENT_MODE)
    }

    /// Whether `spec.<component>` (`transformer`, `explainer`) is set.
    pub fn has_component(&self, component: &str) -> bool {
        self.object().at(&["spec", component]).is_some()
    }

    /// `spec.<component>.timeout` in seconds.
    pub fn component_timeout(&self, component: &str) -> Option<i64> {
        self.object()
            .at(&["spec", component, "timeout"])
            .and_then(Value::as_i64)
    }

    /// `spec.canary`, empty when unset.
    pub fn canaries(&self) -> &'a [Value] {
        self.object().array_at(&["spec", "canary"])
    }

    /// Autoscales on an external Prometheus metric (through KEDA).
    pub fn uses_keda(&self) -> bool {
        self.object()
            .array_at(&["spec", "predictor", "autoScaling", "metrics"])
            .iter()
            .any(|m| {
                m.pointer("/external/metric/backend")
                    .and_then(Value::as_str)
                    == Some("prometheus")
            })
    }

    /// `status.url`.
    pub fn status_url(&self) -> Option<&'a str> {
        self.object().str_at(&["status", "url"])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use odh_plugin_sdk::{Object, json};
    use odh_test_fixtures::isvc;

    #[test]
    fn reads_the_fixture() {
        let o = Object(isvc("m").build());
        let v = InferenceService::of(&o);
        assert_eq!(v.runtime_name(), Some("kserve-ovms"));
        assert_eq!(v.model_format(), "onnx");
        assert_eq!(v.service_account(), "default");
        assert_eq!(v.deployment_mode(), Some("RawDeployment"));
        assert!(!v.is_exposed() && !v.auth_enabled() && !v.uses_keda());
        assert!(v.canaries().is_empty() && !v.has_component("transformer"));
        assert_eq!(v.name(), "m", "dereferences to the object");
    }

    #[test]
    fn auth_has_two_readings() {
        let strict = Object(isvc("m").auth("true").build());
        let lenient = Object(isvc("m").auth("True").build());
        assert!(InferenceService::of(&strict).auth_enabled());
        assert!(!InferenceService::of(&lenient).auth_enabled());
        assert!(InferenceService::of(&lenient).auth_enabled_lenient());
        assert!(
            !InferenceService::of(&Object(isvc("m").auth("yes").build())).auth_enabled_lenient()
        );
    }

    #[test]
    fn optional_parts() {
        let o = Object(
            isvc("m")
                .exposed()
                .with_auth(Some("sa"))
                .keda()
                .raw()
                .component("transformer", json!({"timeout": 45}))
                .component("explainer", Value::Null)
                .canary(json!([{"trafficPercent": 10}]))
                .status_url("http://m")
                .build(),
        );
        let v = InferenceService::of(&o);
        assert!(v.is_exposed() && v.auth_enabled() && v.uses_keda());
        assert_eq!(v.service_account(), "sa");
        assert_eq!(v.predictor_model(), None);
        assert_eq!((v.runtime_name(), v.model_format()), (None, ""));
        assert!(v.has_component("transformer") && !v.has_component("explainer"));
        assert_eq!(v.component_timeout("transformer"), Some(45));
        assert_eq!(v.component_timeout("predictor"), None);
        assert_eq!(v.canaries().len(), 1);
        assert_eq!(v.status_url(), Some("http://m"));
    }
}
