//! Helpers shared by integration tests of this crate: the misbehave plugin in a registry,
//! plugin bytes as a ConfigMap pins them, admission reviews and rejection Events. The process,
//! certificate and client helpers are `odh_test_support`'s (`process`, `net`).

#![allow(dead_code)]

use odh_model_controller::plugin::{PluginEngine, PluginSlot};

/// The misbehave test plugin in a slot, its component bytes and the engine that loaded it.
pub fn misbehave_slot() -> anyhow::Result<(PluginEngine, PluginSlot, Vec<u8>)> {
    let (_, wasm) = odh_test_support::host::component("misbehave");
    let plugin = odh_test_support::host::load("misbehave");
    Ok((
        odh_test_support::host::engine(),
        PluginSlot::new(plugin),
        wasm,
    ))
}

/// A registry for the test's namespace serving just `slot`.
pub fn registry(
    t: &odh_test_support::TestContext,
    engine: PluginEngine,
    slot: &PluginSlot,
) -> odh_model_controller::registry::Registry {
    odh_model_controller::registry::Registry::new(
        t.client.clone(),
        t.namespace.clone(),
        engine,
        odh_model_controller::plugin::PluginSet::new([slot.clone()]),
        odh_model_controller::builtins::catalog(),
    )
}

/// The lower-case hex sha256 of `bytes` (what a plugins ConfigMap entry pins).
pub fn sha(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// `bytes` gzip-compressed (how a component fits in a ConfigMap's binaryData).
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(bytes).expect("gzip into memory");
    gz.finish().expect("gzip into memory")
}

/// An AdmissionReview v1 request (CREATE) for ConfigMap `ns/name` with `data`, uid `uid`.
pub fn config_map_review(uid: &str, name: &str, data: serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "operation": "CREATE", "namespace": "ns", "name": name,
            "object": {"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": name, "namespace": "ns"}, "data": data},
            "userInfo": {"username": "tester"}, "dryRun": false,
        },
    })
}

/// The notes of the `PluginRejected` Events in the test's namespace.
pub async fn rejection_notes(t: &odh_test_support::TestContext) -> anyhow::Result<Vec<String>> {
    use k8s_openapi::api::events::v1::Event;
    use kube::api::{Api, ListParams};
    let events: Api<Event> = Api::namespaced(t.client.clone(), &t.namespace);
    Ok(events
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("PluginRejected"))
        .filter_map(|e| e.note)
        .collect())
}
