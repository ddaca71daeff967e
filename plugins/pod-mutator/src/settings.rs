//! The plugin's settings. The host fills them from upstream's environment (`POD_NAMESPACE`);
//! an admin may override them in the plugins ConfigMap. JSON: `{"podNamespace": "..."}`.

use odh_plugin_sdk::Validatable;
use serde::Deserialize;

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// The controller's namespace, where `odh-model-controller-parameters` lives.
    #[serde(default)]
    pub pod_namespace: Option<String>,
}

/// Upstream reads `POD_NAMESPACE` unchecked: unset, the parameters ConfigMap is simply not
/// found, so every setting that parses is usable.
impl Validatable for Settings {}
