//! The ServingRuntime controller's decisions (docs/plugins/servingruntime.md, "Controller
//! `servingruntime`"; scenarios SR-1..SR-6, X-1..X-4).

mod common;

use std::time::{Duration, SystemTime};

use common::*;
use odh_plugin_sdk::{Object, Plugin, WatchChange, WatchEvent, json};
use servingruntime::certs::{self, Ca};
use servingruntime::settings::Settings;
use servingruntime::{ServingRuntime, map_event};

const NS: &str = "test-ns-abcde";

fn base() -> odh_plugin_sdk::testing::FakeCluster {
    cluster().with(namespace(CONTROLLER_NS)).with(namespace(NS))
}

/// SR-1: a runtime without `workerSpec` gets no `ray-tls`; the CA is ensured anyway.
#[test]
fn sr_1_single_node_runtime_gets_no_ray_tls() {
    let cluster = base().with(runtime(NS, "kserve-ovms", false));
    let (outcome, keys) = reconcile_sr(NS, "kserve-ovms", &settings(), &cluster);
    assert!(outcome.error.is_none(), "{outcome:?}");
    assert!(applied_secrets(&outcome, "ray-tls").is_empty());
    let ca = applied_secrets(&outcome, "ray-ca-tls");
    assert_eq!(ca.len(), 1);
    assert_eq!(ca[0].0, CONTROLLER_NS);
    assert_eq!(keys, 1, "one key: the CA's");
}

/// SR-2: a multi-node runtime: `ray-ca-tls` in the controller namespace (type, labels, data)
/// and `ray-tls` in the runtime's namespace holding its certificate.
#[test]
fn sr_2_multi_node_runtime_gets_the_ca_and_ray_tls() {
    let cluster = base().with(runtime(NS, "vllm-multinode-runtime", true));
    let (outcome, _) = reconcile_sr(NS, "vllm-multinode-runtime", &settings(), &cluster);
    assert!(outcome.error.is_none(), "{outcome:?}");
    let ca = outcome.applied("Secret", "ray-ca-tls").unwrap();
    assert_eq!(
        ca.ownership,
        odh_plugin_sdk::Ownership::None,
        "no owner references"
    );
    let ca = ca.object;
    assert_eq!(ca.namespace(), Some(CONTROLLER_NS));
    assert_eq!(ca.str_at(&["type"]), Some("kubernetes.io/tls"));
    assert_eq!(
        ca.at(&["metadata", "labels"]).unwrap(),
        &json!({"opendatahub.io/managed": "true", "app.kubernetes.io/name": "self-signed-cert",
                "app.kubernetes.io/component": "odh-model-serving", "app.kubernetes.io/part-of": "kserve",
                "app.kubernetes.io/managed-by": "odh-model-controller"})
    );
    let crt = entry(&ca, "tls.crt").unwrap();
    Ca::parse(&crt, &entry(&ca, "tls.key").unwrap()).expect("a usable CA");
    let tls = applied_secrets(&outcome, "ray-tls");
    assert_eq!(tls.len(), 1);
    let (ns, tls) = &tls[0];
    assert_eq!(ns, NS);
    assert_eq!(tls.str_at(&["type"]), Some("Opaque"));
    assert_eq!(
        tls.label("app.kubernetes.io/name"),
        Some("self-signed-ray-cert")
    );
    assert_eq!(tls.label("opendatahub.io/managed"), Some("true"));
    assert_eq!(entry(tls, "ca.crt").unwrap(), crt);
    assert_eq!(tls.at(&["data"]).unwrap().as_object().unwrap().len(), 1);
}

/// SR-3 and X-4: a wrong `ca.crt` is corrected; the other keys stay, and the apply carries the
/// resourceVersion it read (compare-and-swap against concurrent writers).
#[test]
fn sr_3_x_4_wrong_ca_crt_is_corrected_and_other_keys_kept() {
    let cluster = base()
        .with(runtime(NS, "vllm-multinode-runtime", true))
        .with(fixture_ca())
        .with(ray_tls(
            NS,
            &[("ca.crt", "wrong-data"), ("10.0.0.5", "pod-entry")],
        ));
    let (outcome, keys) = reconcile_sr(NS, "vllm-multinode-runtime", &settings(), &cluster);
    assert!(outcome.error.is_none(), "{outcome:?}");
    assert_eq!(keys, 0, "a good CA is left alone");
    assert!(outcome.applied("Secret", "ray-ca-tls").is_none());
    let tls = outcome.applied_object("Secret", "ray-tls");
    assert_eq!(entry(&tls, "ca.crt").unwrap(), CA_CRT);
    assert_eq!(entry(&tls, "10.0.0.5").unwrap(), "pod-entry");
    assert_eq!(tls.resource_version(), Some("1"));
}

