//! What the native tests share: fixture keys (RSA-4096 generation is slow unoptimised), the
//! fixture CA (`ca.crt`, and its key as PKCS#1 under a `PRIVATE KEY` header, made with
//! `openssl req -x509` and `openssl rsa -traditional`), and a reconcile runner.
#![allow(dead_code)]

use std::time::SystemTime;

use odh_plugin_sdk::testing::FakeCluster;
use odh_plugin_sdk::{Object, Outcome, Plugin, ReconcileRequest, Value, base64};
use rsa::PrivateKey;
use rsa::pkcs1::DecodeRsaPrivateKey;
use rsa::pkcs1v15::SigningKey;
use rsa::pkcs8::{DecodePrivateKey, EncodePrivateKey, EncodePublicKey, LineEnding};
use rsa::signature::{SignatureEncoding, Signer};
use servingruntime::certs::{KeySource, NewKey};
use servingruntime::settings::Settings;
use servingruntime::{Env, ServingRuntime, decide};

pub const CONTROLLER_NS: &str = "default";
pub const CA_CRT: &str = include_str!("../fixtures/ca.crt");
pub const CA_KEY_PKCS1: &str = include_str!("../fixtures/ca-pkcs1.key");
const KEYS: [&str; 3] = [
    include_str!("../fixtures/key1.pem"),
    include_str!("../fixtures/key2.pem"),
    include_str!("../fixtures/key3.pem"),
];

/// Hands out the fixture keys in turn, and counts them.
#[derive(Default)]
pub struct FixtureKeys {
    pub handed_out: usize,
}

/// A fixture key as the host's `keys.generate` hands it out: PKCS#8 PEM and DER SPKI.
pub fn fixture_key(index: usize) -> NewKey {
    let key = PrivateKey::from_pkcs1_pem(KEYS[index % KEYS.len()]).expect("a fixture key");
    NewKey {
        pkcs8_pem: key
            .to_pkcs8_pem(LineEnding::LF)
            .expect("PKCS#8")
            .to_string(),
        spki_der: rsa::PublicKey::from(&key)
            .to_public_key_der()
            .expect("SPKI")
            .into_vec(),
    }
}

impl KeySource for FixtureKeys {
    fn key(&mut self) -> Result<NewKey, String> {
        let key = fixture_key(self.handed_out);
        self.handed_out += 1;
        Ok(key)
    }

    /// As the host signs: RSA PKCS #1 v1.5 with SHA-256 over `data`.
    fn sign(&mut self, key_pkcs8_pem: &str, data: &[u8]) -> Result<Vec<u8>, String> {
        let key = PrivateKey::from_pkcs8_pem(key_pkcs8_pem).map_err(|e| e.to_string())?;
        let signature = SigningKey::<sha2::Sha256>::new(key)
            .try_sign(data)
            .map_err(|e| e.to_string())?;
        Ok(signature.to_vec())
    }

    fn random_u64(&mut self) -> Result<u64, String> {
        Ok(0x1234_5678_9abc_def0 ^ self.handed_out as u64)
    }
}

pub fn settings() -> Settings {
    Settings {
        pod_namespace: Some(CONTROLLER_NS.into()),
        monitoring_namespace: None,
    }
}

pub fn cluster() -> FakeCluster {
    FakeCluster::for_manifest(&ServingRuntime::manifest())
}

/// A reconcile with fixture keys; the outcome and how many keys it took.
pub fn reconcile_with(
    request: ReconcileRequest,
    settings: &Settings,
    cluster: &FakeCluster,
) -> (Outcome, usize) {
    let mut keys = FixtureKeys::default();
    let mut env = Env {
        now: SystemTime::now(),
        keys: &mut keys,
    };
    let outcome = decide(&request, settings, cluster, &mut env).expect("an outcome");
    outcome.assert_declared(&ServingRuntime::manifest());
    (outcome, keys.handed_out)
}

/// The ServingRuntime controller's reconcile of `namespace/name`.
pub fn reconcile_sr(
    namespace: &str,
    name: &str,
    settings: &Settings,
    cluster: &FakeCluster,
) -> (Outcome, usize) {
    reconcile_with(
        ReconcileRequest::new("servingruntime", Some(namespace), name),
        settings,
        cluster,
    )
}

