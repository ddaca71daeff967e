//! The init container's image: key `ray-tls-generator-image` of the ConfigMap
//! `odh-model-controller-parameters` in the controller's namespace.

use odh_kinds::gvk;
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{AdmissionDecision, Value};

use crate::names::{IMAGE_KEY, PARAMS_CONFIG_MAP};

/// Why there is no image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoImage {
    /// The ConfigMap does not exist (or the controller's namespace is unset).
    NotFound,
    /// The ConfigMap lacks the key.
    NoKey,
    /// The read failed; its text.
    ReadFailed(String),
}

impl NoImage {
    /// Upstream's answer: the NotFound status passed through (404); the key error and any
    /// other failure denied with their text (403). Upstream reads the ConfigMap through the
    /// manager's cache, whose NotFound names the Kind (`ConfigMap "<name>" not found`), not
    /// the resource as a direct read would.
    pub fn denial(&self) -> AdmissionDecision {
        match self {
            NoImage::NotFound => AdmissionDecision::deny_with_code(
                format!("ConfigMap \"{PARAMS_CONFIG_MAP}\" not found"),
                404,
            ),
            NoImage::NoKey => AdmissionDecision::deny_with_code(
                format!("{IMAGE_KEY} key not found in ConfigMap"),
                403,
            ),
            NoImage::ReadFailed(message) => AdmissionDecision::deny_with_code(message, 403),
        }
    }
}

/// The image. An unset namespace finds nothing, as upstream's cache lookup under an empty
/// namespace does; an empty value is a value (upstream only checks that the key is there).
pub fn ray_tls_generator_image(
    namespace: Option<&str>,
    cluster: &dyn Cluster,
) -> Result<String, NoImage> {
    let Some(namespace) = namespace.filter(|ns| !ns.is_empty()) else {
        return Err(NoImage::NotFound);
    };
    let config_map = cluster
        .get(&gvk::config_map(), Some(namespace), PARAMS_CONFIG_MAP)
        .map_err(|e| NoImage::ReadFailed(e.message().to_string()))?
        .ok_or(NoImage::NotFound)?;
    config_map
        .get("data")
        .and_then(|d| d.get(IMAGE_KEY))
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or(NoImage::NoKey)
}
