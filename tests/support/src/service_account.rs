//! A real ServiceAccount token from the apiserver's TokenRequest API, and a kubeconfig that
//! authenticates with that token only: a host started with it runs, and presents itself, as the
//! ServiceAccount does in a pod.

use std::path::Path;

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::json;

/// A token (valid for an hour) of the ServiceAccount `name` in `namespace`, which must exist.
pub async fn token(client: &Client, namespace: &str, name: &str) -> anyhow::Result<String> {
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: vec![],
            expiration_seconds: Some(3600),
            ..Default::default()
        },
        ..Default::default()
    };
    Ok(Api::<ServiceAccount>::namespaced(client.clone(), namespace)
        .create_token_request(name, &PostParams::default(), &request)
        .await?
        .status
        .ok_or_else(|| anyhow::anyhow!("a TokenRequest without status"))?
        .token)
}

/// Writes to `path` a kubeconfig for the test cluster that authenticates with `token` only.
pub fn token_kubeconfig(token: &str, path: &Path) -> anyhow::Result<()> {
    let admin = kube::config::Kubeconfig::read_from(&crate::cluster()?.kubeconfig)?;
    let context = admin
        .contexts
        .first()
        .and_then(|c| c.context.clone())
        .ok_or_else(|| anyhow::anyhow!("no context in the test kubeconfig"))?;
    let cluster = admin
        .clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .and_then(|c| c.cluster.clone())
        .ok_or_else(|| anyhow::anyhow!("no cluster in the test kubeconfig"))?;
    let config = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "test", "cluster": serde_json::to_value(&cluster)?}],
        "users": [{"name": "sa", "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "test", "user": "sa"}}],
        "current-context": "sa",
    });
    std::fs::write(path, serde_json::to_vec_pretty(&config)?)?;
    Ok(())
}
