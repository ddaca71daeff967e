//! Upstream's names (constants.go and the webhook's own), exact: they appear in Pod specs,
//! webhook configurations and messages.

/// The webhook path (`+kubebuilder:webhook:path=/mutate--v1-pod`).
pub const PATH: &str = "/mutate--v1-pod";

/// The ConfigMap, in the controller's namespace, that names the init container's image.
pub const PARAMS_CONFIG_MAP: &str = "odh-model-controller-parameters";
/// Its key holding the image.
pub const IMAGE_KEY: &str = "ray-tls-generator-image";

/// The containers of which the first gets the mount: KServe's `InferenceServiceContainerName`
/// and `constants.WorkerContainerName` (the ones whose `RAY_USE_TLS` counts, see
/// `odh_kinds::Pod::uses_ray_tls`).
pub const RAY_CONTAINERS: [&str; 2] = ["kserve-container", "worker-container"];

/// The init container that copies the Ray certificates into place.
pub const INIT_CONTAINER: &str = "ray-tls-generator";
/// The emptyDir volume the certificates are copied into, and where it is mounted.
pub const TLS_VOLUME: &str = "ray-tls";
pub const TLS_MOUNT_PATH: &str = "/etc/ray/tls";
/// The volume of the namespace's `ray-tls` Secret (CA and per-pod certificates), and where
/// the init container mounts it.
pub const TLS_SECRET_VOLUME: &str = "ray-tls-secret";
pub const TLS_SECRET: &str = "ray-tls";
pub const SECRET_MOUNT_PATH: &str = "/etc/ray-secret";

/// The webhook's object selector (upstream's kustomize patch): the label
/// `serving.kserve.io/inferenceservice` exists and this one does not.
pub const CONTROL_PLANE_LABEL: &str = "control-plane";
