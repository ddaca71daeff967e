//! Reading connection Secrets: validation of the new reference, the old connection on UPDATE,
//! and the data values injection needs.

use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{Error, Value, core_gvk, json};

use super::{
    ANNOTATION_CONNECTION_PATH, ANNOTATION_CONNECTION_TYPE_PROTOCOL,
    ANNOTATION_CONNECTION_TYPE_REF, ANNOTATION_CONNECTIONS, ConnectionInfo,
};
use crate::base64;
use crate::json::{annotation, go_quote};

/// A validated connection and the Secret it names, kept so injection reads its data without a
/// second fetch.
#[derive(Clone, Debug, PartialEq)]
pub struct Connection {
    pub info: ConnectionInfo,
    pub secret: Value,
}

const PROTOCOL_TYPES: [&str; 3] = ["s3", "uri", "oci"];
const REF_TYPES: [&str; 3] = ["s3", "uri-v1", "oci-v1"];

/// Validates the workload's `opendatahub.io/connections` reference against the Secret in
/// `namespace` (the admission request's). None when the annotation is absent or empty.
///
/// Denied when the Secret is missing or carries no supported type; a failing read keeps the
/// host's error case as `failed to validate connection: <err>`.
pub fn validate_connection(
    cluster: &dyn Cluster,
    object: &Value,
    namespace: &str,
) -> Result<Option<Connection>, Error> {
    let secret_name = annotation(object, ANNOTATION_CONNECTIONS);
    if secret_name.is_empty() {
        return Ok(None);
    }
    let secret = match cluster.get(&core_gvk("Secret"), Some(namespace), secret_name) {
        Ok(Some(secret)) => secret,
        Ok(None) => {
            return Err(Error::Denied(format!(
                "connection {} referenced by annotation {} not found in namespace {}",
                go_quote(secret_name),
                go_quote(ANNOTATION_CONNECTIONS),
                go_quote(namespace)
            )));
        }
        Err(e) => return Err(e.context("failed to validate connection")),
    };
    let type_ = validated_type(secret_name, &secret)?;
    let info = ConnectionInfo {
        secret_name: secret_name.into(),
        type_,
        path: annotation(object, ANNOTATION_CONNECTION_PATH).into(),
    };
    Ok(Some(Connection { info, secret }))
}

/// The Secret's type value: the protocol annotation when non-empty, else the deprecated ref
/// annotation, each checked against its own vocabulary.
fn validated_type(secret_name: &str, secret: &Value) -> Result<String, Error> {
    let protocol = annotation(secret, ANNOTATION_CONNECTION_TYPE_PROTOCOL);
    let reference = annotation(secret, ANNOTATION_CONNECTION_TYPE_REF);
    let (type_, allowed) = if !protocol.is_empty() {
        (protocol, PROTOCOL_TYPES)
    } else if !reference.is_empty() {
        (reference, REF_TYPES)
    } else {
        return Err(Error::Denied(format!(
            "connection {} referenced by annotation {} must have a {} annotation on the Secret",
            go_quote(secret_name),
            go_quote(ANNOTATION_CONNECTIONS),
            go_quote(ANNOTATION_CONNECTION_TYPE_PROTOCOL)
        )));
    };
    if !allowed.contains(&type_) {
        return Err(Error::Denied(format!(
            "connection {} has unsupported connection type {}; supported types are s3, uri, oci",
            go_quote(secret_name),
            go_quote(type_)
        )));
    }
    Ok(type_.into())
}

/// The connection the old object (UPDATE) referenced, with the type read from its Secret but
/// not validated: whatever was injected then must be found again to be removed.
///
/// A deleted Secret gives an empty type, which makes cleanup remove every kind of injected
/// field. A `null` old object is no connection (Go decodes it to an empty object); any other
/// non-object is `failed to decode old object: ...`.
pub fn old_connection(
    cluster: &dyn Cluster,
    old: Option<&Value>,
    namespace: &str,
) -> Result<ConnectionInfo, Error> {
    let Some(old) = old.filter(|o| !o.is_null()) else {
        return Ok(ConnectionInfo::default());
    };
    if !old.is_object() {
        return Err(Error::Denied(format!(
            "failed to decode old object: json: cannot unmarshal {} into Go value of type v1.PartialObjectMetadata",
            json_kind(old)
        )));
    }
    let secret_name = annotation(old, ANNOTATION_CONNECTIONS);
    if secret_name.is_empty() {
        return Ok(ConnectionInfo::default());
    }
    let path = annotation(old, ANNOTATION_CONNECTION_PATH).into();
    let type_ = match cluster.get(&core_gvk("Secret"), Some(namespace), secret_name) {
        Ok(None) => String::new(),
        Ok(Some(secret)) => {
            let protocol = annotation(&secret, ANNOTATION_CONNECTION_TYPE_PROTOCOL);
            if protocol.is_empty() {
                annotation(&secret, ANNOTATION_CONNECTION_TYPE_REF).into()
            } else {
                protocol.into()
            }
        }
        Err(e) => return Err(e.context("failed to get old secret metadata")),
    };
    Ok(ConnectionInfo {
        secret_name: secret_name.into(),
        type_,
        path,
    })
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Null | Value::Object(_) => "object",
    }
}

