//! The `llminferenceservice` controller natively (docs/plugins/llm-gateway.md, "Controller
//! `llminferenceservice`"; scenarios LC-*, AP-* and the anonymous policy's RA ids).
//! The same flows run through the real API server in
//! `tests/integration/tests/llm_controller.rs`.

use llm_gateway::LlmGateway;
use llm_gateway::llmisvc::{CONTROLLER, KIND_MISSING_RETRY_MS};
use llm_gateway::settings::Settings;
use odh_kinds::gvk;
use odh_plugin_sdk::testing::FakeCluster;
use odh_plugin_sdk::{
    Ctx, Error, EventType, Object, Outcome, Ownership, Plugin, ReconcileRequest, RequestKey, Value,
    WatchEvent, json, request_key,
};

const NS: &str = "test-ns";
const SVC: &str = "test-llmisvc";
const DEFAULT_ROUTE: &str = "test-llmisvc-kserve-route";
const DEFAULT_POLICY: &str = "test-llmisvc-kserve-route-authn";
const ENABLE_AUTH: &str = "security.opendatahub.io/enable-auth";
const GROUP: &str = "serving.kserve.io/routing-group";

fn service(name: &str) -> Value {
    json!({
        "apiVersion": "serving.kserve.io/v1alpha2",
        "kind": "LLMInferenceService",
        "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}")},
        "spec": {"model": {"uri": "hf://m"}},
    })
}

fn with_auth(mut v: Value, value: &str) -> Value {
    v["metadata"]["annotations"][ENABLE_AUTH] = value.into();
    v
}

fn anonymous(name: &str) -> Value {
    with_auth(service(name), "false")
}

fn with_routes(mut v: Value, routes: &[&str]) -> Value {
    let refs: Vec<Value> = routes.iter().map(|r| json!({"name": r})).collect();
    v["spec"]["router"] = json!({"route": {"http": {"refs": refs}}});
    v
}

fn with_base_refs(mut v: Value, configs: &[&str]) -> Value {
    v["spec"]["baseRefs"] = configs.iter().map(|c| json!({"name": c})).collect();
    v
}

fn http_route(name: &str) -> Value {
    json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
           "metadata": {"name": name, "namespace": NS}, "spec": {}})
}

fn config(name: &str, namespace: &str, routes: &[&str]) -> Value {
    let refs: Vec<Value> = routes.iter().map(|r| json!({"name": r})).collect();
    json!({"apiVersion": "serving.kserve.io/v1alpha2", "kind": "LLMInferenceServiceConfig",
           "metadata": {"name": name, "namespace": namespace},
           "spec": {"router": {"route": {"http": {"refs": refs}}}}})
}

/// A live policy as the API server holds it (ours unless told otherwise).
fn live_policy(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "kuadrant.io/v1", "kind": "AuthPolicy",
           "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}"), "labels": labels},
           "spec": {"targetRef": {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "x"}}})
}

fn ours() -> Value {
    json!({"app.kubernetes.io/managed-by": "odh-model-controller"})
}

fn cluster() -> FakeCluster {
    FakeCluster::for_manifest(&LlmGateway::manifest())
}

fn run_with(settings: &Settings, v: &Value, cluster: &FakeCluster) -> Outcome {
    let request = ReconcileRequest::for_object(CONTROLLER, &Object(v.clone()));
    let outcome = LlmGateway::reconcile(&request, &Ctx::new(settings, cluster)).unwrap();
    outcome.assert_declared(&LlmGateway::manifest());
    outcome
}

fn run(v: &Value, cluster: &FakeCluster) -> Outcome {
    run_with(&Settings::default(), v, cluster)
}

fn policies(outcome: &Outcome) -> Vec<String> {
    outcome
        .applied_objects()
        .into_iter()
        .filter(|a| a.object.kind() == "AuthPolicy")
        .map(|a| a.object.name().to_string())
        .collect()
}

fn warnings(outcome: &Outcome, reason: &str) -> Vec<String> {
    outcome
        .events
        .iter()
        .filter(|e| e.type_ == EventType::Warning && e.reason == reason)
        .map(|e| e.message.clone())
        .collect()
}

