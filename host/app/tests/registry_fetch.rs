//! Fetching plugin components from the sources the plugins ConfigMap names, on the real
//! apiserver, and loading what was fetched.

use std::collections::BTreeMap;
use std::io::Write;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, PostParams};
use odh_model_controller::plugin::{EngineOptions, LoadRequest, LoadedPlugin, PluginEngine};
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
    ), &odh_model_controller::builtins::catalog())
    .map_err(anyhow::Error::msg)?;
    let entry = &config.plugins["misbehave"];
    let bytes = fetch::fetch(entry, &t.client, &t.namespace)
        .await
        .map_err(anyhow::Error::msg)?;
    assert_eq!(bytes, wasm);
    let engine = PluginEngine::new(EngineOptions::default())?;
    let plugin = LoadedPlugin::load(
        &engine,
        LoadRequest::new(entry.source.clone(), &bytes)
            .grants(entry.grants.clone())
            .limits(entry.limits.clone())
            .settings(entry.settings.clone()),
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
        let config = RegistryConfig::parse(
            &format!("plugins:\n  p:\n    source: {source}\n    sha256: {digest}\n"),
            &odh_model_controller::builtins::catalog(),
        )
        .map_err(anyhow::Error::msg)?;
        let err = fetch::fetch(&config.plugins["p"], &t.client, &t.namespace)
            .await
            .unwrap_err();
        assert!(err.contains(want), "{source}: {err}");
    }
    Ok(())
}

/// A one-connection-at-a-time HTTPS server on loopback serving `body` at `/misbehave.wasm.gz`.
async fn https_server(
    body: Vec<u8>,
) -> anyhow::Result<(String, rustls::pki_types::CertificateDer<'static>)> {
    use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()])?;
    let der = cert.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.signing_key.serialize_der()));
    let config = rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_no_client_auth()
    .with_single_cert(vec![der.clone()], key)?;
    let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("https://{}", listener.local_addr()?);
    let body = hyper::body::Bytes::from(body);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, body) = (acceptor.clone(), body.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let body = body.clone();
                        async move {
                            let (status, body) = if req.uri().path() == "/misbehave.wasm.gz" {
                                (200, body)
                            } else {
                                (404, hyper::body::Bytes::new())
                            };
                            Ok::<_, std::convert::Infallible>(
                                hyper::Response::builder()
                                    .status(status)
                                    .body(http_body_util::Full::new(body))
                                    .unwrap(),
                            )
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    Ok((url, der))
}

#[tokio::test]
async fn an_https_source_is_downloaded_with_the_configured_trust() -> anyhow::Result<()> {
    let t = TestContext::new("registry-https").await?;
    let wasm = std::fs::read(odh_test_support::plugin_wasm("misbehave")?)?;
    let digest = hex::encode(Sha256::digest(&wasm));
    let (base, ca) = https_server(gzip(&wasm)).await?;
    let entry_for = |path: &str| {
        RegistryConfig::parse(
            &format!("plugins:\n  misbehave:\n    source: {base}{path}\n    sha256: {digest}\n"),
            &odh_model_controller::builtins::catalog(),
        )
        .map(|mut c| c.plugins.remove("misbehave").unwrap())
        .map_err(anyhow::Error::msg)
    };
    let entry = entry_for("/misbehave.wasm.gz")?;
    let bytes = fetch::fetch_with_roots(&entry, &t.client, &t.namespace, std::slice::from_ref(&ca))
        .await
        .map_err(anyhow::Error::msg)?;
    assert_eq!(bytes, wasm);

    // Without trusting the server's CA the download is refused; a missing file is an HTTP error.
    let err = fetch::fetch(&entry, &t.client, &t.namespace)
        .await
        .unwrap_err();
    assert!(
        err.contains("GET https://127.0.0.1") && err.to_lowercase().contains("certificate"),
        "{err}"
    );
    let err = fetch::fetch_with_roots(&entry_for("/missing.wasm")?, &t.client, &t.namespace, &[ca])
        .await
        .unwrap_err();
    assert!(err.contains("404"), "{err}");
    Ok(())
}
