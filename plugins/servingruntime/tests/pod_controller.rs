//! The Pod controller's decisions (docs/plugins/servingruntime.md, "Controller `core-pod`";
//! scenarios PC-1..PC-16, X-9, X-10).

mod common;

use std::time::SystemTime;

use common::*;
use odh_plugin_sdk::{Object, Value, json};
use servingruntime::certs::Ca;
use servingruntime::pod::{ip_changed, is_ray_tls_pod};

const NS: &str = "test-namespace";

fn pod_with(containers: Value) -> Object {
    Object(
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": NS},
                  "spec": {"containers": containers}}),
    )
}

fn env(pairs: &[(&str, Option<&str>)]) -> Value {
    Value::Array(
        pairs
            .iter()
            .map(|(n, v)| match v {
                Some(v) => json!({"name": n, "value": v}),
                None => json!({"name": n}),
            })
            .collect(),
    )
}

fn container(name: &str, env: Value) -> Value {
    json!({"name": name, "env": env})
}

#[test]
fn pc_1_to_pc_9_ray_tls_pod_predicate() {
    let kserve = |e| pod_with(json!([container("kserve-container", e)]));
    // PC-1
    assert!(is_ray_tls_pod(&kserve(env(&[
        ("RAY_USE_TLS", Some("1")),
        ("OTHER_VAR", Some("x"))
    ]))));
    // PC-2
    assert!(is_ray_tls_pod(&kserve(env(&[
        ("PATH", Some("/bin")),
        ("HOME", Some("/root")),
        ("OTHER_VAR", Some("x")),
        ("RAY_USE_TLS", Some("1")),
        ("ANOTHER_VAR", Some("y")),
    ]))));
    // PC-3
    assert!(!is_ray_tls_pod(&kserve(env(&[("RAY_USE_TLS", Some("0"))]))));
    // PC-4: empty counts as on, as does an absent value (valueFrom)
    assert!(is_ray_tls_pod(&kserve(env(&[("RAY_USE_TLS", Some(""))]))));
    assert!(is_ray_tls_pod(&kserve(env(&[("RAY_USE_TLS", None)]))));
    // PC-5
    assert!(!is_ray_tls_pod(&kserve(env(&[("OTHER_VAR", Some("1"))]))));
    // PC-6
    assert!(is_ray_tls_pod(&pod_with(json!([container(
        "worker-container",
        env(&[("OTHER_VAR", Some("x")), ("RAY_USE_TLS", Some("1"))])
    )]))));
    // PC-7
    assert!(is_ray_tls_pod(&pod_with(json!([
        container("init-container", env(&[("OTHER_VAR", Some("x"))])),
        container("kserve-container", env(&[("RAY_USE_TLS", Some("1"))])),
    ]))));
    // PC-8
    assert!(!is_ray_tls_pod(&pod_with(json!([container(
        "some-other-container",
        env(&[("RAY_USE_TLS", Some("1"))])
    )]))));
    // PC-9
    assert!(!is_ray_tls_pod(&pod_with(json!([]))));
}

#[test]
fn pc_10_to_pc_15_ip_change_predicate() {
    let with_ip = |ip: &str| Object(json!({"status": {"podIP": ip}}));
    assert!(ip_changed(None, &with_ip("192.168.1.1"))); // PC-10
    assert!(!ip_changed(None, &with_ip(""))); // PC-11
    assert!(ip_changed(
        Some(&with_ip("192.168.1.1")),
        &with_ip("192.168.1.2")
    )); // PC-12
    assert!(!ip_changed(
        Some(&with_ip("192.168.1.1")),
        &with_ip("192.168.1.1")
    )); // PC-13
    assert!(ip_changed(Some(&with_ip("192.168.1.1")), &with_ip(""))); // PC-14
    assert!(ip_changed(Some(&with_ip("")), &with_ip("192.168.1.1"))); // PC-15
}

fn base() -> odh_plugin_sdk::testing::FakeCluster {
    cluster()
        .with(fixture_ca())
        .with(ray_tls(NS, &[("ca.crt", CA_CRT)]))
}

