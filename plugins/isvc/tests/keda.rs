//! The KEDA Prometheus-auth objects (scenarios C-14…C-26, D-14). The host's side (owner
//! references merged, released, deleted) is covered by the integration tests.

mod common;

use common::*;
use odh_plugin_sdk::testing::FakeCluster;
use odh_plugin_sdk::{Error, Ownership, Value, json};

const KINDS: [&str; 5] = [
    "ServiceAccount",
    "Secret",
    "Role",
    "RoleBinding",
    "TriggerAuthentication",
];
const NAME: &str = "inference-prometheus-auth";

/// What the host answers for a kind the cluster does not serve (the KEDA CRD missing). The
/// fake cluster serves every kind unless told otherwise like this.
fn keda_crd_missing(cluster: FakeCluster) -> FakeCluster {
    cluster.fail(
        odh_kinds::gvk::trigger_authentication(),
        Error::Transient(
            "no matches for kind \"TriggerAuthentication\" in version \"keda.sh/v1alpha1\"".into(),
        ),
    )
}

fn existing(kind: &str, owners: &[&str]) -> Value {
    let api = match kind {
        "Role" | "RoleBinding" => "rbac.authorization.k8s.io/v1",
        "TriggerAuthentication" => "keda.sh/v1alpha1",
        _ => "v1",
    };
    let refs: Vec<Value> = owners
        .iter()
        .map(|uid| json!({"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService", "name": uid, "uid": uid}))
        .collect();
    json!({"apiVersion": api, "kind": kind,
           "metadata": {"name": NAME, "namespace": NS, "ownerReferences": refs,
                        "labels": {"odh-model-controller": "keda-reconciler"}}})
}

fn with_all(mut cluster: FakeCluster, owners: &[&str]) -> FakeCluster {
    for k in KINDS {
        cluster.insert(existing(k, owners));
    }
    cluster
}

#[test]
fn c_14_a_keda_inference_service_co_owns_all_five_objects() {
    let d = reconcile(&cluster(), Some(&isvc("isvc1").keda().build()));
    for kind in KINDS {
        let ownership = d
            .applied(kind, NAME)
            .unwrap_or_else(|| panic!("{kind} applied"))
            .ownership;
        assert_eq!(
            ownership,
            Ownership::Owner,
            "{kind} is shared, not controlled"
        );
    }
}

#[test]
fn c_14_object_shapes() {
    let d = reconcile(&cluster(), Some(&isvc("isvc1").keda().build()));
    let secret = d.applied_object("Secret", NAME);
    assert_eq!(secret["type"], "kubernetes.io/service-account-token");
    assert_eq!(
        secret["metadata"]["annotations"]["kubernetes.io/service-account.name"],
        NAME
    );
    for kind in KINDS {
        assert_eq!(
            d.applied_object(kind, NAME)["metadata"]["labels"],
            json!({"odh-model-controller": "keda-reconciler"})
        );
    }
    assert_eq!(
        d.applied_object("Role", NAME)["rules"],
        json!([
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
            {"apiGroups": ["metrics.k8s.io"], "resources": ["pods", "nodes"], "verbs": ["get", "list", "watch"]},
        ])
    );
    assert_eq!(
        d.applied_object("RoleBinding", NAME)["roleRef"],
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NAME})
    );
    assert_eq!(
        d.applied_object("TriggerAuthentication", NAME)["spec"]["secretTargetRef"],
        json!([
            {"parameter": "bearerToken", "name": NAME, "key": "token"},
            {"parameter": "ca", "name": NAME, "key": "ca.crt"},
        ])
    );
}

#[test]
fn c_15_a_deleted_co_owner_releases_the_objects_the_other_still_holds() {
    let cluster = with_all(
        cluster().with(isvc("isvc1").keda().build()),
        &["uid-isvc1", "uid-isvc2"],
    );
    let d = reconcile(&cluster, Some(&isvc("isvc2").keda().deleting().build()));
    for kind in KINDS {
        // `delete` of an object others co-own is a release in the host.
        assert!(d.deleted(kind, NAME), "{kind} released");
    }
}

#[test]
fn c_16_c_17_c_18_c_19_c_20_drifted_objects_are_applied_again_in_full() {
    // The plugin's part of putting drift back: whatever the five objects look like now, every
    // reconcile of a KEDA InferenceService asks for all five in their whole desired shape
    // (server-side apply then restores them: the integration test c_14_to_c_21 shows that).
    let clean = reconcile(&cluster(), Some(&isvc("isvc1").keda().build()));
    let mut drifted = with_all(cluster(), &["uid-isvc1"]);
    let mut role = existing("Role", &["uid-isvc1"]);
    role["rules"] = json!([{"apiGroups": [""], "resources": ["fake"], "verbs": ["get"]}]);
    drifted.insert(role);
    let mut binding = existing("RoleBinding", &["uid-isvc1"]);
    binding["subjects"] = json!([{"kind": "User", "name": "mallory"}]);
    drifted.insert(binding);
    let mut auth = existing("TriggerAuthentication", &["uid-isvc1"]);
    auth["spec"] = json!({"secretTargetRef": []});
    drifted.insert(auth);
    let mut account = existing("ServiceAccount", &["uid-isvc1"]);
    account["metadata"]["labels"] = json!({"odh-model-controller": "changed"});
    drifted.insert(account);
    let d = reconcile(&drifted, Some(&isvc("isvc1").keda().build()));
    for kind in KINDS {
        assert_eq!(
            d.applied_object(kind, NAME).into_value(),
            clean.applied_object(kind, NAME).into_value(),
            "{kind} is asked for in its desired shape"
        );
        assert!(!d.deleted(kind, NAME), "{kind}");
    }
    assert_eq!(
        d.applied_object("Role", NAME)["rules"][0]["resources"],
        json!(["pods"])
    );
}

