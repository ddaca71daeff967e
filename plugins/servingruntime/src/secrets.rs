//! The two Secrets as this plugin writes them, and reading their data.
//!
//! Both controllers apply `ray-tls` with one field manager, so every apply declares the whole
//! object (type, labels, every data key it wants kept): server-side apply removes the keys
//! this manager owned and stopped declaring. An apply that carries over keys it read also
//! carries the `resourceVersion` it read them at, which the API server checks (a conflict is
//! retried with a fresh read): no concurrent write is lost.

use std::collections::BTreeMap;

use odh_kinds::{gvk, label};
use odh_plugin_sdk::{Object, Value, base64, json};

use crate::certs::Pair;
use crate::names::*;

/// Secret data as stored: key → base64 value.
pub type Data = BTreeMap<String, String>;

/// What upstream's label-filtered Secret cache can see.
pub fn managed(secret: &Object) -> bool {
    secret.label(label::MANAGED) == Some("true")
}

/// The Secret's data (base64 values as stored).
pub fn data(secret: &Object) -> Data {
    secret
        .at(&["data"])
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// One data value decoded as text (empty when absent or not base64).
pub fn text(data: &Data, key: &str) -> String {
    data.get(key)
        .and_then(|v| base64::decode(v))
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

pub fn encode(text: &str) -> String {
    base64::encode(text.as_bytes())
}

fn labels(app_name: &str) -> Value {
    let mut labels = serde_json::Map::new();
    labels.insert(label::MANAGED.into(), json!("true"));
    labels.insert(APP_NAME.into(), json!(app_name));
    for (k, v) in APP_LABELS {
        labels.insert(k.into(), json!(v));
    }
    Value::Object(labels)
}

/// `ray-ca-tls` in the controller namespace.
pub fn ray_ca(namespace: &str, pair: &Pair) -> Object {
    Object::new(&gvk::secret(), Some(namespace), RAY_CA_SECRET)
        .with("type", TLS_SECRET_TYPE)
        .with(
            "metadata",
            json!({"name": RAY_CA_SECRET, "namespace": namespace, "labels": labels(CA_APP_NAME)}),
        )
        .with(
            "data",
            json!({TLS_CRT: encode(&pair.cert_pem), TLS_KEY: encode(&pair.key_pem)}),
        )
}

/// `ray-tls` in `namespace` with exactly `data`; with `resource_version` when the data was
/// derived from the object read at that version.
pub fn ray_tls(namespace: &str, data: &Data, resource_version: Option<&str>) -> Object {
    let mut metadata =
        json!({"name": RAY_TLS_SECRET, "namespace": namespace, "labels": labels(RAY_TLS_APP_NAME)});
    if let Some(rv) = resource_version {
        metadata["resourceVersion"] = json!(rv);
    }
    Object::new(&gvk::secret(), Some(namespace), RAY_TLS_SECRET)
        .with("type", OPAQUE_SECRET_TYPE)
        .with("metadata", metadata)
        .with("data", json!(data))
}
