//! ConnectionsAPI on an InferenceService: S3 sets the predictor's ServiceAccount and model
//! storage, URI the model's `storageUri`, OCI an image pull secret.
//!
//! Only `spec.predictor.{serviceAccountName, imagePullSecrets}` and
//! `spec.predictor.model.{storage, storageUri}` are ever touched.

use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::serde_json::Map;
use odh_plugin_sdk::{Error, Operation, Value, json};

use super::{
    Action, Connection, ConnectionInfo, ConnectionKind, add_pull_secret, decide,
    remove_pull_secret, remove_service_account, service_accounts, set_service_account, uri_value,
};
use odh_plugin_sdk::json::{as_object, existing_object_mut, object_mut, str_at};

use crate::IsvcAdmission;

const PREDICTOR: [&str; 2] = ["spec", "predictor"];

/// The ConnectionsAPI step of the InferenceService mutating webhook: edits `isvc` in place and
/// returns the ServiceAccounts to create as side effects (none on dry-run, and none for URI or
/// OCI connections).
pub fn default_inference_service(
    isvc: &mut Value,
    admission: &IsvcAdmission,
    cluster: &dyn Cluster,
) -> Result<Vec<Value>, Error> {
    let (action, old_info, new) = decide(isvc, admission, cluster)?;
    if matches!(action, Action::Remove | Action::Replace) {
        cleanup_inference_service(isvc, &old_info);
    }
    let side_effects = service_accounts(action, new.as_ref(), admission);
    if let (Action::Inject | Action::Replace, Some(connection)) = (action, &new) {
        let update = matches!(admission.operation, Operation::Update);
        inject_inference_service(isvc, connection, admission.old.filter(|_| update))?;
    }
    Ok(side_effects)
}

/// Injects `connection` by its type. `old` (UPDATE only) supplies the S3 path fallback: the
/// previous `spec.predictor.model.storage.path`, used when neither the user nor the path
/// annotation gives one.
pub fn inject_inference_service(
    isvc: &mut Value,
    connection: &Connection,
    old: Option<&Value>,
) -> Result<(), Error> {
    let info = &connection.info;
    match info.kind() {
        Some(ConnectionKind::Oci) => {
            add_pull_secret(object_mut(isvc, &PREDICTOR), &info.secret_name);
        }
        Some(ConnectionKind::Uri) => {
            let uri = uri_value(&connection.secret)?;
            model_mut(isvc).insert("storageUri".into(), uri.into());
        }
        Some(ConnectionKind::S3) => {
            set_service_account(object_mut(isvc, &PREDICTOR), info);
            let old_path = old
                .map(|o| str_at(o, &["spec", "predictor", "model", "storage", "path"]))
                .unwrap_or_default();
            let storage = as_object(model_mut(isvc).entry("storage").or_insert(Value::Null));
            storage.insert("key".into(), info.secret_name.clone().into());
            let user_path = storage
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if user_path.is_empty() {
                if !info.path.is_empty() {
                    storage.insert("path".into(), info.path.clone().into());
                } else if !old_path.is_empty() {
                    storage.insert("path".into(), old_path.into());
                }
            }
        }
        None => {}
    }
    Ok(())
}

/// Removes what `old` injected, by the old Secret's type. An empty type (the old Secret is gone)
/// removes every kind of injected field; an unrecognised type removes nothing. The
/// ServiceAccount name is only cleared when it is still the injected `<secret>-sa`.
pub fn cleanup_inference_service(isvc: &mut Value, old: &ConnectionInfo) {
    let Some(predictor) = existing_object_mut(isvc, &PREDICTOR) else {
        return;
    };
    let (oci, uri, s3) = match old.type_.as_str() {
        "" => (true, true, true),
        type_ => match ConnectionKind::of(type_) {
            Some(ConnectionKind::Oci) => (true, false, false),
            Some(ConnectionKind::Uri) => (false, true, false),
            Some(ConnectionKind::S3) => (false, false, true),
            None => return,
        },
    };
    if oci {
        remove_pull_secret(predictor, &old.secret_name);
    }
    if s3 {
        remove_service_account(predictor, old);
    }
    if let Some(model) = predictor.get_mut("model").and_then(Value::as_object_mut) {
        if uri {
            model.remove("storageUri");
        }
        if s3 {
            model.remove("storage");
        }
    }
}

/// `spec.predictor.model`, created empty when absent. (Go's typed round trip would also add
/// `modelFormat: {name: ""}`, `name: ""` and `resources: {}`; only the injected fields are
/// written here.)
/// `spec.predictor.model`, created when absent. A new model carries an empty `modelFormat`
/// (upstream's typed round trip writes one too): KServe's schema requires the field.
fn model_mut(isvc: &mut Value) -> &mut Map<String, Value> {
    let predictor = object_mut(isvc, &PREDICTOR);
    if !predictor.get("model").is_some_and(Value::is_object) {
        predictor.insert("model".into(), json!({"modelFormat": {"name": ""}}));
    }
    object_mut(isvc, &["spec", "predictor", "model"])
}
