//! Where plugins come from and how a new version takes over: the `odh-model-controller-plugins`
//! ConfigMap ([`config`]), the sources it names ([`builtins`], [`fetch`]: ConfigMap, file,
//! `https://` [`http`], `oci://` with cosign signatures [`oci`]), the checks every candidate
//! passes before it may serve ([`trust`], [`ceiling`]), and the swap into its slot ([`swap`]; format:
//! docs/plugins-configmap.md).

pub mod builtins;
pub mod ceiling;
pub mod config;
pub mod fetch;
pub mod http;
pub mod oci;
pub mod swap;
pub mod trust;

pub use builtins::{BuiltinComponent, Builtins};
pub use ceiling::{Ceiling, KindCeiling, SignatureRequirement};
pub use config::{
    CONFIGMAP_NAME, FailurePolicy, KeySource, PluginEntry, RegistryConfig, Rollout,
    SignaturePolicy, Source,
};
pub use swap::{Registry, STATUS_CONFIGMAP_NAME, SwapResult};
