//! Helpers shared by the integration test binaries.
#![allow(dead_code)]

use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::json;

/// A primary of the `owner` test plugin (labelled `odh-test/primary=true`).
pub fn owner_primary(name: &str, value: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"odh-test/primary": "true"}},
        "data": {"value": value}
    }))
    .unwrap()
}
