//! The controller as a whole (docs/plugins/nim-account.md: the controller, `NIM_STATE=removed`,
//! the webhook): C1–C3, a new Account
//! driven to healthy through a simulated host, the NIM-disabled cleanup (U1, U2), the webhook
//! (W1), the watch mappings and the manifest.

mod support;

use nim_account::names::condition::*;
use nim_account::status::Status;
use nim_account::{NimAccount, reconcile_at};
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::testing::FakeCluster;
use odh_plugin_sdk::{
    AdmissionRequest, Ctx, FinalizerAction, Object, Operation, Outcome, Plugin, WatchEvent, json,
};
use support::nvidia::{LEGACY_KEY, PERSONAL_KEY};
use support::*;

const FINALIZER: &str = "runtimes.opendatahub.io/nim-cleanup-finalizer";

fn without_finalizer(mut account: Object) -> Object {
    account.remove(&["metadata", "finalizers"]);
    account
}

fn run(
    account: &Object,
    cluster: &FakeCluster,
    http: &odh_plugin_sdk::http::Fake,
    now: &str,
) -> Outcome {
    reconcile_at(account, cluster, http, &settings(), now).into_outcome()
}

fn status_of(outcome: &Outcome) -> Option<Status> {
    outcome
        .status
        .as_deref()
        .map(|s| serde_json::from_str(s).unwrap())
}

/// C1: an Account without the finalizer gets it and is requeued; no handler runs (the
/// API-key Secret does not even exist).
#[test]
fn c1_finalizer_added_first() {
    let http = nvidia();
    let outcome = run(
        &without_finalizer(account("testing-nim-controller-1")),
        &cluster(),
        &http,
        &now(),
    );
    assert_eq!(outcome.finalizer, FinalizerAction::Add);
    assert!(outcome.requeue_after_ms.is_some());
    assert!(outcome.status.is_none() && outcome.apply.is_empty() && http.requests().is_empty());
}

/// C2: everything in place and fresh: no HTTP, template and pull secret re-applied without a
/// status change, then AccountStatus True and lastAccountCheck; no immediate requeue (only the
/// refresh-rate one, a divergence).
#[test]
fn c2_healthy_account_makes_no_calls() {
    let ns = "testing-nim-controller-2";
    let key = "testing-nim-controller-2";
    let cm = Object(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("{ns}-cm"), "namespace": ns, "uid": "cm", "labels": {"opendatahub.io/managed": "true"}}}));
    let pull = Object(
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"name": format!("{ns}-pull"), "namespace": ns, "uid": "pull", "labels": {"opendatahub.io/managed": "true"}},
        "data": {".dockerconfigjson": odh_plugin_sdk::base64::encode(nim_account::reconcile::docker_config(key))}}),
    );
    let template = Object(
        json!({"apiVersion": "template.openshift.io/v1", "kind": "Template",
        "metadata": {"name": format!("{ns}-template"), "namespace": ns, "uid": "tpl", "labels": {"opendatahub.io/managed": "true"},
                     "annotations": {"opendatahub.io/apiProtocol": "REST", "opendatahub.io/modelServingSupport": "[\"single\"]"}},
        "objects": [nim_account::runtime_template::serving_runtime(false)]}),
    );
    let cluster = cluster()
        .with(api_key_secret(ns, key))
        .with(cm)
        .with(pull)
        .with(template);
    let ok = |type_: &str, reason: &str, message: &str| {
        json!({"type": type_, "status": "True", "reason": reason,
        "message": message, "observedGeneration": 1, "lastTransitionTime": now()})
    };
    let account = with_status(
        account(ns),
        json!({
            "nimConfig": reference("ConfigMap", "v1", ns, &format!("{ns}-cm"), "cm"),
            "nimPullSecret": reference("Secret", "v1", ns, &format!("{ns}-pull"), "pull"),
            "runtimeTemplate": reference("Template", "template.openshift.io/v1", ns, &format!("{ns}-template"), "tpl"),
            "lastSuccessfulValidation": now(), "lastSuccessfulConfigRefresh": now(),
            "conditions": [
                condition(ACCOUNT_STATUS, "False", &now()),
                ok(API_KEY_VALIDATION, "ApiKeyValidated", "api key validated successfully"),
                ok(CONFIG_MAP_UPDATE, "ConfigMapUpdated", "nim config reconciled successfully"),
                ok(TEMPLATE_UPDATE, "TemplateUpdated", "runtime template reconciled successfully"),
                ok(SECRET_UPDATE, "SecretUpdated", "pull secret reconciled successfully"),
            ]
        }),
    );
    let http = nvidia();
    let outcome = run(&account, &cluster, &http, &now());
    assert!(http.requests().is_empty());
    assert!(outcome.error.is_none());
    assert_eq!(
        outcome.applied_kinds(),
        [
            format!("Template/{ns}-template"),
            format!("Secret/{ns}-pull")
        ]
    );
    let status = status_of(&outcome).expect("status");
    assert_eq!(status.last_account_check, Some(now()));
    let c = cond(&status, ACCOUNT_STATUS);
    assert_eq!(
        (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
        ("True", "AccountSuccessful", "the account is healthy")
    );
    // Divergence: reconcile again when the refresh rates are due (24 h), not right away.
    assert_eq!(outcome.requeue_after_ms, Some((24 * 3600 + 1) * 1000));
}

