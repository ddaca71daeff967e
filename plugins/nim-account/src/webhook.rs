//! The Account validating webhook (docs/plugins/nim-account.md, "Webhook"): one Account per
//! namespace.

use odh_kinds::gvk;
use odh_plugin_sdk::admission::{Expect, Refusal};
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{AdmissionDecision, AdmissionRequest, Error, Operation};

/// CREATE is denied (403 Forbidden) when the namespace already holds an Account; every other
/// operation is allowed.
pub fn validate(
    request: &AdmissionRequest,
    cluster: &dyn Cluster,
) -> Result<AdmissionDecision, Error> {
    // controller-runtime's decoding, answered with upstream's validator's own texts: the kind
    // alone (its `%T`), the decoding error with its case, and no object is a wrong kind.
    let wrong_kind = |kind: &str| format!("expected a Account object but got {kind}");
    let object = match request.decode(&Expect::kind("Account", "a Account")) {
        Ok(Some(decoded)) => decoded.object,
        Ok(None) => return Ok(AdmissionDecision::bad_request(wrong_kind(""))),
        Err(Refusal::WrongKind(object)) => {
            return Ok(AdmissionDecision::bad_request(wrong_kind(object.kind())));
        }
        Err(Refusal::Undecodable(e)) => return Ok(AdmissionDecision::bad_request(e.to_string())),
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
        Err(e) => Ok(AdmissionDecision::forbidden(format!(
            "failed to verify if there are existing Accounts with err: {e}"
        ))),
        Ok(existing) if !existing.is_empty() => Ok(AdmissionDecision::forbidden(format!(
            "rejecting creation of Account {} in namespace {namespace} because there is already an Account created in the namespace",
            object.name()
        ))),
        Ok(_) => Ok(AdmissionDecision::allow()),
    }
}
