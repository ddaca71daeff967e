//! ConnectionsAPI: credentials from a data-connection Secret named by the
//! `opendatahub.io/connections` annotation (docs/plugins/isvc.md and
//! docs/plugins/llm-gateway.md, "Webhooks").
//!
//! The generic part ([`validate_connection`], [`old_connection`], [`determine_action`], the
//! Secret data helpers) decides *what* to do; [`isvc`] applies it to an InferenceService. An
//! LLMInferenceService webhook reuses the generic part with its own field mapping.

pub mod isvc;
pub mod llm;
mod secret;

use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::serde_json::Map;
use odh_plugin_sdk::{Error, Operation, Value, json};

use crate::Admission;

pub use isvc::{cleanup_inference_service, default_inference_service, inject_inference_service};
pub use secret::{
    Connection, old_connection, s3_uri, service_account, uri_value, validate_connection,
};

// The annotations (`opendatahub.io/connections`, `opendatahub.io/connection-path` on the
// workload; `opendatahub.io/connection-type-protocol` and the deprecated
// `opendatahub.io/connection-type-ref` on the Secret) are in `odh_kinds::annotation`.

/// A connection as the webhook compares old and new: which Secret, its raw type value and the
/// workload's path annotation. All empty means "no connection".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConnectionInfo {
    pub secret_name: String,
    /// The Secret's annotation value as written (`s3`, `uri-v1`, ...); empty when the old
    /// Secret no longer exists.
    pub type_: String,
    pub path: String,
}

impl ConnectionInfo {
    /// Whether a Secret is referenced.
    pub fn is_present(&self) -> bool {
        !self.secret_name.is_empty()
    }

    /// What the type value means; none for an empty or unrecognised value.
    pub fn kind(&self) -> Option<ConnectionKind> {
        ConnectionKind::of(&self.type_)
    }

    /// `<secret>-sa`, the ServiceAccount an S3 connection runs as.
    pub fn service_account_name(&self) -> String {
        format!("{}-sa", self.secret_name)
    }
}

/// The three kinds of connection; both annotation vocabularies map onto them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectionKind {
    S3,
    Uri,
    Oci,
}

impl ConnectionKind {
    /// Classifies a type value from either annotation.
    pub fn of(type_: &str) -> Option<ConnectionKind> {
        match type_ {
            "s3" => Some(ConnectionKind::S3),
            "uri" | "uri-v1" => Some(ConnectionKind::Uri),
            "oci" | "oci-v1" => Some(ConnectionKind::Oci),
            _ => None,
        }
    }
}

/// What to do to the workload's spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Add the new connection's fields.
    Inject,
    /// Take the old connection's fields out.
    Remove,
    /// Remove the old connection's fields, then inject the new one.
    Replace,
    /// Leave the spec alone, even if the user deleted injected fields.
    None,
}

/// The action for an admission: CREATE injects whatever is referenced; UPDATE compares the old
/// and new connection (a path change matters for S3 only, where it is part of the storage spec).
pub fn determine_action(op: Operation, old: &ConnectionInfo, new: &ConnectionInfo) -> Action {
    if !matches!(op, Operation::Update) {
        return if new.is_present() {
            Action::Inject
        } else {
            Action::None
        };
    }
    match (old.is_present(), new.is_present()) {
        (true, false) => Action::Remove,
        (false, false) => Action::None,
        (false, true) => Action::Inject,
        (true, true) if old.type_ != new.type_ || old.secret_name != new.secret_name => {
            Action::Replace
        }
        (true, true) if new.type_ == "s3" && old.path != new.path => Action::Replace,
        (true, true) => Action::None,
    }
}

/// The part of the ConnectionsAPI step both kinds share: the new connection (validated), the
/// old one (UPDATE only), and the action they call for.
fn decide(
    workload: &Value,
    admission: &Admission,
    cluster: &dyn Cluster,
) -> Result<(Action, ConnectionInfo, Option<Connection>), Error> {
    let (op, namespace) = (admission.operation, admission.namespace);
    let new = validate_connection(cluster, workload, namespace)?;
    let old_info = if matches!(op, Operation::Update) {
        old_connection(cluster, admission.old, namespace)?
    } else {
        ConnectionInfo::default()
    };
    let new_info = new.as_ref().map(|c| c.info.clone()).unwrap_or_default();
    Ok((determine_action(op, &old_info, &new_info), old_info, new))
}