/// A correct `ray-tls` is not written again.
#[test]
fn a_correct_ray_tls_is_left_alone() {
    let cluster = base()
        .with(runtime(NS, "vllm-multinode-runtime", true))
        .with(fixture_ca())
        .with(ray_tls(
            NS,
            &[("ca.crt", CA_CRT), ("10.0.0.5", "pod-entry")],
        ));
    let (outcome, _) = reconcile_sr(NS, "vllm-multinode-runtime", &settings(), &cluster);
    assert!(
        outcome.apply.is_empty() && outcome.delete.is_empty(),
        "{outcome:?}"
    );
}

/// SR-4: `ray-ca-tls` gone: a new CA, handed to `ray-tls` (here through the CA fan-out of the
/// reconcile the Secret's deletion triggers) and to a user-namespace reconcile.
#[test]
fn sr_4_deleted_ca_is_recreated_and_handed_out() {
    let cluster = base()
        .with(runtime(NS, "vllm-multinode-runtime", true))
        .with(ray_tls(NS, &[("ca.crt", CA_CRT)]));
    let (outcome, keys) = reconcile_sr(CONTROLLER_NS, "ray-ca-tls", &settings(), &cluster);
    assert!(outcome.error.is_none(), "{outcome:?}");
    assert_eq!(keys, 1);
    let ca = outcome.applied_object("Secret", "ray-ca-tls");
    let new_crt = entry(&ca, "tls.crt").unwrap();
    assert_ne!(new_crt, CA_CRT);
    let tls = applied_secrets(&outcome, "ray-tls");
    assert_eq!(tls.len(), 1, "{tls:?}");
    assert_eq!(tls[0].0, NS);
    assert_eq!(entry(&tls[0].1, "ca.crt").unwrap(), new_crt);
}

/// SR-5: `ray-tls` deleted while a multi-node runtime remains: created again.
#[test]
fn sr_5_deleted_ray_tls_is_recreated() {
    let cluster = base()
        .with(runtime(NS, "vllm-multinode-runtime", true))
        .with(fixture_ca());
    let (outcome, _) = reconcile_sr(NS, "ray-tls", &settings(), &cluster);
    let tls = outcome.applied_object("Secret", "ray-tls");
    assert_eq!(entry(&tls, "ca.crt").unwrap(), CA_CRT);
    assert_eq!(tls.resource_version(), None, "a create");
}

/// SR-6: the last multi-node runtime gone: `ray-tls` is deleted; but not for a request named
/// like a Ray Secret (upstream's quirk).
#[test]
fn sr_6_last_multi_node_runtime_deleted_removes_ray_tls_unless_the_request_is_a_ray_secret() {
    let cluster = base()
        .with(runtime(NS, "kserve-ovms", false))
        .with(fixture_ca())
        .with(ray_tls(NS, &[("ca.crt", CA_CRT)]));
    let (outcome, _) = reconcile_sr(NS, "vllm-multinode-runtime", &settings(), &cluster);
    assert_claimed(&outcome, "ray-tls", &format!("uid-{NS}"));
    assert_eq!(outcome.delete[0].namespace.as_deref(), Some(NS));
    // One a user made without the managed label goes too (upstream deletes by name).
    let mut unlabelled = ray_tls(NS, &[("ca.crt", CA_CRT)]);
    unlabelled["metadata"]["labels"] = json!({});
    let (outcome, _) = reconcile_sr(
        NS,
        "vllm-multinode-runtime",
        &settings(),
        &cluster.clone().with(unlabelled),
    );
    assert_claimed(&outcome, "ray-tls", &format!("uid-{NS}"));
    for name in ["ray-tls", "ray-ca-tls"] {
        let (outcome, _) = reconcile_sr(NS, name, &settings(), &cluster);
        assert!(!outcome.deleted("Secret", "ray-tls"), "request {name}");
    }
    let without = base().with(fixture_ca());
    let (outcome, _) = reconcile_sr(NS, "gone", &settings(), &without);
    assert!(
        outcome.delete.is_empty() && outcome.apply.is_empty(),
        "nothing to delete"
    );
}

