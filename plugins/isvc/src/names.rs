//! Names this plugin gives or recognises. The keys other plugins share (labels,
//! annotations, finalizers, kinds) are in `odh_kinds`.

/// The controller's name (metrics, logs).
pub const CONTROLLER: &str = "inferenceservice";
/// The five per-namespace KEDA Prometheus-auth objects.
pub const KEDA_NAME: &str = "inference-prometheus-auth";
/// Secrets KServe's Ray integration manages; their changes concern no InferenceService.
pub const RAY_SECRETS: [&str; 2] = ["ray-ca-tls", "ray-tls"];