/// The ServiceAccounts an injection asks for: one for a new S3 connection, none on a dry run.
fn service_accounts(action: Action, new: Option<&Connection>, admission: &Admission) -> Vec<Value> {
    match (action, new) {
        (Action::Inject | Action::Replace, Some(connection))
            if connection.info.kind() == Some(ConnectionKind::S3) && !admission.dry_run =>
        {
            vec![service_account(
                &connection.info.secret_name,
                admission.namespace,
            )]
        }
        _ => Vec::new(),
    }
}

/// Adds `{name: secret_name}` to the pod spec's `imagePullSecrets` unless an entry has that
/// name (a list that is not one is replaced).
fn add_pull_secret(pod_spec: &mut Map<String, Value>, secret_name: &str) {
    let secrets = pod_spec.entry("imagePullSecrets").or_insert(json!([]));
    if !secrets.is_array() {
        *secrets = json!([]);
    }
    let secrets = secrets.as_array_mut().expect("just made an array");
    if !secrets.iter().any(|s| pull_secret_name(s) == secret_name) {
        secrets.push(json!({"name": secret_name}));
    }
}

/// Drops the pod spec's `imagePullSecrets` entries named `secret_name` (all of them when the
/// name is empty, which only a direct call can ask for); an emptied list is removed (Go omits
/// it when empty).
fn remove_pull_secret(pod_spec: &mut Map<String, Value>, secret_name: &str) {
    if secret_name.is_empty() {
        pod_spec.remove("imagePullSecrets");
        return;
    }
    let Some(secrets) = pod_spec
        .get_mut("imagePullSecrets")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    secrets.retain(|s| pull_secret_name(s) != secret_name);
    if secrets.is_empty() {
        pod_spec.remove("imagePullSecrets");
    }
}

fn pull_secret_name(entry: &Value) -> &str {
    entry
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Sets the pod spec's `serviceAccountName` to the connection's `<secret>-sa` unless it names
/// one already.
fn set_service_account(pod_spec: &mut Map<String, Value>, info: &ConnectionInfo) {
    let current = pod_spec
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if current.is_empty() {
        pod_spec.insert(
            "serviceAccountName".into(),
            info.service_account_name().into(),
        );
    }
}

/// Removes the pod spec's `serviceAccountName` when it is still the injected `<secret>-sa` of
/// `old`.
fn remove_service_account(pod_spec: &mut Map<String, Value>, old: &ConnectionInfo) {
    if pod_spec.get("serviceAccountName").and_then(Value::as_str)
        == Some(old.service_account_name().as_str())
    {
        pod_spec.remove("serviceAccountName");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(secret: &str, type_: &str, path: &str) -> ConnectionInfo {
        ConnectionInfo {
            secret_name: secret.into(),
            type_: type_.into(),
            path: path.into(),
        }
    }

    #[test]
    fn actions() {
        let none = ConnectionInfo::default();
        let s3 = info("s", "s3", "a");
        let create = Operation::Create;
        let update = Operation::Update;
        assert_eq!(determine_action(create, &none, &s3), Action::Inject);
        assert_eq!(determine_action(create, &s3, &none), Action::None);
        assert_eq!(determine_action(update, &s3, &none), Action::Remove);
        assert_eq!(determine_action(update, &none, &none), Action::None);
        assert_eq!(determine_action(update, &none, &s3), Action::Inject);
        assert_eq!(determine_action(update, &s3, &s3), Action::None);
        assert_eq!(
            determine_action(update, &s3, &info("s", "s3", "b")),
            Action::Replace
        );
        assert_eq!(
            determine_action(update, &s3, &info("t", "s3", "a")),
            Action::Replace
        );
        assert_eq!(
            determine_action(update, &s3, &info("s", "uri", "a")),
            Action::Replace
        );
        assert_eq!(
            determine_action(update, &info("u", "uri", "a"), &info("u", "uri", "b")),
            Action::None
        );
    }

    #[test]
    fn kinds() {
        assert_eq!(ConnectionKind::of("uri-v1"), Some(ConnectionKind::Uri));
        assert_eq!(ConnectionKind::of("oci"), Some(ConnectionKind::Oci));
        assert_eq!(ConnectionKind::of("s3"), Some(ConnectionKind::S3));
        assert_eq!(ConnectionKind::of("exotic"), None);
        assert_eq!(ConnectionKind::of(""), None);
        assert_eq!(info("x", "", "").service_account_name(), "x-sa");
    }
}
