//! The `system:auth-delegator` ClusterRoleBinding of a predictor ServiceAccount
//! (docs/plugins/isvc.md, "Controller `inferenceservice`", the auth delegation step).

use odh_kinds::{InferenceService, gvk};
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{Error, Object, Plan, Value, json};

/// Upstream's CRB check: only the exact value `true` turns auth on.
pub fn auth_enabled(isvc: &Object) -> bool {
    InferenceService::of(isvc).auth_enabled()
}

/// The predictor's ServiceAccount, `default` when unset.
pub fn service_account(isvc: &Object) -> &str {
    InferenceService::of(isvc).service_account()
}

pub fn name(namespace: &str, service_account: &str) -> String {
    format!("{namespace}-{service_account}-auth-delegator")
}

/// Active (not deleting) InferenceServices of the namespace with auth on and this
/// ServiceAccount, other than `except`.
fn others_with_auth(
    namespace: &str,
    sa: &str,
    except: &Object,
    cluster: &dyn Cluster,
) -> Result<bool, Error> {
    let isvcs = cluster.list_objects(&gvk::inference_service(), Some(namespace), None)?;
    Ok(isvcs.iter().any(|other| {
        other.name() != except.name()
            && !other.is_deleting()
            && auth_enabled(other)
            && service_account(other) == sa
    }))
}

pub fn desired(namespace: &str, sa: &str) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name(namespace, sa)},
        "subjects": [{"kind": "ServiceAccount", "namespace": namespace, "name": sa}],
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "system:auth-delegator",
        },
    })
}

/// Present while this or another active InferenceService of the namespace uses the
/// ServiceAccount with auth on; removed (if we manage it) otherwise.
///
/// An InferenceService without auth looks at the others only when the binding exists: absent,
/// there is nothing to remove, and an InferenceService that needs it creates it in its own
/// reconcile. Listing every InferenceService of the namespace in each reconcile of each of them
/// made a burst of n creates cost O(n²) (docs/performance.md, docs/divergences.md).
pub fn reconcile(isvc: &Object, cluster: &dyn Cluster, plan: &mut Plan) -> Result<(), Error> {
    let namespace = isvc.namespace().unwrap_or_default();
    let sa = service_account(isvc);
    if auth_enabled(isvc) {
        plan.apply_unowned(desired(namespace, sa));
    } else if !exists(namespace, sa, cluster)? {
        // Nothing to keep or remove.
    } else if others_with_auth(namespace, sa, isvc, cluster)? {
        plan.apply_unowned(desired(namespace, sa));
    } else {
        remove(namespace, sa, cluster, plan)?;
    }
    Ok(())
}

fn exists(namespace: &str, sa: &str, cluster: &dyn Cluster) -> Result<bool, Error> {
    Ok(cluster
        .get(&gvk::cluster_role_binding(), None, &name(namespace, sa))?
        .is_some())
}

/// The deletion path: removed unless another active InferenceService still needs it.
pub fn delete(isvc: &Object, cluster: &dyn Cluster, plan: &mut Plan) -> Result<(), Error> {
    let namespace = isvc.namespace().unwrap_or_default();
    let sa = service_account(isvc);
    if !others_with_auth(namespace, sa, isvc, cluster)? {
        remove(namespace, sa, cluster, plan)?;
    }
    Ok(())
}

fn remove(namespace: &str, sa: &str, cluster: &dyn Cluster, plan: &mut Plan) -> Result<(), Error> {
    plan.delete_existing(
        cluster,
        &gvk::cluster_role_binding(),
        None,
        &name(namespace, sa),
    )
}
