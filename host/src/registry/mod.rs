//! The plugin registry: the `odh-model-controller-plugins` ConfigMap, the sources it names and
//! the checks every candidate passes before it may serve. (Hot swap builds on this; see
//! docs/decisions.md.)

pub mod config;
pub mod fetch;
pub mod swap;

pub use config::{CONFIGMAP_NAME, FailurePolicy, Mode, PluginEntry, RegistryConfig, Source};
pub use swap::{Registry, STATUS_CONFIGMAP_NAME, SwapResult};
