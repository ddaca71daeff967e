//! The plugin's settings. The host fills them from upstream's environment variables
//! (`POD_NAMESPACE`, `MODELREGISTRY_STATE`, the cluster domain); an admin may override them in the plugins
//! ConfigMap. JSON: `{"podNamespace": "...", "modelRegistry": {"enabled": true}, "clusterDomain": "cluster.local"}`.
//! No credential is a setting: the Model Registry gets the controller's identity from the host
//! (docs/plugins/isvc.md, "Model Registry sync").

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
    /// The cluster's DNS domain, for the InferenceGraph validator (knative's rule, found by the
    /// host: `CLUSTER_DOMAIN`, else the `svc.` search entry of `/etc/resolv.conf`).
    #[serde(default)]
    pub cluster_domain: Option<String>,
}

impl Settings {
    /// The cluster domain, `cluster.local` when none is known.
    pub fn cluster_domain(&self) -> &str {
        self.cluster_domain
            .as_deref()
            .filter(|d| !d.is_empty())
            .unwrap_or(crate::inference_graph::DEFAULT_CLUSTER_DOMAIN)
    }
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelRegistrySettings {
    #[serde(default)]
    pub enabled: bool,
}

/// Every combination that parses is usable: upstream reads these without further checks.
impl Validatable for Settings {}