/// C3: a deleted Account with the finalizer: what its status references is deleted, and the
/// finalizer is released once nothing it made is left (a failed delete leaves its object, so
/// the next pass deletes again and the finalizer stays, as upstream's error keeps it).
#[test]
fn c3_deletion_cleans_up() {
    let ns = "testing-nim-controller-3";
    let mut account = with_status(
        account(ns),
        json!({
            "nimConfig": reference("ConfigMap", "v1", ns, &format!("{ns}-cm"), "cm"),
            "nimPullSecret": reference("Secret", "v1", ns, &format!("{ns}-pull"), "pull"),
            "runtimeTemplate": reference("Template", "template.openshift.io/v1", ns, &format!("{ns}-template"), "tpl"),
        }),
    );
    account.set(&["metadata", "deletionTimestamp"], now());
    let made = |kind: &str, api_version: &str, name: String| {
        json!({"apiVersion": api_version, "kind": kind,
               "metadata": {"name": name, "namespace": ns,
                            "ownerReferences": [{"apiVersion": "nim.opendatahub.io/v1", "kind": "Account",
                                                 "name": ns, "uid": format!("uid-{ns}"), "controller": true}]}})
    };
    let mut there = cluster();
    there.insert(made("ConfigMap", "v1", format!("{ns}-cm")));
    there.insert(made("Secret", "v1", format!("{ns}-pull")));
    there.insert(made(
        "Template",
        "template.openshift.io/v1",
        format!("{ns}-template"),
    ));

    // Everything it made is there: deleted, and the finalizer waits for it.
    let outcome = run(&account, &there, &nvidia(), &now());
    assert_eq!(outcome.finalizer, FinalizerAction::Keep);
    assert!(outcome.deleted("ConfigMap", &format!("{ns}-cm")));
    assert!(outcome.deleted("Secret", &format!("{ns}-pull")));
    assert!(outcome.deleted("Template", &format!("{ns}-template")));
    assert!(outcome.requeue_after_ms.is_some() && outcome.error.is_none());

    // One delete failed (the ConfigMap is still there): only it is deleted again.
    there.remove(&odh_kinds::gvk::secret(), Some(ns), &format!("{ns}-pull"));
    there.remove(
        &odh_kinds::gvk::template(),
        Some(ns),
        &format!("{ns}-template"),
    );
    let outcome = run(&account, &there, &nvidia(), &now());
    assert_eq!(outcome.finalizer, FinalizerAction::Keep);
    assert_eq!(outcome.delete.len(), 1);
    assert!(outcome.deleted("ConfigMap", &format!("{ns}-cm")));

    // All gone: the finalizer is released, nothing left to delete.
    let outcome = run(&account, &cluster(), &nvidia(), &now());
    assert_eq!(outcome.finalizer, FinalizerAction::Remove);
    assert!(outcome.delete.is_empty());
    assert!(outcome.requeue_after_ms.is_none() && outcome.error.is_none());

    // What it did not make (no owner reference to it) is asked to go, not waited for: the host
    // may refuse to delete an object it does not manage.
    let mut foreign = cluster();
    foreign.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": format!("{ns}-cm"), "namespace": ns}}));
    let outcome = run(&account, &foreign, &nvidia(), &now());
    assert_eq!(outcome.finalizer, FinalizerAction::Remove);
    assert!(outcome.deleted("ConfigMap", &format!("{ns}-cm")));

    // Without our finalizer nothing is done.
    let outcome = run(&without_finalizer(account), &there, &nvidia(), &now());
    assert_eq!(outcome.finalizer, FinalizerAction::Keep);
    assert!(outcome.delete.is_empty());
}

