//! The `gateway-auth-bootstrap` controller natively (docs/plugins/llm-gateway.md, "Gateway
//! controller `gateway-auth-bootstrap`"; "step n" below is that section's; scenarios GC-* at the
//! plugin level, the Gateway AuthPolicy's RA ids, RE-*, CP-06..CP-10). The same flows run
//! through the real API server in
//! `tests/integration/tests/llm_gateway_controller.rs`.

use llm_gateway::LlmGateway;
use llm_gateway::gateway::objects::{PolicyOptions, Target, load_policy};
use llm_gateway::gateway::{CONTROLLER, RECONCILE_ERROR};
use llm_gateway::settings::Settings;
use odh_kinds::gvk;
use odh_plugin_sdk::testing::{FakeCluster, FakeWrites};
use odh_plugin_sdk::{
    Ctx, Error, EventType, Mapping, Object, Outcome, Ownership, Plugin, ReconcileRequest,
    RequestKey, UpdateFilter, Value, WatchChange, WatchEvent, json, request_key,
};

const NS: &str = "test-ns";
const GW: &str = "test-gateway";
const DEFAULT_NS: &str = "openshift-ingress";
const DEFAULT_GW: &str = "openshift-ai-inference";
const BOOTSTRAP: &str = "security.opendatahub.io/authorino-tls-bootstrap";
const MANAGED: &str = "opendatahub.io/managed";
const STOP: &str = "serving.kserve.io/stop";
const SCRAPE: &str = "monitoring.opendatahub.io/scrape";

fn gateway_in(ns: &str, name: &str, listeners: Value) -> Value {
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{ns}-{name}")},
        "spec": {"gatewayClassName": "openshift-default", "listeners": listeners},
    })
}

/// A managed gateway with one HTTP listener and no allowedRoutes (routes from its namespace).
fn gateway(ns: &str, name: &str) -> Value {
    gateway_in(
        ns,
        name,
        json!([{"name": "http", "port": 80, "protocol": "HTTP"}]),
    )
}

fn default_gateway() -> Value {
    gateway(DEFAULT_NS, DEFAULT_GW)
}

fn with_label(mut v: Value, key: &str, value: &str) -> Value {
    v["metadata"]["labels"][key] = value.into();
    v
}

fn with_annotation(mut v: Value, key: &str, value: &str) -> Value {
    v["metadata"]["annotations"][key] = value.into();
    v
}

fn platform_owned(mut v: Value) -> Value {
    v["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "services.platform.opendatahub.io/v1alpha1", "kind": "GatewayConfig",
        "name": "default-gateway", "uid": "uid-gc", "controller": true, "blockOwnerDeletion": true,
    }]);
    v
}

/// `test-llmisvc` in `ns` with gateway refs (`(namespace, name)`, namespace may be empty).
fn service(ns: &str, name: &str, refs: &[(&str, &str)]) -> Value {
    let refs: Vec<Value> = refs
        .iter()
        .map(|(n, g)| {
            if n.is_empty() {
                json!({ "name": g })
            } else {
                json!({"name": g, "namespace": n})
            }
        })
        .collect();
    let mut v = json!({
        "apiVersion": "serving.kserve.io/v1alpha2",
        "kind": "LLMInferenceService",
        "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{name}")},
        "spec": {"model": {"uri": "hf://m"}},
    });
    if !refs.is_empty() {
        v["spec"]["router"] = json!({"gateway": {"refs": refs}});
    }
    v
}

fn with_base_refs(mut v: Value, configs: &[&str]) -> Value {
    v["spec"]["baseRefs"] = configs.iter().map(|c| json!({ "name": c })).collect();
    v
}

fn config(ns: &str, name: &str, refs: &[(&str, &str)]) -> Value {
    let refs: Vec<Value> = refs
        .iter()
        .map(|(n, g)| json!({"name": g, "namespace": n}))
        .collect();
    json!({"apiVersion": "serving.kserve.io/v1alpha2", "kind": "LLMInferenceServiceConfig",
           "metadata": {"name": name, "namespace": ns},
           "spec": {"router": {"gateway": {"refs": refs}}}})
}

fn namespace(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
}

fn ingress_config(ns: &str, ingress: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "inferenceservice-config", "namespace": ns},
           "data": {"ingress": ingress.to_string()}})
}

/// A live object of ours (labelled managed, controlled by the gateway) of `kind`.
fn live(kind: &str, ns: &str, name: &str, gw: &str, labels: Value) -> Value {
    let api_version = match kind {
        "EnvoyFilter" => "networking.istio.io/v1alpha3",
        "AuthPolicy" => "kuadrant.io/v1",
        _ => "monitoring.coreos.com/v1",
    };
    json!({"apiVersion": api_version, "kind": kind,
           "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{name}"), "labels": labels,
                        "ownerReferences": [{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
                                             "name": gw, "uid": format!("uid-{ns}-{gw}"), "controller": true}]},
           "spec": {}})
}

fn ours() -> Value {
    json!({"app.kubernetes.io/managed-by": "odh-model-controller"})
}

fn opted_out() -> Value {
    json!({"app.kubernetes.io/managed-by": "odh-model-controller", MANAGED: "false"})
}

/// Our three objects of `gw` in `ns`, live.
fn all_live(ns: &str, gw: &str, labels: Value) -> Vec<Value> {
    vec![
        live(
            "EnvoyFilter",
            ns,
            &format!("{gw}-authn-ssl"),
            gw,
            labels.clone(),
        ),
        live("AuthPolicy", ns, &format!("{gw}-authn"), gw, labels.clone()),
        live("PodMonitor", ns, &format!("{gw}-metrics"), gw, labels),
    ]
}

fn cluster() -> FakeCluster {
    FakeCluster::for_manifest(&LlmGateway::manifest())
}

/// The reconcile's outcome with the writes it made while running folded in (the steps write
/// through `cx.writes`).
fn run_with(settings: &Settings, gw: &Value, cluster: &FakeCluster) -> Outcome {
    run_writing(settings, gw, cluster, &FakeWrites::new())
}

fn run_writing(
    settings: &Settings,
    gw: &Value,
    cluster: &FakeCluster,
    writes: &FakeWrites,
) -> Outcome {
    let request = ReconcileRequest::for_object(CONTROLLER, &Object(gw.clone()));
    let cx = Ctx::new(settings, cluster).with_writes(writes);
    let outcome = writes.folded_into(LlmGateway::reconcile(&request, &cx).unwrap());
    outcome.assert_declared(&LlmGateway::manifest());
    outcome
}

fn run(gw: &Value, cluster: &FakeCluster) -> Outcome {
    run_with(&Settings::default(), gw, cluster)
}

/// `Kind/name` of the applied objects.
fn applied(outcome: &Outcome) -> Vec<String> {
    outcome.applied_kinds()
}

fn deleted(outcome: &Outcome) -> Vec<String> {
    outcome
        .delete
        .iter()
        .map(|k| format!("{}/{}", k.gvk.kind, k.name))
        .collect()
}

fn three(gw: &str) -> Vec<String> {
    vec![
        format!("EnvoyFilter/{gw}-authn-ssl"),
        format!("AuthPolicy/{gw}-authn"),
        format!("PodMonitor/{gw}-metrics"),
    ]
}

fn warnings(outcome: &Outcome) -> Vec<String> {
    outcome
        .events
        .iter()
        .filter(|e| e.type_ == EventType::Warning && e.reason == RECONCILE_ERROR)
        .map(|e| e.message.clone())
        .collect()
}

fn no_match(kind: &str, version: &str) -> Error {
    Error::transient(format!(
        "no matches for kind \"{kind}\" in version \"{version}\""
    ))
}

/// The EnvoyFilter for a gateway, with Authorino in `kuadrant`, as upstream's template renders it.
fn expected_envoy_filter(ns: &str, gw: &str, kuadrant: &str) -> Value {
    let service = format!("authorino-authorino-authorization.{kuadrant}.svc.cluster.local");
    json!({
        "apiVersion": "networking.istio.io/v1alpha3",
        "kind": "EnvoyFilter",
        "metadata": {
            "name": format!("{gw}-authn-ssl"),
            "namespace": ns,
            "labels": {
                "app.kubernetes.io/name": "llminferenceservice-auth",
                "app.kubernetes.io/component": "llminferenceservice-policies",
                "app.kubernetes.io/part-of": "llminferenceservice",
                "app.kubernetes.io/managed-by": "odh-model-controller",
            },
        },
        "spec": {
            "priority": -1,
            "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gw}],
            "configPatches": [{
                "applyTo": "CLUSTER",
                "match": {"cluster": {"service": service}},
                "patch": {"operation": "ADD", "value": {
                    "name": "kuadrant-auth-service",
                    "type": "STRICT_DNS",
                    "connect_timeout": "1s",
                    "lb_policy": "ROUND_ROBIN",
                    "http2_protocol_options": {},
                    "load_assignment": {
                        "cluster_name": "kuadrant-auth-service",
                        "endpoints": [{"lb_endpoints": [{"endpoint": {"address": {"socket_address": {
                            "address": service, "port_value": 50051}}}}]}],
                    },
                    "transport_socket": {
                        "name": "envoy.transport_sockets.tls",
                        "typed_config": {
                            "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
                            "common_tls_context": {"validation_context": {"trusted_ca": {
                                "filename": "/var/run/secrets/kubernetes.io/serviceaccount/service-ca.crt"}}},
                        },
                    },
                }},
            }],
        },
    })
}