/// LC-02, RA-09, RA-10, RA-16, RA-17, RA-22 (created): auth off and the default route present: the
/// anonymous policy, exactly, owned by the service as controller.
#[test]
fn lc_02_anonymous_policy_for_the_default_route() {
    let cluster = cluster().with(http_route(DEFAULT_ROUTE));
    let outcome = run(&anonymous(SVC), &cluster);
    let applied = outcome.applied("AuthPolicy", DEFAULT_POLICY).unwrap();
    assert_eq!(applied.ownership, Ownership::Controller);
    let expected = json!({
        "apiVersion": "kuadrant.io/v1",
        "kind": "AuthPolicy",
        "metadata": {
            "name": DEFAULT_POLICY,
            "namespace": NS,
            "labels": {
                "app.kubernetes.io/component": "llminferenceservice-policies",
                "app.kubernetes.io/part-of": "llminferenceservice",
                "app.kubernetes.io/managed-by": "odh-model-controller",
                "app.kubernetes.io/name": SVC,
            },
        },
        "spec": {
            "targetRef": {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": DEFAULT_ROUTE},
            "rules": {
                "authentication": {"public": {
                    "anonymous": {},
                    "metrics": false,
                    "priority": 0,
                    "overrides": {
                        "fairness": {"value": "unauthenticated"},
                        "objective": {"value": "unauthenticated"},
                    },
                }},
                "response": {"success": {"headers": {
                    "x-gateway-inference-fairness-id": {"metrics": false, "plain": {"expression": "auth.identity.fairness"}, "priority": 0},
                    "x-gateway-inference-objective": {"metrics": false, "plain": {"expression": "auth.identity.objective"}, "priority": 0},
                }}},
            },
        },
    });
    assert_eq!(applied.object.0, expected);
    assert!(outcome.error.is_none());
    assert!(outcome.events.is_empty());
}

/// LC-03, RA-01, RA-24, RA-28: auth turned back on: the existing policy is read (its uid
/// claims exactly that object) and deleted.
#[test]
fn lc_03_auth_on_deletes_our_policy() {
    let cluster = cluster()
        .with(http_route(DEFAULT_ROUTE))
        .with(live_policy(DEFAULT_POLICY, ours()));
    let outcome = run(&with_auth(service(SVC), "true"), &cluster);
    assert!(outcome.deleted("AuthPolicy", DEFAULT_POLICY));
    let claim = outcome.applied_object("AuthPolicy", DEFAULT_POLICY);
    assert_eq!(claim.uid(), Some("uid-test-llmisvc-kserve-route-authn"));
    assert!(outcome.error.is_none());
}

/// LC-04, RA-04, RA-29 (removing a missing policy is no error): auth on (no annotation) and no
/// policy: nothing is applied or deleted; a policy someone else made (not labelled ours, or
/// opted out) is never touched.
#[test]
fn lc_04_auth_on_makes_nothing_and_leaves_foreign_policies() {
    let outcome = run(&service(SVC), &cluster().with(http_route(DEFAULT_ROUTE)));
    assert!(outcome.apply.is_empty() && outcome.delete.is_empty());
    for labels in [
        json!({}),
        json!({"app.kubernetes.io/managed-by": "odh-model-controller", "opendatahub.io/managed": "false"}),
    ] {
        let cluster = cluster().with(live_policy(DEFAULT_POLICY, labels.clone()));
        let on = run(&service(SVC), &cluster);
        assert!(on.apply.is_empty() && on.delete.is_empty(), "{labels}");
        let off = run(&anonymous(SVC), &cluster.with(http_route(DEFAULT_ROUTE)));
        assert!(off.apply.is_empty() && off.delete.is_empty(), "{labels}");
    }
}

/// LC-06, LC-09, LC-10: route refs name the HTTPRoutes; each gets `<route>-authn` targeting it
/// (re-applied on every reconcile, so a changed targetRef or a deleted policy comes back).
#[test]
fn lc_06_custom_routes_each_get_a_policy() {
    let v = with_routes(
        anonymous(SVC),
        &["custom-httproute-a", "custom-httproute-b"],
    );
    let cluster = cluster()
        .with(http_route("custom-httproute-a"))
        .with(http_route("custom-httproute-b"))
        .with(live_policy("custom-httproute-a-authn", ours()));
    let outcome = run(&v, &cluster);
    assert_eq!(
        policies(&outcome),
        ["custom-httproute-a-authn", "custom-httproute-b-authn"]
    );
    let a = outcome.applied_object("AuthPolicy", "custom-httproute-a-authn");
    assert_eq!(
        a.str_at(&["spec", "targetRef", "name"]),
        Some("custom-httproute-a")
    );
}

/// LC-07, LC-08, RA-25, RA-26: the policy is declared in full on every reconcile of an anonymous
/// service, whatever the live one holds (a drifted targetRef is restored, a deleted one re-made).
#[test]
fn lc_07_lc_08_drift_and_deletion_are_undone() {
    let mut drifted = live_policy(DEFAULT_POLICY, ours());
    drifted["spec"]["targetRef"]["name"] = "modified-httproute".into();
    for cluster in [cluster().with(drifted), cluster()] {
        let outcome = run(&anonymous(SVC), &cluster.with(http_route(DEFAULT_ROUTE)));
        let policy = outcome.applied_object("AuthPolicy", DEFAULT_POLICY);
        assert_eq!(
            policy.str_at(&["spec", "targetRef", "name"]),
            Some(DEFAULT_ROUTE)
        );
    }
}

/// LC-11: a stopped service reconciles to nothing, even with its HTTPRoute gone (no
/// `ReconcileError`).
#[test]
fn lc_11_stopped_service_does_nothing() {
    let mut v = anonymous(SVC);
    v["metadata"]["annotations"]["serving.kserve.io/stop"] = "True".into();
    let outcome = run(&v, &cluster());
    assert!(outcome.apply.is_empty() && outcome.delete.is_empty() && outcome.events.is_empty());
    assert!(outcome.error.is_none());
}

/// Step 5: an anonymous service whose HTTPRoute does not exist fails (retried) with upstream's
/// text and a `ReconcileError` Warning; later routes are not reached.
#[test]
fn missing_http_route_fails_the_reconcile_with_an_event() {
    let v = with_routes(anonymous(SVC), &["gone", "present"]);
    let outcome = run(&v, &cluster().with(http_route("present")));
    assert!(policies(&outcome).is_empty());
    let message = outcome.error_message().unwrap();
    assert_eq!(
        message,
        "failed to get HTTPRoute for AuthPolicy gone-authn: failed to get HTTPRoute test-ns/gone: httproutes.gateway.networking.k8s.io \"gone\" not found"
    );
    assert_eq!(
        warnings(&outcome, "ReconcileError"),
        [format!(
            "Failed to reconcile LLMInferenceService: 1 error occurred:\n\t* {message}\n\n"
        )]
    );
}

/// Kuadrant not installed (our decision, the doc's paragraph of that name): without Kuadrant an
/// anonymous service gets the Warning and a slow recheck, not a failure; a service with auth on has
/// nothing to remove and stays quiet.
#[test]
fn kuadrant_missing_is_a_warning_and_a_slow_recheck() {
    let no_match =
        Error::Transient("no matches for kind \"AuthPolicy\" in version \"kuadrant.io/v1\"".into());
    let cluster = cluster()
        .with(http_route(DEFAULT_ROUTE))
        .fail(gvk::auth_policy(), no_match);
    let off = run(&anonymous(SVC), &cluster);
    assert!(off.error.is_none());
    assert_eq!(off.requeue_after_ms, Some(KIND_MISSING_RETRY_MS));
    let events = warnings(&off, "ReconcileError");
    assert_eq!(events.len(), 1);
    assert!(events[0].contains("could not GET AuthPolicy test-ns/test-llmisvc-kserve-route-authn: no matches for kind \"AuthPolicy\""), "{events:?}");
    let on = run(&service(SVC), &cluster);
    assert!(on.error.is_none() && on.events.is_empty() && on.requeue_after_ms.is_none());
}

/// Any other read failure of the policy is an error (retried).
#[test]
fn failing_policy_read_is_an_error() {
    let cluster = cluster().fail(
        gvk::auth_policy(),
        Error::Transient("connection refused".into()),
    );
    let outcome = run(&service(SVC), &cluster);
    assert_eq!(
        outcome.error_message(),
        Some(
            "could not GET AuthPolicy test-ns/test-llmisvc-kserve-route-authn: connection refused"
        )
    );
}

/// Step 2: a service being deleted has its policies (named by its own, unmerged spec) claimed
/// and deleted, whoever labelled them; no Event.
#[test]
fn deletion_removes_policies_by_name() {
    let mut v = with_routes(with_base_refs(service(SVC), &["cfg"]), &["r1"]);
    v["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z".into();
    v["metadata"]["finalizers"] = json!(["serving.kserve.io/llmisvc-finalizer"]);
    let cluster = cluster()
        .with(config("cfg", NS, &["from-config"]))
        .with(live_policy("r1-authn", json!({})))
        .with(live_policy("from-config-authn", ours()));
    let outcome = run(&v, &cluster);
    assert!(outcome.deleted("AuthPolicy", "r1-authn"));
    assert!(!outcome.deleted("AuthPolicy", "from-config-authn"));
    assert_eq!(
        outcome.applied("AuthPolicy", "r1-authn").unwrap().ownership,
        Ownership::None
    );
    assert!(outcome.events.is_empty() && outcome.error.is_none());
}

// ── baseRefs (step 3): LC-12..LC-19 check which config's refs win through the
// Gateway AuthPolicy of part 2; here the same resolution is checked through the HTTPRoute refs
// the merged spec names.

/// LC-12, LC-16: a config in the service's namespace supplies the routes; an empty second
/// config changes nothing.
#[test]
fn lc_12_lc_16_config_in_the_service_namespace() {
    let v = with_base_refs(anonymous(SVC), &["test-config", "empty"]);
    let mut empty = config("empty", NS, &[]);
    empty["spec"] = json!({});
    let cluster = cluster()
        .with(config("test-config", NS, &["cfg-route"]))
        .with(empty)
        .with(http_route("cfg-route"));
    assert_eq!(policies(&run(&v, &cluster)), ["cfg-route-authn"]);
}

/// LC-13 (the routes' side): a config missing from the service's namespace is read from the
/// system namespace; one present in both is taken from the service's namespace (`llmisvc/config`;
/// LC-14 itself, which is about gateways, is tested on the gateway controller's `find_config`
/// in gateway.rs).
#[test]
fn lc_13_system_namespace_fallback() {
    let settings = Settings {
        pod_namespace: Some("sys".into()),
        ..Settings::default()
    };
    let cluster = cluster()
        .with(config("system-config", "sys", &["sys-route"]))
        .with(config("shared-config", "sys", &["sys-route"]))
        .with(config("shared-config", NS, &["own-route"]))
        .with(http_route("sys-route"))
        .with(http_route("own-route"));
    let system = with_base_refs(anonymous(SVC), &["system-config"]);
    assert_eq!(
        policies(&run_with(&settings, &system, &cluster)),
        ["sys-route-authn"]
    );
    let shared = with_base_refs(anonymous(SVC), &["shared-config"]);
    assert_eq!(
        policies(&run_with(&settings, &shared, &cluster)),
        ["own-route-authn"]
    );
}

/// LC-15, LC-18: without a system namespace a missing config is skipped; with one, a config
/// missing everywhere fails the reconcile without an Event (as upstream).
#[test]
fn lc_15_lc_18_missing_configs() {
    let cluster = cluster()
        .with(config("config2", NS, &["cfg-route"]))
        .with(http_route(DEFAULT_ROUTE))
        .with(http_route("cfg-route"));
    let v = with_base_refs(anonymous(SVC), &["missing-config"]);
    assert_eq!(policies(&run(&v, &cluster)), [DEFAULT_POLICY]);
    let both = with_base_refs(anonymous(SVC), &["config1", "config2"]);
    assert_eq!(policies(&run(&both, &cluster)), ["cfg-route-authn"]);
    let settings = Settings {
        pod_namespace: Some("sys".into()),
        ..Settings::default()
    };
    let outcome = run_with(&settings, &both, &cluster);
    assert!(policies(&outcome).is_empty() && outcome.events.is_empty());
    assert_eq!(
        outcome.error_message(),
        Some(
            "failed to get config: failed to get LLMInferenceServiceConfig \"config1\" from namespaces [\"test-ns\", \"sys\"]: llminferenceserviceconfigs.serving.kserve.io \"config1\" not found"
        )
    );
}

/// LC-17: the service's own refs win over its config's.
#[test]
fn lc_17_own_refs_win() {
    let v = with_routes(with_base_refs(anonymous(SVC), &["test-config"]), &["own"]);
    let cluster = cluster()
        .with(config("test-config", NS, &["cfg-route"]))
        .with(http_route("own"))
        .with(http_route("cfg-route"));
    assert_eq!(policies(&run(&v, &cluster)), ["own-authn"]);
}

/// LC-19 (part 1's side): the enable-auth annotation is the service's own; a config cannot turn
/// it off, and a stop annotation is read from the service too.
#[test]
fn lc_19_annotations_are_the_services_own() {
    let v = with_base_refs(service(SVC), &["test-config"]);
    let mut cfg = config("test-config", NS, &["cfg-route"]);
    cfg["metadata"]["annotations"] = json!({ENABLE_AUTH: "false"});
    let outcome = run(&v, &cluster().with(cfg).with(http_route("cfg-route")));
    assert!(policies(&outcome).is_empty());
}

// ── Auth posture (step 6) ──

fn member(name: &str, auth: &str) -> Value {
    let mut v = with_auth(service(name), auth);
    v["metadata"]["labels"] = json!({GROUP: "llama"});
    v
}

fn posture(members: &[Value], reconciled: &Value) -> Vec<String> {
    let cluster = cluster()
        .with_all(members.to_vec())
        .with(http_route(&format!(
            "{}-kserve-route",
            reconciled["metadata"]["name"].as_str().unwrap()
        )));
    warnings(&run(reconciled, &cluster), "AuthPostureMismatch")
}

/// AP-01: same auth across the group: no Event.
#[test]
fn ap_01_same_auth_no_event() {
    let group = [member("llama-v1", "true"), member("llama-v2", "true")];
    assert!(posture(&group, &group[0]).is_empty());
}

/// AP-02: mixed auth: one Warning with upstream's text.
#[test]
fn ap_02_mixed_auth_warns() {
    let group = [member("llama-v1", "true"), member("llama-v2", "false")];
    assert_eq!(
        posture(&group, &group[0]),
        [
            "auth posture mismatch in group \"llama\": [llama-v1] have enable-auth=true, [llama-v2] have enable-auth=false"
        ]
    );
}

/// AP-03: a standalone service (no group label) is not checked.
#[test]
fn ap_03_standalone_not_checked() {
    let standalone = anonymous("solo");
    let others = [member("llama-v1", "true")];
    assert!(posture(&others, &standalone).is_empty());
}

/// AP-04: names are sorted and joined with `, `.
#[test]
fn ap_04_several_members() {
    let group = [
        member("v3", "true"),
        member("v1", "TRUE"),
        member("v2", ""),
        member("v4", "false"),
    ];
    assert_eq!(
        posture(&group, &group[3]),
        [
            "auth posture mismatch in group \"llama\": [v1, v2, v3] have enable-auth=true, [v4] have enable-auth=false"
        ]
    );
}

/// AP-05: the mismatch fixed: no more Events.
#[test]
fn ap_05_fixed_group_stops_warning() {
    let group = [member("llama-v1", "true"), member("llama-v2", "true")];
    assert!(posture(&group, &group[1]).is_empty());
}

/// AP-06: a terminating member does not count.
#[test]
fn ap_06_terminating_members_are_ignored() {
    let mut leaving = member("llama-v2", "false");
    leaving["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z".into();
    leaving["metadata"]["finalizers"] = json!(["block"]);
    let group = [member("llama-v1", "true"), leaving];
    assert!(posture(&group, &group[0]).is_empty());
}

/// A failing group list is an error with upstream's text (and the ReconcileError Event).
#[test]
fn posture_list_failure_is_an_error() {
    let cluster = cluster().with(http_route(DEFAULT_ROUTE)).fail(
        gvk::llm_inference_service(),
        Error::Transient("timeout".into()),
    );
    let mut v = service(SVC);
    v["metadata"]["labels"] = json!({GROUP: "g"});
    let outcome = run(&v, &cluster);
    assert_eq!(
        outcome.error_message(),
        Some("listing routing group \"g\": timeout")
    );
    assert_eq!(warnings(&outcome, "ReconcileError").len(), 1);
}

fn policy_event(owners: Value, labels: Value, deleted: bool) -> Vec<RequestKey> {
    let mut policy = live_policy("p-authn", labels);
    policy["metadata"]["ownerReferences"] = owners;
    let event = WatchEvent::for_object(CONTROLLER, &Object(policy), deleted);
    LlmGateway::map(&event, &Ctx::new(&Settings::default(), &cluster())).unwrap()
}

fn owner(api_version: &str, kind: &str, name: &str) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": "u"})
}

/// RA-30: a policy owned by an LLMInferenceService (any version) maps to that service in the
/// policy's namespace, on update and on delete.
#[test]
fn ra_30_policy_maps_to_its_owner() {
    let owners = json!([
        owner("apps/v1", "Deployment", "d"),
        owner(
            "serving.kserve.io/v1alpha1",
            "LLMInferenceService",
            "my-llm-service"
        ),
    ]);
    for deleted in [false, true] {
        assert_eq!(
            policy_event(owners.clone(), ours(), deleted),
            [request_key(Some(NS), "my-llm-service")]
        );
    }
}

/// RA-31: no owner references: nothing.
#[test]
fn ra_31_no_owner_maps_to_nothing() {
    assert!(policy_event(json!([]), ours(), false).is_empty());
}

/// RA-32: only a Deployment owner: nothing.
#[test]
fn ra_32_other_owner_maps_to_nothing() {
    assert!(policy_event(json!([owner("apps/v1", "Deployment", "d")]), ours(), false).is_empty());
}

/// The AuthPolicy watch's predicates: a policy we do not manage (no managed-by label, or opted out)
/// maps to nothing, even with a service owner.
#[test]
fn unmanaged_policies_map_to_nothing() {
    let owners = json!([owner(
        "serving.kserve.io/v1alpha2",
        "LLMInferenceService",
        "s"
    )]);
    assert!(policy_event(owners.clone(), json!({}), false).is_empty());
    let opted_out = json!({"app.kubernetes.io/managed-by": "odh-model-controller", "opendatahub.io/managed": "false"});
    assert!(policy_event(owners, opted_out, true).is_empty());
}

/// The manifest: the controller upstream names, its primary, and an optional AuthPolicy watch
/// (a cluster without Kuadrant still runs the controller) mapped by `map`.
#[test]
fn manifest_controller_and_watches() {
    let manifest = LlmGateway::manifest();
    let controller = &manifest.controllers[0];
    assert_eq!(controller.name, "llminferenceservice");
    assert_eq!(controller.primary, gvk::llm_inference_service());
    assert_eq!(controller.finalizer, None);
    let watch = controller
        .watches
        .iter()
        .find(|w| w.gvk == gvk::auth_policy())
        .expect("AuthPolicy watch");
    assert!(matches!(watch.mapping, odh_plugin_sdk::Mapping::Custom));
    assert!(watch.optional);
}
