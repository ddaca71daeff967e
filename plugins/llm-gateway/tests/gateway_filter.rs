//! Gateway filtering (docs/plugins/llm-gateway.md, "Gateway controller `gateway-auth-bootstrap`",
//! step 2; scenarios GF-01..GF-36): `filterAllowedRefs`,
//! `listenerAllowsNamespace` and `gatewayAllowsNamespace`.

use llm_gateway::gateway::gateway_ref::GatewayRef;
use llm_gateway::gateway::refs::filter_allowed_refs;
use llm_gateway::listeners::{gateway_allows_namespace, listener_allows_namespace};
use odh_plugin_sdk::{Object, Value, json};

fn listener(name: &str, from: Option<&str>) -> Value {
    match from {
        None => json!({"name": name, "port": 80, "protocol": "HTTP"}),
        Some("Sel") => {
            json!({"name": name, "port": 80, "protocol": "HTTP", "allowedRoutes": {"namespaces": {
                "from": "Selector", "selector": {"matchLabels": {"env": "prod"}}}}})
        }
        Some(from) => {
            json!({"name": name, "port": 80, "protocol": "HTTP", "allowedRoutes": {"namespaces": {"from": from}}})
        }
    }
}

fn gateway(ns: &str, name: &str, listeners: Vec<Value>) -> Object {
    Object(
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
                  "metadata": {"name": name, "namespace": ns},
                  "spec": {"gatewayClassName": "c", "listeners": listeners}}),
    )
}

fn r(name: &str, ns: &str) -> GatewayRef {
    GatewayRef::new(ns, name)
}

fn filter(
    gw: Option<&Object>,
    refs: Vec<GatewayRef>,
    target: &str,
    labels: Option<Value>,
) -> Vec<GatewayRef> {
    filter_allowed_refs(gw, refs, target, labels.as_ref())
}

fn prod() -> Option<Value> {
    Some(json!({"env": "prod"}))
}

#[test]
fn gf_01_no_gateway_keeps_refs() {
    assert_eq!(
        filter(None, vec![r("gw", "ns")], "other", None),
        [r("gw", "ns")]
    );
}

#[test]
fn gf_02_no_refs() {
    let gw = gateway("ns", "gw", vec![listener("http", Some("All"))]);
    assert!(filter(Some(&gw), vec![], "ns", None).is_empty());
}

#[test]
fn gf_03_other_gateway_is_kept() {
    let gw = gateway("ns", "gw-a", vec![listener("http", Some("Same"))]);
    assert_eq!(
        filter(Some(&gw), vec![r("gw-b", "ns")], "other", None),
        [r("gw-b", "ns")]
    );
}

#[test]
fn gf_04_all_allows_another_namespace() {
    let gw = gateway("gw-ns", "gw", vec![listener("http", Some("All"))]);
    assert_eq!(
        filter(Some(&gw), vec![r("gw", "gw-ns")], "other-ns", None).len(),
        1
    );
}

#[test]
fn gf_05_gf_06_same() {
    let gw = gateway("ns", "gw", vec![listener("http", Some("Same"))]);
    assert_eq!(
        filter(Some(&gw), vec![r("gw", "ns")], "ns", None).len(),
        1,
        "GF-05"
    );
    let gw = gateway("gw-ns", "gw", vec![listener("http", Some("Same"))]);
    assert!(
        filter(Some(&gw), vec![r("gw", "gw-ns")], "other-ns", None).is_empty(),
        "GF-06"
    );
}

#[test]
fn gf_07_gf_08_no_allowed_routes_means_same() {
    let gw = gateway("ns", "gw", vec![listener("http", None)]);
    assert_eq!(
        filter(Some(&gw), vec![r("gw", "ns")], "ns", None).len(),
        1,
        "GF-07"
    );
    let gw = gateway("gw-ns", "gw", vec![listener("http", None)]);
    assert!(
        filter(Some(&gw), vec![r("gw", "gw-ns")], "other-ns", None).is_empty(),
        "GF-08"
    );
}

#[test]
fn gf_09_gf_10_gf_11_selector() {
    let gw = gateway("gw-ns", "gw", vec![listener("http", Some("Sel"))]);
    let refs = || vec![r("gw", "gw-ns")];
    assert_eq!(filter(Some(&gw), refs(), "app", prod()).len(), 1, "GF-09");
    let staging = Some(json!({"env": "staging"}));
    assert!(
        filter(Some(&gw), refs(), "app", staging).is_empty(),
        "GF-10"
    );
    assert!(filter(Some(&gw), refs(), "app", None).is_empty(), "GF-11");
}

#[test]
fn gf_12_gf_13_empty_ref_namespace_is_the_target() {
    let gw = gateway("app-ns", "gw", vec![listener("http", Some("All"))]);
    assert_eq!(
        filter(Some(&gw), vec![r("gw", "")], "app-ns", None),
        [r("gw", "")],
        "GF-12"
    );
    // Defaulted to other-ns, the ref names another gateway: kept.
    let gw = gateway("gw-ns", "gw", vec![listener("http", Some("Same"))]);
    assert_eq!(
        filter(Some(&gw), vec![r("gw", "")], "other-ns", None),
        [r("gw", "")],
        "GF-13"
    );
}