/// The host as far as these tests need it: applies objects (a uid on creation), the status
/// and the finalizer, and reconciles again while a requeue is asked for right away.
fn drive(
    mut account: Object,
    cluster: &mut FakeCluster,
    http: &odh_plugin_sdk::http::Fake,
) -> (Object, usize) {
    for pass in 1..=12 {
        let outcome = run(&account, cluster, http, &now());
        assert!(outcome.error.is_none(), "pass {pass}: {:?}", outcome.error);
        outcome.assert_declared(&NimAccount::manifest());
        for applied in outcome.applied_objects() {
            let mut object = applied.object;
            let existing = cluster
                .get_object(&object.gvk(), object.namespace(), object.name())
                .unwrap();
            let uid = existing
                .and_then(|e| e.uid().map(str::to_string))
                .unwrap_or(format!("uid-{}", object.name()));
            object.set(&["metadata", "uid"], uid);
            cluster.insert(object);
        }
        if outcome.finalizer == FinalizerAction::Add {
            account.set(&["metadata", "finalizers"], json!([FINALIZER]));
        }
        if let Some(status) = &outcome.status {
            account.set(
                &["status"],
                serde_json::from_str::<odh_plugin_sdk::Value>(status).unwrap(),
            );
        }
        if outcome.requeue_after_ms.is_none_or(|ms| ms > 1000) {
            return (account, pass);
        }
    }
    panic!("no steady state after 12 passes: {}", account.0);
}

/// A new Account with a personal key becomes healthy: finalizer, validation, ConfigMap,
/// Template, pull Secret (each reference completed with its uid), then AccountStatus True.
#[test]
fn new_account_converges_to_healthy() {
    let ns = "nim-converge";
    let mut cluster = cluster().with(api_key_secret(ns, PERSONAL_KEY));
    let http = nvidia();
    let (account, passes) = drive(without_finalizer(account(ns)), &mut cluster, &http);
    let status = Status::of(&account);
    for type_ in [
        ACCOUNT_STATUS,
        API_KEY_VALIDATION,
        CONFIG_MAP_UPDATE,
        TEMPLATE_UPDATE,
        SECRET_UPDATE,
    ] {
        assert!(is_true(&status, type_), "{type_} in {}", account.0);
    }
    assert_eq!(
        status.nim_config.as_ref().unwrap().uid.as_deref(),
        Some("uid-nim-converge-cm")
    );
    assert_eq!(
        status.runtime_template.as_ref().unwrap().uid.as_deref(),
        Some("uid-nim-converge-template")
    );
    assert_eq!(
        status.nim_pull_secret.as_ref().unwrap().uid.as_deref(),
        Some("uid-nim-converge-pull")
    );
    assert!(passes <= 9, "{passes} passes");
    // Steady: another pass asks for nothing but the refresh.
    http.clear();
    let outcome = run(&account, &cluster, &http, &now());
    assert!(http.requests().is_empty());
    assert!(outcome.status.is_none(), "{:?}", outcome.status);
}

