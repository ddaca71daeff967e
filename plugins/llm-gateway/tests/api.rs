//! The model-serving-api routes through the plugin's `handle` export (docs/plugins/llm-gateway.md,
//! "Endpoints"; scenarios SH-01..SH-14, SM-06, SS-01..SS-08, SF-01..SF-18 and SV-1). The host's
//! half (TLS, the bearer middleware SM-01..SM-05, health, metrics) and the same routes over
//! real HTTPS against the API server are in `tests/integration/tests/model_serving_api.rs`.

use std::collections::BTreeMap;

use llm_gateway::LlmGateway;
use llm_gateway::api::gateways::{self, GatewayRef, filter_listeners, status};
use llm_gateway::api::samples::SAMPLES;
use llm_gateway::api::{GATEWAYS_PATH, SAMPLES_PATH};
use llm_gateway::listeners::{listener_allows_namespace, needs_namespace_labels};
use llm_gateway::settings::Settings;
use odh_kinds::gvk;
use odh_plugin_sdk::caller::{AccessAttributes, Fake};
use odh_plugin_sdk::testing::FakeCluster;
use odh_plugin_sdk::{ApiAuth, ApiRequest, ApiResponse, Ctx, Error, Object, Plugin, Value, json};
use serde::Deserialize;

const NS: &str = "my-project";

fn create_llmisvc(ns: &str) -> AccessAttributes {
    AccessAttributes::new("create", "serving.kserve.io", "llminferenceservices").namespace(ns)
}

fn gateway(name: &str, ns: &str, listeners: Value) -> Value {
    json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
           "metadata": {"name": name, "namespace": ns},
           "spec": {"gatewayClassName": "istio", "listeners": listeners}})
}

fn listener(name: &str, allowed: Value) -> Value {
    let mut l = json!({"name": name, "port": 443, "protocol": "HTTPS"});
    if !allowed.is_null() {
        l["allowedRoutes"] = allowed;
    }
    l
}

fn from(f: &str) -> Value {
    json!({"namespaces": {"from": f}})
}

fn selector(sel: Value) -> Value {
    json!({"namespaces": {"from": "Selector", "selector": sel}})
}

fn conditions(mut gw: Value, conditions: &[(&str, &str)]) -> Value {
    gw["status"]["conditions"] = conditions
        .iter()
        .map(|(t, s)| json!({"type": t, "status": s, "reason": "Test", "message": ""}))
        .collect();
    gw
}

fn ready(gw: Value) -> Value {
    conditions(gw, &[("Accepted", "True"), ("Programmed", "True")])
}

fn annotated(mut gw: Value, display: &str, description: &str) -> Value {
    gw["metadata"]["annotations"] = json!({
        "openshift.io/display-name": display,
        "openshift.io/description": description,
    });
    gw
}

fn namespace(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
}

fn cluster() -> FakeCluster {
    FakeCluster::for_manifest(&LlmGateway::manifest())
}

fn get(path: &str, query: &str) -> ApiRequest {
    ApiRequest::new("GET", path).with_query(query)
}

fn call_with(
    request: &ApiRequest,
    settings: &Settings,
    c: &FakeCluster,
    caller: &Fake,
) -> ApiResponse {
    LlmGateway::handle(request, &Ctx::new(settings, c).with_caller(caller)).unwrap()
}

fn call(request: &ApiRequest, c: &FakeCluster, caller: &Fake) -> ApiResponse {
    call_with(request, &Settings::default(), c, caller)
}

fn body(r: &ApiResponse) -> String {
    String::from_utf8(r.body.clone()).unwrap()
}

fn json_body(r: &ApiResponse) -> Value {
    r.json_body().unwrap()
}

fn error_of(r: &ApiResponse) -> (u16, String) {
    assert_eq!(
        r.header("content-type"),
        Some("application/json"),
        "{}",
        body(r)
    );
    (r.status, body(r))
}

fn discover(c: &FakeCluster, caller: &Fake, ns: &str) -> ApiResponse {
    call(&get(GATEWAYS_PATH, &format!("namespace={ns}")), c, caller)
}

fn gw_ref(name: &str, ns: &str, listener: &str, status: &'static str) -> GatewayRef {
    GatewayRef {
        name: name.into(),
        namespace: ns.into(),
        listener: listener.into(),
        status,
        display_name: String::new(),
        description: String::new(),
    }
}

fn objects(values: Vec<Value>) -> Vec<Object> {
    values.into_iter().map(Object).collect()
}

// ---------------------------------------------------------------------------------------------
// Routes and manifest.

#[test]
fn routes_gateways_with_bearer_auth_and_samples_public() {
    let routes = LlmGateway::routes();
    let by_path: BTreeMap<_, _> = routes.iter().map(|r| (r.path.as_str(), r.auth)).collect();
    assert_eq!(by_path.get(GATEWAYS_PATH), Some(&ApiAuth::Bearer));
    assert_eq!(by_path.get(SAMPLES_PATH), Some(&ApiAuth::None));
    assert_eq!(routes.len(), 2);
    let manifest = LlmGateway::manifest();
    assert!(manifest.reads.contains(&gvk::gateway()));
    assert!(manifest.reads.contains(&gvk::namespace()));
}

