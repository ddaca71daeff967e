//! The plugin's settings. The host fills them from upstream's environment (`POD_NAMESPACE`);
//! an admin may override them in the plugins ConfigMap. JSON: `{"podNamespace": "..."}`.

use odh_plugin_sdk::Validatable;
use serde::Deserialize;

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// The system namespace: where `baseRefs` configs are looked for when the service's own
    /// namespace lacks them. Unset or empty: a missing config is skipped.
    #[serde(default)]
    pub pod_namespace: Option<String>,
}

impl Settings {
    /// The system namespace, none when unset or empty.
    pub fn system_namespace(&self) -> Option<&str> {
        self.pod_namespace.as_deref().filter(|ns| !ns.is_empty())
    }
}

/// Every combination that parses is usable: upstream reads the variable without checks.
impl Validatable for Settings {}
