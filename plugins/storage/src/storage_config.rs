//! The Secret controller (docs/plugins/storage.md, "Controller `secret`"): `storage-config`, one
//! compact JSON document per data connection of the namespace (Secrets labelled managed and
//! dashboard).

use std::collections::BTreeMap;

use odh_kinds::{Secret, gvk, label};
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{Error, Object, Outcome, Plan, ReconcileRequest, Value, base64};

use crate::ca_bundle::is_managed;
use crate::names::{
    CA_BUNDLE, CA_BUNDLE_KEY, CONNECTION_TYPE, DATA_CONNECTIONS, RAY_SECRETS, STORAGE_CONFIG,
};
use odh_go_compat::json::encode_string_map;
use odh_kinds::claim::claim_and_delete;

/// The event filter: a managed Secret other than the Ray TLS ones. A Secret that is gone
/// passes on its name (the host's watch is label-filtered, as upstream's cache: a Secret that
/// loses the label is reported gone).
pub fn concerns(name: &str, secret: Option<&Object>) -> bool {
    !RAY_SECRETS.contains(&name) && secret.is_none_or(is_managed)
}

/// One reconcile of the Secret `namespace/name`.
pub fn reconcile(request: &ReconcileRequest, cluster: &dyn Cluster) -> Result<Outcome, Error> {
    let Some(namespace) = request.key.namespace.as_deref() else {
        return Ok(Outcome::default());
    };
    if !concerns(&request.key.name, request.object()?.as_ref()) {
        return Ok(Outcome::default());
    }
    let connections =
        cluster.list_objects(&gvk::secret(), Some(namespace), Some(DATA_CONNECTIONS))?;
    let existing = cluster.get_object(&gvk::secret(), Some(namespace), STORAGE_CONFIG);
    let mut plan = Plan::new();
    if connections.is_empty() {
        // Upstream ignores a failed read here: nothing to delete that it can see.
        if let Ok(Some(existing)) = existing
            && is_managed(&existing)
        {
            claim_and_delete(&mut plan, &existing);
        }
        return Ok(plan.into_outcome());
    }
    let ca_bundle = cluster
        .get_object(&gvk::config_map(), Some(namespace), CA_BUNDLE)?
        .and_then(|cm| cm.str_at(&["data", CA_BUNDLE_KEY]).map(str::to_string))
        .unwrap_or_default();
    let desired = desired(namespace, &connections, !ca_bundle.is_empty())?;
    match existing? {
        // Created where none is visible; upstream's create of a name an unmanaged Secret holds
        // fails AlreadyExists and is ignored: that Secret is never written.
        None => plan.apply_unowned(desired),
        Some(existing) if !is_managed(&existing) => {}
        Some(existing) if differs(&existing, &desired) => {
            // Written against the version read, as upstream's Update is: a Secret unmanaged
            // meanwhile (before the cache shows it) is not overwritten; the conflict is retried
            // from the newer state.
            let mut desired = desired;
            if let Some(version) = existing.resource_version() {
                desired.set(&["metadata", "resourceVersion"], version);
            }
            plan.apply_unowned(desired)
        }
        Some(_) => {}
    }
    Ok(plan.into_outcome())
}

/// `storage-config` as wanted: label managed, one entry per connection (by Secret name), no
/// type (the API server defaults it to `Opaque`).
pub fn desired(namespace: &str, connections: &[Object], with_ca: bool) -> Result<Object, Error> {
    let mut data = odh_plugin_sdk::serde_json::Map::new();
    for connection in connections {
        let document = connection_document(connection, with_ca)?;
        data.insert(
            connection.name().to_string(),
            base64::encode(document).into(),
        );
    }
    Ok(Object::new(&gvk::secret(), Some(namespace), STORAGE_CONFIG)
        .with_label(label::MANAGED, "true")
        .with("data", Value::Object(data)))
}

/// The JSON document of one data connection. Every field but `cabundle_configmap` is written
/// even when empty; that one only with a CA bundle and an `https://` endpoint.
pub fn connection_document(connection: &Object, with_ca: bool) -> Result<String, Error> {
    let secret = Secret::of(connection);
    let data = |key: &str| -> Result<Vec<u8>, Error> {
        Ok(secret
            .data(key)
            .map_err(|e| e.context(format!("Secret {}", connection.name())))?
            .unwrap_or_default())
    };
    let endpoint = data("AWS_S3_ENDPOINT")?;
    let mut fields: BTreeMap<&str, Vec<u8>> = BTreeMap::new();
    fields.insert(
        "type",
        connection
            .annotation(CONNECTION_TYPE)
            .unwrap_or_default()
            .as_bytes()
            .to_vec(),
    );
    fields.insert("access_key_id", data("AWS_ACCESS_KEY_ID")?);
    fields.insert("secret_access_key", data("AWS_SECRET_ACCESS_KEY")?);
    fields.insert("bucket", data("AWS_S3_BUCKET")?);
    fields.insert("region", data("AWS_DEFAULT_REGION")?);
    if with_ca && endpoint.starts_with(b"https://") {
        fields.insert("cabundle_configmap", CA_BUNDLE.as_bytes().to_vec());
    }
    fields.insert("endpoint_url", endpoint);
    Ok(encode_string_map(&fields))
}

/// Whether the managed `existing` differs from `desired` in its labels or data (whole maps,
/// as upstream compares them).
fn differs(existing: &Object, desired: &Object) -> bool {
    let empty = Value::Object(Default::default());
    let data = |o: &Object| o.at(&["data"]).cloned().unwrap_or_else(|| empty.clone());
    existing.labels() != desired.labels() || data(existing) != data(desired)
}