/// The Gateway AuthPolicy, as upstream's template renders it (CEL strings byte for byte).
fn expected_auth_policy(
    ns: &str,
    gw: &str,
    audiences: &[&str],
    objective: &str,
    header: &str,
) -> Value {
    let batch = "request.path == '/v1/files' || request.path.startsWith('/v1/files/') || request.path == '/v1/batches' || request.path.startsWith('/v1/batches/')";
    let sar = |user: &str,
               groups: &str,
               group: &str,
               resource: &str,
               ns: &str,
               name: &str,
               verb: &str| {
        json!({
            "user": {"expression": user},
            "authorizationGroups": {"expression": groups},
            "resourceAttributes": {
                "group": {"value": group},
                "resource": {"value": resource},
                "namespace": {"expression": ns},
                "name": {"expression": name},
                "verb": {"value": verb},
            },
        })
    };
    let model_name = "'publishers/' + request.path.split('/')[2] + '/models/' + request.path.split('/models/')[1].split('/v1/')[0]";
    json!({
        "apiVersion": "kuadrant.io/v1",
        "kind": "AuthPolicy",
        "metadata": {
            "name": format!("{gw}-authn"),
            "namespace": ns,
            "labels": {
                "app.kubernetes.io/component": "llminferenceservice-policies",
                "app.kubernetes.io/part-of": "llminferenceservice",
                "app.kubernetes.io/managed-by": "odh-model-controller",
                "app.kubernetes.io/name": "llminferenceservice-auth",
            },
        },
        "spec": {
            "targetRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gw},
            "patterns": {
                "has-ns-and-name": {"allOf": [{"selector": "context.request.http.path", "operator": "matches", "value": "^/[^/]+/[^/]+"}]},
                "is-publisher-path": {"allOf": [{"selector": "context.request.http.path", "operator": "matches", "value": "^/publishers/[^/]+/models/"}]},
            },
            "rules": {
                "authentication": {"kubernetes-user": {
                    "kubernetesTokenReview": {"audiences": audiences},
                    "overrides": {
                        "fairness": {"value": audiences[0]},
                        "objective": {"expression": objective},
                        "resolvedUser": {"expression": "'x-maas-user' in request.headers ? request.headers['x-maas-user'] : auth.identity.user.username"},
                        "resolvedGroups": {"expression": "'x-maas-user' in request.headers ? ('x-maas-groups' in request.headers\n  ? request.headers['x-maas-groups'].split(',')\n  : [])\n: auth.identity.user.groups"},
                    },
                }},
                "authorization": {
                    "model-access-path": {
                        "when": [{"patternRef": "is-publisher-path"}],
                        "kubernetesSubjectAccessReview": sar("auth.identity.resolvedUser", "auth.identity.resolvedGroups",
                            "serving.opendatahub.io", "models", "request.path.split('/')[2]", model_name, "post"),
                        "priority": 1,
                    },
                    "model-access-path-delegate": {
                        "when": [{"patternRef": "is-publisher-path"}, {"predicate": "'x-maas-user' in request.headers"}],
                        "kubernetesSubjectAccessReview": sar("auth.identity.user.username", "auth.identity.user.groups",
                            "serving.opendatahub.io", "models/delegate", "request.path.split('/')[2]", model_name, "post-delegate"),
                        "priority": 1,
                    },
                    "deny-misrouted-model-header": {
                        "when": [
                            {"predicate": "!request.path.matches('^/publishers/[^/]+/models/')"},
                            {"predicate": format!("!({batch})")},
                            {"predicate": format!("'{header}' in request.headers && request.headers['{header}'].matches('^publishers/[^/]+/models/.+$')")},
                        ],
                        "patternMatching": {"patterns": [{"predicate": "false"}]},
                        "priority": 0,
                    },
                    "inference-access": {
                        "when": [
                            {"patternRef": "has-ns-and-name"},
                            {"predicate": "!request.path.startsWith('/v1/')"},
                            {"predicate": "!request.path.matches('^/publishers/[^/]+/models/')"},
                        ],
                        "kubernetesSubjectAccessReview": sar("auth.identity.resolvedUser", "auth.identity.resolvedGroups",
                            "serving.kserve.io", "llminferenceservices", "request.path.split(\"/\")[1]", "request.path.split(\"/\")[2]", "get"),
                        "priority": 1,
                    },
                    "inference-access-delegate": {
                        "when": [
                            {"patternRef": "has-ns-and-name"},
                            {"predicate": "!request.path.startsWith('/v1/')"},
                            {"predicate": "!request.path.matches('^/publishers/[^/]+/models/')"},
                            {"predicate": "'x-maas-user' in request.headers"},
                        ],
                        "kubernetesSubjectAccessReview": sar("auth.identity.user.username", "auth.identity.user.groups",
                            "serving.kserve.io", "llminferenceservices/delegate", "request.path.split(\"/\")[1]", "request.path.split(\"/\")[2]", "post-delegate"),
                        "priority": 1,
                    },
                },
                "response": {"success": {"headers": {
                    "x-gateway-inference-fairness-id": {"metrics": false, "plain": {"expression": "auth.identity.fairness"}, "priority": 0},
                    "x-gateway-inference-objective": {"metrics": false, "plain": {"expression": "auth.identity.objective"}, "priority": 0},
                    "x-maas-user": {"when": [{"predicate": batch}], "plain": {"expression": "auth.identity.user.username"}, "priority": 0},
                    "x-maas-groups": {"when": [{"predicate": batch}], "plain": {"expression": "auth.identity.user.groups.join(',')"}, "priority": 0},
                }}},
            },
        },
    })
}

const OBJECTIVE: &str = "auth.identity.user.username.startsWith('system:serviceaccount:') ? auth.identity.user.username.split(':')[2] : 'authenticated'";

fn expected_pod_monitor(ns: &str, gw: &str) -> Value {
    json!({
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {
            "name": format!("{gw}-metrics"),
            "namespace": ns,
            "labels": {
                "app.kubernetes.io/component": "llm-monitoring",
                "app.kubernetes.io/part-of": "llminferenceservice",
                "app.kubernetes.io/managed-by": "odh-model-controller",
                "monitoring.opendatahub.io/scrape": "true",
            },
        },
        "spec": {
            "selector": {"matchLabels": {"gateway.networking.k8s.io/gateway-name": gw}},
            "podMetricsEndpoints": [{
                "port": "metrics",
                "path": "/stats/prometheus",
                "scheme": "http",
                "relabelings": [
                    {"sourceLabels": ["__meta_kubernetes_pod_label_gateway_networking_k8s_io_gateway_name"], "action": "replace", "targetLabel": "gateway_name"},
                    {"replacement": "true", "targetLabel": "llm_isvc_gateway"},
                ],
                "metricRelabelings": [{
                    "sourceLabels": ["__name__"],
                    "regex": "istio_requests_total|istio_request_duration_milliseconds_(bucket|sum|count)|istio_request_bytes_(bucket|sum|count)|istio_response_bytes_(bucket|sum|count)",
                    "action": "keep",
                }],
            }],
        },
    })
}

// ---------------------------------------------------------------------------------------
// Shapes (step 4) and the default gateway.

/// GC-08, GC-01, GC-21, GC-22 (controller ownership), RA-08, RA-13, RA-14, RA-15, RA-18,
/// RA-19, RA-25 (no existing policy: made), RE-01, RE-02, RE-03, RE-04, RE-05 (no Kuadrant:
/// kuadrant-system), RE-10, RE-11 (no existing filter: made): the default gateway is always
/// referenced and gets the three objects, exactly upstream's, each controlled by the Gateway,
/// with no LLMInferenceService anywhere.
#[test]
fn gc_08_default_gateway_gets_the_three_objects_exactly() {
    let outcome = run(&default_gateway(), &cluster());
    assert_eq!(applied(&outcome), three(DEFAULT_GW));
    for a in outcome.applied_objects() {
        assert_eq!(a.ownership, Ownership::Controller, "{}", a.object.kind());
    }
    assert_eq!(
        outcome
            .applied_object("EnvoyFilter", "openshift-ai-inference-authn-ssl")
            .0,
        expected_envoy_filter(DEFAULT_NS, DEFAULT_GW, "kuadrant-system")
    );
    assert_eq!(
        outcome
            .applied_object("AuthPolicy", "openshift-ai-inference-authn")
            .0,
        expected_auth_policy(
            DEFAULT_NS,
            DEFAULT_GW,
            &["https://kubernetes.default.svc"],
            OBJECTIVE,
            "x-gateway-model-name"
        )
    );
    assert_eq!(
        outcome
            .applied_object("PodMonitor", "openshift-ai-inference-metrics")
            .0,
        expected_pod_monitor(DEFAULT_NS, DEFAULT_GW)
    );
    assert!(outcome.delete.is_empty() && outcome.events.is_empty() && outcome.error.is_none());
}

