//! The plugin's settings. The host fills them from upstream's environment (`POD_NAMESPACE`);
//! an admin may override them in the plugins ConfigMap. JSON:
//! `{"podNamespace": "...", "kuadrantNamespace": "...", "authAudience": "...",
//! "gatewayLabelSelector": "..."}`.

use odh_plugin_sdk::Validatable;
use serde::Deserialize;

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// The system namespace: where `baseRefs` configs are looked for when the service's own
    /// namespace lacks them. Unset or empty: a missing config is skipped.
    #[serde(default)]
    pub pod_namespace: Option<String>,
    /// `KUADRANT_NAMESPACE`: where Kuadrant is looked for first (spec §2.7); unset means
    /// `kuadrant-system`.
    #[serde(default)]
    pub kuadrant_namespace: Option<String>,
    /// `AUTH_AUDIENCE`: comma-separated token-review audiences of the Gateway AuthPolicy
    /// (spec §2.8); unset or empty means discovered.
    #[serde(default)]
    pub auth_audience: Option<String>,
    /// `GATEWAY_LABEL_SELECTOR`: `key=value` pairs every Gateway the model-serving-api lists
    /// must carry (spec §8.1).
    #[serde(default)]
    pub gateway_label_selector: Option<String>,
}

impl Settings {
    /// The system namespace, none when unset or empty.
    pub fn system_namespace(&self) -> Option<&str> {
        self.pod_namespace.as_deref().filter(|ns| !ns.is_empty())
    }
}

/// Every combination that parses is usable: upstream reads the variable without checks.
impl Validatable for Settings {}
