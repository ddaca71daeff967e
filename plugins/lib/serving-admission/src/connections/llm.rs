//! ConnectionsAPI on an LLMInferenceService (docs/plugins/llm-gateway.md, "Webhooks"): S3 sets the
//! pod template's ServiceAccount and an `s3://` model URI, URI the model URI, OCI an image pull
//! secret on the template.
//!
//! Only `spec.model.uri` and `spec.template.{serviceAccountName, imagePullSecrets}` are ever
//! touched.

use odh_go_compat::url;
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::json::{existing_object_mut, object_mut};
use odh_plugin_sdk::{Error, Value, go};

use super::{
    Action, Connection, ConnectionInfo, ConnectionKind, add_pull_secret, decide,
    remove_pull_secret, remove_service_account, s3_uri, service_accounts, set_service_account,
    uri_value,
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
    let (action, old_info, new) =
        decide(llmisvc, admission, cluster).map_err(|e| (Vec::new(), e))?;
    if matches!(action, Action::Remove | Action::Replace) {
        cleanup_llm_inference_service(llmisvc, &old_info);
    }
    let side_effects = service_accounts(action, new.as_ref(), admission);
    if let (Action::Inject | Action::Replace, Some(connection)) = (action, &new)
        && let Err(e) = inject_llm_inference_service(llmisvc, connection)
    {
        return Err((side_effects, e));
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
            add_pull_secret(object_mut(llmisvc, &TEMPLATE), &info.secret_name);
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
            set_service_account(object_mut(llmisvc, &TEMPLATE), info);
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
        if s3 {
            remove_service_account(template, old);
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
