//! The Account validating webhook (spec nim-process §1.14): one Account per namespace.

use odh_kinds::gvk;
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{AdmissionDecision, AdmissionRequest, Error, Operation};

/// CREATE is denied (403 Forbidden) when the namespace already holds an Account; every other
/// operation is allowed.
pub fn validate(
    request: &AdmissionRequest,
    cluster: &dyn Cluster,
) -> Result<AdmissionDecision, Error> {
    let object = match request.object() {
        Ok(Some(object)) if object.kind() == "Account" => object,
        Ok(object) => {
            let kind = object.map(|o| o.kind().to_string()).unwrap_or_default();
            return Ok(AdmissionDecision::deny_with_code(
                format!("expected a Account object but got {kind}"),
                400,
            ));
        }
        Err(e) => return Ok(AdmissionDecision::deny_with_code(e.to_string(), 400)),
    };
    if request.operation != Operation::Create {
        return Ok(AdmissionDecision::allow());
    }
    odh_plugin_sdk::log::log(
        odh_plugin_sdk::log::Level::Info,
        "Validating NIM Account creation",
    );
    let namespace = object
        .namespace()
        .map(str::to_string)
        .or_else(|| request.namespace.clone())
        .unwrap_or_default();
    match cluster.list(&gvk::nim_account(), Some(&namespace), None) {
        Err(e) => Ok(AdmissionDecision::deny_with_code(
            format!("failed to verify if there are existing Accounts with err: {e}"),
            403,
        )),
        Ok(existing) if !existing.is_empty() => Ok(AdmissionDecision::deny_with_code(
            format!(
                "rejecting creation of Account {} in namespace {namespace} because there is already an Account created in the namespace",
                object.name()
            ),
            403,
        )),
        Ok(_) => Ok(AdmissionDecision::allow()),
    }
}