#[test]
fn gf_14_one_listener_suffices() {
    let gw = gateway(
        "gw-ns",
        "gw",
        vec![
            listener("internal", Some("Same")),
            listener("external", Some("All")),
        ],
    );
    assert_eq!(
        filter(Some(&gw), vec![r("gw", "gw-ns")], "other-ns", None).len(),
        1
    );
}

#[test]
fn gf_15_no_listeners_allow_nothing() {
    let gw = gateway("gw-ns", "gw", vec![]);
    assert!(filter(Some(&gw), vec![r("gw", "gw-ns")], "gw-ns", None).is_empty());
}

#[test]
fn gf_16_order_is_kept() {
    let gw = gateway("gw-ns", "gw", vec![listener("http", Some("Same"))]);
    let refs = vec![
        r("gw", "gw-ns"),
        r("other-gw", "gw-ns"),
        r("gw", "different-ns"),
    ];
    assert_eq!(
        filter(Some(&gw), refs, "other-ns", None),
        [r("other-gw", "gw-ns"), r("gw", "different-ns")]
    );
}

fn allows(listener: Value, gw_ns: &str, target: &str, labels: Option<Value>) -> bool {
    listener_allows_namespace(&listener, gw_ns, target, labels.as_ref()).unwrap_or(false)
}

#[test]
fn gf_17_to_gf_20_unset_fields_mean_same() {
    assert!(allows(json!({"name": "l"}), "ns", "ns", None), "GF-17");
    assert!(
        !allows(json!({"name": "l"}), "gw-ns", "other-ns", None),
        "GF-18"
    );
    assert!(
        !allows(json!({"allowedRoutes": {}}), "gw-ns", "other-ns", None),
        "GF-19"
    );
    assert!(
        allows(
            json!({"allowedRoutes": {"namespaces": {}}}),
            "ns",
            "ns",
            None
        ),
        "GF-20"
    );
}

#[test]
fn gf_21_to_gf_23_all_and_same() {
    assert!(
        allows(listener("l", Some("All")), "gw-ns", "other", None),
        "GF-21"
    );
    assert!(
        allows(listener("l", Some("Same")), "ns", "ns", None),
        "GF-22"
    );
    assert!(
        !allows(listener("l", Some("Same")), "gw-ns", "other", None),
        "GF-23"
    );
}

#[test]
fn gf_24_to_gf_28_selector() {
    assert!(
        allows(listener("l", Some("Sel")), "gw-ns", "app", prod()),
        "GF-24"
    );
    let staging = Some(json!({"env": "staging"}));
    assert!(
        !allows(listener("l", Some("Sel")), "gw-ns", "app", staging),
        "GF-25"
    );
    assert!(
        !allows(listener("l", Some("Sel")), "gw-ns", "app", None),
        "GF-26"
    );
    let no_selector = json!({"allowedRoutes": {"namespaces": {"from": "Selector"}}});
    assert!(!allows(no_selector, "gw-ns", "app", prod()), "GF-27");
    let invalid = json!({"allowedRoutes": {"namespaces": {"from": "Selector", "selector": {
        "matchExpressions": [{"key": "env", "operator": "InvalidOperator", "values": ["prod"]}]}}}});
    // Denied, and the error is there to be logged.
    assert!(
        listener_allows_namespace(&invalid, "gw-ns", "app", prod().as_ref()).is_err(),
        "GF-28"
    );
    assert!(!allows(invalid, "gw-ns", "app", prod()), "GF-28");
}

fn gateway_allows(listeners: Vec<Value>, target: &str, labels: Option<Value>) -> bool {
    let gw = gateway("gw-ns", "gw", listeners);
    gateway_allows_namespace(&gw, target, labels.as_ref(), |_| {})
}

#[test]
fn gf_29_to_gf_36_gateway_allows_namespace() {
    assert!(!gateway_allows(vec![], "gw-ns", None), "GF-29");
    assert!(
        gateway_allows(vec![listener("l", Some("All"))], "other", None),
        "GF-30"
    );
    assert!(
        gateway_allows(vec![listener("l", Some("Same"))], "gw-ns", None),
        "GF-31"
    );
    assert!(
        !gateway_allows(vec![listener("l", Some("Same"))], "other", None),
        "GF-32"
    );
    let mixed = vec![
        listener("internal", Some("Same")),
        listener("external", Some("All")),
    ];
    assert!(gateway_allows(mixed, "other", None), "GF-33");
    let same = vec![listener("a", Some("Same")), listener("b", Some("Same"))];
    assert!(!gateway_allows(same, "other", None), "GF-34");
    assert!(
        gateway_allows(vec![listener("l", Some("Sel"))], "app", prod()),
        "GF-35"
    );
    let staging = Some(json!({"env": "staging"}));
    assert!(
        !gateway_allows(vec![listener("l", Some("Sel"))], "app", staging),
        "GF-36"
    );
}

/// An invalid selector on a gateway reports each error to the caller (the controller logs
/// it) and denies.
#[test]
fn selector_errors_are_reported() {
    let invalid = json!({"name": "l", "allowedRoutes": {"namespaces": {"from": "Selector", "selector": {
        "matchExpressions": [{"key": "env", "operator": "Bad"}]}}}});
    let gw = gateway("gw-ns", "gw", vec![invalid]);
    let mut seen = Vec::new();
    assert!(!gateway_allows_namespace(
        &gw,
        "app",
        prod().as_ref(),
        |e| seen.push(e.0.clone())
    ));
    assert_eq!(seen.len(), 1);
}
