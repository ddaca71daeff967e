//! A test's own client and namespace.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use tokio::sync::OnceCell;

/// CRDs are installed once per test process (the apply is idempotent across processes).
static CRDS: OnceCell<()> = OnceCell::const_new();

/// What one integration test works with: a client of its own and a fresh namespace.
///
/// Namespaces are not deleted afterwards: the test apiserver has no controller-manager, so a
/// deleted namespace would stay Terminating anyway, and the whole store is discarded when the
/// shared apiserver stops.
pub struct TestContext {
    pub client: Client,
    pub namespace: String,
    pub config: Config,
}

impl TestContext {
    /// Joins (or starts) the test cluster, installs the CRDs and creates a namespace named
    /// after `prefix` with a random suffix.
    pub async fn new(prefix: &str) -> anyhow::Result<Self> {
        let config = client_config().await?;
        // A client per test: a kube Client is bound to the runtime that created it, and each
        // #[tokio::test] has its own runtime.
        let client = Client::try_from(config.clone())?;
        CRDS.get_or_try_init(|| async {
            crate::crds::install(&client, &crate::crd_dirs())
                .await
                .map(|_| ())
        })
        .await?;
        Self::with_namespace(config, client, prefix).await
    }

    /// [`TestContext::new`] on the cluster of `config` (an apiserver of the test's own): the
    /// CRDs are installed there first.
    pub async fn with_config(config: Config, prefix: &str) -> anyhow::Result<Self> {
        let client = Client::try_from(config.clone())?;
        crate::crds::install(&client, &crate::crd_dirs()).await?;
        Self::with_namespace(config, client, prefix).await
    }

    async fn with_namespace(config: Config, client: Client, prefix: &str) -> anyhow::Result<Self> {
        let namespace = unique_name(prefix);
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(namespace.clone()),
                ..Default::default()
            },
            ..Default::default()
        };
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .with_context(|| format!("creating namespace {namespace}"))?;
        Ok(Self {
            client,
            namespace,
            config,
        })
    }

    /// A dynamic API of a kind (its `group`, `version`, `kind` and resource name) in this
    /// test's namespace.
    pub fn dynamic(
        &self,
        group: &str,
        version: &str,
        kind: &str,
        plural: &str,
    ) -> Api<kube::api::DynamicObject> {
        let resource = kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk(group, version, kind),
            plural,
        );
        Api::namespaced_with(self.client.clone(), &self.namespace, &resource)
    }

    /// Creates `object` (JSON, `apiVersion` and `kind` included) through `api`.
    pub async fn create(
        &self,
        api: &Api<kube::api::DynamicObject>,
        object: serde_json::Value,
    ) -> anyhow::Result<kube::api::DynamicObject> {
        Ok(api
            .create(&PostParams::default(), &serde_json::from_value(object)?)
            .await?)
    }

    /// The InferenceServices (`serving.kserve.io/v1beta1`) of this test's namespace.
    pub fn inference_services(&self) -> Api<kube::api::DynamicObject> {
        self.dynamic(
            "serving.kserve.io",
            "v1beta1",
            "InferenceService",
            "inferenceservices",
        )
    }

    /// Creates a ServingRuntime (JSON) in this test's namespace.
    pub async fn create_serving_runtime(
        &self,
        runtime: serde_json::Value,
    ) -> anyhow::Result<kube::api::DynamicObject> {
        let api = self.dynamic(
            "serving.kserve.io",
            "v1alpha1",
            "ServingRuntime",
            "servingruntimes",
        );
        self.create(&api, runtime).await
    }

    /// A namespaced API in this test's namespace.
    pub fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.namespace)
    }
}

/// The kube config of the test cluster.
pub async fn client_config() -> anyhow::Result<Config> {
    kube_config(&crate::cluster()?.kubeconfig).await
}

/// The kube config a kubeconfig file describes.
pub async fn kube_config(path: &std::path::Path) -> anyhow::Result<Config> {
    // The process-wide TLS provider the kube client builds on, as the binary's `main` installs
    // it; a test run with the `fips` feature has two rustls providers and cannot pick alone.
    odh_crypto::init().map_err(anyhow::Error::msg)?;
    let kubeconfig =
        Kubeconfig::read_from(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?)
}

/// A DNS-1123 name: `prefix` (trimmed to fit) plus a random 6-character suffix.
pub fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut x = (nanos as u64)
        ^ (u64::from(std::process::id()) << 32)
        ^ COUNTER
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut suffix = String::with_capacity(6);
    for _ in 0..6 {
        // xorshift: cheap and good enough to keep parallel tests apart.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        suffix.push(char::from(
            b"abcdefghijklmnopqrstuvwxyz0123456789"[(x % 36) as usize],
        ));
    }
    let clean: String = prefix
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(63 - 7)
        .collect();
    format!("{}-{suffix}", clean.trim_matches('-'))
}

#[cfg(test)]
mod tests {
    use super::unique_name;

    #[test]
    fn names_are_valid_and_distinct() {
        let a = unique_name("My_Test.Name");
        let b = unique_name("My_Test.Name");
        assert_ne!(a, b);
        assert!(a.starts_with("my-test-name-"), "{a}");
        let long = unique_name(&"x".repeat(100));
        assert!(long.len() <= 63, "{}", long.len());
    }
}
