//! Names, keys and labels the ServingRuntime and Pod controllers use, upstream's exactly.

/// The controllers (upstream's controller names).
pub const SERVINGRUNTIME_CONTROLLER: &str = "servingruntime";
pub const POD_CONTROLLER: &str = "core-pod";

/// The Ray CA Secret in the controller namespace and the per-namespace trust Secret.
pub const RAY_CA_SECRET: &str = "ray-ca-tls";
pub const RAY_TLS_SECRET: &str = "ray-tls";
/// `ray-tls`'s key holding the CA certificate.
pub const CA_CERT_KEY: &str = "ca.crt";
pub const TLS_CRT: &str = "tls.crt";
pub const TLS_KEY: &str = "tls.key";
pub const TLS_SECRET_TYPE: &str = "kubernetes.io/tls";
pub const OPAQUE_SECRET_TYPE: &str = "Opaque";

/// The monitoring RoleBinding, its ClusterRole and subject.
pub const ROLE_BINDING: &str = "prometheus-ns-access";
pub const PROMETHEUS_CLUSTER_ROLE: &str = "prometheus-ns-access";
pub const MONITORING_SA: &str = "prometheus-custom";
pub const OPENSHIFT_MONITORING: &str = "openshift-monitoring";

/// Containers whose `RAY_USE_TLS` makes a pod a Ray TLS pod.
pub const RAY_CONTAINERS: [&str; 2] = ["kserve-container", "worker-container"];
pub const RAY_USE_TLS: &str = "RAY_USE_TLS";
/// The pod label of predictor pods (upstream's Pod cache filter and pruning selector).
pub const PREDICTOR_SELECTOR: &str = "component=predictor";

/// App labels of the generated Secrets.
pub const APP_NAME: &str = "app.kubernetes.io/name";
pub const CA_APP_NAME: &str = "self-signed-cert";
pub const RAY_TLS_APP_NAME: &str = "self-signed-ray-cert";
pub const APP_LABELS: [(&str, &str); 3] = [
    ("app.kubernetes.io/component", "odh-model-serving"),
    ("app.kubernetes.io/part-of", "kserve"),
    ("app.kubernetes.io/managed-by", "odh-model-controller"),
];
