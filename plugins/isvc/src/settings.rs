//! The plugin's settings. The host fills them from upstream's environment variables
//! (`POD_NAMESPACE`, `MODELREGISTRY_STATE`); an admin may override them in the plugins
//! ConfigMap. JSON: `{"podNamespace": "...", "modelRegistry": {"enabled": true, "bearerToken": "..."}}`.

use odh_plugin_sdk::Validatable;
use serde::Deserialize;

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// The default application (protected) namespace; DSCInitializations override it.
    #[serde(default)]
    pub pod_namespace: Option<String>,
    /// Model Registry synchronisation (upstream: `MODELREGISTRY_STATE=managed`).
    #[serde(default)]
    pub model_registry: ModelRegistrySettings,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelRegistrySettings {
    #[serde(default)]
    pub enabled: bool,
    /// Sent as `Authorization: Bearer <token>` to the Model Registry when non-empty.
    #[serde(default)]
    pub bearer_token: Option<String>,
}

/// Every combination that parses is usable: upstream reads these without further checks.
impl Validatable for Settings {}
