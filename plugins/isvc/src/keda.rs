//! The KEDA Prometheus-auth objects an autoscaled InferenceService needs (docs/plugins/isvc.md,
//! "Controller `inferenceservice`", the autoscaling step): five
//! per-namespace objects named `inference-prometheus-auth`, co-owned by every InferenceService
//! of the namespace that scales on a Prometheus metric.

use odh_kinds::label::{KEDA as KEDA_LABEL, KEDA_VALUE as KEDA_LABEL_VALUE};
use odh_kinds::{InferenceService, annotation, gvk};
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{Error, Gvk, Object, Plan, Value, json, object_key};

use crate::names::KEDA_NAME;

/// Whether `isvc` autoscales on an external Prometheus metric.
pub fn uses_keda(isvc: &Object) -> bool {
    InferenceService::of(isvc).uses_keda()
}

/// The five kinds, in upstream's order.
pub fn kinds() -> [Gvk; 5] {
    [
        gvk::service_account(),
        gvk::secret(),
        gvk::role(),
        gvk::role_binding(),
        gvk::trigger_authentication(),
    ]
}

fn metadata(namespace: &str) -> Value {
    json!({"name": KEDA_NAME, "namespace": namespace, "labels": {KEDA_LABEL: KEDA_LABEL_VALUE}})
}

/// The objects to apply; the TriggerAuthentication only when the cluster serves KEDA.
pub fn desired(namespace: &str, keda_served: bool) -> Vec<Value> {
    let mut objects = vec![
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(namespace)}),
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": KEDA_NAME,
                "namespace": namespace,
                "labels": {KEDA_LABEL: KEDA_LABEL_VALUE},
                "annotations": {annotation::SERVICE_ACCOUNT_NAME: KEDA_NAME},
            },
            "type": "kubernetes.io/service-account-token",
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": metadata(namespace),
            "rules": [
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
                {"apiGroups": ["metrics.k8s.io"], "resources": ["pods", "nodes"], "verbs": ["get", "list", "watch"]},
            ],
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": metadata(namespace),
            "subjects": [{"kind": "ServiceAccount", "name": KEDA_NAME, "namespace": namespace}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": KEDA_NAME},
        }),
    ];
    if keda_served {
        objects.push(json!({
            "apiVersion": "keda.sh/v1alpha1",
            "kind": "TriggerAuthentication",
            "metadata": metadata(namespace),
            "spec": {"secretTargetRef": [
                {"parameter": "bearerToken", "name": KEDA_NAME, "key": "token"},
                {"parameter": "ca", "name": KEDA_NAME, "key": "ca.crt"},
            ]},
        }));
    }
    objects
}

/// Whether the cluster serves TriggerAuthentications (KEDA installed). Only "kind not served"
/// means no; any other failed list is an error, as upstream's.
fn keda_served(namespace: &str, cluster: &dyn Cluster) -> Result<bool, Error> {
    match cluster.list(&gvk::trigger_authentication(), Some(namespace), None) {
        Ok(_) => Ok(true),
        Err(e) if e.is_no_match() => Ok(false),
        Err(e) => Err(e),
    }
}

/// A read where a kind the cluster does not serve holds nothing.
fn unless_unserved<T: Default>(read: Result<T, Error>) -> Result<T, Error> {
    match read {
        Err(e) if e.is_no_match() => Ok(T::default()),
        other => other,
    }
}

/// The five objects as they exist now (absent or unserved kinds left out), read where the
/// host's caches answer without a request: the ServiceAccount by name (its watch takes every
/// ServiceAccount), the Role, RoleBinding and TriggerAuthentication by the KEDA label their
/// watches select (an object outside a filtered cache would be read from the apiserver). The
/// Secret is outside the Secret cache (not `opendatahub.io/managed`), so each read of it is a
/// request: it is read only when another of the objects exists (see docs/divergences.md). A
/// failed read is an error, not "absent": the removal retries.
fn existing(namespace: &str, cluster: &dyn Cluster) -> Result<Vec<Object>, Error> {
    let selector = format!("{KEDA_LABEL}={KEDA_LABEL_VALUE}");
    let by_name = |gvk: &Gvk| unless_unserved(cluster.get_object(gvk, Some(namespace), KEDA_NAME));
    let by_label = |gvk: &Gvk| -> Result<Option<Object>, Error> {
        Ok(
            unless_unserved(cluster.list_objects(gvk, Some(namespace), Some(&selector)))?
                .into_iter()
                .find(|o| o.name() == KEDA_NAME),
        )
    };
    let mut found = Vec::new();
    for gvk in kinds() {
        let object = match gvk.kind.as_str() {
            "Secret" => continue,
            "ServiceAccount" => by_name(&gvk)?,
            _ => by_label(&gvk)?,
        };
        found.extend(object);
    }
    if !found.is_empty() {
        found.extend(by_name(&gvk::secret())?);
    }
    Ok(found)
}

/// Lets go of (or deletes, when nobody else needs them) the objects.
fn release_or_remove(
    isvc: &Object,
    namespace: &str,
    cluster: &dyn Cluster,
    plan: &mut Plan,
) -> Result<(), Error> {
    let existing = existing(namespace, cluster)?;
    if existing.is_empty() {
        // Nothing to let go of: the namespace's InferenceServices are not read (every
        // reconcile of every one of them would read all of them, O(n²) in a burst).
        return Ok(());
    }
    let isvcs = cluster.list_objects(&gvk::inference_service(), Some(namespace), None)?;
    let still_needed = isvcs
        .iter()
        .any(|other| other.name() != isvc.name() && uses_keda(other));
    for object in existing {
        let key = object_key(&object.gvk(), Some(namespace), KEDA_NAME);
        if !still_needed {
            // The host deletes what it manages and only releases what others co-own.
            plan.delete(key);
        } else if object.is_owned_by(isvc) && object.owner_references().len() > 1 {
            plan.delete(key); // released: the other owners keep it
        }
    }
    Ok(())
}

pub fn reconcile(isvc: &Object, cluster: &dyn Cluster, plan: &mut Plan) -> Result<(), Error> {
    let namespace = isvc.namespace().unwrap_or_default();
    if uses_keda(isvc) {
        for object in desired(namespace, keda_served(namespace, cluster)?) {
            plan.apply_shared(object);
        }
        Ok(())
    } else {
        release_or_remove(isvc, namespace, cluster, plan)
    }
}

/// The deletion path: the InferenceService stops co-owning the objects.
pub fn delete(isvc: &Object, cluster: &dyn Cluster, plan: &mut Plan) -> Result<(), Error> {
    release_or_remove(isvc, isvc.namespace().unwrap_or_default(), cluster, plan)
}

/// Namespace cleanup (no active InferenceService left): the objects go.
pub fn cleanup(namespace: &str, cluster: &dyn Cluster, plan: &mut Plan) -> Result<(), Error> {
    for object in existing(namespace, cluster)? {
        plan.delete(object_key(&object.gvk(), Some(namespace), KEDA_NAME));
    }
    Ok(())
}