/// A Secret `data` value, base64-decoded (the API serves `data` encoded). None when the key is
/// absent; a present key with a `null` value reads as empty, as Go's `[]byte` map does.
pub fn secret_data(secret: &Value, key: &str) -> Result<Option<String>, Error> {
    let Some(value) = secret.get("data").and_then(|d| d.get(key)) else {
        return Ok(None);
    };
    let encoded = value.as_str().unwrap_or_default();
    let bytes = base64::decode(encoded).ok_or_else(|| {
        Error::Invalid(format!(
            "Secret data key {} is not valid base64",
            go_quote(key)
        ))
    })?;
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// The URI a `uri` connection points at: data `https-host` if present, else `URI`.
pub fn uri_value(secret: &Value) -> Result<String, Error> {
    if let Some(value) = secret_data(secret, "https-host")? {
        return Ok(value);
    }
    if let Some(value) = secret_data(secret, "URI")? {
        return Ok(value);
    }
    Err(Error::Denied(
        "failed to get URI value: connection does not contain 'https-host' or 'URI' data key"
            .into(),
    ))
}

/// `s3://<AWS_S3_BUCKET>/<path>` for an S3 connection (the LLMInferenceService model URI).
pub fn s3_uri(secret: &Value, info: &ConnectionInfo) -> Result<String, Error> {
    let fail = |why: &str| Err(Error::Denied(format!("failed to build S3 URI: {why}")));
    let Some(bucket) = secret_data(secret, "AWS_S3_BUCKET")? else {
        return fail("connection does not contain 'AWS_S3_BUCKET' data key");
    };
    if bucket.is_empty() {
        return fail("connection 'AWS_S3_BUCKET' data key is empty");
    }
    if info.path.is_empty() {
        return fail("connection info does not have a path");
    }
    Ok(format!("s3://{bucket}/{}", info.path))
}

/// The ServiceAccount an S3 connection runs as, for the host to create as a side effect (it
/// treats "already exists" as success, and the account is never deleted).
pub fn service_account(secret_name: &str, namespace: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": format!("{secret_name}-sa"), "namespace": namespace},
        "secrets": [{"name": secret_name}],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": data})
    }

    #[test]
    fn data_values() {
        let s = secret(json!({"a": "eA==", "n": null, "bad": "!!"}));
        assert_eq!(secret_data(&s, "a").unwrap().as_deref(), Some("x"));
        assert_eq!(secret_data(&s, "n").unwrap().as_deref(), Some(""));
        assert_eq!(secret_data(&s, "missing").unwrap(), None);
        assert!(matches!(secret_data(&s, "bad"), Err(Error::Invalid(_))));
    }

    #[test]
    fn s3_uris() {
        let info = |path: &str| ConnectionInfo {
            path: path.into(),
            ..Default::default()
        };
        let bucket = secret(json!({"AWS_S3_BUCKET": "YnVja2V0"}));
        assert_eq!(s3_uri(&bucket, &info("m/v1")).unwrap(), "s3://bucket/m/v1");
        let message = |r: Result<String, Error>| r.unwrap_err().message().to_string();
        assert_eq!(
            message(s3_uri(&bucket, &info(""))),
            "failed to build S3 URI: connection info does not have a path"
        );
        assert_eq!(
            message(s3_uri(&secret(json!({"AWS_S3_BUCKET": ""})), &info("p"))),
            "failed to build S3 URI: connection 'AWS_S3_BUCKET' data key is empty"
        );
        assert_eq!(
            message(s3_uri(&secret(json!({})), &info("p"))),
            "failed to build S3 URI: connection does not contain 'AWS_S3_BUCKET' data key"
        );
    }
}