/// RA-18 (the title says 4, the rules are 5), RA-19 (CEL strings byte for byte): the
/// authorization keys and the
/// multi-line resolvedGroups CEL, byte for byte.
#[test]
fn ra_18_ra_19_five_rules_and_resolved_identity() {
    let outcome = run(&default_gateway(), &cluster());
    let policy = outcome.applied_object("AuthPolicy", "openshift-ai-inference-authn");
    let mut keys: Vec<&String> = policy
        .at(&["spec", "rules", "authorization"])
        .unwrap()
        .as_object()
        .unwrap()
        .keys()
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "deny-misrouted-model-header",
            "inference-access",
            "inference-access-delegate",
            "model-access-path",
            "model-access-path-delegate"
        ]
    );
    let overrides = policy
        .at(&[
            "spec",
            "rules",
            "authentication",
            "kubernetes-user",
            "overrides",
        ])
        .unwrap();
    assert_eq!(
        overrides["resolvedGroups"]["expression"].as_str().unwrap().as_bytes(),
        b"'x-maas-user' in request.headers ? ('x-maas-groups' in request.headers\n  ? request.headers['x-maas-groups'].split(',')\n  : [])\n: auth.identity.user.groups"
    );
    assert!(overrides.get("resolvedUser").is_some());
    // Double quotes in the instance rules, single quotes in the publisher rules.
    let rule = policy
        .at(&[
            "spec",
            "rules",
            "authorization",
            "inference-access",
            "kubernetesSubjectAccessReview",
            "resourceAttributes",
            "namespace",
            "expression",
        ])
        .unwrap();
    assert_eq!(rule, "request.path.split(\"/\")[1]");
}

