//! ConnectionsAPI on an LLMInferenceService (spec `llm.md` §7.3): S3 sets the pod template's
//! ServiceAccount and an `s3://` model URI, URI the model URI, OCI an image pull secret on the
//! template.
//!
//! Only `spec.model.uri` and `spec.template.{serviceAccountName, imagePullSecrets}` are ever
//! touched.

use odh_go_compat::url;
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::json::{existing_object_mut, object_mut, str_at};
use odh_plugin_sdk::serde_json::Map;
use odh_plugin_sdk::{Error, Operation, Value, go, json};

use super::{
    Action, Connection, ConnectionInfo, ConnectionKind, determine_action, old_connection, s3_uri,
    service_account, uri_value, validate_connection,
};
use crate::IsvcAdmission;

const TEMPLATE: [&str; 2] = ["spec", "template"];

/// The ConnectionsAPI step of the LLMInferenceService mutating webhook (either version): edits
/// `llmisvc` in place and returns the ServiceAccounts to create (S3, not on a dry run).
///
/// Upstream creates the ServiceAccount before it validates the S3 data, so a denial caused by
/// that data still leaves the account: the accounts are returned with the error in that case.
pub fn default_llm_inference_service(
    llmisvc: &mut Value,
    admission: &IsvcAdmission,
    cluster: &dyn Cluster,
) -> Result<Vec<Value>, (Vec<Value>, Error)> {
    let fail = |e| (Vec::new(), e);
    let (op, namespace) = (admission.operation, admission.namespace);
    let update = matches!(op, Operation::Update);
    let new = validate_connection(cluster, llmisvc, namespace).map_err(fail)?;
    let old_info = if update {
        old_connection(cluster, admission.old, namespace).map_err(fail)?
    } else {
        ConnectionInfo::default()
    };
    let new_info = new.as_ref().map(|c| c.info.clone()).unwrap_or_default();
    let action = determine_action(op, &old_info, &new_info);
    if matches!(action, Action::Remove | Action::Replace) {
        cleanup_llm_inference_service(llmisvc, &old_info);
    }
    let mut side_effects = Vec::new();
    if let (Action::Inject | Action::Replace, Some(connection)) = (action, &new) {
        if connection.info.kind() == Some(ConnectionKind::S3) && !admission.dry_run {
            side_effects.push(service_account(&connection.info.secret_name, namespace));
        }
        if let Err(e) = inject_llm_inference_service(llmisvc, connection) {
            return Err((side_effects, e));
        }
    }
    Ok(side_effects)
}

/// Injects `connection` by its type.
pub fn inject_llm_inference_service(
    llmisvc: &mut Value,
    connection: &Connection,
) -> Result<(), Error> {
    let info = &connection.info;
    match info.kind() {
        Some(ConnectionKind::Oci) => {
            let template = object_mut(llmisvc, &TEMPLATE);
            let secrets = template.entry("imagePullSecrets").or_insert(json!([]));
            if !secrets.is_array() {
                *secrets = json!([]);
            }
            let secrets = secrets.as_array_mut().expect("just made an array");
            if !secrets
                .iter()
                .any(|s| pull_secret_name(s) == info.secret_name)
            {
                secrets.push(json!({"name": info.secret_name}));
            }
        }
        Some(ConnectionKind::Uri) => {
            let uri = uri_value(&connection.secret)?;
            // Upstream parses an empty value to "no URL" and then dereferences it (a panic the
            // webhook answers as a failure); the same request is denied here, with a reason.
            if uri.is_empty() {
                return Err(Error::Denied(format!(
                    "invalid URI {} from secret {}: the URI is empty",
                    go::quote(&uri),
                    info.secret_name
                )));
            }
            url::check(&uri).map_err(|e| {
                Error::Denied(format!(
                    "invalid URI {} from secret {}: {e}",
                    go::quote(&uri),
                    info.secret_name
                ))
            })?;
            set_model_uri(llmisvc, uri);
        }
        Some(ConnectionKind::S3) => {
            let template = object_mut(llmisvc, &TEMPLATE);
            if str_at(&Value::Object(template.clone()), &["serviceAccountName"]).is_empty() {
                template.insert(
                    "serviceAccountName".into(),
                    info.service_account_name().into(),
                );
            }
            let uri = s3_uri(&connection.secret, info)?;
            url::check(&uri)
                .map_err(|e| Error::Denied(format!("invalid S3 URI {}: {e}", go::quote(&uri))))?;
            set_model_uri(llmisvc, uri);
        }
        None => {}
    }
    Ok(())
}

/// Removes what `old` injected, by the old Secret's type (an empty type: the old Secret is
/// gone, so both the S3 and the OCI fields are looked for), then clears `spec.model.uri`
/// whatever the type, as upstream does (a removed OCI connection clears it too).
pub fn cleanup_llm_inference_service(llmisvc: &mut Value, old: &ConnectionInfo) {
    let (s3, oci) = match old.type_.as_str() {
        "" => (true, true),
        type_ => match ConnectionKind::of(type_) {
            Some(ConnectionKind::S3) => (true, false),
            Some(ConnectionKind::Oci) => (false, true),
            _ => (false, false),
        },
    };
    if let Some(template) = existing_object_mut(llmisvc, &TEMPLATE) {
        if s3
            && template.get("serviceAccountName").and_then(Value::as_str)
                == Some(old.service_account_name().as_str())
        {
            template.remove("serviceAccountName");
        }
        if oci {
            remove_pull_secret(template, &old.secret_name);
        }
    }
    if let Some(model) = existing_object_mut(llmisvc, &["spec", "model"])
        && !model
            .get("uri")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .is_empty()
    {
        // Go's zero `apis.URL` is written as `""`.
        model.insert("uri".into(), "".into());
    }
}

fn set_model_uri(llmisvc: &mut Value, uri: String) {
    object_mut(llmisvc, &["spec", "model"]).insert("uri".into(), uri.into());
}

/// Drops the entries named `secret_name` (all of them for an empty name); an emptied list is
/// removed (Go omits it when empty).
fn remove_pull_secret(template: &mut Map<String, Value>, secret_name: &str) {
    if secret_name.is_empty() {
        template.remove("imagePullSecrets");
        return;
    }
    let Some(secrets) = template
        .get_mut("imagePullSecrets")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    secrets.retain(|s| pull_secret_name(s) != secret_name);
    if secrets.is_empty() {
        template.remove("imagePullSecrets");
    }
}

fn pull_secret_name(entry: &Value) -> &str {
    entry
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}
