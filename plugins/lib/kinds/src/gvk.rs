//! The kinds the plugins touch, one constructor each (group and version spelled once).

use odh_plugin_sdk::{Gvk, core_gvk, gvk};

// KServe.

/// `serving.kserve.io/v1beta1` `InferenceService`.
pub fn inference_service() -> Gvk {
    gvk("serving.kserve.io", "v1beta1", "InferenceService")
}
/// `serving.kserve.io/v1alpha1` `ServingRuntime`.
pub fn serving_runtime() -> Gvk {
    gvk("serving.kserve.io", "v1alpha1", "ServingRuntime")
}
/// `serving.kserve.io/v1alpha1` `InferenceGraph`.
pub fn inference_graph() -> Gvk {
    gvk("serving.kserve.io", "v1alpha1", "InferenceGraph")
}
/// `serving.kserve.io/v1alpha2` `LLMInferenceService`.
pub fn llm_inference_service() -> Gvk {
    gvk("serving.kserve.io", "v1alpha2", "LLMInferenceService")
}
/// `serving.kserve.io/v1alpha2` `LLMInferenceServiceConfig`.
pub fn llm_inference_service_config() -> Gvk {
    gvk("serving.kserve.io", "v1alpha2", "LLMInferenceServiceConfig")
}

// Open Data Hub.

/// `datasciencecluster.opendatahub.io/v1` `DataScienceCluster` (cluster-scoped).
pub fn data_science_cluster() -> Gvk {
    gvk(
        "datasciencecluster.opendatahub.io",
        "v1",
        "DataScienceCluster",
    )
}
/// `dscinitialization.opendatahub.io/v1` `DSCInitialization` (cluster-scoped).
pub fn dsc_initialization() -> Gvk {
    gvk(
        "dscinitialization.opendatahub.io",
        "v1",
        "DSCInitialization",
    )
}
/// `infrastructure.opendatahub.io/v1` `HardwareProfile`.
pub fn hardware_profile() -> Gvk {
    gvk("infrastructure.opendatahub.io", "v1", "HardwareProfile")
}
/// `nim.opendatahub.io/v1` `Account` (an NVIDIA NGC account).
pub fn nim_account() -> Gvk {
    gvk("nim.opendatahub.io", "v1", "Account")
}

// OpenShift.

/// `route.openshift.io/v1` `Route`.
pub fn route() -> Gvk {
    gvk("route.openshift.io", "v1", "Route")
}
/// `template.openshift.io/v1` `Template`.
pub fn template() -> Gvk {
    gvk("template.openshift.io", "v1", "Template")
}
/// `config.openshift.io/v1` `Authentication` (cluster-scoped).
pub fn authentication() -> Gvk {
    gvk("config.openshift.io", "v1", "Authentication")
}

// KEDA.

/// `keda.sh/v1alpha1` `TriggerAuthentication`.
pub fn trigger_authentication() -> Gvk {
    gvk("keda.sh", "v1alpha1", "TriggerAuthentication")
}

// Prometheus operator.

/// `monitoring.coreos.com/v1` `ServiceMonitor`.
pub fn service_monitor() -> Gvk {
    gvk("monitoring.coreos.com", "v1", "ServiceMonitor")
}
/// `monitoring.coreos.com/v1` `PodMonitor`.
pub fn pod_monitor() -> Gvk {
    gvk("monitoring.coreos.com", "v1", "PodMonitor")
}

// Gateway API, Kuadrant, Istio.

/// `gateway.networking.k8s.io/v1` `Gateway`.
pub fn gateway() -> Gvk {
    gvk("gateway.networking.k8s.io", "v1", "Gateway")
}
/// `gateway.networking.k8s.io/v1` `GatewayClass` (cluster-scoped).
pub fn gateway_class() -> Gvk {
    gvk("gateway.networking.k8s.io", "v1", "GatewayClass")
}
/// `gateway.networking.k8s.io/v1` `HTTPRoute`.
pub fn http_route() -> Gvk {
    gvk("gateway.networking.k8s.io", "v1", "HTTPRoute")
}
/// `kuadrant.io/v1` `AuthPolicy`.
pub fn auth_policy() -> Gvk {
    gvk("kuadrant.io", "v1", "AuthPolicy")
}
/// `kuadrant.io/v1beta1` `Kuadrant`.
pub fn kuadrant() -> Gvk {
    gvk("kuadrant.io", "v1beta1", "Kuadrant")
}
/// `operator.authorino.kuadrant.io/v1beta1` `Authorino`.
pub fn authorino() -> Gvk {
    gvk("operator.authorino.kuadrant.io", "v1beta1", "Authorino")
}
/// `networking.istio.io/v1alpha3` `EnvoyFilter`.
pub fn envoy_filter() -> Gvk {
    gvk("networking.istio.io", "v1alpha3", "EnvoyFilter")
}

// Kubernetes.

/// `v1` `Pod`.
pub fn pod() -> Gvk {
    core_gvk("Pod")
}
/// `v1` `Service`.
pub fn service() -> Gvk {
    core_gvk("Service")
}
/// `v1` `ConfigMap`.
pub fn config_map() -> Gvk {
    core_gvk("ConfigMap")
}
/// `v1` `Secret`.
pub fn secret() -> Gvk {
    core_gvk("Secret")
}
/// `v1` `ServiceAccount`.
pub fn service_account() -> Gvk {
    core_gvk("ServiceAccount")
}
/// `v1` `Namespace` (cluster-scoped).
pub fn namespace() -> Gvk {
    core_gvk("Namespace")
}
/// `apps/v1` `Deployment`.
pub fn deployment() -> Gvk {
    gvk("apps", "v1", "Deployment")
}
/// `rbac.authorization.k8s.io/v1` `Role`.
pub fn role() -> Gvk {
    gvk("rbac.authorization.k8s.io", "v1", "Role")
}
/// `rbac.authorization.k8s.io/v1` `RoleBinding`.
pub fn role_binding() -> Gvk {
    gvk("rbac.authorization.k8s.io", "v1", "RoleBinding")
}
/// `rbac.authorization.k8s.io/v1` `ClusterRoleBinding` (cluster-scoped).
pub fn cluster_role_binding() -> Gvk {
    gvk("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding")
}
/// `networking.k8s.io/v1` `NetworkPolicy`.
pub fn network_policy() -> Gvk {
    gvk("networking.k8s.io", "v1", "NetworkPolicy")
}

#[cfg(test)]
mod tests {
    #[test]
    fn api_versions_are_upstreams() {
        assert_eq!(
            super::inference_service().api_version(),
            "serving.kserve.io/v1beta1"
        );
        assert_eq!(
            super::dsc_initialization().api_version(),
            "dscinitialization.opendatahub.io/v1"
        );
        assert_eq!(super::secret().api_version(), "v1");
        assert_eq!(
            super::trigger_authentication().to_string(),
            "TriggerAuthentication.keda.sh/v1alpha1"
        );
    }
}