#[test]
fn c_21_with_every_inference_service_gone_the_objects_are_cleaned_up() {
    let cluster = with_all(cluster(), &["uid-isvc1", "uid-isvc2"]);
    let d = reconcile(&cluster, None);
    for kind in KINDS {
        assert!(d.deleted(kind, NAME), "{kind} deleted");
    }
}

#[test]
fn c_22_an_inference_service_that_stops_using_keda_removes_the_objects() {
    let mut plain = isvc("isvc1").keda().build();
    plain["spec"]["predictor"]
        .as_object_mut()
        .unwrap()
        .remove("autoScaling");
    let cluster = with_all(cluster().with(plain.clone()), &["uid-isvc1"]);
    let d = reconcile(&cluster, Some(&plain));
    for kind in KINDS {
        assert!(d.deleted(kind, NAME), "{kind} deleted");
        assert!(d.applied(kind, NAME).is_none());
    }
}

#[test]
fn c_23_a_co_owner_that_stops_using_keda_lets_go_while_another_still_uses_it() {
    let plain = isvc("isvc1").raw().build();
    let cluster = with_all(
        cluster()
            .with(plain.clone())
            .with(isvc("isvc2").keda().build()),
        &["uid-isvc1", "other-owner-uid"],
    );
    let d = reconcile(&cluster, Some(&plain));
    for kind in KINDS {
        assert!(
            d.deleted(kind, NAME),
            "{kind} released (the host keeps other-owner-uid)"
        );
    }
}

#[test]
fn c_24_no_keda_anywhere_means_nothing_to_do() {
    let d = reconcile(&cluster(), Some(&isvc("plain").raw().build()));
    for kind in KINDS {
        assert!(
            !d.deleted(kind, NAME) && d.applied(kind, NAME).is_none(),
            "{kind}"
        );
    }
    assert_eq!(d.error_message(), None);
}

#[test]
fn c_25_an_unowned_object_is_left_alone_while_another_inference_service_uses_keda() {
    let plain = isvc("plain").raw().build();
    let cluster = cluster()
        .with(plain.clone())
        .with(isvc("isvc2").keda().build())
        .with(existing("ServiceAccount", &[]));
    let d = reconcile(&cluster, Some(&plain));
    assert!(!d.deleted("ServiceAccount", NAME));
}

#[test]
fn c_26_an_unowned_object_is_asked_away_when_nobody_uses_keda() {
    // The host deletes only what it manages, so the unowned ServiceAccount survives there
    // (docs/divergences.md); the plugin's part is to ask.
    let plain = isvc("plain").raw().build();
    let cluster = cluster()
        .with(plain.clone())
        .with(existing("ServiceAccount", &[]));
    assert!(reconcile(&cluster, Some(&plain)).deleted("ServiceAccount", NAME));
}

#[test]
fn d_14_without_the_keda_crd_no_trigger_authentication_is_applied() {
    let cluster = keda_crd_missing(cluster().with(ovms_runtime()));
    let d = reconcile(&cluster, Some(&isvc("isvc1").keda().build()));
    assert!(d.applied("TriggerAuthentication", NAME).is_none());
    assert!(d.applied("ServiceAccount", NAME).is_some());
    assert_eq!(d.error_message(), None);
}

#[test]
fn d_14_cleanup_without_the_keda_crd_removes_the_other_four() {
    let mut plain = isvc("isvc1").keda().build();
    plain["spec"]["predictor"]
        .as_object_mut()
        .unwrap()
        .remove("autoScaling");
    let mut cluster = cluster().with(ovms_runtime()).with(plain.clone());
    for kind in &KINDS[..4] {
        cluster.insert(existing(kind, &["uid-isvc1"]));
    }
    let d = reconcile(&keda_crd_missing(cluster), Some(&plain));
    for kind in &KINDS[..4] {
        assert!(d.deleted(kind, NAME), "{kind} deleted");
    }
    assert!(!d.deleted("TriggerAuthentication", NAME));
    assert_eq!(d.error_message(), None);
}

#[test]
fn d8_a_trigger_authentication_list_error_is_an_error_not_a_missing_crd() {
    let cluster = cluster().with(ovms_runtime()).fail(
        odh_kinds::gvk::trigger_authentication(),
        Error::Transient("the server was unable to return a response in the time allotted".into()),
    );
    let d = reconcile(&cluster, Some(&isvc("isvc1").keda().build()));
    let err = d.error_message().expect("an error that retries");
    assert!(err.contains("unable to return a response"), "{err}");
}

#[test]
fn d9_a_failed_read_on_the_removal_path_is_an_error_not_absent() {
    let mut plain = isvc("isvc1").keda().build();
    plain["spec"]["predictor"]
        .as_object_mut()
        .unwrap()
        .remove("autoScaling");
    let cluster = with_all(cluster().with(plain.clone()), &["uid-isvc1"]).fail(
        odh_kinds::gvk::role(),
        Error::Transient("roles.rbac.authorization.k8s.io is forbidden".into()),
    );
    let d = reconcile(&cluster, Some(&plain));
    let err = d.error_message().expect("an error that retries");
    assert!(err.contains("is forbidden"), "{err}");
}
