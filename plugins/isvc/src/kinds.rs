//! The kinds, names and well-known keys the InferenceService plugin works with (spec §5).

use odh_plugin_sdk::{Gvk, core_gvk, gvk};

pub const FINALIZER: &str = "odh.inferenceservice.finalizers";
pub const CONTROLLER: &str = "inferenceservice";

pub const ENABLE_AUTH: &str = "security.opendatahub.io/enable-auth";
pub const VISIBILITY: &str = "networking.kserve.io/visibility";
pub const ROUTE_TIMEOUT: &str = "haproxy.router.openshift.io/timeout";
pub const ISVC_NAME_LABEL: &str = "serving.kserve.io/inferenceservice";
pub const SCRAPE_LABEL: &str = "monitoring.opendatahub.io/scrape";
pub const KEDA_LABEL: &str = "odh-model-controller";
pub const KEDA_LABEL_VALUE: &str = "keda-reconciler";
pub const KEDA_NAME: &str = "inference-prometheus-auth";
pub const RAY_SECRETS: [&str; 2] = ["ray-ca-tls", "ray-tls"];

pub fn inference_service() -> Gvk {
    gvk("serving.kserve.io", "v1beta1", "InferenceService")
}
pub fn serving_runtime() -> Gvk {
    gvk("serving.kserve.io", "v1alpha1", "ServingRuntime")
}
pub fn route() -> Gvk {
    gvk("route.openshift.io", "v1", "Route")
}
pub fn service() -> Gvk {
    core_gvk("Service")
}
pub fn service_monitor() -> Gvk {
    gvk("monitoring.coreos.com", "v1", "ServiceMonitor")
}
pub fn pod_monitor() -> Gvk {
    gvk("monitoring.coreos.com", "v1", "PodMonitor")
}
pub fn config_map() -> Gvk {
    core_gvk("ConfigMap")
}
pub fn secret() -> Gvk {
    core_gvk("Secret")
}
pub fn service_account() -> Gvk {
    core_gvk("ServiceAccount")
}
pub fn namespace() -> Gvk {
    core_gvk("Namespace")
}
pub fn cluster_role_binding() -> Gvk {
    gvk("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding")
}
pub fn role() -> Gvk {
    gvk("rbac.authorization.k8s.io", "v1", "Role")
}
pub fn role_binding() -> Gvk {
    gvk("rbac.authorization.k8s.io", "v1", "RoleBinding")
}
pub fn network_policy() -> Gvk {
    gvk("networking.k8s.io", "v1", "NetworkPolicy")
}
pub fn trigger_authentication() -> Gvk {
    gvk("keda.sh", "v1alpha1", "TriggerAuthentication")
}
pub fn data_science_cluster() -> Gvk {
    gvk(
        "datasciencecluster.opendatahub.io",
        "v1",
        "DataScienceCluster",
    )
}
pub fn dsc_initialization() -> Gvk {
    gvk(
        "dscinitialization.opendatahub.io",
        "v1",
        "DSCInitialization",
    )
}
pub fn hardware_profile() -> Gvk {
    gvk("infrastructure.opendatahub.io", "v1", "HardwareProfile")
}
