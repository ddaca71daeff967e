//! Reading connection Secrets: validation of the new reference, the old connection on UPDATE,
//! and the data values injection needs.

use odh_kinds::annotation::{
    CONNECTION_PATH, CONNECTION_TYPE_PROTOCOL, CONNECTION_TYPE_REF, CONNECTIONS,
};
use odh_kinds::{Secret, gvk};
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::json::annotation;
use odh_plugin_sdk::{Error, Object, Value, go, json};

use super::ConnectionInfo;

/// A validated connection and the Secret it names, kept so injection reads its data without a
/// second fetch.
#[derive(Clone, Debug, PartialEq)]
pub struct Connection {
    pub info: ConnectionInfo,
    pub secret: Object,
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
    let secret_name = annotation(object, CONNECTIONS);
    if secret_name.is_empty() {
        return Ok(None);
    }
    let secret = match cluster.get_object(&gvk::secret(), Some(namespace), secret_name) {
        Ok(Some(secret)) => secret,
        Ok(None) => {
            return Err(Error::Denied(format!(
                "connection {} referenced by annotation {} not found in namespace {}",
                go::quote(secret_name),
                go::quote(CONNECTIONS),
                go::quote(namespace)
            )));
        }
        Err(e) => return Err(e.context("failed to validate connection")),
    };
    let type_ = validated_type(secret_name, &secret)?;
    let info = ConnectionInfo {
        secret_name: secret_name.into(),
        type_,
        path: annotation(object, CONNECTION_PATH).into(),
    };
    Ok(Some(Connection { info, secret }))
}

/// The Secret's type value: the protocol annotation when non-empty, else the deprecated ref
/// annotation, each checked against its own vocabulary.
fn validated_type(secret_name: &str, secret: &Object) -> Result<String, Error> {
    let protocol = annotation(secret, CONNECTION_TYPE_PROTOCOL);
    let reference = annotation(secret, CONNECTION_TYPE_REF);
    let (type_, allowed) = if !protocol.is_empty() {
        (protocol, PROTOCOL_TYPES)
    } else if !reference.is_empty() {
        (reference, REF_TYPES)
    } else {
        return Err(Error::Denied(format!(
            "connection {} referenced by annotation {} must have a {} annotation on the Secret",
            go::quote(secret_name),
            go::quote(CONNECTIONS),
            go::quote(CONNECTION_TYPE_PROTOCOL)
        )));
    };
    if !allowed.contains(&type_) {
        return Err(Error::Denied(format!(
            "connection {} has unsupported connection type {}; supported types are s3, uri, oci",
            go::quote(secret_name),
            go::quote(type_)
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
    let secret_name = annotation(old, CONNECTIONS);
    if secret_name.is_empty() {
        return Ok(ConnectionInfo::default());
    }
    let path = annotation(old, CONNECTION_PATH).into();
    let type_ = match cluster.get(&gvk::secret(), Some(namespace), secret_name) {
        Ok(None) => String::new(),
        Ok(Some(secret)) => {
            let protocol = annotation(&secret, CONNECTION_TYPE_PROTOCOL);
            if protocol.is_empty() {
                annotation(&secret, CONNECTION_TYPE_REF).into()
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

/// A Secret `data` value, base64-decoded, as text. None when the key is absent; a present key
/// with a `null` value reads as empty, as Go's `[]byte` map does.
fn secret_data(secret: &Object, key: &str) -> Result<Option<String>, Error> {
    Secret::of(secret).data_text(key)
}

/// The URI a `uri` connection points at: data `https-host` if present, else `URI`.
pub fn uri_value(secret: &Object) -> Result<String, Error> {
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
pub fn s3_uri(secret: &Object, info: &ConnectionInfo) -> Result<String, Error> {
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
    use odh_test_fixtures::secret;

    #[test]
    fn s3_uris() {
        let info = |path: &str| ConnectionInfo {
            path: path.into(),
            ..Default::default()
        };
        let bucket = Object(secret("s").data("AWS_S3_BUCKET", "bucket").build());
        assert_eq!(s3_uri(&bucket, &info("m/v1")).unwrap(), "s3://bucket/m/v1");
        let message = |r: Result<String, Error>| r.unwrap_err().message().to_string();
        assert_eq!(
            message(s3_uri(&bucket, &info(""))),
            "failed to build S3 URI: connection info does not have a path"
        );
        let empty = Object(secret("s").data("AWS_S3_BUCKET", "").build());
        assert_eq!(
            message(s3_uri(&empty, &info("p"))),
            "failed to build S3 URI: connection 'AWS_S3_BUCKET' data key is empty"
        );
        assert_eq!(
            message(s3_uri(&Object(secret("s").build()), &info("p"))),
            "failed to build S3 URI: connection does not contain 'AWS_S3_BUCKET' data key"
        );
        let bad = Object(secret("s").set("/data/AWS_S3_BUCKET", "!!").build());
        assert!(matches!(s3_uri(&bad, &info("p")), Err(Error::Invalid(_))));
    }
}
