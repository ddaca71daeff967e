//! The plugin's settings (from the process environment for the built-in).

use serde::Deserialize;

/// `podNamespace` ← `POD_NAMESPACE`, `nimState` ← `NIM_STATE`.
#[derive(Deserialize, Default, Debug, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// The controller's namespace: the applications namespace unless a DSCInitialization names one.
    #[serde(default)]
    pub pod_namespace: Option<String>,
    /// `removed` turns the controller into the NIM-disabled cleanup (docs/plugins/nim-account.md,
    /// "`NIM_STATE=removed`").
    #[serde(default)]
    pub nim_state: Option<String>,
}

impl Settings {
    /// Whether NIM is removed (`NIM_STATE=removed`).
    pub fn nim_removed(&self) -> bool {
        self.nim_state.as_deref() == Some("removed")
    }
}

impl odh_plugin_sdk::Validatable for Settings {
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}
