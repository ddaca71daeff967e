//! The auth-delegator ClusterRoleBinding (spec §2.2; C-02…C-04, C-12, C-13, D-13).

mod common;

use common::*;
use odh_plugin_sdk::cluster::FakeCluster;
use odh_plugin_sdk::{Value, json};

const AUTH: &str = "security.opendatahub.io/enable-auth";

fn with_sa(mut v: Value, sa: &str) -> Value {
    v["spec"]["predictor"]["serviceAccountName"] = json!(sa);
    v
}

fn authed(v: Value) -> Value {
    with_annotation(v, AUTH, "true")
}

fn crb(name: &str) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
           "metadata": {"name": name}})
}

#[test]
fn c_02_auth_on_the_default_service_account_binds_default() {
    let d = reconcile(
        &FakeCluster::new().with(ovms_runtime()),
        Some(&authed(raw_isvc("a"))),
    );
    let (b, ownership) = d
        .applied("ClusterRoleBinding", "test-ns-default-auth-delegator")
        .unwrap();
    assert_eq!(ownership, odh_plugin_sdk::Ownership::None);
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
        &FakeCluster::new(),
        Some(&authed(with_sa(raw_isvc("a"), "custom-sa"))),
    );
    assert!(
        d.applied("ClusterRoleBinding", "test-ns-custom-sa-auth-delegator")
            .is_some()
    );
}

#[test]
fn c_04_an_inference_service_without_auth_keeps_a_shared_binding() {
    let with = authed(with_sa(raw_isvc("isvc-with-auth"), "custom-sa"));
    let without = with_sa(raw_isvc("isvc-without-auth"), "custom-sa");
    let cluster = FakeCluster::new()
        .with(with.clone())
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
    let d1 = authed(raw_isvc("default-1"));
    let d2 = authed(raw_isvc("default-2"));
    let c2 = authed(with_sa(raw_isvc("custom-2"), "custom-sa"));
    let c1 = authed(with_sa(raw_isvc("custom-1"), "custom-sa"));
    let cluster = FakeCluster::new()
        .with(d1.clone())
        .with(d2.clone())
        .with(c1.clone())
        .with(c2.clone())
        .with(crb("test-ns-default-auth-delegator"))
        .with(crb("test-ns-custom-sa-auth-delegator"));
    // default-1 and custom-1 go: the others still use the bindings.
    assert!(
        !reconcile(&cluster, Some(&deleting(d1.clone())))
            .deleted("ClusterRoleBinding", "test-ns-default-auth-delegator")
    );
    assert!(
        !reconcile(&cluster, Some(&deleting(c1.clone())))
            .deleted("ClusterRoleBinding", "test-ns-custom-sa-auth-delegator")
    );
    // Then the last users go.
    let cluster = cluster
        .with(deleting(d1))
        .with(deleting(c1))
        .with(deleting(d2.clone()))
        .with(deleting(c2.clone()));
    assert!(
        reconcile(&cluster, Some(&deleting(d2)))
            .deleted("ClusterRoleBinding", "test-ns-default-auth-delegator")
    );
    assert!(
        reconcile(&cluster, Some(&deleting(c2)))
            .deleted("ClusterRoleBinding", "test-ns-custom-sa-auth-delegator")
    );
}

#[test]
fn c_13_an_inference_service_without_auth_makes_no_binding() {
    let d = reconcile(
        &FakeCluster::new().with(ovms_runtime()),
        Some(&isvc("example-onnx-mnist")),
    );
    assert!(
        d.applied("ClusterRoleBinding", "test-ns-default-auth-delegator")
            .is_none()
    );
}

#[test]
fn d_13_turning_auth_off_removes_the_binding_for_any_service_account() {
    let custom = with_sa(raw_isvc("c"), "custom-sa");
    let cluster = FakeCluster::new()
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
        reconcile(&cluster, Some(&raw_isvc("d")))
            .deleted("ClusterRoleBinding", "test-ns-default-auth-delegator")
    );
}

#[test]
fn auth_needs_exactly_true_for_the_binding() {
    let d = reconcile(
        &FakeCluster::new(),
        Some(&with_annotation(raw_isvc("a"), AUTH, "True")),
    );
    assert!(
        d.applied("ClusterRoleBinding", "test-ns-default-auth-delegator")
            .is_none()
    );
}
