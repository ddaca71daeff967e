//! The auth-delegator ClusterRoleBinding (scenarios C-02…C-04, C-12, C-13, D-13).

mod common;

use common::*;
use odh_plugin_sdk::{Ownership, Value, json};

fn crb(name: &str) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
           "metadata": {"name": name}})
}

#[test]
fn c_02_auth_on_the_default_service_account_binds_default() {
    let d = reconcile(
        &cluster().with(ovms_runtime()),
        Some(&isvc("a").raw().with_auth(None).build()),
    );
    let binding = d
        .applied("ClusterRoleBinding", "test-ns-default-auth-delegator")
        .unwrap();
    assert_eq!(binding.ownership, Ownership::None);
    let b = binding.object;
    assert_eq!(
        b["subjects"],
        json!([{"kind": "ServiceAccount", "namespace": NS, "name": "default"}])
    );
    assert_eq!(
        b["roleRef"],
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:auth-delegator"})
    );
    assert!(d.applied("Route", "a").is_none(), "not exposed: no Route");
}

#[test]
fn c_03_auth_on_a_custom_service_account_binds_it() {
    let d = reconcile(
        &cluster(),
        Some(&isvc("a").raw().with_auth(Some("custom-sa")).build()),
    );
    assert!(
        d.applied("ClusterRoleBinding", "test-ns-custom-sa-auth-delegator")
            .is_some()
    );
}

#[test]
fn c_04_an_inference_service_without_auth_keeps_a_shared_binding() {
    let with = isvc("isvc-with-auth").raw().with_auth(Some("custom-sa"));
    let without = isvc("isvc-without-auth")
        .raw()
        .service_account("custom-sa")
        .build();
    let cluster = cluster()
        .with(with)
        .with(without.clone())
        .with(crb("test-ns-custom-sa-auth-delegator"));
    let d = reconcile(&cluster, Some(&without));
    assert!(
        d.applied("ClusterRoleBinding", "test-ns-custom-sa-auth-delegator")
            .is_some()
    );
    assert!(!d.deleted("ClusterRoleBinding", "test-ns-custom-sa-auth-delegator"));
}

#[test]
fn c_12_bindings_go_only_with_the_last_inference_service_using_them() {
    let d1 = isvc("default-1").raw().with_auth(None);
    let d2 = isvc("default-2").raw().with_auth(None);
    let c2 = isvc("custom-2").raw().with_auth(Some("custom-sa"));
    let c1 = isvc("custom-1").raw().with_auth(Some("custom-sa"));
    let cluster = cluster()
        .with(d1.clone())
        .with(d2.clone())
        .with(c1.clone())
        .with(c2.clone())
        .with(crb("test-ns-default-auth-delegator"))
        .with(crb("test-ns-custom-sa-auth-delegator"));
    // default-1 and custom-1 go: the others still use the bindings.
    assert!(
        !reconcile(&cluster, Some(&d1.clone().deleting().build()))
            .deleted("ClusterRoleBinding", "test-ns-default-auth-delegator")
    );
    assert!(
        !reconcile(&cluster, Some(&c1.clone().deleting().build()))
            .deleted("ClusterRoleBinding", "test-ns-custom-sa-auth-delegator")
    );
    // Then the last users go.
    let cluster = cluster
        .with(d1.deleting())
        .with(c1.deleting())
        .with(d2.clone().deleting())
        .with(c2.clone().deleting());
    assert!(
        reconcile(&cluster, Some(&d2.deleting().build()))
            .deleted("ClusterRoleBinding", "test-ns-default-auth-delegator")
    );
    assert!(
        reconcile(&cluster, Some(&c2.deleting().build()))
            .deleted("ClusterRoleBinding", "test-ns-custom-sa-auth-delegator")
    );
}

#[test]
fn c_13_an_inference_service_without_auth_makes_no_binding() {
    let d = reconcile(
        &cluster().with(ovms_runtime()),
        Some(&isvc("example-onnx-mnist").build()),
    );
    assert!(
        d.applied("ClusterRoleBinding", "test-ns-default-auth-delegator")
            .is_none()
    );
}

#[test]
fn d_13_turning_auth_off_removes_the_binding_for_any_service_account() {
    let custom = isvc("c").raw().service_account("custom-sa").build();
    let cluster = cluster()
        .with(custom.clone())
        .with(crb("test-ns-custom-sa-auth-delegator"))
        .with(crb("test-ns-default-auth-delegator"));
    assert!(
        reconcile(&cluster, Some(&custom))
            .deleted("ClusterRoleBinding", "test-ns-custom-sa-auth-delegator")
    );
    // Upstream keeps the default-SA binding here (a lookup bug); we remove it too
    // (docs/divergences.md).
    assert!(
        reconcile(&cluster, Some(&isvc("d").raw().build()))
            .deleted("ClusterRoleBinding", "test-ns-default-auth-delegator")
    );
}

#[test]
fn auth_needs_exactly_true_for_the_binding() {
    let d = reconcile(&cluster(), Some(&isvc("a").raw().auth("True").build()));
    assert!(
        d.applied("ClusterRoleBinding", "test-ns-default-auth-delegator")
            .is_none()
    );
}

/// Without auth, a missing binding is left to the InferenceServices that need it: their own
/// reconciles create it, so this one reads no list of the namespace (a burst of n creates would
/// otherwise cost O(n²): docs/divergences.md).
#[test]
fn without_auth_a_missing_binding_is_left_to_those_that_need_it() {
    let with = isvc("isvc-with-auth").raw().with_auth(Some("custom-sa"));
    let without = isvc("isvc-without-auth")
        .raw()
        .service_account("custom-sa")
        .build();
    let cluster = cluster().with(with).with(without.clone());
    let d = reconcile(&cluster, Some(&without));
    assert!(
        d.applied("ClusterRoleBinding", "test-ns-custom-sa-auth-delegator")
            .is_none()
    );
    assert!(!d.deleted("ClusterRoleBinding", "test-ns-custom-sa-auth-delegator"));
}