/// Air-gapped (one DataScienceCluster with nim.airGapped): no NVIDIA calls, the ConfigMap
/// reference points into the applications namespace, the runtime has no NGC key, and the pull
/// Secret is still made from the key.
#[test]
fn air_gapped_account_converges_without_nvidia() {
    let ns = "nim-air-gapped";
    let dsc = json!({"apiVersion": "datasciencecluster.opendatahub.io/v1", "kind": "DataScienceCluster",
                     "metadata": {"name": "default-dsc"}, "spec": {"components": {"kserve": {"nim": {"airGapped": true}}}}});
    let dsci = json!({"apiVersion": "dscinitialization.opendatahub.io/v1", "kind": "DSCInitialization",
                      "metadata": {"name": "default-dsci"}, "spec": {"applicationsNamespace": "opendatahub"}});
    let mut cluster = cluster()
        .with(api_key_secret(ns, LEGACY_KEY))
        .with(dsc)
        .with(dsci);
    let http = nvidia();
    let (account, _) = drive(without_finalizer(account(ns)), &mut cluster, &http);
    assert!(http.requests().is_empty());
    let status = Status::of(&account);
    assert!(is_true(&status, ACCOUNT_STATUS));
    assert_eq!(
        cond(&status, CONFIG_MAP_UPDATE).message,
        "configmap update marked successful because NIM air-gapped mode is enabled"
    );
    assert_eq!(
        status.nim_config.as_ref().unwrap().namespace.as_deref(),
        Some("opendatahub")
    );
    let template = cluster
        .get_object(
            &odh_kinds::gvk::template(),
            Some(ns),
            &format!("{ns}-template"),
        )
        .unwrap()
        .unwrap();
    assert!(
        template.array_at(&["objects"])[0]["spec"]
            .get("imagePullSecrets")
            .is_none()
    );
    assert!(
        cluster
            .get_object(&odh_kinds::gvk::secret(), Some(ns), &format!("{ns}-pull"))
            .unwrap()
            .is_some()
    );
}

/// Refresh rates are honoured with a requeue: the next reconcile is due when the sooner rate
/// runs out (divergence: upstream waits for an event or the 10 h resync).
#[test]
fn refresh_rates_set_the_requeue() {
    let ns = "nim-refresh";
    let mut cluster = cluster().with(api_key_secret(ns, PERSONAL_KEY));
    let mut account = account(ns);
    account.set(&["spec", "validationRefreshRate"], "1h");
    account.set(&["spec", "nimConfigRefreshRate"], "2h");
    let (account, _) = drive(account, &mut cluster, &nvidia());
    let outcome = run(&account, &cluster, &nvidia(), &now());
    assert_eq!(outcome.requeue_after_ms, Some(3601 * 1000));
    // An hour and a bit later the key is validated again.
    let http = nvidia();
    let outcome = run(&account, &cluster, &http, &later(3601));
    assert!(http.summary().iter().any(|r| r.contains("get-caller-info")));
    assert!(outcome.requeue_after_ms.is_some());
}

/// A zero refresh rate re-validates on every reconcile (upstream's reading) but the refresh
/// requeue comes back no sooner than a minute.
#[test]
fn a_zero_refresh_rate_requeues_after_a_minute() {
    let ns = "nim-refresh-zero";
    let mut cluster = cluster().with(api_key_secret(ns, PERSONAL_KEY));
    let mut account = account(ns);
    account.set(&["spec", "validationRefreshRate"], "0s");
    let (account, _) = drive(account, &mut cluster, &nvidia());
    let outcome = run(&account, &cluster, &nvidia(), &later(1));
    assert_eq!(
        outcome.requeue_after_ms,
        Some(nim_account::reconcile::REQUEUE_MS),
        "re-validated"
    );
    let (settings, http) = (settings(), nvidia());
    let now = now();
    let pass = nim_account::reconcile::Pass::new(&account, &cluster, &http, &settings, &now);
    assert_eq!(pass.next_refresh_ms(), 60_000);
}

/// U1: NIM removed and no Accounts: nothing to do (the reconcile of a gone Account is empty).
#[test]
fn u1_disabled_without_accounts() {
    let settings = nim_account::settings::Settings {
        nim_state: Some("removed".into()),
        ..Default::default()
    };
    let cluster = cluster();
    let request = odh_plugin_sdk::ReconcileRequest::new("odh-nim-controller", Some("ns"), "gone");
    let outcome = NimAccount::reconcile(&request, &Ctx::new(&settings, &cluster)).unwrap();
    assert!(outcome.apply.is_empty() && outcome.delete.is_empty() && outcome.status.is_none());
}