// ---------------------------------------------------------------------------------------------
// Gateway handler (SH-01..SH-06).

#[test]
fn sh_01_one_ready_gateway_with_display_name_and_description() {
    let c = cluster().with(annotated(
        ready(gateway(
            "gw1",
            "infra",
            json!([listener("https", from("All"))]),
        )),
        "Shared Gateway",
        "Edge ingress",
    ));
    let caller = Fake::new().allow(create_llmisvc(NS));
    let r = discover(&c, &caller, NS);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(
        body(&r),
        r#"{"gateways":[{"name":"gw1","namespace":"infra","listener":"https","status":"Ready","displayName":"Shared Gateway","description":"Edge ingress"}]}"#
    );
    assert_eq!(caller.asked(), [create_llmisvc(NS)]);
}

#[test]
fn sh_02_no_gateways_is_an_empty_array_not_null() {
    let caller = Fake::new().allow(create_llmisvc(NS));
    let r = discover(&cluster(), &caller, NS);
    assert_eq!((r.status, body(&r).as_str()), (200, r#"{"gateways":[]}"#));
}

#[test]
fn sh_03_a_failing_list_is_500() {
    let c = cluster().fail(gvk::gateway(), Error::transient("etcd is down"));
    let caller = Fake::new().allow(create_llmisvc(NS));
    assert_eq!(
        error_of(&discover(&c, &caller, NS)),
        (500, r#"{"error":"internal server error"}"#.into())
    );
}

#[test]
fn sh_04_missing_namespace_is_400() {
    let caller = Fake::new().allow(create_llmisvc(NS));
    for query in ["", "namespace=", "other=x"] {
        let r = call(&get(GATEWAYS_PATH, query), &cluster(), &caller);
        assert_eq!(
            error_of(&r),
            (
                400,
                r#"{"error":"missing required query parameter: namespace"}"#.into()
            ),
            "{query}"
        );
    }
    assert!(
        caller.asked().is_empty(),
        "no access review before the checks"
    );
}

#[test]
fn sh_05_invalid_namespace_is_400() {
    let caller = Fake::new();
    for ns in ["INVALID_NS", "a.b", "-a", &"a".repeat(64)] {
        let r = discover(&cluster(), &caller, ns);
        assert_eq!(
            error_of(&r),
            (
                400,
                r#"{"error":"invalid namespace: must match RFC 1123"}"#.into()
            ),
            "{ns}"
        );
    }
    assert_eq!(discover(&cluster(), &caller, &"a".repeat(63)).status, 200);
}

#[test]
fn sh_06_methods_other_than_get_are_405_before_the_query_checks() {
    let caller = Fake::new().allow(create_llmisvc(NS));
    for method in ["POST", "PUT", "DELETE", "PATCH", "HEAD"] {
        let r = call(&ApiRequest::new(method, GATEWAYS_PATH), &cluster(), &caller);
        assert_eq!(
            error_of(&r),
            (405, r#"{"error":"method not allowed"}"#.into()),
            "{method}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Discovery: the access review, the list, the namespace read.

#[test]
fn a_caller_who_may_not_create_services_gets_an_empty_list_and_nothing_is_read() {
    let c = cluster()
        .with(ready(gateway(
            "gw1",
            "infra",
            json!([listener("https", from("All"))]),
        )))
        .fail(gvk::namespace(), Error::transient("should not be read"));
    // Allowed elsewhere only.
    let caller = Fake::new().allow(create_llmisvc("other"));
    let r = discover(&c, &caller, NS);
    assert_eq!((r.status, body(&r).as_str()), (200, r#"{"gateways":[]}"#));
    // Another verb does not count.
    let caller = Fake::new().allow(
        AccessAttributes::new("get", "serving.kserve.io", "llminferenceservices").namespace(NS),
    );
    assert_eq!(body(&discover(&c, &caller, NS)), r#"{"gateways":[]}"#);
}

#[test]
fn a_failed_access_review_is_logged_and_answered_with_an_empty_list() {
    let c = cluster().with(ready(gateway(
        "gw1",
        "infra",
        json!([listener("https", from("All"))]),
    )));
    let caller = Fake::new().fail(Error::transient("evaluation error: webhook down"));
    let r = discover(&c, &caller, NS);
    assert_eq!((r.status, body(&r).as_str()), (200, r#"{"gateways":[]}"#));
}

#[test]
fn sm_06_without_a_caller_nothing_leaks() {
    // Outside an authenticated request the caller refuses every check (the SDK's host caller
    // fails off the host the same way): the answer is an empty list.
    let c = cluster().with(ready(gateway(
        "gw1",
        "infra",
        json!([listener("https", from("All"))]),
    )));
    let settings = Settings::default();
    let r = LlmGateway::handle(
        &get(GATEWAYS_PATH, &format!("namespace={NS}")),
        &Ctx::new(&settings, &c),
    )
    .unwrap();
    assert_eq!((r.status, body(&r).as_str()), (200, r#"{"gateways":[]}"#));
}

#[test]
fn the_namespace_is_read_only_for_selector_listeners_and_any_error_is_500() {
    let caller = Fake::new().allow(create_llmisvc(NS));
    // No Selector listener: a failing Namespace read is never made.
    let c = cluster()
        .with(ready(gateway(
            "gw1",
            "infra",
            json!([listener("https", from("All"))]),
        )))
        .fail(gvk::namespace(), Error::transient("forbidden"));
    assert_eq!(discover(&c, &caller, NS).status, 200);

    let sel = ready(gateway(
        "sel",
        "infra",
        json!([listener(
            "http",
            selector(json!({"matchLabels": {"env": "prod"}}))
        )]),
    ));
    // The namespace does not exist: 500, as upstream's Get error.
    let c = cluster().with(sel.clone());
    assert_eq!(
        error_of(&discover(&c, &caller, NS)),
        (500, r#"{"error":"internal server error"}"#.into())
    );
    // The read fails: 500.
    let c = cluster()
        .with(sel.clone())
        .with(namespace(NS, json!({"env": "prod"})))
        .fail(gvk::namespace(), Error::transient("forbidden"));
    assert_eq!(discover(&c, &caller, NS).status, 500);
    // Labels that match.
    let c = cluster()
        .with(sel.clone())
        .with(namespace(NS, json!({"env": "prod"})));
    assert_eq!(
        json_body(&discover(&c, &caller, NS))["gateways"][0]["name"],
        "sel"
    );
    // A namespace without labels matches no selector.
    let c = cluster()
        .with(sel)
        .with(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}));
    assert_eq!(body(&discover(&c, &caller, NS)), r#"{"gateways":[]}"#);
}

#[test]
fn one_entry_per_listener_in_list_order() {
    let caller = Fake::new().allow(create_llmisvc(NS));
    let c = cluster()
        .with(ready(gateway(
            "b-gw",
            "infra",
            json!([
                listener("one", from("All")),
                listener("internal", from("Same")),
                listener("two", from("All"))
            ]),
        )))
        .with(gateway(
            "a-gw",
            "infra",
            json!([listener("http", from("All"))]),
        ))
        .with(gateway("z", "a-b", json!([listener("http", from("All"))])))
        .with(conditions(
            gateway("own", NS, json!([listener("http", Value::Null)])),
            &[("Accepted", "False")],
        ));
    let got: Vec<(String, String, String, String)> =
        json_body(&discover(&c, &caller, NS))["gateways"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                let s = |k: &str| g[k].as_str().unwrap_or_default().to_string();
                (s("namespace"), s("name"), s("listener"), s("status"))
            })
            .collect();
    let want = [
        ("a-b", "z", "http", "Unknown"),
        ("infra", "a-gw", "http", "Unknown"),
        ("infra", "b-gw", "one", "Ready"),
        ("infra", "b-gw", "two", "Ready"),
        ("my-project", "own", "http", "NotReady"),
    ]
    .map(|(a, b, c, d)| (a.into(), b.into(), c.into(), d.into()));
    assert_eq!(
        got, want,
        "sorted by the API server's key order: a-b/ before infra/"
    );
}

#[test]
fn gateway_label_selector_limits_the_list() {
    let caller = Fake::new().allow(create_llmisvc(NS));
    let mut labelled = gateway("chosen", "infra", json!([listener("https", from("All"))]));
    labelled["metadata"]["labels"] = json!({"app": "llm", "tier": "edge"});
    let mut half = gateway("half", "infra", json!([listener("https", from("All"))]));
    half["metadata"]["labels"] = json!({"app": "llm"});
    let c = cluster().with(labelled).with(half).with(gateway(
        "plain",
        "infra",
        json!([listener("https", from("All"))]),
    ));
    let names = |settings: &Settings| -> Vec<String> {
        let r = call_with(
            &get(GATEWAYS_PATH, &format!("namespace={NS}")),
            settings,
            &c,
            &caller,
        );
        json_body(&r)["gateways"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["name"].as_str().unwrap().to_string())
            .collect()
    };
    let with = |s: &str| Settings {
        gateway_label_selector: Some(s.into()),
        ..Settings::default()
    };
    assert_eq!(names(&Settings::default()), ["chosen", "half", "plain"]);
    assert_eq!(names(&with("")), ["chosen", "half", "plain"]);
    assert_eq!(names(&with(" app=llm , tier=edge ,")), ["chosen"]);
    assert_eq!(names(&with("app=llm")), ["chosen", "half"]);
    // A malformed selector that reaches the plugin fails the request.
    let r = call_with(
        &get(GATEWAYS_PATH, &format!("namespace={NS}")),
        &with("app"),
        &c,
        &caller,
    );
    assert_eq!(r.status, 500);
}

#[test]
fn bodies_are_escaped_as_go_encodes_json() {
    let caller = Fake::new().allow(create_llmisvc(NS));
    let c = cluster().with(annotated(
        ready(gateway(
            "gw",
            "infra",
            json!([listener("https", from("All"))]),
        )),
        "<A & B>",
        "line\n\"two\"",
    ));
    assert_eq!(
        body(&discover(&c, &caller, NS)),
        r#"{"gateways":[{"name":"gw","namespace":"infra","listener":"https","status":"Ready","displayName":"\u003cA \u0026 B\u003e","description":"line\n\"two\""}]}"#
    );
}

// ---------------------------------------------------------------------------------------------
// Samples handler (SH-07..SH-14).

fn sample(query: &str) -> ApiResponse {
    call(&get(SAMPLES_PATH, query), &cluster(), &Fake::new())
}

fn assert_yaml(r: &ApiResponse, config_type: &str) {
    assert_eq!(r.status, 200, "{}", body(r));
    assert_eq!(r.header("content-type"), Some("application/yaml"));
    let text = body(r);
    assert!(text.contains("kind: LLMInferenceServiceConfig"), "{text}");
    assert!(
        text.contains(&format!("opendatahub.io/config-type: {config_type}")),
        "{text}"
    );
}

#[test]
fn sh_07_workload_single_node() {
    let r = sample("type=workload-single-node");
    assert_yaml(&r, "workload-single-node");
    assert_eq!(
        r.body,
        include_bytes!("../samples/workload-single-node.yaml"),
        "verbatim"
    );
}

#[test]
fn sh_08_each_type_is_served() {
    for t in [
        "workload-single-node",
        "workload-single-node-pd",
        "workload-multi-node-data-parallel",
        "workload-multi-node-data-parallel-pd",
        "router",
    ] {
        assert_yaml(&sample(&format!("type={t}")), t);
    }
}

#[test]
fn sh_09_missing_type_is_400() {
    for q in ["", "type=", "topology=workload-single-node-pd"] {
        assert_eq!(
            error_of(&sample(q)),
            (
                400,
                r#"{"error":"missing required query parameter: type"}"#.into()
            ),
            "{q}"
        );
    }
}

#[test]
fn sh_10_unknown_type_is_404_naming_it() {
    assert_eq!(
        error_of(&sample("type=nonexistent")),
        (
            404,
            r#"{"error":"no sample found for type: nonexistent"}"#.into()
        )
    );
    // Paths, the `.yaml` suffix itself and the router-pd key are not types on their own
    // except router-pd, which is a file.
    for t in [
        "../router",
        "router.yaml",
        "samples/router",
        "Router",
        "%2e%2e",
    ] {
        let r = sample(&format!("type={t}"));
        assert_eq!(r.status, 404, "{t}");
    }
    assert_eq!(
        body(&sample("type=%3Cx%3E")),
        r#"{"error":"no sample found for type: \u003cx\u003e"}"#
    );
}

#[test]
fn sh_11_router_with_a_pd_topology_is_the_pd_policy() {
    let r = sample("type=router&topology=workload-single-node-pd");
    assert_yaml(&r, "router");
    let text = body(&r);
    assert!(text.contains("disagg-profile-handler"));
    assert!(!text.contains("single-profile-handler"));
    assert!(text.contains("name: pd-scheduling-policy"));
    let r = sample("type=router&topology=workload-multi-node-data-parallel-pd");
    assert!(body(&r).contains("name: pd-scheduling-policy"));
}

#[test]
fn sh_12_router_with_another_topology_is_the_default_policy() {
    for q in [
        "type=router&topology=workload-single-node",
        "type=router",
        "type=router&topology=",
    ] {
        let r = sample(q);
        assert_yaml(&r, "router");
        let text = body(&r);
        assert!(text.contains("single-profile-handler"), "{q}");
        assert!(!text.contains("disagg-profile-handler"), "{q}");
        assert!(text.contains("name: default-scheduling-policy"), "{q}");
    }
}

#[test]
fn sh_13_topology_is_ignored_for_workloads() {
    let r = sample("type=workload-single-node&topology=workload-single-node-pd");
    assert_eq!(r.body, sample("type=workload-single-node").body);
    assert!(body(&r).contains("name: single-node-gpu"));
}

#[test]
fn sh_14_methods_other_than_get_are_405() {
    for method in ["POST", "PUT", "DELETE", "HEAD"] {
        let r = call(
            &ApiRequest::new(method, SAMPLES_PATH).with_query("type=router"),
            &cluster(),
            &Fake::new(),
        );
        assert_eq!(
            error_of(&r),
            (405, r#"{"error":"method not allowed"}"#.into()),
            "{method}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Status derivation (SS-01..SS-08).

fn status_of(c: &[(&str, &str)]) -> &'static str {
    status(&Object(conditions(gateway("g", "ns", json!([])), c)))
}

#[test]
fn ss_01_accepted_and_programmed_true_is_ready() {
    assert_eq!(
        status_of(&[("Accepted", "True"), ("Programmed", "True")]),
        "Ready"
    );
}

#[test]
fn ss_02_accepted_false_is_not_ready() {
    assert_eq!(
        status_of(&[("Accepted", "False"), ("Programmed", "True")]),
        "NotReady"
    );
}

#[test]
fn ss_03_programmed_false_is_not_ready() {
    assert_eq!(
        status_of(&[("Accepted", "True"), ("Programmed", "False")]),
        "NotReady"
    );
}

#[test]
fn ss_04_both_false_is_not_ready() {
    assert_eq!(
        status_of(&[("Accepted", "False"), ("Programmed", "False")]),
        "NotReady"
    );
}

#[test]
fn ss_05_no_conditions_is_unknown() {
    assert_eq!(status_of(&[]), "Unknown");
    assert_eq!(status(&Object(gateway("g", "ns", json!([])))), "Unknown");
}

#[test]
fn ss_06_only_accepted_true_is_unknown() {
    assert_eq!(status_of(&[("Accepted", "True")]), "Unknown");
}

#[test]
fn ss_07_only_programmed_true_is_unknown() {
    assert_eq!(status_of(&[("Programmed", "True")]), "Unknown");
}

#[test]
fn ss_08_accepted_unknown_is_unknown_and_false_always_wins() {
    assert_eq!(
        status_of(&[("Accepted", "Unknown"), ("Programmed", "True")]),
        "Unknown"
    );
    assert_eq!(
        status_of(&[("Accepted", "Unknown"), ("Programmed", "False")]),
        "NotReady"
    );
    assert_eq!(status_of(&[("Accepted", "False")]), "NotReady");
}

// ---------------------------------------------------------------------------------------------
// Listener filter (SF-01..SF-13): the table of `listeners.rs`, as discovery uses it.

fn allows(listener: Value, gw_ns: &str, target: &str, labels: Option<Value>) -> bool {
    listener_allows_namespace(&listener, gw_ns, target, labels.as_ref()).unwrap_or(false)
}

#[test]
fn sf_01_empty_listener_same_namespace() {
    assert!(allows(json!({"name": "l"}), NS, NS, None));
}

#[test]
fn sf_02_empty_listener_other_namespace() {
    assert!(!allows(json!({"name": "l"}), "infra", NS, None));
}

#[test]
fn sf_03_no_from_is_same() {
    assert!(!allows(
        json!({"allowedRoutes": {"namespaces": {}}}),
        "infra",
        NS,
        None
    ));
    assert!(allows(
        json!({"allowedRoutes": {"namespaces": {}}}),
        NS,
        NS,
        None
    ));
}

#[test]
fn sf_04_all() {
    assert!(allows(
        json!({"allowedRoutes": from("All")}),
        "infra",
        NS,
        None
    ));
}

#[test]
fn sf_05_same_same_namespace() {
    assert!(allows(json!({"allowedRoutes": from("Same")}), NS, NS, None));
}

#[test]
fn sf_06_same_other_namespace() {
    assert!(!allows(
        json!({"allowedRoutes": from("Same")}),
        "infra",
        NS,
        None
    ));
}

#[test]
fn sf_07_selector_without_selector() {
    let l = json!({"allowedRoutes": {"namespaces": {"from": "Selector"}}});
    assert!(!allows(l, "infra", NS, Some(json!({"env": "prod"}))));
}

#[test]
fn sf_08_match_labels_subset() {
    let l = json!({"allowedRoutes": selector(json!({"matchLabels": {"env": "prod"}}))});
    assert!(allows(
        l,
        "infra",
        NS,
        Some(json!({"env": "prod", "team": "ml"}))
    ));
}

#[test]
fn sf_09_match_labels_mismatch() {
    let l = json!({"allowedRoutes": selector(json!({"matchLabels": {"env": "prod"}}))});
    assert!(!allows(l, "infra", NS, Some(json!({"env": "staging"}))));
}

#[test]
fn sf_10_match_expression_in() {
    let l = json!({"allowedRoutes": selector(json!({"matchExpressions": [
        {"key": "env", "operator": "In", "values": ["prod", "staging"]}]}))});
    assert!(allows(l, "infra", NS, Some(json!({"env": "prod"}))));
}

#[test]
fn sf_11_match_expression_exists() {
    let l = json!({"allowedRoutes": selector(json!({"matchExpressions": [
        {"key": "env", "operator": "Exists"}]}))});
    assert!(allows(l, "infra", NS, Some(json!({"env": "anything"}))));
}

#[test]
fn sf_12_match_expression_does_not_exist() {
    let l = json!({"allowedRoutes": selector(json!({"matchExpressions": [
        {"key": "restricted", "operator": "DoesNotExist"}]}))});
    assert!(allows(l, "infra", NS, Some(json!({"env": "prod"}))));
}

#[test]
fn sf_13_empty_selector_matches_everything() {
    let l = json!({"allowedRoutes": selector(json!({}))});
    assert!(allows(l.clone(), "infra", NS, Some(json!({"env": "prod"}))));
    assert!(allows(l, "infra", NS, None));
}

#[test]
fn an_unparsable_selector_denies_without_failing_discovery() {
    let caller = Fake::new().allow(create_llmisvc(NS));
    let c = cluster()
        .with(gateway(
            "bad",
            "infra",
            json!([listener(
                "http",
                selector(json!({"matchExpressions": [
                {"key": "env", "operator": "Bogus", "values": ["x"]}]}))
            )]),
        ))
        .with(gateway(
            "ok",
            "infra",
            json!([listener("http", from("All"))]),
        ))
        .with(namespace(NS, json!({"env": "x"})));
    let r = discover(&c, &caller, NS);
    assert_eq!(r.status, 200);
    assert_eq!(json_body(&r)["gateways"].as_array().unwrap().len(), 1);
    assert_eq!(json_body(&r)["gateways"][0]["name"], "ok");
}

// ---------------------------------------------------------------------------------------------
// FilterListeners (SF-14..SF-17) and NeedsNamespaceLabels (SF-18).

#[test]
fn sf_14_only_the_listeners_that_allow_the_namespace() {
    let gws = objects(vec![annotated(
        ready(gateway(
            "gw1",
            "infra",
            json!([
                listener("https", from("All")),
                listener("internal", from("Same"))
            ]),
        )),
        "Shared Edge Gateway",
        "Production ingress gateway",
    )]);
    let refs = filter_listeners(&gws, NS, None);
    assert_eq!(
        refs,
        [GatewayRef {
            display_name: "Shared Edge Gateway".into(),
            description: "Production ingress gateway".into(),
            ..gw_ref("gw1", "infra", "https", "Ready")
        }]
    );
}

#[test]
fn sf_15_two_gateways_with_their_statuses() {
    let gws = objects(vec![
        ready(gateway(
            "gw1",
            "infra",
            json!([listener("https", from("All"))]),
        )),
        conditions(
            gateway("gw2", NS, json!([listener("http", Value::Null)])),
            &[("Accepted", "False")],
        ),
    ]);
    assert_eq!(
        filter_listeners(&gws, NS, None),
        [
            gw_ref("gw1", "infra", "https", "Ready"),
            gw_ref("gw2", NS, "http", "NotReady")
        ]
    );
}

#[test]
fn sf_16_no_annotations_no_display_fields() {
    let gws = objects(vec![ready(gateway(
        "gw1",
        "infra",
        json!([listener("https", from("All"))]),
    ))]);
    let refs = filter_listeners(&gws, NS, None);
    assert_eq!(refs[0].display_name, "");
    assert_eq!(refs[0].description, "");
    assert_eq!(
        gateways::response_body(&refs),
        r#"{"gateways":[{"name":"gw1","namespace":"infra","listener":"https","status":"Ready"}]}"#,
        "empty fields are omitted, never null"
    );
}

#[test]
fn sf_17_same_listener_other_namespace_gives_nothing() {
    let gws = objects(vec![ready(gateway(
        "gw1",
        "infra",
        json!([listener("https", from("Same"))]),
    ))]);
    assert!(filter_listeners(&gws, "other-ns", None).is_empty());
}

#[test]
fn sf_18_needs_namespace_labels() {
    assert!(!needs_namespace_labels(&Object(gateway(
        "g",
        "ns",
        Value::Null
    ))));
    assert!(!needs_namespace_labels(&Object(gateway(
        "g",
        "ns",
        json!([listener("a", from("All"))])
    ))));
    assert!(needs_namespace_labels(&Object(gateway(
        "g",
        "ns",
        json!([
            listener("a", from("All")),
            listener("b", selector(json!({})))
        ])
    ))));
}

// ---------------------------------------------------------------------------------------------
// Sample validation (SV-1): each embedded sample parses strictly as the part of
// `LLMInferenceServiceConfig` (serving.kserve.io/v1alpha2) it uses, with valid metadata.

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Config {
    api_version: String,
    kind: String,
    metadata: Meta,
    spec: Spec,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Meta {
    name: String,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Spec {
    replicas: Option<u32>,
    parallelism: Option<Parallelism>,
    template: Option<PodSpec>,
    worker: Option<PodSpec>,
    prefill: Option<Workload>,
    router: Option<Router>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Workload {
    replicas: Option<u32>,
    parallelism: Option<Parallelism>,
    template: Option<PodSpec>,
    worker: Option<PodSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Parallelism {
    tensor: Option<u32>,
    data: Option<u32>,
    data_local: Option<u32>,
    #[serde(rename = "dataRPCPort")]
    data_rpc_port: Option<u16>,
    expert: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PodSpec {
    containers: Vec<Container>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Container {
    name: String,
    #[serde(default)]
    env: Vec<EnvVar>,
    resources: Option<Resources>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EnvVar {
    name: String,
    value: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Resources {
    #[serde(default)]
    limits: BTreeMap<String, String>,
    #[serde(default)]
    requests: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Router {
    route: Option<Value>,
    gateway: Option<Value>,
    scheduler: Option<Scheduler>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Scheduler {
    config: SchedulerConfig,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SchedulerConfig {
    inline: EndpointPickerConfig,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct EndpointPickerConfig {
    api_version: String,
    kind: String,
    plugins: Vec<PickerPlugin>,
    scheduling_profiles: Vec<Profile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PickerPlugin {
    #[serde(rename = "type")]
    plugin_type: String,
    name: Option<String>,
    parameters: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Profile {
    name: String,
    plugins: Vec<PluginRef>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PluginRef {
    plugin_ref: String,
    weight: Option<u32>,
}

/// apimachinery's `IsQualifiedName` (label and annotation keys).
fn is_qualified_name(key: &str) -> bool {
    let name_ok = |n: &str| {
        let b = n.as_bytes();
        !b.is_empty()
            && b.len() <= 63
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
    };
    match key.split_once('/') {
        None => name_ok(key),
        Some((prefix, name)) => {
            !prefix.is_empty()
                && prefix.len() <= 253
                && prefix.split('.').all(gateways::is_dns1123_label)
                && !name.contains('/')
                && name_ok(name)
        }
    }
}

/// apimachinery's `IsValidLabelValue`.
fn is_label_value(v: &str) -> bool {
    v.is_empty() || is_qualified_name(v) && !v.contains('/')
}

/// A resource quantity as this project's samples write them (`8`, `0.5`, `64Gi`, `500m`).
fn is_quantity(q: &str) -> bool {
    let digits = q.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &q[digits.len()..];
    !digits.is_empty()
        && digits.parse::<f64>().is_ok()
        && ["", "m", "k", "M", "G", "T", "Ki", "Mi", "Gi", "Ti"].contains(&suffix)
}

fn check_pod(file: &str, pod: &PodSpec) {
    assert!(
        !pod.containers.is_empty(),
        "{file}: a pod without containers"
    );
    for c in &pod.containers {
        assert_eq!(c.name, "main", "{file}: kserve merges the `main` container");
        for e in &c.env {
            assert!(
                !e.name.is_empty() && !e.value.is_empty(),
                "{file}: env {}",
                e.name
            );
        }
        if let Some(r) = &c.resources {
            for (name, q) in r.limits.iter().chain(&r.requests) {
                assert!(is_qualified_name(name), "{file}: resource {name}");
                assert!(is_quantity(q), "{file}: quantity {q}");
            }
        }
    }
}

#[test]
fn sv_1_every_embedded_sample_is_a_valid_config() {
    assert_eq!(SAMPLES.len(), 6);
    let mut names = Vec::new();
    for (key, bytes) in SAMPLES {
        let file = format!("{key}.yaml");
        let text = std::str::from_utf8(bytes).unwrap();
        let config: Config = serde_yaml::from_str(text)
            .unwrap_or_else(|e| panic!("{file} does not parse strictly: {e}"));
        assert_eq!(config.api_version, "serving.kserve.io/v1alpha2", "{file}");
        assert_eq!(config.kind, "LLMInferenceServiceConfig", "{file}");
        assert!(!config.metadata.name.is_empty(), "{file}");
        assert!(
            gateways::is_dns1123_label(&config.metadata.name),
            "{file}: the name is a valid object name"
        );
        names.push(config.metadata.name.clone());

        let config_type = config.metadata.labels["opendatahub.io/config-type"].as_str();
        assert!(!config_type.is_empty(), "{file}");
        assert!(
            file == format!("{config_type}.yaml") || file.starts_with(&format!("{config_type}-")),
            "{file}: named after its type {config_type}"
        );
        assert!(text.contains("kind: LLMInferenceServiceConfig"), "{file}");
        assert!(
            text.contains(&format!("opendatahub.io/config-type: {config_type}")),
            "{file}"
        );
        assert!(
            !config.metadata.annotations["description"].trim().is_empty(),
            "{file}: a description"
        );
        for (k, v) in &config.metadata.labels {
            assert!(is_qualified_name(k), "{file}: label key {k}");
            assert!(is_label_value(v), "{file}: label value {v}");
        }
        for k in config.metadata.annotations.keys() {
            assert!(is_qualified_name(k), "{file}: annotation key {k}");
        }
        // No template variables are left for kserve to replace (none are used).
        assert!(!text.contains("{{"), "{file}: template text");

        let spec = &config.spec;
        for pod in [&spec.template, &spec.worker].into_iter().flatten() {
            check_pod(&file, pod);
        }
        if let Some(prefill) = &spec.prefill {
            assert!(
                prefill.template.is_some(),
                "{file}: a prefill pool has pods"
            );
            for pod in [&prefill.template, &prefill.worker].into_iter().flatten() {
                check_pod(&file, pod);
            }
            assert!(prefill.replicas.unwrap_or(1) >= 1);
            if let Some(p) = &prefill.parallelism {
                assert!(p.tensor.unwrap_or(1) >= 1);
            }
        }
        if let Some(p) = &spec.parallelism
            && let (Some(data), Some(local)) = (p.data, p.data_local)
        {
            assert!(
                local >= 1 && data % local == 0,
                "{file}: ranks fill whole pods"
            );
            assert!(
                spec.worker.is_some(),
                "{file}: more ranks than one pod needs workers"
            );
            assert!(p.data_rpc_port.is_some() && p.expert.is_some());
        }
        let _ = spec.replicas;

        let router_file = config_type == "router";
        assert_eq!(spec.router.is_some(), router_file, "{file}");
        assert_eq!(
            config
                .metadata
                .annotations
                .contains_key("opendatahub.io/supported-topologies"),
            router_file,
            "{file}"
        );
        if let Some(router) = &spec.router {
            let _ = (&router.route, &router.gateway);
            let picker = &router
                .scheduler
                .as_ref()
                .expect("a scheduler")
                .config
                .inline;
            assert_eq!(picker.kind, "EndpointPickerConfig");
            assert_eq!(picker.api_version, "inference.networking.x-k8s.io/v1alpha1");
            let declared: Vec<&str> = picker
                .plugins
                .iter()
                .map(|p| p.name.as_deref().unwrap_or(&p.plugin_type))
                .collect();
            for profile in &picker.scheduling_profiles {
                assert!(!profile.name.is_empty());
                for r in &profile.plugins {
                    assert!(
                        declared.contains(&r.plugin_ref.as_str()),
                        "{file}: profile {} uses undeclared {}",
                        profile.name,
                        r.plugin_ref
                    );
                    let _ = r.weight;
                }
            }
            for p in &picker.plugins {
                if let Some(parameters) = &p.parameters {
                    assert!(
                        parameters.is_object(),
                        "{file}: {} parameters",
                        p.plugin_type
                    );
                }
            }
        }
    }
    names.sort();
    assert_eq!(
        names,
        [
            "default-scheduling-policy",
            "multi-node-data-parallel-gpu",
            "multi-node-dp-pd-roce",
            "pd-scheduling-policy",
            "single-node-gpu",
            "single-node-pd-roce",
        ]
    );
}

#[test]
fn sv_1_sample_markers_of_the_spec_table() {
    let parse = |key: &str| -> (Config, &str) {
        let text = std::str::from_utf8(llm_gateway::api::samples::sample(key).unwrap()).unwrap();
        (serde_yaml::from_str(text).unwrap(), text)
    };
    for (key, name, config_type) in [
        (
            "workload-single-node",
            "single-node-gpu",
            "workload-single-node",
        ),
        (
            "workload-single-node-pd",
            "single-node-pd-roce",
            "workload-single-node-pd",
        ),
        (
            "workload-multi-node-data-parallel",
            "multi-node-data-parallel-gpu",
            "workload-multi-node-data-parallel",
        ),
        (
            "workload-multi-node-data-parallel-pd",
            "multi-node-dp-pd-roce",
            "workload-multi-node-data-parallel-pd",
        ),
        ("router", "default-scheduling-policy", "router"),
        ("router-pd", "pd-scheduling-policy", "router"),
    ] {
        let (config, _) = parse(key);
        assert_eq!(config.metadata.name, name, "{key}");
        assert_eq!(
            config.metadata.labels["opendatahub.io/config-type"],
            config_type
        );
    }
    let topologies = |key: &str| -> Vec<String> {
        let (config, _) = parse(key);
        serde_yaml::from_str(&config.metadata.annotations["opendatahub.io/supported-topologies"])
            .unwrap()
    };
    assert_eq!(
        topologies("router"),
        ["workload-single-node", "workload-multi-node-data-parallel"]
    );
    assert_eq!(
        topologies("router-pd"),
        [
            "workload-single-node-pd",
            "workload-multi-node-data-parallel-pd"
        ]
    );
    let (_, router) = parse("router");
    let (_, router_pd) = parse("router-pd");
    assert!(
        router.contains("single-profile-handler") && !router.contains("disagg-profile-handler")
    );
    assert!(
        router_pd.contains("disagg-profile-handler")
            && !router_pd.contains("single-profile-handler")
    );
    // The annotation is a JSON array, as the dashboard parses it.
    let (config, _) = parse("router");
    let raw = &config.metadata.annotations["opendatahub.io/supported-topologies"];
    assert!(serde_json_array(raw), "{raw}");
}

fn serde_json_array(raw: &str) -> bool {
    odh_plugin_sdk::serde_json::from_str::<Vec<String>>(raw).is_ok()
}