/// an expired CA is replaced (new key pair); the fan-out of a controller-namespace
/// reconcile sets every multi-node `ray-tls` to exactly `{ca.crt: new}`.
#[test]
fn x_3_expired_ca_is_replaced_and_fanned_out_dropping_pod_entries() {
    let long_ago = SystemTime::now() - Duration::from_secs(4 * 365 * 86_400);
    let old = certs::generate_ca(&mut FixtureKeys::default(), long_ago).unwrap();
    let other = "other-ns";
    let cluster = base()
        .with(namespace(other))
        .with(runtime(NS, "mn-1", true))
        .with(runtime(NS, "mn-2", true))
        .with(runtime(other, "mn", true))
        .with(runtime("single-ns", "single", false))
        .with(ray_ca(&old.cert_pem, &old.key_pem))
        .with(ray_tls(
            NS,
            &[("ca.crt", &old.cert_pem), ("10.0.0.5", "pod-entry")],
        ))
        .with(ray_tls(other, &[("ca.crt", &old.cert_pem)]));
    let (outcome, keys) = reconcile_sr(CONTROLLER_NS, "ray-ca-tls", &settings(), &cluster);
    assert!(outcome.error.is_none(), "{outcome:?}");
    assert_eq!(keys, 1);
    let new = entry(&outcome.applied_object("Secret", "ray-ca-tls"), "tls.crt").unwrap();
    assert_ne!(new, old.cert_pem);
    let mut tls = applied_secrets(&outcome, "ray-tls");
    tls.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        tls.iter().map(|t| t.0.as_str()).collect::<Vec<_>>(),
        [other, NS],
        "once per namespace"
    );
    for (_, secret) in &tls {
        assert_eq!(
            secret.at(&["data"]).unwrap(),
            &json!({"ca.crt": odh_plugin_sdk::base64::encode(new.as_bytes())})
        );
        assert_eq!(secret.resource_version(), Some("1"));
    }
}

/// a CA Secret of the wrong type is deleted (its type cannot change); the reconcile
/// fails so it is retried, and the next one creates it.
#[test]
fn x_3_wrong_type_ca_is_deleted_then_recreated() {
    let mut wrong = fixture_ca();
    wrong["type"] = json!("Opaque");
    let cluster = base().with(runtime(NS, "mn", true)).with(wrong);
    let (outcome, keys) = reconcile_sr(NS, "mn", &settings(), &cluster);
    assert_claimed(&outcome, "ray-ca-tls", "uid-ca");
    assert_eq!(outcome.apply.len(), 1, "only the claim");
    assert_eq!(keys, 0);
    assert!(
        outcome
            .error_message()
            .unwrap()
            .starts_with("failed update self-signed ca certificate secret: ")
    );
}

/// An unparsable CA certificate fails every reconcile (upstream never repairs it).
#[test]
fn unparsable_ca_certificate_fails_the_reconcile() {
    let cluster = base()
        .with(runtime(NS, "mn", true))
        .with(ray_ca("garbage", "garbage"));
    let (outcome, _) = reconcile_sr(NS, "mn", &settings(), &cluster);
    assert!(outcome.apply.is_empty() && outcome.delete.is_empty());
    let message = outcome.error_message().unwrap();
    assert!(
        message.starts_with("failed update self-signed ca certificate secret: "),
        "{message}"
    );
}

/// Upstream's cache cannot see an unlabelled `ray-ca-tls`, so its create fails: we fail the
/// same way rather than take the user's Secret over.
#[test]
fn an_unlabelled_ca_secret_fails_as_already_existing() {
    let mut unlabelled = fixture_ca();
    unlabelled["metadata"]["labels"] = json!({});
    let cluster = base().with(unlabelled);
    let (outcome, _) = reconcile_sr(NS, "x", &settings(), &cluster);
    assert!(outcome.apply.is_empty());
    assert_eq!(
        outcome.error_message(),
        Some(
            "failed update self-signed ca certificate secret: failed creating new certificate secret: secrets \"ray-ca-tls\" already exists"
        )
    );
}