/// U2: NIM removed: the referenced objects deleted, the references and timestamps dropped,
/// the five conditions Unknown "NIM has been disabled"; the finalizer left alone.
#[test]
fn u2_disabled_cleans_up_and_marks_the_account() {
    let ns = "nim-disabled";
    let t = |type_: &str| condition(type_, "True", &ago(60));
    let account = with_status(
        account(ns),
        json!({
            "nimConfig": reference("ConfigMap", "v1", ns, &format!("{ns}-cm"), "cm"),
            "nimPullSecret": reference("Secret", "v1", ns, &format!("{ns}-pull"), "pull"),
            "runtimeTemplate": reference("Template", "template.openshift.io/v1", ns, &format!("{ns}-template"), "tpl"),
            "lastSuccessfulValidation": ago(60), "lastAccountCheck": ago(60),
            "conditions": [t(ACCOUNT_STATUS), t(API_KEY_VALIDATION), t(CONFIG_MAP_UPDATE), t(TEMPLATE_UPDATE), t(SECRET_UPDATE)]
        }),
    );
    let settings = nim_account::settings::Settings {
        nim_state: Some("removed".into()),
        ..Default::default()
    };
    let http = nvidia();
    let outcome = reconcile_at(&account, &cluster(), &http, &settings, &now()).into_outcome();
    assert!(outcome.deleted("ConfigMap", &format!("{ns}-cm")));
    assert!(outcome.deleted("Secret", &format!("{ns}-pull")));
    assert!(outcome.deleted("Template", &format!("{ns}-template")));
    assert_eq!(outcome.finalizer, FinalizerAction::Keep);
    let status = status_of(&outcome).unwrap();
    assert!(
        status.nim_config.is_none()
            && status.last_successful_validation.is_none()
            && status.last_account_check.is_none()
    );
    let reasons: Vec<(&str, &str, &str)> = status
        .conditions
        .iter()
        .map(|c| (c.type_.as_str(), c.status.as_str(), c.reason.as_str()))
        .collect();
    assert_eq!(
        reasons,
        [
            (ACCOUNT_STATUS, "Unknown", "AccountNotReconciled"),
            (API_KEY_VALIDATION, "Unknown", "ApiKeyNotReconciled"),
            (CONFIG_MAP_UPDATE, "Unknown", "ConfigMapNotReconciled"),
            (TEMPLATE_UPDATE, "Unknown", "TemplateNotReconciled"),
            (SECRET_UPDATE, "Unknown", "SecretNotReconciled"),
        ]
    );
    assert!(
        status
            .conditions
            .iter()
            .all(|c| c.message == "NIM has been disabled")
    );
    assert!(http.requests().is_empty());
    // Idempotent: once disabled, a repeat writes nothing.
    let disabled = with_status(account, serde_json::to_value(&status).unwrap());
    let again = reconcile_at(&disabled, &cluster(), &http, &settings, &later(60)).into_outcome();
    assert!(again.status.is_none());
}

fn account_review(operation: Operation, ns: &str, name: &str) -> AdmissionRequest {
    let mut object = account(ns);
    object.set(&["metadata", "name"], name);
    AdmissionRequest::for_object(nim_account::names::WEBHOOK_PATH, operation, &object)
}

/// W1: a second Account in a namespace is denied (403) with upstream's message; the first is
/// allowed; updates are always allowed.
#[test]
fn w1_one_account_per_namespace() {
    let ns = "nim-webhook";
    let empty = cluster();
    let taken = cluster().with(account(ns));
    let check = |cluster: &FakeCluster, request: &AdmissionRequest| {
        NimAccount::validate(request, &Ctx::new(&settings(), cluster)).unwrap()
    };
    let first = check(
        &empty,
        &account_review(Operation::Create, ns, "nim-account"),
    );
    assert!(first.allowed);
    let second = check(
        &taken,
        &account_review(Operation::Create, ns, "new-nim-account"),
    );
    assert!(!second.allowed);
    assert_eq!(second.code, Some(403));
    assert_eq!(second.message.as_deref(), Some(format!(
        "rejecting creation of Account new-nim-account in namespace {ns} because there is already an Account created in the namespace").as_str()));
    assert!(check(&taken, &account_review(Operation::Update, ns, ns)).allowed);
    assert!(
        check(
            &cluster().with(account("elsewhere")),
            &account_review(Operation::Create, ns, "a")
        )
        .allowed
    );
    // A failing list is a denial naming the error.
    let failing = cluster().fail(
        odh_kinds::gvk::nim_account(),
        odh_plugin_sdk::Error::Transient("boom".into()),
    );
    let denied = check(&failing, &account_review(Operation::Create, ns, "a"));
    assert!(
        denied
            .message
            .unwrap()
            .starts_with("failed to verify if there are existing Accounts with err: ")
    );
}

