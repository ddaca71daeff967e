//! Runs the plugin's controllers natively, the way the host calls them, and a tiny stand-in
//! for the host's applier so that chains of reconciles (ConfigMap → Secret) can be followed.
#![allow(dead_code)]

use odh_plugin_sdk::testing::FakeCluster;
use odh_plugin_sdk::{Ctx, NoSettings, Object, Outcome, Plugin, ReconcileRequest, Value, json};
pub use odh_test_fixtures::NS;
use odh_test_fixtures::secret;
use storage::Storage;

pub const CM: &str = "core-configmap";
pub const SEC: &str = "secret";

/// An empty cluster that refuses reads the manifest does not declare.
pub fn cluster() -> FakeCluster {
    FakeCluster::for_manifest(&Storage::manifest())
}

/// Reconciles `namespace/name` for `controller`, with the object as the cluster holds it (none
/// when absent), checking every write is declared.
pub fn reconcile(cluster: &FakeCluster, controller: &str, name: &str) -> Outcome {
    let kind = if controller == CM {
        "ConfigMap"
    } else {
        "Secret"
    };
    let held = cluster
        .objects()
        .iter()
        .find(|o| o.kind() == kind && o.name() == name && o.namespace() == Some(NS))
        .cloned();
    let request = match &held {
        Some(o) => ReconcileRequest::for_object(controller, o),
        None => ReconcileRequest::new(controller, Some(NS), name),
    };
    let outcome = Storage::reconcile(&request, &Ctx::new(&NoSettings, cluster))
        .expect("reconcile returns an outcome");
    outcome.assert_declared(&Storage::manifest());
    outcome
}

/// What the host would make of `outcome`: applies merge into the held object (labels and
/// data key by key), deletes remove it.
pub fn apply(cluster: &mut FakeCluster, outcome: &Outcome) {
    for applied in outcome.applied_objects() {
        let desired = applied.object;
        let mut merged = cluster
            .objects()
            .iter()
            .find(|o| o.key() == desired.key())
            .cloned()
            .unwrap_or_else(|| Object(json!({"apiVersion": desired.api_version(), "kind": desired.kind(), "metadata": {}})));
        merge(&mut merged.0, desired.into_value());
        cluster.insert(merged);
    }
    for key in &outcome.delete {
        cluster.remove(&key.gvk, key.namespace.as_deref(), &key.name);
    }
}

fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(into), Value::Object(from)) => {
            for (k, v) in from {
                merge(into.entry(k).or_insert(Value::Null), v);
            }
        }
        (into, from) => *into = from,
    }
}

/// A ConfigMap in [`NS`] with `data`.
pub fn config_map(name: &str, data: &[(&str, &str)]) -> Value {
    let data: odh_plugin_sdk::serde_json::Map<String, Value> = data
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).into()))
        .collect();
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}")},
           "data": data})
}

/// A data connection of scenarios SEC-1..SEC-5 (`aws-connection-minio-http(s)`): both labels, type
/// `s3`.
pub fn data_connection(name: &str, endpoint: &str) -> Value {
    secret(name)
        .managed()
        .label("opendatahub.io/dashboard", "true")
        .annotation("opendatahub.io/connection-type", "s3")
        .data_entries(&[
            ("AWS_ACCESS_KEY_ID", "admin"),
            ("AWS_SECRET_ACCESS_KEY", "password"),
            ("AWS_S3_ENDPOINT", endpoint),
            ("AWS_S3_BUCKET", "test-example-models"),
            ("AWS_DEFAULT_REGION", "us-south"),
        ])
        .build()
}

pub const HTTP: &str = "aws-connection-minio-http";
pub const HTTPS: &str = "aws-connection-minio-https";

/// The two data connections of scenarios SEC-1..SEC-5.
pub fn both_connections() -> [Value; 2] {
    [
        data_connection(HTTP, "http://minio.minio.svc:9000"),
        data_connection(HTTPS, "https://minio.minio.svc:9000"),
    ]
}

/// `storage-config`'s entries as held, decoded.
pub fn storage_config_entries(
    cluster: &FakeCluster,
) -> Option<std::collections::BTreeMap<String, String>> {
    let secret = cluster
        .objects()
        .iter()
        .find(|o| o.kind() == "Secret" && o.name() == "storage-config")?;
    let view = odh_kinds::Secret::of(secret);
    Some(
        secret
            .at(&["data"])
            .and_then(Value::as_object)
            .map(|d| {
                d.keys()
                    .map(|k| (k.clone(), view.data_text(k).unwrap().unwrap()))
                    .collect()
            })
            .unwrap_or_default(),
    )
}

/// The three certificates of the CM scenarios, as the sources hold them (untrimmed).
pub const CLUSTERWIDE: &str =
    "-----BEGIN CERTIFICATE-----\nQ0xVU1RFUldJREU=\n-----END CERTIFICATE-----\n";
pub const CUSTOM: &str = "\n-----BEGIN CERTIFICATE-----\nQ1VTVE9N\n-----END CERTIFICATE-----\n\n";
pub const SERVING: &str =
    "  -----BEGIN CERTIFICATE-----\nU0VSVklORw==\n-----END CERTIFICATE-----\t\n";