/// Step 1: a namespace that does not exist fails the reconcile (retried).
#[test]
fn a_missing_namespace_fails_the_reconcile() {
    let (outcome, _) = reconcile_sr(
        "gone",
        "x",
        &settings(),
        &cluster().with(namespace(CONTROLLER_NS)),
    );
    assert_eq!(
        outcome.error_message(),
        Some("namespaces \"gone\" not found")
    );
    assert!(outcome.apply.is_empty());
}

fn monitoring(ns: &str) -> Settings {
    Settings {
        monitoring_namespace: Some(ns.into()),
        ..settings()
    }
}

/// the RoleBinding in the monitoring namespace and `openshift-monitoring`, exactly as
/// upstream; a changed one is put back; other namespaces get none.
#[test]
fn x_1_monitoring_role_binding() {
    let cluster = base()
        .with(namespace("mon"))
        .with(namespace("openshift-monitoring"))
        .with(fixture_ca());
    for ns in ["mon", "openshift-monitoring"] {
        let (outcome, _) = reconcile_sr(ns, ns, &monitoring("mon"), &cluster);
        let rb = outcome
            .applied("RoleBinding", "prometheus-ns-access")
            .expect(ns);
        assert_eq!(rb.ownership, odh_plugin_sdk::Ownership::None);
        let rb = rb.object;
        assert_eq!(rb.namespace(), Some(ns));
        assert_eq!(
            rb.at(&["metadata", "labels"]).unwrap(),
            &json!({"opendatahub.io/managed": "true"})
        );
        assert_eq!(
            rb.at(&["roleRef"]).unwrap(),
            &json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "prometheus-ns-access"})
        );
        assert_eq!(
            rb.at(&["subjects"]).unwrap(),
            &json!([{"kind": "ServiceAccount", "name": "prometheus-custom", "namespace": "mon"}])
        );
    }
    let (outcome, _) = reconcile_sr(NS, NS, &monitoring("mon"), &cluster);
    assert!(
        outcome
            .applied("RoleBinding", "prometheus-ns-access")
            .is_none()
    );

    let good = servingruntime::monitoring::desired("mon", "mon").into_value();
    let (outcome, _) = reconcile_sr(
        "mon",
        "mon",
        &monitoring("mon"),
        &cluster.clone().with(good.clone()),
    );
    assert!(
        outcome
            .applied("RoleBinding", "prometheus-ns-access")
            .is_none(),
        "unchanged: no write"
    );
    let mut changed = good;
    changed["subjects"][0]["name"] = json!("someone-else");
    let (outcome, _) = reconcile_sr("mon", "mon", &monitoring("mon"), &cluster.with(changed));
    let rb = outcome.applied_object("RoleBinding", "prometheus-ns-access");
    assert_eq!(
        rb.str_at(&["subjects", "0", "name"])
            .or(rb.at(&["subjects"]).and_then(|s| s[0]["name"].as_str())),
        Some("prometheus-custom")
    );
}

/// without a monitoring namespace no RoleBinding anywhere, `openshift-monitoring` included.
#[test]
fn x_2_no_monitoring_namespace_no_role_binding() {
    let cluster = base()
        .with(namespace("openshift-monitoring"))
        .with(fixture_ca());
    let (outcome, _) = reconcile_sr(
        "openshift-monitoring",
        "openshift-monitoring",
        &settings(),
        &cluster,
    );
    assert!(
        outcome
            .applied("RoleBinding", "prometheus-ns-access")
            .is_none()
    );
    assert!(outcome.error.is_none());
}

