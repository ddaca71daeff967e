//! The InferenceGraph webhooks (docs/plugins/isvc.md, "Webhooks"; scenarios IG-1…IG-7 and
//! X-12), through the
//! plugin's exports as the host calls them.

use isvc::Isvc;
use isvc::inference_graph::{MUTATING_PATH, VALIDATING_PATH};
use isvc::settings::Settings;
use odh_kinds::gvk;
use odh_plugin_sdk::testing::{Case, FakeCluster};
use odh_plugin_sdk::{AdmissionRequest, Ctx, Object, Operation, Plugin, Value, json};

const NS: &str = "namespace-ig";

/// IG `test-ig` with node `root` (Sequence) holding the given steps, as upstream's fixture.
fn graph(steps: Value) -> Object {
    let mut ig = Object::new(&gvk::inference_graph(), Some(NS), "test-ig");
    ig["spec"] = json!({"nodes": {"root": {"routerType": "Sequence", "steps": steps}}});
    ig
}

fn one_step(step: Value) -> Object {
    let mut step = step;
    step["name"] = json!("first");
    graph(json!([step]))
}

fn review(op: Operation, ig: &Object) -> AdmissionRequest {
    AdmissionRequest::for_object(VALIDATING_PATH, op, ig).with_namespace(NS)
}

fn settings(cluster_domain: Option<&str>) -> Settings {
    Settings {
        cluster_domain: cluster_domain.map(str::to_string),
        ..Settings::default()
    }
}

fn validate(
    settings: &Settings,
) -> impl Fn(&AdmissionRequest) -> Result<odh_plugin_sdk::AdmissionDecision, odh_plugin_sdk::Error>
{
    move |r| Isvc::validate(r, &Ctx::new(settings, &FakeCluster::new()))
}

fn invalid(field: &str, url: &str, detail: &str) -> String {
    format!(
        "InferenceGraph.serving.kserve.io \"test-ig\" is invalid: {field}: Invalid value: \"{url}\": {detail}"
    )
}

const FIELD: &str = "spec.nodes[root].steps[0].serviceUrl";
const OTHER_NAMESPACE: &str =
    "an InferenceGraph cannot refer InferenceServices in other namespaces";
const PUBLIC: &str = "using public hostnames is not allowed";

/// Every case on CREATE and on UPDATE, as upstream's table runs both.
fn both(name: &str, ig: &Object, denial: Option<&str>) {
    let s = settings(None);
    for op in [Operation::Create, Operation::Update] {
        let case = match denial {
            None => Case::allowed(name, review(op, ig)),
            Some(message) => Case::denied(name, review(op, ig), message).code(422),
        };
        case.run(validate(&s));
    }
}

#[test]
fn ig_1_a_node_name_step_is_allowed() {
    both(
        "IG-1",
        &one_step(json!({"nodeName": "another-inferencegraph-node"})),
        None,
    );
}

#[test]
fn ig_2_a_service_name_step_is_allowed() {
    both(
        "IG-2",
        &one_step(json!({"serviceName": "isvc-by-name"})),
        None,
    );
}

#[test]
fn ig_3_ig_4_service_urls_in_the_namespace_are_allowed() {
    for url in [
        "https://isvc-name.namespace-ig.svc.cluster.local",
        "https://isvc-name.namespace-ig.svc",
    ] {
        both(url, &one_step(json!({"serviceUrl": url})), None);
    }
}

#[test]
fn ig_5_ig_6_service_urls_in_another_namespace_are_refused() {
    for url in [
        "https://isvc-name.namespace-ig-different.svc.cluster.local",
        "https://isvc-name.namespace-ig-different.svc",
    ] {
        let message = invalid(FIELD, url, OTHER_NAMESPACE);
        both(url, &one_step(json!({"serviceUrl": url})), Some(&message));
    }
}

#[test]
fn ig_7_a_public_host_is_refused() {
    let url = "https://example.com";
    let message = invalid(FIELD, url, PUBLIC);
    both(
        "IG-7",
        &one_step(json!({"serviceUrl": url})),
        Some(&message),
    );
    // The spec's example, byte for byte.
    assert_eq!(
        message,
        "InferenceGraph.serving.kserve.io \"test-ig\" is invalid: spec.nodes[root].steps[0].serviceUrl: Invalid value: \"https://example.com\": using public hostnames is not allowed"
    );
}

#[test]
fn x_12_malformed_hosts_ip_literals_and_parse_errors() {
    for (url, detail) in [
        (
            "http://a.b.c.svc",
            "unexpected number of subdomain entries in hostname".to_string(),
        ),
        ("http://10.0.0.1", PUBLIC.to_string()),
        // No scheme: Go parses it as a path, so there is no host at all.
        ("isvc.namespace-ig.svc", PUBLIC.to_string()),
        (
            "http://isvc.namespace-ig.svc:port",
            "error when parsing serviceUrl: parse \"http://isvc.namespace-ig.svc:port\": invalid port \":port\" after host".to_string(),
        ),
    ] {
        let message = invalid(FIELD, url, &detail);
        both(url, &one_step(json!({"serviceUrl": url})), Some(&message));
    }
}

#[test]
fn x_12_several_bad_steps_are_one_denial_with_every_error_once() {
    let mut ig = graph(json!([
        {"name": "a", "serviceUrl": "https://example.com"},
        {"name": "b", "serviceName": "fine"},
        {"name": "c", "serviceUrl": "http://x.other.svc"},
    ]));
    ig["spec"]["nodes"]["another"] =
        json!({"routerType": "Sequence", "steps": [{"serviceUrl": "https://example.com"}]});
    let expected = format!(
        "InferenceGraph.serving.kserve.io \"test-ig\" is invalid: [{}, {}, {}]",
        "spec.nodes[another].steps[0].serviceUrl: Invalid value: \"https://example.com\": using public hostnames is not allowed",
        format_args!(
            "spec.nodes[root].steps[0].serviceUrl: Invalid value: \"https://example.com\": {PUBLIC}"
        ),
        format_args!(
            "spec.nodes[root].steps[2].serviceUrl: Invalid value: \"http://x.other.svc\": {OTHER_NAMESPACE}"
        ),
    );
    Case::denied("several", review(Operation::Create, &ig), &expected)
        .code(422)
        .run(validate(&settings(None)));
}

#[test]
fn the_cluster_domain_comes_from_the_settings() {
    let url = "http://isvc.namespace-ig.svc.corp.example";
    let ig = one_step(json!({"serviceUrl": url}));
    Case::allowed("corp.example", review(Operation::Create, &ig))
        .run(validate(&settings(Some("corp.example"))));
    Case::denied(
        "cluster.local",
        review(Operation::Create, &ig),
        &invalid(FIELD, url, PUBLIC),
    )
    .run(validate(&settings(None)));
}

#[test]
fn delete_is_allowed_and_the_defaulter_changes_nothing() {
    let ig = one_step(json!({"serviceUrl": "https://example.com"}));
    let mut delete = review(Operation::Delete, &ig);
    delete.old_object = delete.object.take();
    Case::allowed("delete", delete).run(validate(&settings(None)));
    let s = settings(None);
    let decision = Case::allowed(
        "defaulter",
        AdmissionRequest::for_object(MUTATING_PATH, Operation::Create, &ig).with_namespace(NS),
    )
    .run(|r| Isvc::mutate(r, &Ctx::new(&s, &FakeCluster::new())));
    assert!(decision.mutated.is_none() && decision.patch.is_none());
}
