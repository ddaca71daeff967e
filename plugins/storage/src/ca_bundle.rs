//! The ConfigMap controller (docs/plugins/storage.md, "Controller `core-configmap`"):
//! `odh-kserve-custom-ca-bundle` in each
//! namespace, joined from `odh-trusted-ca-bundle` and `openshift-service-ca.crt`; when it
//! changes, a managed `storage-config` is deleted so the Secret controller rebuilds it.

use odh_kinds::{gvk, label};
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{Error, Object, Outcome, Plan, ReconcileRequest, json};

use crate::names::{
    CA_BUNDLE, CA_BUNDLE_KEY, CA_SOURCES, SERVICE_CA, STORAGE_CONFIG, TRUSTED_CA_BUNDLE,
};
use odh_kinds::claim::claim_and_delete;

/// The event filter: only the bundle and its sources concern this controller.
pub fn concerns(name: &str) -> bool {
    [TRUSTED_CA_BUNDLE, CA_BUNDLE, SERVICE_CA].contains(&name)
}

/// What the reconcile decided about the bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delta {
    /// No bundle yet and there is data: create it.
    Add,
    /// The bundle holds other data: rewrite it.
    Update,
    /// A bundle exists and no source has data: delete it.
    Remove,
}

/// One reconcile of the ConfigMap `namespace/name` that triggered (the request's object is
/// none when it is gone).
pub fn reconcile(request: &ReconcileRequest, cluster: &dyn Cluster) -> Result<Outcome, Error> {
    let name = request.key.name.as_str();
    let Some(namespace) = request.key.namespace.as_deref() else {
        return Ok(Outcome::default());
    };
    if !concerns(name) {
        return Ok(Outcome::default());
    }
    let trigger = request.object()?;
    let cert_data = bundle_data(namespace, name, trigger.as_ref(), cluster)?;
    let existing = cluster.get_object(&gvk::config_map(), Some(namespace), CA_BUNDLE)?;
    let mut plan = Plan::new();
    match (delta(&cert_data, existing.as_ref()), &existing) {
        (None, _) => return Ok(plan.into_outcome()),
        (Some(Delta::Remove), Some(existing)) => claim_and_delete(&mut plan, existing),
        (Some(_), _) => plan.apply_unowned(desired(namespace, &cert_data)),
    }
    invalidate_storage_config(&mut plan, namespace, cluster);
    Ok(plan.into_outcome())
}

/// `certData`: the trimmed, non-empty blocks of every source key, joined by one blank line.
/// A source named like the trigger is the trigger as given (a deleted trigger has no data),
/// the others are read; a missing source is skipped.
pub fn bundle_data(
    namespace: &str,
    trigger_name: &str,
    trigger: Option<&Object>,
    cluster: &dyn Cluster,
) -> Result<String, Error> {
    let mut blocks = Vec::new();
    for (source, keys) in CA_SOURCES {
        let read;
        let object = if source == trigger_name {
            trigger
        } else {
            read = cluster.get_object(&gvk::config_map(), Some(namespace), source)?;
            read.as_ref()
        };
        let Some(object) = object else { continue };
        for key in keys {
            let value = object.str_at(&["data", key]).unwrap_or_default().trim();
            if !value.is_empty() {
                blocks.push(value.to_string());
            }
        }
    }
    Ok(blocks.join("\n\n"))
}

/// The delta between the bundle wanted (`cert_data`, empty for none) and the one that exists.
///
/// Only our key is compared: server-side apply leaves keys other managers wrote, so counting
/// them (upstream compares whole maps) would see a change on every reconcile and delete
/// `storage-config` each time.
pub fn delta(cert_data: &str, existing: Option<&Object>) -> Option<Delta> {
    match existing {
        None if cert_data.is_empty() => None,
        None => Some(Delta::Add),
        Some(_) if cert_data.is_empty() => Some(Delta::Remove),
        Some(existing) if existing.str_at(&["data", CA_BUNDLE_KEY]) != Some(cert_data) => {
            Some(Delta::Update)
        }
        Some(_) => None,
    }
}

/// The bundle as this controller writes it.
pub fn desired(namespace: &str, cert_data: &str) -> Object {
    Object::new(&gvk::config_map(), Some(namespace), CA_BUNDLE)
        .with_label(label::MANAGED, "true")
        .with("data", json!({ CA_BUNDLE_KEY: cert_data }))
}

/// Deletes `storage-config` if it is managed (label exactly `"true"`); an unmanaged one is never
/// touched (the rule of docs/plugins/storage.md, "Controller `secret`"). Upstream ignores the
/// read's errors.
fn invalidate_storage_config(plan: &mut Plan, namespace: &str, cluster: &dyn Cluster) {
    if let Ok(Some(secret)) = cluster.get_object(&gvk::secret(), Some(namespace), STORAGE_CONFIG)
        && is_managed(&secret)
    {
        claim_and_delete(plan, &secret);
    }
}

/// Whether these controllers may change or delete `object`: label `opendatahub.io/managed`
/// exactly `"true"`.
pub fn is_managed(object: &Object) -> bool {
    object.label(label::MANAGED) == Some("true")
}