/// What the watches enqueue (the table of the doc's controller section).
#[test]
fn watch_mapping() {
    let s = monitoring("mon");
    let secret = |ns: &str, name: &str| {
        Object(
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": ns}}),
        )
    };
    let key = |k: Option<odh_plugin_sdk::RequestKey>| {
        k.map(|k| (k.namespace.unwrap_or_default(), k.name))
    };
    assert_eq!(
        key(map_event(&secret("a", "ray-tls"), &s)),
        Some(("a".into(), "ray-tls".into()))
    );
    assert_eq!(
        key(map_event(&secret("default", "ray-ca-tls"), &s)),
        Some(("default".into(), "ray-ca-tls".into()))
    );
    assert_eq!(key(map_event(&secret("a", "storage-config"), &s)), None);
    let ns = |n: &str| Object(namespace(n));
    assert_eq!(
        key(map_event(&ns("mon"), &s)),
        Some(("mon".into(), "mon".into()))
    );
    assert_eq!(
        key(map_event(&ns("openshift-monitoring"), &settings())),
        Some(("openshift-monitoring".into(), "openshift-monitoring".into()))
    );
    assert_eq!(key(map_event(&ns("other"), &s)), None);
    let rb = |labels| {
        Object(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "rb", "namespace": "a", "labels": labels}}),
        )
    };
    assert_eq!(
        key(map_event(
            &rb(json!({"opendatahub.io/managed": "false"})),
            &s
        )),
        Some(("a".into(), "rb".into()))
    );
    assert_eq!(key(map_event(&rb(json!({})), &s)), None);
    let mut unlabelled = rb(json!({})).into_value();
    unlabelled["metadata"]["name"] = json!("prometheus-ns-access");
    assert_eq!(
        key(map_event(&Object(unlabelled), &s)),
        Some(("a".into(), "prometheus-ns-access".into())),
        "the monitoring RoleBinding whose label was removed"
    );
    // Through the export, as the host calls it.
    let cx_cluster = cluster();
    let cx = odh_plugin_sdk::Ctx::new(&s, &cx_cluster);
    let event = WatchEvent::for_object("servingruntime", &secret("a", "ray-tls"), true);
    assert_eq!(ServingRuntime::map(&event, &cx).unwrap().len(), 1);
}

/// The manifest: two controllers, the managed-Secret and predictor-Pod cache filters, writes
/// of Secrets and RoleBindings only; the Pod event filter.
#[test]
fn manifest_declares_upstreams_cache_filters() {
    let m = ServingRuntime::manifest();
    assert_eq!(m.name, "servingruntime");
    let names: Vec<&str> = m.controllers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["servingruntime", "core-pod"]);
    assert_eq!(
        m.controllers[1].primary_label_selector.as_deref(),
        Some("component=predictor")
    );
    // Both controllers watch the managed Secrets: core-pod maps a `ray-tls` change to its
    // namespace's Ray TLS pods (without it an entry a fan-out removed never comes back).
    for controller in &m.controllers {
        let secret_watch = controller
            .watches
            .iter()
            .find(|w| w.gvk.kind == "Secret")
            .unwrap_or_else(|| panic!("{} watches no Secret", controller.name));
        assert_eq!(
            secret_watch.label_selector.as_deref(),
            Some("opendatahub.io/managed=true")
        );
    }
    let mut writes: Vec<&str> = m.writes.iter().map(|g| g.kind.as_str()).collect();
    writes.sort();
    assert_eq!(writes, ["RoleBinding", "Secret"]);
    // Upstream's Pod predicate: creations, IP changes, no deletions.
    let filters = ServingRuntime::event_filters();
    let [pods] = filters.as_slice() else {
        panic!("one filter: {filters:?}")
    };
    assert_eq!(
        (pods.controller.as_str(), pods.gvk.kind.as_str()),
        ("core-pod", "Pod")
    );
    assert!(pods.create && !pods.delete);
    assert_eq!(
        pods.update,
        odh_plugin_sdk::UpdateFilter::Changed(vec!["/status/podIP".into()])
    );
}

/// A RoleBinding that loses its managed label still maps (its old state carried it), as
/// upstream's map function sees both objects of an update; one that never had it does not.
#[test]
fn a_role_binding_losing_its_label_still_maps() {
    let labelled = Object(
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "rb", "namespace": NS, "labels": {"opendatahub.io/managed": "true"}}}),
    );
    let unlabelled = Object(
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "rb", "namespace": NS}}),
    );
    let settings = Settings::default();
    let cluster = base();
    let cx = odh_plugin_sdk::Ctx::new(&settings, &cluster);
    let map = |old: Option<&Object>| {
        let change = WatchChange::for_objects("servingruntime", old, &unlabelled, false);
        ServingRuntime::map_change(&change, &cx).unwrap()
    };
    assert_eq!(
        map(Some(&labelled)),
        [odh_plugin_sdk::request_key(Some(NS), "rb")]
    );
    assert!(map(Some(&unlabelled)).is_empty());
    assert!(map(None).is_empty());
}