/// RE-06, RE-07, RE-08 (the namespaces they mean; docs/plugins/llm-gateway.md, "Shared building
/// blocks"): Kuadrant detection picks where
/// Authorino is addressed.
#[test]
fn re_06_to_re_08_kuadrant_namespace() {
    let kuadrant = |ns: &str, name: &str| json!({"apiVersion": "kuadrant.io/v1beta1", "kind": "Kuadrant", "metadata": {"name": name, "namespace": ns}});
    let address = |settings: &Settings, cluster: &FakeCluster| {
        let outcome = run_with(settings, &default_gateway(), cluster);
        let filter = outcome.applied_object("EnvoyFilter", "openshift-ai-inference-authn-ssl");
        filter.at(&["spec", "configPatches"]).unwrap()[0]["match"]["cluster"]["service"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let settings = Settings::default();
    let custom = cluster().with(kuadrant("custom-kuadrant", "kuadrant"));
    assert_eq!(
        address(&settings, &custom),
        "authorino-authorino-authorization.custom-kuadrant.svc.cluster.local",
        "RE-06"
    );
    let both = custom.clone().with(kuadrant("kuadrant-system", "kuadrant"));
    assert_eq!(
        address(&settings, &both),
        "authorino-authorino-authorization.kuadrant-system.svc.cluster.local",
        "RE-07"
    );
    let env = Settings {
        kuadrant_namespace: Some("env-kuadrant".into()),
        ..Settings::default()
    };
    let there = cluster()
        .with(kuadrant("env-kuadrant", "k"))
        .with(kuadrant("a-first", "k"));
    assert_eq!(
        address(&env, &there),
        "authorino-authorino-authorization.env-kuadrant.svc.cluster.local",
        "RE-08"
    );
    // Preferred namespace without a Kuadrant: the first by (namespace, name).
    let elsewhere = cluster()
        .with(kuadrant("zeta", "a"))
        .with(kuadrant("beta", "z"))
        .with(kuadrant("beta", "b"));
    assert_eq!(
        address(&env, &elsewhere),
        "authorino-authorino-authorization.beta.svc.cluster.local"
    );
    // Preferred without any Kuadrant (or a failed list): the preferred one.
    assert_eq!(
        address(&env, &cluster()),
        "authorino-authorino-authorization.env-kuadrant.svc.cluster.local"
    );
    let failing = cluster()
        .with(kuadrant("zeta", "a"))
        .fail(gvk::kuadrant(), no_match("Kuadrant", "kuadrant.io/v1beta1"));
    assert_eq!(
        address(&settings, &failing),
        "authorino-authorino-authorization.kuadrant-system.svc.cluster.local"
    );
}

fn authorino(ns: &str, name: &str, tls: Option<bool>) -> Value {
    let mut v = json!({"apiVersion": "operator.authorino.kuadrant.io/v1beta1", "kind": "Authorino",
                       "metadata": {"name": name, "namespace": ns}, "spec": {"listener": {}}});
    if let Some(tls) = tls {
        v["spec"]["listener"]["tls"] = json!({ "enabled": tls });
    }
    v
}

/// IsAuthorinoTLSEnabled ("Shared building blocks") and step 4: Authorino TLS off means no
/// EnvoyFilter, and an existing one is not deleted; none listed (or a failed list) means on; the
/// first by name decides.
#[test]
fn authorino_tls_detection_gates_the_envoy_filter() {
    let has_filter = |cluster: &FakeCluster| {
        run(&default_gateway(), cluster)
            .applied("EnvoyFilter", "openshift-ai-inference-authn-ssl")
            .is_some()
    };
    assert!(has_filter(&cluster()));
    assert!(has_filter(&cluster().with(authorino(
        "kuadrant-system",
        "a",
        Some(true)
    ))));
    assert!(!has_filter(&cluster().with(authorino(
        "kuadrant-system",
        "a",
        Some(false)
    ))));
    assert!(
        !has_filter(&cluster().with(authorino("kuadrant-system", "a", None))),
        "unset is false"
    );
    let two = cluster()
        .with(authorino("kuadrant-system", "b", Some(true)))
        .with(authorino("kuadrant-system", "a", Some(false)));
    assert!(!has_filter(&two), "the first by name");
    // Only Kuadrant's namespace counts.
    assert!(has_filter(&cluster().with(authorino(
        "elsewhere",
        "a",
        Some(false)
    ))));
    let failing = cluster()
        .with(authorino("kuadrant-system", "a", Some(false)))
        .fail(gvk::authorino(), Error::transient("down"));
    assert!(has_filter(&failing));

    // TLS off and a filter of ours present: left alone (no delete); the rest as usual.
    let off = cluster()
        .with(authorino("kuadrant-system", "a", Some(false)))
        .with_all(all_live(DEFAULT_NS, DEFAULT_GW, ours()));
    let outcome = run(&default_gateway(), &off);
    assert_eq!(
        applied(&outcome),
        [
            "AuthPolicy/openshift-ai-inference-authn",
            "PodMonitor/openshift-ai-inference-metrics"
        ]
    );
    assert!(outcome.delete.is_empty());
}

// ---------------------------------------------------------------------------------------
// "In use" (step 3).

/// GC-02, GC-23: a managed gateway nobody references gets nothing.
#[test]
fn gc_02_gc_23_unreferenced_gateway_gets_nothing() {
    let outcome = run(&gateway(NS, GW), &cluster().with(gateway(NS, GW)));
    assert!(outcome.apply.is_empty() && outcome.delete.is_empty() && outcome.error.is_none());
}

/// GC-03, GC-04: unmanaged or platform-owned and unreferenced: nothing.
#[test]
fn gc_03_gc_04_unmanaged_or_platform_owned_gets_nothing() {
    for gw in [
        with_label(gateway(NS, GW), MANAGED, "false"),
        platform_owned(gateway(NS, GW)),
    ] {
        let outcome = run(&gw, &cluster());
        assert!(
            outcome.apply.is_empty() && outcome.delete.is_empty(),
            "{gw}"
        );
    }
}

/// GC-05, GC-06: the bootstrap annotation makes an unmanaged or platform-owned gateway get the
/// EnvoyFilter alone; a plain managed bootstrap gateway also gets the AuthPolicy, never a
/// PodMonitor (not referenced).
#[test]
fn gc_05_gc_06_bootstrap_only() {
    let unmanaged = with_annotation(
        with_label(gateway(NS, GW), MANAGED, "false"),
        BOOTSTRAP,
        "true",
    );
    assert_eq!(
        applied(&run(&unmanaged, &cluster())),
        [format!("EnvoyFilter/{GW}-authn-ssl")],
        "GC-05"
    );
    let platform = with_annotation(platform_owned(gateway(NS, GW)), BOOTSTRAP, " True ");
    assert_eq!(
        applied(&run(&platform, &cluster())),
        [format!("EnvoyFilter/{GW}-authn-ssl")],
        "GC-06"
    );
    let managed = with_annotation(gateway(NS, GW), BOOTSTRAP, "true");
    assert_eq!(
        applied(&run(&managed, &cluster())),
        [
            format!("EnvoyFilter/{GW}-authn-ssl"),
            format!("AuthPolicy/{GW}-authn")
        ]
    );
}

/// GC-07: the bootstrap annotation removed from an unmanaged gateway: its EnvoyFilter (ours)
/// is deleted.
#[test]
fn gc_07_bootstrap_removed_deletes_the_filter() {
    let gw = with_label(gateway(NS, GW), MANAGED, "false");
    let cluster = cluster().with(live(
        "EnvoyFilter",
        NS,
        &format!("{GW}-authn-ssl"),
        GW,
        ours(),
    ));
    let outcome = run(&gw, &cluster);
    assert!(outcome.apply.is_empty());
    assert_eq!(deleted(&outcome), [format!("EnvoyFilter/{GW}-authn-ssl")]);
}

/// GC-13 and the acceptance "opting out deletes only the objects we manage": a referenced
/// gateway labelled unmanaged loses our EnvoyFilter and AuthPolicy; its PodMonitor stays
/// (referenced, as upstream); an object the user opted out is kept.
#[test]
fn gc_13_opting_out_deletes_only_what_we_manage() {
    let gw = with_label(default_gateway(), MANAGED, "false");
    let cluster = cluster().with_all(all_live(DEFAULT_NS, DEFAULT_GW, ours()));
    let outcome = run(&gw, &cluster);
    assert_eq!(
        applied(&outcome),
        ["PodMonitor/openshift-ai-inference-metrics"]
    );
    assert_eq!(
        deleted(&outcome),
        [
            "EnvoyFilter/openshift-ai-inference-authn-ssl",
            "AuthPolicy/openshift-ai-inference-authn"
        ]
    );

    // The user opted the AuthPolicy out: only the filter goes.
    let mut cluster = cluster;
    cluster.insert(live(
        "AuthPolicy",
        DEFAULT_NS,
        "openshift-ai-inference-authn",
        DEFAULT_GW,
        opted_out(),
    ));
    let outcome = run(&gw, &cluster);
    assert_eq!(
        deleted(&outcome),
        ["EnvoyFilter/openshift-ai-inference-authn-ssl"]
    );
    // Someone else's objects (no managed-by label) are never deleted.
    let foreign = FakeCluster::for_manifest(&LlmGateway::manifest()).with_all(all_live(
        DEFAULT_NS,
        DEFAULT_GW,
        json!({"app": "x"}),
    ));
    let outcome = run(&gw, &foreign);
    assert!(outcome.delete.is_empty());
}

/// Step 3: the scrape label `false` (exactly) keeps the PodMonitor away (GC-26); other
/// values do not.
#[test]
fn gc_26_scrape_false_means_no_pod_monitor() {
    let gw = with_label(default_gateway(), SCRAPE, "false");
    let cluster = cluster().with(live(
        "PodMonitor",
        DEFAULT_NS,
        "openshift-ai-inference-metrics",
        DEFAULT_GW,
        ours(),
    ));
    let outcome = run(&gw, &cluster);
    assert_eq!(
        applied(&outcome),
        [
            "EnvoyFilter/openshift-ai-inference-authn-ssl",
            "AuthPolicy/openshift-ai-inference-authn"
        ]
    );
    assert_eq!(
        deleted(&outcome),
        ["PodMonitor/openshift-ai-inference-metrics"]
    );
    for value in ["False", "true", ""] {
        let gw = with_label(default_gateway(), SCRAPE, value);
        assert_eq!(applied(&run(&gw, &cluster)).len(), 3, "{value:?}");
    }
}

// ---------------------------------------------------------------------------------------
// "Referenced" (step 2) through services.

/// GC-01, GC-16, GC-21: a service in the gateway's namespace referencing it (listener without
/// allowedRoutes): the three objects.
#[test]
fn gc_16_service_in_the_gateway_namespace() {
    let cluster = cluster().with(service(NS, "test-llmisvc", &[(NS, GW)]));
    assert_eq!(applied(&run(&gateway(NS, GW), &cluster)), three(GW));
    // A ref without a namespace means the service's own.
    let cluster = FakeCluster::for_manifest(&LlmGateway::manifest()).with(service(
        NS,
        "test-llmisvc",
        &[("", GW)],
    ));
    assert_eq!(applied(&run(&gateway(NS, GW), &cluster)), three(GW));
}

/// GC-14, GC-15: a service in another namespace counts only through a listener that allows it.
#[test]
fn gc_14_gc_15_allowed_routes() {
    let cluster = cluster().with(service("other-ns", "test-llmisvc", &[(NS, GW)]));
    assert!(run(&gateway(NS, GW), &cluster).apply.is_empty(), "GC-14");
    let all = gateway_in(
        NS,
        GW,
        json!([{"name": "http", "port": 80, "protocol": "HTTP", "allowedRoutes": {"namespaces": {"from": "All"}}}]),
    );
    assert_eq!(applied(&run(&all, &cluster)), three(GW), "GC-15");
}

/// A `Selector` listener: the service's namespace labels decide (read only then).
#[test]
fn selector_listener_uses_namespace_labels() {
    let gw = gateway_in(
        NS,
        GW,
        json!([{"name": "http", "port": 80, "protocol": "HTTP", "allowedRoutes": {"namespaces": {
        "from": "Selector", "selector": {"matchLabels": {"env": "prod"}}}}}]),
    );
    let svc = service("app", "test-llmisvc", &[(NS, GW)]);
    let prod = cluster()
        .with(svc.clone())
        .with(namespace("app", json!({"env": "prod"})));
    assert_eq!(applied(&run(&gw, &prod)), three(GW));
    let staging = cluster()
        .with(svc.clone())
        .with(namespace("app", json!({"env": "staging"})));
    assert!(run(&gw, &staging).apply.is_empty());
    // The namespace cannot be read: no labels, denied.
    let unreadable = cluster()
        .with(svc)
        .fail(gvk::namespace(), Error::transient("down"));
    assert!(run(&gw, &unreadable).apply.is_empty());
}

/// GC-17, GC-18, GC-24: a stopped service references nothing (ours are deleted); started
/// again, they come back. A terminating service still references.
#[test]
fn gc_17_gc_18_gc_24_stopped_services_do_not_count() {
    let svc = service(NS, "test-llmisvc", &[(NS, GW)]);
    let stopped = with_annotation(svc.clone(), STOP, "TRUE");
    let cluster = cluster().with(stopped).with_all(all_live(NS, GW, ours()));
    let outcome = run(&gateway(NS, GW), &cluster);
    assert!(outcome.apply.is_empty());
    assert_eq!(deleted(&outcome), three(GW));
    let mut cluster = cluster;
    cluster.insert(svc.clone());
    assert_eq!(
        applied(&run(&gateway(NS, GW), &cluster)),
        three(GW),
        "GC-18"
    );
    let mut terminating = svc;
    terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z".into();
    terminating["metadata"]["finalizers"] = json!(["x"]);
    cluster.insert(terminating);
    assert_eq!(applied(&run(&gateway(NS, GW), &cluster)), three(GW));
}

/// GC-19, GC-20: refs added later count; two gateways referenced in either order both count.
#[test]
fn gc_19_gc_20_refs_added_and_reordered() {
    let cluster = cluster().with(service(NS, "test-llmisvc", &[]));
    assert!(run(&gateway(NS, GW), &cluster).apply.is_empty());
    let cluster = cluster.with(service(NS, "test-llmisvc", &[(NS, GW)]));
    assert_eq!(
        applied(&run(&gateway(NS, GW), &cluster)),
        three(GW),
        "GC-19"
    );
    for order in [[(NS, "g1"), (NS, "g2")], [(NS, "g2"), (NS, "g1")]] {
        let cluster = FakeCluster::for_manifest(&LlmGateway::manifest()).with(service(
            NS,
            "test-llmisvc",
            &order,
        ));
        for g in ["g1", "g2"] {
            assert_eq!(
                applied(&run(&gateway(NS, g), &cluster)),
                three(g),
                "GC-20 {g}"
            );
        }
    }
}

/// Step 2, effective refs: a service without own refs takes the last config that has some (read
/// from its namespace, then the system namespace; missing ones skipped); own refs win; own
/// refs all filtered out fall back to the configs' (as upstream).
#[test]
fn effective_refs_through_configs() {
    let sys = Settings {
        pod_namespace: Some("sys".into()),
        ..Settings::default()
    };
    let svc = with_base_refs(
        service(NS, "test-llmisvc", &[]),
        &["missing", "c1", "c2", "empty"],
    );
    let cluster = cluster()
        .with(svc)
        .with(config(NS, "c1", &[(NS, "from-c1")]))
        .with(config("sys", "c2", &[(NS, "from-c2")]))
        .with(config(NS, "empty", &[]));
    assert!(
        run_with(&sys, &gateway(NS, "from-c1"), &cluster)
            .apply
            .is_empty()
    );
    assert_eq!(
        applied(&run_with(&sys, &gateway(NS, "from-c2"), &cluster)),
        three("from-c2")
    );
    // Without a system namespace, c2 is not found: c1 is the last with refs.
    assert_eq!(
        applied(&run(&gateway(NS, "from-c1"), &cluster)),
        three("from-c1")
    );

    // Own refs win over configs.
    let own = with_base_refs(service(NS, "test-llmisvc", &[(NS, "own")]), &["c1"]);
    let cluster = cluster.with(own);
    assert_eq!(applied(&run(&gateway(NS, "own"), &cluster)), three("own"));
    assert!(run(&gateway(NS, "from-c1"), &cluster).apply.is_empty());

    // The own ref points at a gateway that does not allow the service's namespace: the
    // config's ref (the same gateway, in the config's namespace) is used instead.
    let filtered = with_base_refs(service("app", "svc", &[(NS, GW)]), &["shared"]);
    let all = gateway_in(
        NS,
        GW,
        json!([{"name": "http", "port": 80, "protocol": "HTTP", "allowedRoutes": {"namespaces": {"from": "All"}}}]),
    );
    let cluster = FakeCluster::for_manifest(&LlmGateway::manifest())
        .with(filtered)
        .with(config("app", "shared", &[(NS, "cfg-gw")]));
    assert!(run(&gateway(NS, GW), &cluster).apply.is_empty());
    assert_eq!(applied(&run(&all, &cluster)), three(GW));
    // Filtered for cfg-gw, the own ref (another gateway) is kept, so the config is not read.
    assert!(run(&gateway(NS, "cfg-gw"), &cluster).apply.is_empty());
}

/// LC-14, on the path the scenario takes (the gateway controller's `find_config`): config
/// `shared-config` exists in the service's namespace (refs Gs) and in the system namespace (refs
/// Gsys, which admits every namespace): the service's namespace wins, so Gs gets its objects and
/// Gsys none; with only the system's config, Gsys would be referenced.
#[test]
fn lc_14_config_in_both_namespaces_comes_from_the_service_namespace() {
    let sys = Settings {
        pod_namespace: Some("sys".into()),
        ..Settings::default()
    };
    let svc = with_base_refs(service(NS, "test-llmisvc", &[]), &["shared-config"]);
    let gsys = gateway_in(
        "sys",
        "gsys",
        json!([{"name": "http", "port": 80, "protocol": "HTTP", "allowedRoutes": {"namespaces": {"from": "All"}}}]),
    );
    let system_only = cluster()
        .with(svc)
        .with(config("sys", "shared-config", &[("sys", "gsys")]));
    assert_eq!(
        applied(&run_with(&sys, &gsys, &system_only)),
        three("gsys"),
        "the system namespace's config alone references Gsys"
    );
    let both = system_only.with(config(NS, "shared-config", &[(NS, "gs")]));
    assert_eq!(
        applied(&run_with(&sys, &gateway(NS, "gs"), &both)),
        three("gs")
    );
    assert!(run_with(&sys, &gsys, &both).apply.is_empty());
}

/// "Shared building blocks": the default gateway comes from `kserveIngressGateway` in the system
/// namespace; a malformed value (or no system namespace) falls back to
/// openshift-ingress/openshift-ai-inference.
#[test]
fn default_gateway_from_the_ingress_config() {
    let sys = Settings {
        pod_namespace: Some("sys".into()),
        ..Settings::default()
    };
    let cluster = cluster().with(ingress_config(
        "sys",
        json!({"kserveIngressGateway": "my-ns/my-gw"}),
    ));
    assert_eq!(
        applied(&run_with(&sys, &gateway("my-ns", "my-gw"), &cluster)),
        three("my-gw")
    );
    assert!(
        run_with(&sys, &default_gateway(), &cluster)
            .apply
            .is_empty()
    );
    // Without POD_NAMESPACE the ConfigMap is not looked for.
    assert!(run(&gateway("my-ns", "my-gw"), &cluster).apply.is_empty());
    assert_eq!(
        applied(&run(&default_gateway(), &cluster)),
        three(DEFAULT_GW)
    );
    for bad in [
        json!({"kserveIngressGateway": "a/b/c"}),
        json!({"kserveIngressGateway": "plain"}),
        json!({"other": 1}),
    ] {
        let cluster = FakeCluster::for_manifest(&LlmGateway::manifest())
            .with(ingress_config("sys", bad.clone()));
        assert_eq!(
            applied(&run_with(&sys, &default_gateway(), &cluster)).len(),
            3,
            "{bad}"
        );
    }
    let invalid_json = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "inferenceservice-config", "namespace": "sys"}, "data": {"ingress": "{not json"}});
    let cluster = FakeCluster::for_manifest(&LlmGateway::manifest()).with(invalid_json);
    assert_eq!(
        applied(&run_with(&sys, &default_gateway(), &cluster)).len(),
        3
    );
}