/// a Ray TLS pod with IP 10.0.0.5 gets `ray-tls["10.0.0.5"]`: a certificate of the CA for
/// that IP, then a key; stale IPs go, `ca.crt` stays; the apply carries the resourceVersion.
#[test]
fn x_9_pod_certificate_written_under_the_pod_ip_and_stale_ips_pruned() {
    let pod = ray_pod(NS, "p1", "10.0.0.5");
    let cluster = cluster()
        .with(fixture_ca())
        .with(ray_tls(
            NS,
            &[
                ("ca.crt", CA_CRT),
                ("10.9.9.9", "stale"),
                ("10.0.0.6", "other pod"),
            ],
        ))
        .with(pod.clone())
        .with(ray_pod(NS, "p2", "10.0.0.6"));
    let (outcome, keys) = reconcile_pod(&pod, &cluster);
    assert!(outcome.error.is_none(), "{outcome:?}");
    assert_eq!(keys, 1);
    let tls = outcome.applied_object("Secret", "ray-tls");
    assert_eq!(tls.resource_version(), Some("1"));
    let keys: Vec<&String> = tls
        .at(&["data"])
        .unwrap()
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["10.0.0.5", "10.0.0.6", "ca.crt"]);
    assert_eq!(entry(&tls, "ca.crt").unwrap(), CA_CRT);
    assert_eq!(entry(&tls, "10.0.0.6").unwrap(), "other pod");
    let value = entry(&tls, "10.0.0.5").unwrap();
    let ca = Ca::parse(CA_CRT, CA_KEY_PKCS1).unwrap();
    assert!(ca.issued_for(&value, "10.0.0.5", SystemTime::now()));
    assert!(value.contains("-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\n"));
    assert_eq!(
        tls.label("opendatahub.io/managed"),
        Some("true"),
        "the whole object is declared"
    );
}

/// A pod whose entry is already good is left alone (no rotation on every event).
#[test]
fn a_good_entry_is_not_rotated() {
    let pod = ray_pod(NS, "p1", "10.0.0.5");
    let ca = Ca::parse(CA_CRT, CA_KEY_PKCS1).unwrap();
    let good = ca
        .issue(
            &mut FixtureKeys::default(),
            SystemTime::now(),
            &["10.0.0.5"],
            &[],
        )
        .unwrap();
    let cluster = cluster()
        .with(fixture_ca())
        .with(ray_tls(NS, &[("ca.crt", CA_CRT), ("10.0.0.5", &good)]))
        .with(pod.clone());
    let (outcome, keys) = reconcile_pod(&pod, &cluster);
    assert!(outcome.apply.is_empty(), "{outcome:?}");
    assert_eq!(keys, 0);
    // An entry of another CA (after a CA change) is replaced.
    let cluster = cluster.with(ray_tls(
        NS,
        &[("ca.crt", CA_CRT), ("10.0.0.5", "not a certificate")],
    ));
    let (outcome, keys) = reconcile_pod(&pod, &cluster);
    assert_eq!(keys, 1);
    assert!(outcome.applied("Secret", "ray-tls").is_some());
}

/// `ray-ca-tls` or `ray-tls` missing (or unlabelled, which upstream cannot see): an
/// error, retried.
#[test]
fn x_10_missing_secrets_fail_the_reconcile() {
    let pod = ray_pod(NS, "p1", "10.0.0.5");
    let (outcome, _) = reconcile_pod(
        &pod,
        &cluster()
            .with(ray_tls(NS, &[("ca.crt", CA_CRT)]))
            .with(pod.clone()),
    );
    assert_eq!(
        outcome.error_message(),
        Some("secrets \"ray-ca-tls\" not found")
    );
    assert_eq!(outcome.error.as_ref().unwrap().kind(), "transient");
    let (outcome, _) = reconcile_pod(&pod, &cluster().with(fixture_ca()).with(pod.clone()));
    assert_eq!(
        outcome.error_message(),
        Some("secrets \"ray-tls\" not found")
    );
    let mut unlabelled = ray_tls(NS, &[("ca.crt", CA_CRT)]);
    unlabelled["metadata"]["labels"] = json!({});
    let (outcome, _) = reconcile_pod(
        &pod,
        &cluster()
            .with(fixture_ca())
            .with(unlabelled)
            .with(pod.clone()),
    );
    assert_eq!(
        outcome.error_message(),
        Some("secrets \"ray-tls\" not found")
    );
    assert!(outcome.apply.is_empty());
}

/// Pods that are not Ray TLS pods, have no IP yet, or are gone: nothing to do. An IPv6 IP is
/// a clear error with no fast retry (upstream retries forever).
#[test]
fn pods_without_a_usable_ip() {
    let cluster = base();
    let mut plain = ray_pod(NS, "p", "10.0.0.5");
    plain["spec"]["containers"][0]["env"] = json!([]);
    assert!(reconcile_pod(&plain, &cluster).0.apply.is_empty());
    let (outcome, _) = reconcile_pod(&ray_pod(NS, "p", ""), &cluster);
    assert!(outcome.apply.is_empty() && outcome.error.is_none());
    let (outcome, _) = reconcile_pod(&ray_pod(NS, "p", "fd00::5"), &cluster);
    assert!(outcome.apply.is_empty());
    let error = outcome.error.unwrap();
    assert_eq!(error.kind(), "invalid");
    assert!(
        error.message().contains("\"fd00::5\""),
        "{}",
        error.message()
    );
    let gone = odh_plugin_sdk::ReconcileRequest::new("core-pod", Some(NS), "p");
    assert!(
        reconcile_with(gone, &settings(), &cluster)
            .0
            .apply
            .is_empty()
    );
}

