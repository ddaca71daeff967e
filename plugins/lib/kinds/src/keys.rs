//! Well-known label, annotation and finalizer keys, with upstream's exact strings.

/// Labels.
pub mod label {
    /// Marks objects the platform manages; the platform's Secret cache selects `true`.
    pub const MANAGED: &str = "opendatahub.io/managed";
    /// On an InferenceService: `exposed` asks for an OpenShift Route.
    pub const VISIBILITY: &str = "networking.kserve.io/visibility";
    /// On the Services (and pods) KServe creates: the InferenceService's name.
    pub const INFERENCE_SERVICE_NAME: &str = "serving.kserve.io/inferenceservice";
    /// On KServe's Services and pods: `predictor`, `transformer`, `explainer`.
    pub const COMPONENT: &str = "component";
    /// On metrics Services and ServiceMonitors: scraped by the platform's monitoring.
    pub const SCRAPE: &str = "monitoring.opendatahub.io/scrape";
    /// On the KEDA Prometheus-auth objects, with [`KEDA_VALUE`].
    pub const KEDA: &str = "odh-model-controller";
    /// The value of [`KEDA`].
    pub const KEDA_VALUE: &str = "keda-reconciler";
    /// The Kueue local queue a workload is admitted through.
    pub const KUEUE_QUEUE: &str = "kueue.x-k8s.io/queue-name";
    /// On an InferenceService: the id of its Model Registry `InferenceService` record.
    pub const MR_INFERENCE_SERVICE_ID: &str = "modelregistry.opendatahub.io/inference-service-id";
    /// On an InferenceService: the id of the registered model it serves.
    pub const MR_REGISTERED_MODEL_ID: &str = "modelregistry.opendatahub.io/registered-model-id";
    /// On an InferenceService: the id of the model version it serves (optional).
    pub const MR_MODEL_VERSION_ID: &str = "modelregistry.opendatahub.io/model-version-id";
    /// On an InferenceService: the Model Registry's namespace (overrides the DSC's).
    pub const MR_NAMESPACE: &str = "modelregistry.opendatahub.io/namespace";
    /// On an InferenceService: the Model Registry Service's name.
    pub const MR_NAME: &str = "modelregistry.opendatahub.io/name";
}

/// Annotations.
pub mod annotation {
    /// On an InferenceService: `true` turns on auth (the CRB wants exactly `true`, the Route
    /// any `strconv.ParseBool` truth).
    pub const ENABLE_AUTH: &str = "security.opendatahub.io/enable-auth";
    /// On an InferenceService (copied to its Route): the HAProxy timeout.
    pub const ROUTE_TIMEOUT: &str = "haproxy.router.openshift.io/timeout";
    /// On an InferenceService: `RawDeployment`, `Serverless`, `ModelMesh` (ignored by ODH).
    pub const DEPLOYMENT_MODE: &str = "serving.kserve.io/deploymentMode";
    /// On a workload: the data-connection Secret (same namespace).
    pub const CONNECTIONS: &str = "opendatahub.io/connections";
    /// On a workload: the S3 sub-path of its connection.
    pub const CONNECTION_PATH: &str = "opendatahub.io/connection-path";
    /// On a connection Secret: `s3`, `uri` or `oci`; wins over [`CONNECTION_TYPE_REF`].
    pub const CONNECTION_TYPE_PROTOCOL: &str = "opendatahub.io/connection-type-protocol";
    /// On a connection Secret, deprecated: `s3`, `uri-v1` or `oci-v1`.
    pub const CONNECTION_TYPE_REF: &str = "opendatahub.io/connection-type-ref";
    /// On a workload: the HardwareProfile's name.
    pub const HARDWARE_PROFILE_NAME: &str = "opendatahub.io/hardware-profile-name";
    /// On a workload: the HardwareProfile's namespace (default: the workload's).
    pub const HARDWARE_PROFILE_NAMESPACE: &str = "opendatahub.io/hardware-profile-namespace";
    /// On an InferenceService: the Model Registry base URL, given directly.
    pub const MR_URL: &str = "modelregistry.opendatahub.io/url";
    /// On the Model Registry Service: its external REST address (`https://` is prepended).
    pub const MR_EXTERNAL_ADDRESS_REST: &str = "routing.opendatahub.io/external-address-rest";
    /// On a ServingRuntime's metadata: `true` marks an NVIDIA NIM runtime.
    pub const NIM_RUNTIME: &str = "runtimes.opendatahub.io/nvidia-nim";
    /// In a ServingRuntime's `spec.annotations`: the runtime flavour (`ovms`, `vllm`, ...).
    pub const KSERVE_RUNTIME: &str = "opendatahub.io/kserve-runtime";
    /// In a ServingRuntime's `spec.annotations`: the Prometheus metrics port.
    pub const PROMETHEUS_PORT: &str = "prometheus.io/port";
    /// In a ServingRuntime's `spec.annotations`: the Prometheus metrics path.
    pub const PROMETHEUS_PATH: &str = "prometheus.io/path";
    /// On a service-account-token Secret: the ServiceAccount it belongs to.
    pub const SERVICE_ACCOUNT_NAME: &str = "kubernetes.io/service-account.name";
}

/// Finalizers.
pub mod finalizer {
    /// The InferenceService controller's.
    pub const INFERENCE_SERVICE: &str = "odh.inferenceservice.finalizers";
    /// The Model Registry sync's, on every InferenceService it mirrors.
    pub const MODEL_REGISTRY: &str = "modelregistry.opendatahub.io/finalizer";
}

/// Label selectors (the string form watches and caches take).
pub mod selector {
    /// The Secrets the platform manages: upstream caches no other Secret, so every Secret
    /// watch declares this (the host's Secret cache is the union of the declared selectors).
    pub const MANAGED: &str = "opendatahub.io/managed=true";
    /// The KEDA Prometheus-auth objects.
    pub const KEDA: &str = "odh-model-controller=keda-reconciler";
    /// KServe predictor pods (upstream's Pod cache filter).
    pub const PREDICTOR_PODS: &str = "component=predictor";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_match_their_labels() {
        assert_eq!(selector::MANAGED, format!("{}=true", label::MANAGED));
        assert_eq!(
            selector::KEDA,
            format!("{}={}", label::KEDA, label::KEDA_VALUE)
        );
        assert_eq!(
            selector::PREDICTOR_PODS,
            format!("{}=predictor", label::COMPONENT)
        );
    }
}