/// The Pod controller's reconcile of `pod`.
pub fn reconcile_pod(pod: &Value, cluster: &FakeCluster) -> (Outcome, usize) {
    reconcile_with(
        ReconcileRequest::for_object("core-pod", &Object(pod.clone())),
        &settings(),
        cluster,
    )
}

pub fn namespace(name: &str) -> Value {
    serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

/// A ServingRuntime in `namespace`, multi-node (with a `workerSpec`) or not.
pub fn runtime(namespace: &str, name: &str, multi_node: bool) -> Value {
    let spec = if multi_node {
        serde_json::json!({"containers": [{"name": "kserve-container"}], "workerSpec": {"pipelineParallelSize": 2}})
    } else {
        serde_json::json!({"containers": [{"name": "kserve-container"}]})
    };
    odh_test_fixtures::serving_runtime(name)
        .namespace(namespace)
        .spec(spec)
        .build()
}

fn b64(text: &str) -> String {
    base64::encode(text.as_bytes())
}

/// `ray-ca-tls` as the controller writes it, holding `cert` and `key`.
pub fn ray_ca(cert: &str, key: &str) -> Value {
    serde_json::json!({
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": "ray-ca-tls", "namespace": CONTROLLER_NS, "resourceVersion": "7", "uid": "uid-ca",
                     "labels": {"opendatahub.io/managed": "true"}},
        "data": {"tls.crt": b64(cert), "tls.key": b64(key)},
    })
}

/// The fixture CA.
pub fn fixture_ca() -> Value {
    ray_ca(CA_CRT, CA_KEY_PKCS1)
}

/// `ray-tls` in `namespace` with these plain-text entries.
pub fn ray_tls(namespace: &str, entries: &[(&str, &str)]) -> Value {
    let data: serde_json::Map<String, Value> = entries
        .iter()
        .map(|(k, v)| (k.to_string(), Value::String(b64(v))))
        .collect();
    serde_json::json!({
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": "ray-tls", "namespace": namespace, "resourceVersion": "1", "uid": format!("uid-{namespace}"),
                     "labels": {"opendatahub.io/managed": "true"}},
        "data": data,
    })
}

/// A decoded data entry of a Secret.
pub fn entry(secret: &Object, key: &str) -> Option<String> {
    let value = secret.str_at(&["data", key])?;
    Some(String::from_utf8(base64::decode(value).expect("base64")).expect("text"))
}

/// Every applied Secret `name` (any namespace), with its namespace.
pub fn applied_secrets(outcome: &Outcome, name: &str) -> Vec<(String, Object)> {
    outcome
        .applied_objects()
        .into_iter()
        .filter(|a| a.object.kind() == "Secret" && a.object.name() == name)
        .map(|a| {
            (
                a.object.namespace().unwrap_or_default().to_string(),
                a.object,
            )
        })
        .collect()
}

/// A predictor pod with `RAY_USE_TLS=1` on `kserve-container` and this IP.
pub fn ray_pod(namespace: &str, name: &str, ip: &str) -> Value {
    serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"component": "predictor"}},
        "spec": {"containers": [{"name": "kserve-container", "image": "ray",
                                  "env": [{"name": "RAY_USE_TLS", "value": "1"}]}]},
        "status": {"podIP": ip},
    })
}

/// The claim an outcome applies before deleting a Secret it may not manage: the managed label
/// and the object's uid, nothing else.
pub fn assert_claimed(outcome: &Outcome, name: &str, uid: &str) {
    let claim = outcome.applied_object("Secret", name);
    assert_eq!(claim.uid(), Some(uid));
    // The version read (the fixtures': ray-ca-tls "7", ray-tls "1"): a Secret changed since is
    // refused, not claimed.
    let read = if name == "ray-ca-tls" { "7" } else { "1" };
    assert_eq!(claim.resource_version(), Some(read));
    assert_eq!(claim.label("opendatahub.io/managed"), Some("true"));
    assert!(
        claim.at(&["data"]).is_none() && claim.at(&["type"]).is_none(),
        "{claim:?}"
    );
    assert!(outcome.deleted("Secret", name));
}
