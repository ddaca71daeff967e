//! The plugin registry: the `odh-model-controller-plugins` ConfigMap, the sources it names, the
//! checks every candidate passes before it may serve, and the swap into its slot (format:
//! docs/plugins-configmap.md).

pub mod config;
pub mod fetch;
pub mod http;
pub mod oci;
pub mod swap;
pub mod trust;

pub use config::{
    CONFIGMAP_NAME, FailurePolicy, KeySource, PluginEntry, RegistryConfig, Rollout,
    SignaturePolicy, Source,
};
pub use swap::{Registry, STATUS_CONFIGMAP_NAME, SwapResult};
