//! Fetching plugin components from the sources the plugins ConfigMap names, on the real
//! apiserver, and loading what was fetched.

use std::collections::BTreeMap;
use std::io::Write;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, PostParams};
use odh_model_controller::plugin::{
    EngineOptions, LoadRequest, Plugin, PluginEngine, PluginSource,
};
use odh_model_controller::registry::{RegistryConfig, fetch};
use odh_test_support::TestContext;
use sha2::{Digest, Sha256};

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

#[tokio::test]
async fn a_gzipped_component_in_binary_data_is_fetched_verified_and_loads() -> anyhow::Result<()> {
    let t = TestContext::new("registry-fetch").await?;
    let wasm = std::fs::read(odh_test_support::plugin_wasm("misbehave")?)?;
    let digest = hex::encode(Sha256::digest(&wasm));
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("misbehave-plugin".into()),
            ..Default::default()
        },
        binary_data: Some(BTreeMap::from([(
            "plugin.wasm.gz".to_string(),
            ByteString(gzip(&wasm)),
        )])),
        ..Default::default()
    };
    Api::<ConfigMap>::namespaced(t.client.clone(), &t.namespace)
        .create(&PostParams::default(), &cm)
        .await?;

    let config = RegistryConfig::parse(&format!(
        "plugins:\n  misbehave:\n    source: configmap://misbehave-plugin/plugin.wasm.gz\n    sha256: {digest}\n"
    ))
    .map_err(anyhow::Error::msg)?;
    let entry = &config.plugins["misbehave"];
    let bytes = fetch::fetch(entry, &t.client, &t.namespace)
        .await
        .map_err(anyhow::Error::msg)?;
    assert_eq!(bytes, wasm);
    let engine = PluginEngine::new(EngineOptions::default())?;
    let plugin = Plugin::load(
        &engine,
        LoadRequest {
            source: PluginSource::Other(entry.source.to_string()),
            bytes: &bytes,
            grants: entry.grants.clone(),
            limits: entry.limits.clone(),
            settings: entry.settings.clone(),
        },
    )?;
    assert_eq!(plugin.name(), "misbehave");
    assert_eq!(plugin.sha256(), digest);

    // A wrong digest, a missing key and a missing ConfigMap are each refused with a clear error.
    let mut wrong = entry.clone();
    wrong.sha256 = Some("0".repeat(64));
    let err = fetch::fetch(&wrong, &t.client, &t.namespace)
        .await
        .unwrap_err();
    assert!(err.contains("digest mismatch"), "{err}");
    for (source, want) in [
        (
            "configmap://misbehave-plugin/other.wasm",
            "has no binaryData key \"other.wasm\"",
        ),
        (
            "configmap://no-such-configmap/plugin.wasm",
            "does not exist",
        ),
    ] {
        let config = RegistryConfig::parse(&format!(
            "plugins:\n  p:\n    source: {source}\n    sha256: {digest}\n"
        ))
        .map_err(anyhow::Error::msg)?;
        let err = fetch::fetch(&config.plugins["p"], &t.client, &t.namespace)
            .await
            .unwrap_err();
        assert!(err.contains(want), "{source}: {err}");
    }
    Ok(())
}