// ---------------------------------------------------------------------------------------
// AuthPolicy inputs ("Shared building blocks", step 4).

fn gateway_policy(settings: &Settings, gw: &Value, cluster: &FakeCluster) -> Object {
    let outcome = run_with(settings, gw, cluster);
    let name = format!("{}-authn", gw["metadata"]["name"].as_str().unwrap());
    outcome.applied_object("AuthPolicy", &name)
}

/// GetAuthAudience and WithAudiences ("Shared building blocks"): AUTH_AUDIENCE split and trimmed
/// (empty entries kept), the fairness value its first entry; else the OpenShift issuer; else the
/// default.
#[test]
fn audiences_from_setting_issuer_or_default() {
    let settings = Settings {
        auth_audience: Some(" https://a , b,,c".into()),
        ..Settings::default()
    };
    let issuer = json!({"apiVersion": "config.openshift.io/v1", "kind": "Authentication",
                        "metadata": {"name": "cluster"}, "spec": {"serviceAccountIssuer": "https://issuer.example"}});
    let cluster = cluster().with(issuer);
    let policy = gateway_policy(&settings, &default_gateway(), &cluster);
    let user = policy
        .at(&["spec", "rules", "authentication", "kubernetes-user"])
        .unwrap();
    assert_eq!(
        user["kubernetesTokenReview"]["audiences"],
        json!(["https://a", "b", "", "c"])
    );
    assert_eq!(user["overrides"]["fairness"]["value"], "https://a");

    let policy = gateway_policy(&Settings::default(), &default_gateway(), &cluster);
    let expected = expected_auth_policy(
        DEFAULT_NS,
        DEFAULT_GW,
        &["https://issuer.example"],
        OBJECTIVE,
        "x-gateway-model-name",
    );
    assert_eq!(policy.0, expected);

    // An empty issuer, or no Authentication kind at all: the default.
    let empty = FakeCluster::for_manifest(&LlmGateway::manifest()).with(
        json!({"apiVersion": "config.openshift.io/v1", "kind": "Authentication",
        "metadata": {"name": "cluster"}, "spec": {"serviceAccountIssuer": ""}}),
    );
    let no_kind = FakeCluster::for_manifest(&LlmGateway::manifest()).fail(
        odh_plugin_sdk::gvk("config.openshift.io", "v1", "Authentication"),
        no_match("Authentication", "config.openshift.io/v1"),
    );
    for cluster in [empty, no_kind] {
        let policy = gateway_policy(&Settings::default(), &default_gateway(), &cluster);
        let user = policy
            .at(&["spec", "rules", "authentication", "kubernetes-user"])
            .unwrap();
        assert_eq!(
            user["kubernetesTokenReview"]["audiences"],
            json!(["https://kubernetes.default.svc"])
        );
    }
}

/// Step 4, AuthPolicy: the gateway's objective-expression annotation replaces the default (empty
/// means the default).
#[test]
fn objective_expression_annotation() {
    let key = "inference.opendatahub.io/objective-expression";
    let gw = with_annotation(default_gateway(), key, "'gold'");
    let policy = gateway_policy(&Settings::default(), &gw, &cluster());
    let overrides = policy
        .at(&[
            "spec",
            "rules",
            "authentication",
            "kubernetes-user",
            "overrides",
        ])
        .unwrap();
    assert_eq!(overrides["objective"], json!({"expression": "'gold'"}));
    let gw = with_annotation(default_gateway(), key, "");
    let policy = gateway_policy(&Settings::default(), &gw, &cluster());
    assert_eq!(
        policy.0,
        expected_auth_policy(
            DEFAULT_NS,
            DEFAULT_GW,
            &["https://kubernetes.default.svc"],
            OBJECTIVE,
            "x-gateway-model-name"
        )
    );
}

/// The model routing header ("Shared building blocks"): `modelBasedRoutingHeaderName` lowercased
/// into the deny rule when it is a safe token; otherwise (or without POD_NAMESPACE)
/// `x-gateway-model-name`.
#[test]
fn routing_header_from_the_ingress_config() {
    let sys = Settings {
        pod_namespace: Some("sys".into()),
        ..Settings::default()
    };
    let header_of = |settings: &Settings, name: &str| {
        let cluster = FakeCluster::for_manifest(&LlmGateway::manifest()).with(ingress_config(
            "sys",
            json!({"modelBasedRoutingHeaderName": name}),
        ));
        let policy = gateway_policy(settings, &default_gateway(), &cluster);
        let when = policy
            .at(&[
                "spec",
                "rules",
                "authorization",
                "deny-misrouted-model-header",
                "when",
            ])
            .unwrap();
        when[2]["predicate"].as_str().unwrap().to_string()
    };
    assert_eq!(
        header_of(&sys, "X-Custom-Model"),
        "'x-custom-model' in request.headers && request.headers['x-custom-model'].matches('^publishers/[^/]+/models/.+$')"
    );
    for bad in ["x-model'name", "x model", "x-\"q\"", "x-`b`", "x\\y", ""] {
        assert!(
            header_of(&sys, bad).starts_with("'x-gateway-model-name' in request.headers"),
            "{bad:?}"
        );
    }
    assert!(header_of(&Settings::default(), "x-other").starts_with("'x-gateway-model-name'"));
}

