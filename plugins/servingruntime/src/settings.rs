//! The plugin's settings, filled by the host from upstream's environment variables:
//! `{"podNamespace": $POD_NAMESPACE, "monitoringNamespace": $MONITORING_NAMESPACE}`.

use odh_plugin_sdk::Validatable;
use serde::Deserialize;

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// The controller namespace, where `ray-ca-tls` lives.
    #[serde(default)]
    pub pod_namespace: Option<String>,
    /// Enables the monitoring RoleBinding; the subject's namespace.
    #[serde(default)]
    pub monitoring_namespace: Option<String>,
}

impl Settings {
    pub fn pod_namespace(&self) -> &str {
        self.pod_namespace.as_deref().unwrap_or_default()
    }

    pub fn monitoring_namespace(&self) -> &str {
        self.monitoring_namespace.as_deref().unwrap_or_default()
    }
}

/// Upstream reads both variables unchecked; an empty controller namespace fails the reconcile
/// that needs it, as upstream's create of `ray-ca-tls` does.
impl Validatable for Settings {}