/// Secrets and ConfigMaps map to the Accounts naming them, by name in any namespace.
#[test]
fn watched_objects_map_by_name_across_namespaces() {
    let mut a = account("ns-a");
    a.set(&["spec", "apiKeySecret", "name"], "shared-key");
    a.set(&["spec", "modelListConfig"], json!({"name": "models"}));
    let mut b = account("ns-b");
    b.set(&["spec", "apiKeySecret", "name"], "shared-key");
    let cluster = cluster().with(a).with(b).with(account("ns-c"));
    let secret = Object(
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "shared-key", "namespace": "other"}}),
    );
    let keys = nim_account::map_event(
        &WatchEvent::for_object("odh-nim-controller", &secret, false),
        &cluster,
    )
    .unwrap();
    let names: Vec<String> = keys.iter().map(|k| k.name.clone()).collect();
    assert_eq!(names, ["ns-a", "ns-b"]);
    let cm = Object(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "models", "namespace": "x"}}),
    );
    let keys = nim_account::map_event(
        &WatchEvent::for_object("odh-nim-controller", &cm, false),
        &cluster,
    )
    .unwrap();
    assert_eq!(keys.len(), 1);
}

/// The manifest: upstream's controller name and finalizer, the webhook path and operations,
/// and outgoing HTTP to NVIDIA's three hosts only.
#[test]
fn manifest_declares_nvidia_hosts_only() {
    let manifest = NimAccount::manifest();
    assert_eq!(manifest.name, "nim-account");
    assert_eq!(
        manifest.http_hosts,
        ["api.ngc.nvidia.com", "nvcr.io", "authn.nvidia.com"]
    );
    let controller = &manifest.controllers[0];
    assert_eq!(controller.name, "odh-nim-controller");
    assert_eq!(controller.finalizer.as_deref(), Some(FINALIZER));
    assert_eq!(
        manifest.webhooks[0].path,
        "/validate-nim-opendatahub-io-v1-account"
    );
    assert_eq!(
        manifest.webhooks[0].operations,
        [Operation::Create, Operation::Update]
    );
    let writes: Vec<&str> = manifest.writes.iter().map(|g| g.kind.as_str()).collect();
    for kind in ["ConfigMap", "Secret", "Template"] {
        assert!(writes.contains(&kind), "{writes:?}");
    }
}

/// With the host's writes the force-validation annotation is removed from the Secret itself, so
/// what an earlier version recorded on the Account instead (`nim-force-validation-seen`) is
/// dropped from it; without writes it is kept (it is what honours the annotation once).
#[test]
fn the_seen_annotation_of_earlier_versions_goes_with_writes() {
    let mut account = account("seen");
    account.set_annotation("runtimes.opendatahub.io/nim-force-validation-seen", "7");
    let cluster = cluster().with(api_key_secret("seen", "k"));
    let writes = odh_plugin_sdk::testing::FakeWrites::new();
    let outcome = nim_account::reconcile_writing(
        &account,
        &cluster,
        &nvidia(),
        Some(&writes),
        &settings(),
        &now(),
    )
    .into_outcome();
    let patched = outcome.patched_primary(&account);
    assert_eq!(
        patched.annotation("runtimes.opendatahub.io/nim-force-validation-seen"),
        None
    );
    let kept = run(&account, &cluster, &nvidia(), &now()).patched_primary(&account);
    assert_eq!(
        kept.annotation("runtimes.opendatahub.io/nim-force-validation-seen"),
        Some("7")
    );
}