/// A minimal API server for `ray-tls`: an apply carrying a resourceVersion other than the
/// stored one is a conflict; an accepted apply stores the data and bumps the version.
fn server_apply(stored: &mut Value, applied: &Object) -> Result<(), &'static str> {
    let want = applied.resource_version();
    if want.is_some() && want != stored["metadata"]["resourceVersion"].as_str() {
        return Err("Conflict");
    }
    let next = stored["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse::<u64>()
        .unwrap()
        + 1;
    stored["data"] = applied.at(&["data"]).unwrap().clone();
    stored["metadata"]["resourceVersion"] = json!(next.to_string());
    Ok(())
}

/// PC-16: three pods reconciled at once from the same `ray-tls`: every apply carries the
/// version it read, so only one lands; the others conflict and, retried from the new
/// version, land in turn: all three entries end up in `ray-tls`.
#[test]
fn pc_16_concurrent_pods_lose_no_update() {
    let pods: Vec<Value> = (1..=3)
        .map(|i| ray_pod(NS, &format!("pod-{i}"), &format!("192.168.1.{i}")))
        .collect();
    let mut stored = ray_tls(NS, &[("ca.crt", CA_CRT)]);
    let mut pending: Vec<&Value> = pods.iter().collect();
    let mut rounds = 0;
    while !pending.is_empty() {
        rounds += 1;
        assert!(rounds <= 3, "converges within one retry per pod");
        let cluster = cluster()
            .with(fixture_ca())
            .with(stored.clone())
            .with_all(pods.clone());
        // Every pending pod decides from the same read, as concurrent workers do.
        let applies: Vec<(&Value, Object)> = pending
            .iter()
            .map(|pod| {
                let (outcome, _) = reconcile_pod(pod, &cluster);
                assert!(outcome.error.is_none());
                (*pod, outcome.applied_object("Secret", "ray-tls"))
            })
            .collect();
        pending = applies
            .into_iter()
            .filter(|(_, applied)| server_apply(&mut stored, applied).is_err())
            .map(|(pod, _)| pod)
            .collect();
    }
    let ca = Ca::parse(CA_CRT, CA_KEY_PKCS1).unwrap();
    let stored = Object(stored);
    for i in 1..=3 {
        let ip = format!("192.168.1.{i}");
        let value = entry(&stored, &ip).unwrap_or_default();
        assert!(ca.issued_for(&value, &ip, SystemTime::now()), "{ip} kept");
    }
    assert_eq!(entry(&stored, "ca.crt").unwrap(), CA_CRT);
}

/// Beyond upstream: a change of `ray-tls` (a CA fan-out drops every per-pod entry) maps to the
/// namespace's Ray TLS pods that have an IP, so each gets its certificate back; a deletion maps
/// to none; the ServingRuntime controller's mapping is untouched.
#[test]
fn a_ray_tls_change_re_reconciles_the_namespaces_ray_tls_pods() {
    use odh_plugin_sdk::{Ctx, Plugin, WatchEvent};
    use servingruntime::ServingRuntime;
    let mut plain = ray_pod(NS, "plain", "10.0.0.7");
    plain["spec"]["containers"][0]["env"] = json!([]);
    let cluster = base()
        .with(ray_pod(NS, "head", "10.0.0.5"))
        .with(ray_pod(NS, "pending", ""))
        .with(plain)
        .with(ray_pod("elsewhere", "other", "10.0.0.9"));
    let settings = settings();
    let cx = Ctx::new(&settings, &cluster);
    let tls = Object(ray_tls(NS, &[("ca.crt", CA_CRT)]));
    let keys = ServingRuntime::map(&WatchEvent::for_object("core-pod", &tls, false), &cx).unwrap();
    let names: Vec<String> = keys
        .iter()
        .map(|k| format!("{}/{}", k.namespace.as_deref().unwrap(), k.name))
        .collect();
    assert_eq!(names, [format!("{NS}/head")]);
    let deleted =
        ServingRuntime::map(&WatchEvent::for_object("core-pod", &tls, true), &cx).unwrap();
    assert!(deleted.is_empty());
    let ca = Object(fixture_ca());
    assert!(
        ServingRuntime::map(&WatchEvent::for_object("core-pod", &ca, false), &cx)
            .unwrap()
            .is_empty()
    );
    let for_sr =
        ServingRuntime::map(&WatchEvent::for_object("servingruntime", &tls, false), &cx).unwrap();
    assert_eq!(for_sr.len(), 1);
    assert_eq!(for_sr[0].name, "ray-tls");
}
