//! The monitoring RoleBinding `prometheus-ns-access` (docs/plugins/servingruntime.md,
//! "Controller `servingruntime`", step 2): Prometheus
//! federation access in `openshift-monitoring` and in the monitoring namespace.

use odh_kinds::{gvk, label};
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::log::{Level, log};
use odh_plugin_sdk::{Error, Object, Plan, Value, json};

use crate::names::*;

pub fn is_monitored(namespace: &str, monitoring_namespace: &str) -> bool {
    namespace == OPENSHIFT_MONITORING || namespace == monitoring_namespace
}

/// The RoleBinding as upstream creates it.
pub fn desired(namespace: &str, monitoring_namespace: &str) -> Object {
    Object::new(&gvk::role_binding(), Some(namespace), ROLE_BINDING)
        .with_label(label::MANAGED, "true")
        .with(
            "roleRef",
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": PROMETHEUS_CLUSTER_ROLE}),
        )
        .with(
            "subjects",
            json!([{"kind": "ServiceAccount", "name": MONITORING_SA, "namespace": monitoring_namespace}]),
        )
}

fn same(existing: &Object, desired: &Object) -> bool {
    let field = |o: &Object, f: &str| o.at(&[f]).cloned().unwrap_or(Value::Null);
    existing.labels() == desired.labels()
        && field(existing, "subjects") == field(desired, "subjects")
        && field(existing, "roleRef") == field(desired, "roleRef")
}

/// Makes sure the RoleBinding is as desired in a monitored namespace; nothing elsewhere.
pub fn reconcile(
    namespace: &str,
    monitoring_namespace: &str,
    cluster: &dyn Cluster,
    plan: &mut Plan,
) -> Result<(), Error> {
    if !is_monitored(namespace, monitoring_namespace) {
        log(
            Level::Debug,
            "Namespace is not configured for monitoring, skipping.",
        );
        return Ok(());
    }
    let desired = desired(namespace, monitoring_namespace);
    match cluster.get_object(&gvk::role_binding(), Some(namespace), ROLE_BINDING)? {
        Some(existing) if same(&existing, &desired) => {}
        existing => {
            let verb = if existing.is_some() {
                "Updated"
            } else {
                "Created"
            };
            log(Level::Info, &format!("{verb} RoleBinding: {ROLE_BINDING}"));
            plan.apply_unowned(desired);
        }
    }
    Ok(())
}