// ---------------------------------------------------------------------------------------
// The template loader (upstream's loader rules; RA ids).

fn target<'a>(kind: &'a str, ns: &'a str, name: &'a str) -> Target<'a> {
    Target {
        kind,
        namespace: ns,
        name,
    }
}

/// RA-08: userdefined for the default gateway.
#[test]
fn ra_08_userdefined_gateway_policy() {
    let policy = load_policy(
        "userdefined",
        &target("Gateway", DEFAULT_NS, DEFAULT_GW),
        &PolicyOptions::default(),
    )
    .unwrap();
    assert_eq!(policy["metadata"]["name"], "openshift-ai-inference-authn");
    assert_eq!(policy["metadata"]["namespace"], "openshift-ingress");
    assert!(
        policy["spec"]["rules"]["authentication"]
            .get("kubernetes-user")
            .is_some()
    );
}

/// RA-09, RA-10: anonymous for an HTTPRoute, with a caller label.
#[test]
fn ra_09_ra_10_anonymous_with_labels() {
    let options = PolicyOptions {
        labels: vec![("app.kubernetes.io/name".into(), "my-llmisvc".into())],
        ..PolicyOptions::default()
    };
    let policy = load_policy(
        "anonymous",
        &target("HTTPRoute", "test-ns", "test-route"),
        &options,
    )
    .unwrap();
    assert_eq!(policy["spec"]["targetRef"]["name"], "test-route");
    assert_eq!(policy["metadata"]["name"], "test-route-authn");
    assert_eq!(policy["metadata"]["namespace"], "test-ns");
    assert!(
        policy["spec"]["rules"]["authentication"]
            .get("public")
            .is_some()
    );
    assert_eq!(
        policy["metadata"]["labels"]["app.kubernetes.io/name"],
        "my-llmisvc"
    );
    assert_eq!(
        policy["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "odh-model-controller"
    );
}

/// RA-11: an unknown or unset auth type.
#[test]
fn ra_11_unsupported_auth_type() {
    for t in ["", "other"] {
        let e = load_policy(t, &target("Gateway", NS, GW), &PolicyOptions::default()).unwrap_err();
        assert!(e.message().contains("unsupported auth type"), "{e}");
    }
}

/// RA-12, RA-13, RA-14, RA-15: audiences option and the template defaults.
#[test]
fn ra_12_to_ra_15_audiences_and_defaults() {
    let options = PolicyOptions {
        audiences: Some(vec!["http://test.com".into()]),
        ..PolicyOptions::default()
    };
    let policy = load_policy("userdefined", &target("Gateway", NS, GW), &options).unwrap();
    assert!(
        policy["metadata"]["name"]
            .as_str()
            .unwrap()
            .contains("authn")
    );
    assert_eq!(policy["spec"]["targetRef"]["kind"], "Gateway");
    let user = &policy["spec"]["rules"]["authentication"]["kubernetes-user"];
    assert_eq!(
        user["kubernetesTokenReview"]["audiences"],
        json!(["http://test.com"]),
        "RA-12"
    );
    assert_eq!(user["overrides"]["fairness"]["value"], "http://test.com");

    let policy = load_policy(
        "userdefined",
        &target("Gateway", NS, GW),
        &PolicyOptions::default(),
    )
    .unwrap();
    let user = &policy["spec"]["rules"]["authentication"]["kubernetes-user"];
    assert_eq!(
        user["kubernetesTokenReview"]["audiences"],
        json!(["https://kubernetes.default.svc"]),
        "RA-13"
    );
    assert_eq!(policy["spec"]["targetRef"]["kind"], "Gateway");
    assert_eq!(
        user["overrides"]["objective"]["expression"], OBJECTIVE,
        "RA-14"
    );
    assert_eq!(
        user["overrides"]["fairness"]["value"].to_string(),
        "\"https://kubernetes.default.svc\"",
        "RA-15"
    );

    // No audiences: the list is emptied, the fairness value kept.
    let options = PolicyOptions {
        audiences: Some(vec![]),
        ..PolicyOptions::default()
    };
    let policy = load_policy("userdefined", &target("Gateway", NS, GW), &options).unwrap();
    let user = &policy["spec"]["rules"]["authentication"]["kubernetes-user"];
    assert_eq!(user["kubernetesTokenReview"]["audiences"], json!([]));
    assert_eq!(
        user["overrides"]["fairness"]["value"],
        "https://kubernetes.default.svc"
    );
}

/// RA-20, RA-21: the routing header is validated whatever the type.
#[test]
fn ra_20_ra_21_routing_header_validation() {
    let with_header = |h: &str| PolicyOptions {
        routing_header: h.into(),
        ..PolicyOptions::default()
    };
    let policy = load_policy(
        "userdefined",
        &target("Gateway", NS, GW),
        &with_header("x-custom-model-header"),
    )
    .unwrap();
    assert!(
        policy["spec"]["rules"]["authorization"]
            .get("deny-misrouted-model-header")
            .is_some(),
        "RA-20"
    );
    for t in ["userdefined", "anonymous"] {
        let e =
            load_policy(t, &target("Gateway", NS, GW), &with_header("x-model'name")).unwrap_err();
        assert_eq!(
            e.message(),
            "invalid model routing header name \"x-model'name\": must be a valid HTTP token safe for CEL interpolation",
            "RA-21"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Existing objects, per-step errors.

// CP-06..CP-10 (the EnvoyFilter comparator) are what the apiserver makes of our server-side
// apply: tests/integration/tests/llm_gateway_controller.rs tests them there.

/// GC-09..GC-12, GC-25: drifted or deleted objects are applied again on every
/// reconcile (the owned watches bring the gateway back); a drifted targetRef is restored.
#[test]
fn gc_09_to_gc_12_gc_25_drift_is_undone() {
    let desired = run(&default_gateway(), &cluster());
    let mut filter = desired
        .applied_object("EnvoyFilter", "openshift-ai-inference-authn-ssl")
        .0;
    filter["spec"]["targetRefs"][0]["name"] = "modified-gateway".into();
    filter["spec"]["targetRefs"]
        .as_array_mut()
        .unwrap()
        .push(json!({"group": "g", "kind": "Gateway", "name": "second"}));
    let mut policy = desired
        .applied_object("AuthPolicy", "openshift-ai-inference-authn")
        .0;
    policy["spec"]["targetRef"]["name"] = "modified-gateway".into();
    policy["spec"]["rules"]["authorization"]["user-rule"] = json!({"priority": 5});
    let cluster = cluster().with(filter.clone()).with(policy.clone());
    let outcome = run(&default_gateway(), &cluster);
    assert_eq!(
        applied(&outcome),
        three(DEFAULT_GW),
        "GC-10/GC-25: deleted ones are made"
    );
    // What the apiserver makes of it (the declared targetRefs win, a user's rule stays) is
    // gc_11_gc_12_target_refs_are_restored in tests/integration: here, what is declared.
    assert_eq!(
        outcome
            .applied_object("EnvoyFilter", "openshift-ai-inference-authn-ssl")
            .0["spec"]["targetRefs"],
        json!([{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": DEFAULT_GW}]),
        "GC-12"
    );
    let declared = outcome
        .applied_object("AuthPolicy", "openshift-ai-inference-authn")
        .0;
    assert_eq!(declared["spec"]["targetRef"]["name"], DEFAULT_GW, "GC-11");
    assert!(
        declared["spec"]["rules"]["authorization"]
            .get("user-rule")
            .is_none(),
        "only our rules are declared"
    );
}

/// Step 4: an existing AuthPolicy or PodMonitor we do not manage is skipped; an EnvoyFilter of
/// that name is made ours whoever made it (upstream overwrites it).
#[test]
fn unmanaged_existing_objects() {
    for labels in [json!({}), opted_out()] {
        let cluster = cluster().with_all(all_live(DEFAULT_NS, DEFAULT_GW, labels.clone()));
        let outcome = run(&default_gateway(), &cluster);
        assert_eq!(
            applied(&outcome),
            ["EnvoyFilter/openshift-ai-inference-authn-ssl"],
            "{labels}"
        );
        assert!(outcome.delete.is_empty());
    }
}

/// RE-15, RE-16, RA-28, RA-29: removal (an unmanaged, unreferenced gateway) asks the host to
/// delete each existing object of ours;
/// removing one that does not exist asks nothing and is no error.
#[test]
fn re_15_re_16_removal() {
    let gw = with_label(gateway(NS, GW), MANAGED, "false");
    let outcome = run(&gw, &cluster().with_all(all_live(NS, GW, ours())));
    assert_eq!(deleted(&outcome), three(GW));
    let outcome = run(&gw, &cluster());
    assert!(outcome.delete.is_empty() && outcome.error.is_none());
}

/// RE-17, RE-18: rendering is deterministic, and a difference in the inputs shows in the spec.
#[test]
fn re_17_re_18_rendering_is_deterministic() {
    let spec = |cluster: &FakeCluster| {
        run(&default_gateway(), cluster)
            .applied_object("EnvoyFilter", "openshift-ai-inference-authn-ssl")
            .at(&["spec"])
            .unwrap()
            .to_string()
    };
    assert_eq!(spec(&cluster()), spec(&cluster()), "RE-18");
    let other = cluster().with(json!({"apiVersion": "kuadrant.io/v1beta1", "kind": "Kuadrant", "metadata": {"name": "k", "namespace": "other"}}));
    assert_ne!(spec(&cluster()), spec(&other), "RE-17");
}

/// Step 5: a failed step records a Warning `ReconcileError` with upstream's text, fails
/// the reconcile and stops the later steps; earlier steps' writes stand.
#[test]
fn step_errors_are_warnings_and_stop_later_steps() {
    let boom = || Error::transient("boom");
    let outcome = run(
        &default_gateway(),
        &cluster().fail(gvk::envoy_filter(), boom()),
    );
    assert!(outcome.apply.is_empty());
    assert_eq!(
        warnings(&outcome),
        [
            "Failed to reconcile EnvoyFilter: failed to get existing EnvoyFilter: could not GET EnvoyFilter openshift-ingress/openshift-ai-inference-authn-ssl: boom"
        ]
    );
    assert_eq!(
        outcome.error,
        Some(Error::Transient("failed to get existing EnvoyFilter: could not GET EnvoyFilter openshift-ingress/openshift-ai-inference-authn-ssl: boom".into()))
    );

    let outcome = run(
        &default_gateway(),
        &cluster().fail(gvk::auth_policy(), boom()),
    );
    assert_eq!(
        applied(&outcome),
        ["EnvoyFilter/openshift-ai-inference-authn-ssl"]
    );
    assert_eq!(
        warnings(&outcome),
        [
            "Failed to reconcile AuthPolicy: failed to get existing AuthPolicy: could not GET AuthPolicy openshift-ingress/openshift-ai-inference-authn: boom"
        ]
    );

    let outcome = run(
        &default_gateway(),
        &cluster().fail(gvk::pod_monitor(), boom()),
    );
    assert_eq!(applied(&outcome).len(), 2);
    assert_eq!(
        warnings(&outcome),
        ["Failed to reconcile gateway PodMonitor: failed to get existing PodMonitor: boom"]
    );
    assert!(outcome.error.is_some());

    // The delete side.
    let unmanaged = with_label(gateway(NS, GW), MANAGED, "false");
    let outcome = run(&unmanaged, &cluster().fail(gvk::auth_policy(), boom()));
    assert_eq!(
        warnings(&outcome),
        [format!(
            "Failed to delete AuthPolicy: failed to get existing AuthPolicy: could not GET AuthPolicy {NS}/{GW}-authn: boom"
        )]
    );
    let outcome = run(&unmanaged, &cluster().fail(gvk::envoy_filter(), boom()));
    assert_eq!(
        warnings(&outcome),
        [format!(
            "Failed to delete EnvoyFilter: failed to get existing EnvoyFilter: could not GET EnvoyFilter {NS}/{GW}-authn-ssl: boom"
        )]
    );
    let outcome = run(&unmanaged, &cluster().fail(gvk::pod_monitor(), boom()));
    assert_eq!(
        warnings(&outcome),
        ["Failed to delete gateway PodMonitor: failed to get existing PodMonitor: boom"]
    );
}

/// Step 5 for writes (spec llm §5.5, §5.6): a refused create, update or delete is the step's
/// `ReconcileError` with upstream's text (`failed to create|update|delete <Kind>: <the API
/// server's message>`) and stops the later steps.
#[test]
fn write_errors_are_warnings_and_stop_later_steps() {
    let denied = || FakeWrites::refused(403, "Forbidden", "denied by policy");
    let writes = FakeWrites::new().fail(gvk::envoy_filter(), denied());
    let outcome = run_writing(
        &Settings::default(),
        &default_gateway(),
        &cluster(),
        &writes,
    );
    assert!(applied(&outcome).is_empty(), "{outcome:?}");
    assert_eq!(
        warnings(&outcome),
        ["Failed to reconcile EnvoyFilter: failed to create EnvoyFilter: denied by policy"]
    );
    assert_eq!(
        outcome.error,
        Some(Error::Transient(
            "failed to create EnvoyFilter: denied by policy".into()
        ))
    );

    // An existing object is updated; the earlier step's write stands.
    let ns = DEFAULT_NS;
    let existing = cluster().with(live(
        "AuthPolicy",
        ns,
        "openshift-ai-inference-authn",
        DEFAULT_GW,
        ours(),
    ));
    let writes = FakeWrites::new().fail(gvk::auth_policy(), denied());
    let outcome = run_writing(&Settings::default(), &default_gateway(), &existing, &writes);
    assert_eq!(
        applied(&outcome),
        ["EnvoyFilter/openshift-ai-inference-authn-ssl"]
    );
    assert_eq!(
        warnings(&outcome),
        ["Failed to reconcile AuthPolicy: failed to update AuthPolicy: denied by policy"]
    );

    // A delete of a labelled object, whoever made it.
    let unmanaged = with_label(gateway(NS, GW), MANAGED, "false");
    let labelled = cluster().with_all(all_live(NS, GW, ours()));
    let writes = FakeWrites::new().fail(gvk::envoy_filter(), denied());
    let outcome = run_writing(&Settings::default(), &unmanaged, &labelled, &writes);
    assert_eq!(
        warnings(&outcome),
        ["Failed to delete EnvoyFilter: failed to delete EnvoyFilter: denied by policy"]
    );
    assert!(deleted(&outcome).is_empty(), "{outcome:?}");
    let writes = FakeWrites::new();
    run_writing(&Settings::default(), &unmanaged, &labelled, &writes);
    let selectors: Vec<String> = writes
        .deleted_unmanaged()
        .into_iter()
        .map(|(_, s)| s)
        .collect();
    assert!(!selectors.is_empty());
    assert!(
        selectors.iter().all(|s| s
            == "app.kubernetes.io/managed-by=odh-model-controller,opendatahub.io/managed!=false"),
        "{selectors:?}"
    );
}

/// Step 5: a kind that is not served (Istio, Kuadrant or Prometheus CRD missing) is
/// skipped without an Event or error; the other steps run.
#[test]
fn missing_kinds_are_skipped() {
    let cluster = cluster()
        .fail(
            gvk::envoy_filter(),
            no_match("EnvoyFilter", "networking.istio.io/v1alpha3"),
        )
        .fail(
            gvk::pod_monitor(),
            no_match("PodMonitor", "monitoring.coreos.com/v1"),
        );
    let outcome = run(&default_gateway(), &cluster);
    assert_eq!(
        applied(&outcome),
        ["AuthPolicy/openshift-ai-inference-authn"]
    );
    assert!(outcome.events.is_empty() && outcome.error.is_none());
    let none = FakeCluster::for_manifest(&LlmGateway::manifest())
        .fail(
            gvk::envoy_filter(),
            no_match("EnvoyFilter", "networking.istio.io/v1alpha3"),
        )
        .fail(gvk::auth_policy(), no_match("AuthPolicy", "kuadrant.io/v1"))
        .fail(
            gvk::pod_monitor(),
            no_match("PodMonitor", "monitoring.coreos.com/v1"),
        );
    let unmanaged = with_label(default_gateway(), MANAGED, "false");
    for gw in [default_gateway(), unmanaged] {
        let outcome = run(&gw, &none);
        assert!(
            outcome.apply.is_empty()
                && outcome.delete.is_empty()
                && outcome.events.is_empty()
                && outcome.error.is_none()
        );
    }
}

/// Steps 1 and 2: a gone or deleting gateway is left to garbage collection; a failed service
/// list fails the reconcile without an Event.
#[test]
fn gone_deleting_and_list_failure() {
    let request = ReconcileRequest::new(CONTROLLER, Some(NS), GW);
    let outcome =
        LlmGateway::reconcile(&request, &Ctx::new(&Settings::default(), &cluster())).unwrap();
    assert_eq!(outcome, Outcome::default());
    let mut deleting = default_gateway();
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z".into();
    assert_eq!(run(&deleting, &cluster()), Outcome::default());
    let failing = cluster().fail(gvk::llm_inference_service(), Error::transient("down"));
    let outcome = run(&gateway(NS, GW), &failing);
    assert_eq!(
        outcome.error,
        Some(Error::Transient(
            "failed to list LLMInferenceServices: down".into()
        ))
    );
    assert!(outcome.events.is_empty() && outcome.apply.is_empty());
    // The default gateway needs no list.
    assert_eq!(applied(&run(&default_gateway(), &failing)).len(), 3);
}

// ---------------------------------------------------------------------------------------
// Mappings (the watches' table).

fn map_with(settings: &Settings, object: Value, cluster: &FakeCluster) -> Vec<RequestKey> {
    let event = WatchEvent::for_object(CONTROLLER, &Object(object), false);
    let mut keys = LlmGateway::map(&event, &Ctx::new(settings, cluster)).unwrap();
    keys.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    keys
}

fn map(object: Value, cluster: &FakeCluster) -> Vec<RequestKey> {
    map_with(&Settings::default(), object, cluster)
}

fn key(ns: &str, name: &str) -> RequestKey {
    request_key(Some(ns), name)
}

/// Owned objects map to their controlling Gateway only when we manage them.
#[test]
fn owned_objects_map_to_their_gateway() {
    for object in all_live(NS, GW, ours()) {
        assert_eq!(map(object, &cluster()), [key(NS, GW)]);
    }
    for object in all_live(NS, GW, opted_out())
        .into_iter()
        .chain(all_live(NS, GW, json!({})))
    {
        assert!(map(object, &cluster()).is_empty());
    }
    let mut plain = live("AuthPolicy", NS, "p", GW, ours());
    plain["metadata"]["ownerReferences"][0]["controller"] = false.into();
    assert!(map(plain, &cluster()).is_empty());
    let mut service_owned = live("AuthPolicy", NS, "p", GW, ours());
    service_owned["metadata"]["ownerReferences"][0]["kind"] = "LLMInferenceService".into();
    service_owned["metadata"]["ownerReferences"][0]["apiVersion"] =
        "serving.kserve.io/v1alpha2".into();
    assert!(map(service_owned, &cluster()).is_empty());
}

/// A config maps to the effective refs of the services using it by name (any namespace); a
/// failed service list maps to the config's own refs.
#[test]
fn config_changes_map_to_the_services_gateways() {
    let cfg = config("sys", "shared", &[(NS, "cfg-gw")]);
    let cluster = cluster()
        .with(cfg.clone())
        .with(with_base_refs(service("a", "s1", &[]), &["shared"]))
        .with(with_base_refs(
            service("b", "s2", &[("", "own")]),
            &["shared"],
        ))
        .with(with_base_refs(service("c", "s3", &[]), &["unrelated"]));
    let sys = Settings {
        pod_namespace: Some("sys".into()),
        ..Settings::default()
    };
    assert_eq!(
        map_with(&sys, cfg.clone(), &cluster),
        [key("b", "own"), key(NS, "cfg-gw")]
    );
    let failing = cluster.fail(gvk::llm_inference_service(), Error::transient("down"));
    let own = config("sys", "shared", &[("", "g1")]);
    assert_eq!(map_with(&sys, own, &failing), [key("sys", "g1")]);
}

/// A namespace maps to the gateways its services name that select namespaces by label; a
/// gateway that cannot be read is mapped anyway, a missing one is not.
#[test]
fn namespace_changes_map_to_selector_gateways() {
    let selector = gateway_in(
        NS,
        "sel",
        json!([{"name": "h", "port": 80, "protocol": "HTTP", "allowedRoutes": {"namespaces": {
        "from": "Selector", "selector": {"matchLabels": {"env": "prod"}}}}}]),
    );
    let cluster = cluster()
        .with(selector)
        .with(gateway(NS, "same"))
        .with(service(
            "app",
            "s",
            &[(NS, "sel"), (NS, "same"), (NS, "missing")],
        ));
    let ns = namespace("app", json!({"env": "prod"}));
    assert_eq!(map(ns.clone(), &cluster), [key(NS, "sel")]);
    assert!(map(namespace("empty", json!({})), &cluster).is_empty());
    let failing = cluster.fail(gvk::gateway(), Error::transient("down"));
    assert_eq!(
        map(ns, &failing),
        [key(NS, "missing"), key(NS, "same"), key(NS, "sel")]
    );
}

/// `inferenceservice-config` in the system namespace maps to every gateway; another name,
/// another namespace or no system namespace maps to nothing.
#[test]
fn ingress_config_changes_map_to_all_gateways() {
    let cluster = cluster().with(gateway(NS, "a")).with(default_gateway());
    let sys = Settings {
        pod_namespace: Some("sys".into()),
        ..Settings::default()
    };
    let cm = ingress_config("sys", json!({}));
    assert_eq!(
        map_with(&sys, cm.clone(), &cluster),
        [key(DEFAULT_NS, DEFAULT_GW), key(NS, "a")]
    );
    assert!(map(cm, &cluster).is_empty());
    assert!(map_with(&sys, ingress_config("other", json!({})), &cluster).is_empty());
    let mut other = ingress_config("sys", json!({}));
    other["metadata"]["name"] = "other".into();
    assert!(map_with(&sys, other, &cluster).is_empty());
}

fn map_change(old: Option<Value>, new: Value, cluster: &FakeCluster) -> Vec<RequestKey> {
    let old = old.map(Object);
    let change = WatchChange::for_objects(CONTROLLER, old.as_ref(), &Object(new), false);
    let settings = Settings::default();
    let mut keys = LlmGateway::map_change(&change, &Ctx::new(&settings, cluster)).unwrap();
    keys.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    keys
}

/// A service maps to the gateways it names, before and after the change (a gateway a ref moved
/// away from is reconciled too); naming none, to the default gateway.
#[test]
fn service_changes_map_to_old_and_new_refs() {
    let cluster = cluster();
    let before = service(NS, "s", &[(NS, "g1")]);
    let after = service(NS, "s", &[("", "g2")]);
    assert_eq!(map(after.clone(), &cluster), [key(NS, "g2")]);
    assert_eq!(
        map_change(Some(before), after.clone(), &cluster),
        [key(NS, "g1"), key(NS, "g2")]
    );
    assert_eq!(map_change(None, after, &cluster), [key(NS, "g2")]);
    assert_eq!(
        map(service(NS, "none", &[]), &cluster),
        [key(DEFAULT_NS, DEFAULT_GW)]
    );
    // Other kinds map the new state only: a namespace's services are the same before and after.
    let ns = namespace("app", json!({}));
    assert!(map_change(Some(ns.clone()), ns, &cluster).is_empty());
}

/// Upstream's predicates of the controller, as event filters the host applies.
#[test]
fn event_filters_are_upstreams_predicates() {
    let filters = LlmGateway::event_filters();
    let of = |kind: odh_plugin_sdk::Gvk| {
        filters
            .iter()
            .find(|f| f.controller == CONTROLLER && f.gvk == kind)
            .unwrap_or_else(|| panic!("a filter of {kind:?}"))
    };
    let gw = of(gvk::gateway());
    assert!(gw.create && !gw.delete && gw.update == UpdateFilter::Always);
    let cm = of(gvk::config_map());
    assert_eq!(cm.names, ["inferenceservice-config"]);
    assert!(!cm.create && !cm.delete);
    assert_eq!(
        cm.update,
        UpdateFilter::Changed(vec!["/data/ingress".into()])
    );
    let ns = of(gvk::namespace());
    assert!(ns.create && !ns.delete);
    assert_eq!(
        ns.update,
        UpdateFilter::Changed(vec!["/metadata/labels".into()])
    );
    let UpdateFilter::Changed(service) = &of(gvk::llm_inference_service()).update else {
        panic!("services pass on changed fields")
    };
    assert!(service.contains(&"/spec/router/gateway/refs".to_string()));
    assert!(service.contains(&"/metadata/annotations/serving.kserve.io~1stop".to_string()));
    let policies = filters
        .iter()
        .find(|f| f.controller == "llminferenceservice" && f.gvk == gvk::auth_policy())
        .expect("the AuthPolicy filter");
    assert!(!policies.create && policies.delete);
}

/// The manifest: the controller, its watches and the kinds it reads and writes.
#[test]
fn manifest_declares_the_gateway_controller() {
    let manifest = LlmGateway::manifest();
    let controller = manifest
        .controllers
        .iter()
        .find(|c| c.name == CONTROLLER)
        .unwrap();
    assert_eq!(controller.primary, gvk::gateway());
    let watch = |kind: odh_plugin_sdk::Gvk| {
        controller
            .watches
            .iter()
            .find(|w| w.gvk == kind)
            .unwrap()
            .clone()
    };
    for kind in [gvk::envoy_filter(), gvk::auth_policy(), gvk::pod_monitor()] {
        let w = watch(kind);
        assert!(w.optional && w.mapping == Mapping::Custom);
    }
    for kind in [
        gvk::llm_inference_service(),
        gvk::llm_inference_service_config(),
        gvk::namespace(),
        gvk::config_map(),
    ] {
        let w = watch(kind);
        assert!(!w.optional && w.mapping == Mapping::Custom);
    }
    for kind in [gvk::kuadrant(), gvk::authorino()] {
        let w = watch(kind);
        assert!(w.optional && w.mapping == Mapping::All);
    }
    for kind in [gvk::envoy_filter(), gvk::auth_policy(), gvk::pod_monitor()] {
        assert!(manifest.writes.contains(&kind));
    }
    assert!(manifest.reads.contains(&odh_plugin_sdk::gvk(
        "config.openshift.io",
        "v1",
        "Authentication"
    )));
}
