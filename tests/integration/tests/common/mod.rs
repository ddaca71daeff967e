//! Helpers shared by the integration test binaries.
#![allow(dead_code)]

use k8s_openapi::api::core::v1::ConfigMap;
use odh_model_controller::plugin::{
    EngineOptions, Grants, Limits, LoadRequest, Plugin, PluginEngine, PluginSource,
};
use serde_json::json;

/// A built test plugin (`make plugins` → target/plugins/<name>.wasm), loaded with the grants
/// it declares and empty settings.
pub fn load_plugin(name: &str) -> Plugin {
    let engine = PluginEngine::new(EngineOptions::default()).unwrap();
    let path = odh_test_support::plugin_wasm(name).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    Plugin::load(
        &engine,
        LoadRequest {
            source: PluginSource::File(path),
            bytes: &bytes,
            grants: Grants::default(),
            limits: Limits::default(),
            settings: json!({}),
        },
    )
    .unwrap()
}

/// A primary of the `owner` test plugin (labelled `odh-test/primary=true`).
pub fn owner_primary(name: &str, value: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"odh-test/primary": "true"}},
        "data": {"value": value}
    }))
    .unwrap()
}
