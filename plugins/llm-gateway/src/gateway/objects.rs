//! The three Gateway-scoped objects, AuthPolicy, EnvoyFilter and PodMonitor
//! (docs/plugins/llm-gateway.md, "Gateway controller `gateway-auth-bootstrap`", step 4), without
//! the owner reference (the host adds the Gateway's). CEL strings are byte for byte upstream's
//! template output: a differing byte would be an update on every reconcile.

use odh_plugin_sdk::{Error, Object, Value, go, json};

use crate::llmisvc::authpolicy::{
    COMPONENT, PART_OF, anonymous_policy, flow_control_headers, policy_labels,
};
use crate::names::{auth_policy_name, envoy_filter_name, pod_monitor_name};
use crate::predicates::{MANAGED_BY, MANAGED_BY_VALUE};

use super::ingress::{DEFAULT_AUDIENCE, DEFAULT_ROUTING_HEADER, is_safe_header_name};

pub const GATEWAY_API_GROUP: &str = "gateway.networking.k8s.io";
/// `app.kubernetes.io/name` of the Gateway AuthPolicy and EnvoyFilter.
pub const AUTH_NAME: &str = "llminferenceservice-auth";

/// The objective of an authenticated caller: a ServiceAccount's namespace, else
/// `authenticated`.
pub const DEFAULT_OBJECTIVE: &str = "auth.identity.user.username.startsWith('system:serviceaccount:') ? auth.identity.user.username.split(':')[2] : 'authenticated'";
pub const RESOLVED_USER: &str = "'x-maas-user' in request.headers ? request.headers['x-maas-user'] : auth.identity.user.username";
/// Four lines: YAML folded style keeps the more-indented lines' breaks.
pub const RESOLVED_GROUPS: &str = "'x-maas-user' in request.headers ? ('x-maas-groups' in request.headers\n  ? request.headers['x-maas-groups'].split(',')\n  : [])\n: auth.identity.user.groups";
/// The OpenAI batch API paths (authentication only; the caller's identity is forwarded).
pub const BATCH_PATHS: &str = "request.path == '/v1/files' || request.path.startsWith('/v1/files/') || request.path == '/v1/batches' || request.path.startsWith('/v1/batches/')";
pub const NOT_PUBLISHER_PATH: &str = "!request.path.matches('^/publishers/[^/]+/models/')";
pub const NOT_V1_PATH: &str = "!request.path.startsWith('/v1/')";
pub const DELEGATED: &str = "'x-maas-user' in request.headers";
pub const PUBLISHER_NAMESPACE: &str = "request.path.split('/')[2]";
pub const PUBLISHER_MODEL: &str = "'publishers/' + request.path.split('/')[2] + '/models/' + request.path.split('/models/')[1].split('/v1/')[0]";
pub const INSTANCE_NAMESPACE: &str = "request.path.split(\"/\")[1]";
pub const INSTANCE_NAME: &str = "request.path.split(\"/\")[2]";

/// The template loader's options (post-render, in this order: labels, audiences, objective).
#[derive(Debug, Clone, Default)]
pub struct PolicyOptions {
    /// Labels over the managed ones (`app.kubernetes.io/name` among them).
    pub labels: Vec<(String, String)>,
    /// `WithAudiences`: none keeps the template's `https://kubernetes.default.svc`.
    pub audiences: Option<Vec<String>>,
    /// `WithObjectiveExpression`: none keeps the template's.
    pub objective_expression: Option<String>,
    /// The model routing header of the deny rule; empty means `x-gateway-model-name`.
    pub routing_header: String,
}

/// What an AuthPolicy targets.
#[derive(Debug, Clone)]
pub struct Target<'a> {
    pub kind: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
}

/// The AuthPolicy template loader: `userdefined` (the Gateway's token-review policy) or `anonymous`
/// (the HTTPRoute policy of an LLMInferenceService with auth off), named
/// `ChildName(<target>, "-authn")`. Any other type is refused, and so is a routing header that is
/// not a safe HTTP token (checked for both types).
pub fn load_policy(
    auth_type: &str,
    target: &Target,
    options: &PolicyOptions,
) -> Result<Value, Error> {
    if auth_type != "anonymous" && auth_type != "userdefined" {
        return Err(Error::invalid(format!("unsupported auth type {auth_type}")));
    }
    let header = if options.routing_header.is_empty() {
        DEFAULT_ROUTING_HEADER
    } else {
        options.routing_header.as_str()
    };
    if !is_safe_header_name(header) {
        return Err(Error::invalid(format!(
            "invalid model routing header name {}: must be a valid HTTP token safe for CEL interpolation",
            go::quote(header)
        )));
    }
    let mut policy = if auth_type == "anonymous" {
        let owner =
            Object(json!({"metadata": {"name": target.name, "namespace": target.namespace}}));
        let mut policy = anonymous_policy(&owner, target.name);
        policy["spec"]["targetRef"]["kind"] = target.kind.into();
        policy["metadata"]["labels"]
            .as_object_mut()
            .map(|l| l.remove("app.kubernetes.io/name"));
        policy
    } else {
        userdefined_policy(target, header)
    };
    for (key, value) in &options.labels {
        policy["metadata"]["labels"][key] = value.as_str().into();
    }
    let authentication = policy["spec"]["rules"]["authentication"].as_object_mut();
    for (_, entry) in authentication.into_iter().flatten() {
        if let Some(audiences) = &options.audiences
            && entry.get("kubernetesTokenReview").is_some()
        {
            entry["kubernetesTokenReview"]["audiences"] = json!(audiences);
            if let Some(first) = audiences.first()
                && entry["overrides"].get("fairness").is_some()
            {
                entry["overrides"]["fairness"]["value"] = first.as_str().into();
            }
        }
        if let Some(expression) = &options.objective_expression
            && entry["overrides"].get("objective").is_some()
        {
            entry["overrides"]["objective"]["expression"] = expression.as_str().into();
        }
    }
    Ok(policy)
}

fn sar(user: &str, groups: &str, attributes: Value) -> Value {
    json!({
        "user": {"expression": user},
        "authorizationGroups": {"expression": groups},
        "resourceAttributes": attributes,
    })
}

fn attributes(group: &str, resource: &str, namespace: &str, name: &str, verb: &str) -> Value {
    json!({
        "group": {"value": group},
        "resource": {"value": resource},
        "namespace": {"expression": namespace},
        "name": {"expression": name},
        "verb": {"value": verb},
    })
}

fn predicate(expression: &str) -> Value {
    json!({ "predicate": expression })
}

/// The userdefined policy before the options (template defaults), for `header`.
fn userdefined_policy(target: &Target, header: &str) -> Value {
    let pattern = |value: &str| json!({"allOf": [{"selector": "context.request.http.path", "operator": "matches", "value": value}]});
    let (resolved_user, resolved_groups) =
        ("auth.identity.resolvedUser", "auth.identity.resolvedGroups");
    let (caller, caller_groups) = ("auth.identity.user.username", "auth.identity.user.groups");
    let model = |resource: &str, verb: &str| {
        attributes(
            "serving.opendatahub.io",
            resource,
            PUBLISHER_NAMESPACE,
            PUBLISHER_MODEL,
            verb,
        )
    };
    let instance = |resource: &str, verb: &str| {
        attributes(
            "serving.kserve.io",
            resource,
            INSTANCE_NAMESPACE,
            INSTANCE_NAME,
            verb,
        )
    };
    let publisher = json!({"patternRef": "is-publisher-path"});
    let per_instance = [
        json!({"patternRef": "has-ns-and-name"}),
        predicate(NOT_V1_PATH),
        predicate(NOT_PUBLISHER_PATH),
    ];
    let mut delegated_instance = per_instance.to_vec();
    delegated_instance.push(predicate(DELEGATED));
    let misrouted = format!(
        "'{header}' in request.headers && request.headers['{header}'].matches('^publishers/[^/]+/models/.+$')"
    );
    let batch_only = json!([predicate(BATCH_PATHS)]);
    let mut headers = flow_control_headers();
    headers["x-maas-user"] =
        json!({"when": batch_only, "plain": {"expression": caller}, "priority": 0});
    headers["x-maas-groups"] = json!({"when": batch_only, "plain": {"expression": "auth.identity.user.groups.join(',')"}, "priority": 0});
    json!({
        "apiVersion": "kuadrant.io/v1",
        "kind": "AuthPolicy",
        "metadata": {
            "name": auth_policy_name(target.name),
            "namespace": target.namespace,
            "labels": {
                "app.kubernetes.io/component": COMPONENT,
                "app.kubernetes.io/part-of": PART_OF,
                MANAGED_BY: MANAGED_BY_VALUE,
            },
        },
        "spec": {
            "targetRef": {"group": GATEWAY_API_GROUP, "kind": target.kind, "name": target.name},
            "patterns": {
                "has-ns-and-name": pattern("^/[^/]+/[^/]+"),
                "is-publisher-path": pattern("^/publishers/[^/]+/models/"),
            },
            "rules": {
                "authentication": {"kubernetes-user": {
                    "kubernetesTokenReview": {"audiences": [DEFAULT_AUDIENCE]},
                    "overrides": {
                        "fairness": {"value": DEFAULT_AUDIENCE},
                        "objective": {"expression": DEFAULT_OBJECTIVE},
                        "resolvedUser": {"expression": RESOLVED_USER},
                        "resolvedGroups": {"expression": RESOLVED_GROUPS},
                    },
                }},
                "authorization": {
                    "model-access-path": {
                        "when": [publisher],
                        "kubernetesSubjectAccessReview": sar(resolved_user, resolved_groups, model("models", "post")),
                        "priority": 1,
                    },
                    "model-access-path-delegate": {
                        "when": [publisher, predicate(DELEGATED)],
                        "kubernetesSubjectAccessReview": sar(caller, caller_groups, model("models/delegate", "post-delegate")),
                        "priority": 1,
                    },
                    "deny-misrouted-model-header": {
                        "when": [
                            predicate(NOT_PUBLISHER_PATH),
                            predicate(&format!("!({BATCH_PATHS})")),
                            predicate(&misrouted),
                        ],
                        "patternMatching": {"patterns": [predicate("false")]},
                        "priority": 0,
                    },
                    "inference-access": {
                        "when": per_instance,
                        "kubernetesSubjectAccessReview": sar(resolved_user, resolved_groups, instance("llminferenceservices", "get")),
                        "priority": 1,
                    },
                    "inference-access-delegate": {
                        "when": delegated_instance,
                        "kubernetesSubjectAccessReview": sar(caller, caller_groups, instance("llminferenceservices/delegate", "post-delegate")),
                        "priority": 1,
                    },
                },
                "response": {"success": {"headers": headers}},
            },
        },
    })
}

/// The Gateway's token-review policy, named `app.kubernetes.io/name:
/// llminferenceservice-auth`, with these audiences, objective and routing header.
pub fn gateway_policy(
    gateway: &Object,
    audiences: Vec<String>,
    objective: &str,
    routing_header: &str,
) -> Result<Value, Error> {
    let target = Target {
        kind: "Gateway",
        namespace: gateway.namespace().unwrap_or_default(),
        name: gateway.name(),
    };
    let options = PolicyOptions {
        labels: vec![("app.kubernetes.io/name".into(), AUTH_NAME.into())],
        audiences: Some(audiences),
        objective_expression: Some(objective.into()),
        routing_header: routing_header.into(),
    };
    load_policy("userdefined", &target, &options)
}

/// The EnvoyFilter: TLS from the gateway's Envoy to Authorino in `kuadrant_ns`.
pub fn envoy_filter(gateway: &Object, kuadrant_ns: &str) -> Value {
    let authorino = format!("authorino-authorino-authorization.{kuadrant_ns}.svc.cluster.local");
    json!({
        "apiVersion": "networking.istio.io/v1alpha3",
        "kind": "EnvoyFilter",
        "metadata": {
            "name": envoy_filter_name(gateway.name()),
            "namespace": gateway.namespace().unwrap_or_default(),
            "labels": policy_labels(AUTH_NAME),
        },
        "spec": {
            "priority": -1,
            "targetRefs": [{"group": GATEWAY_API_GROUP, "kind": "Gateway", "name": gateway.name()}],
            "configPatches": [{
                "applyTo": "CLUSTER",
                "match": {"cluster": {"service": authorino}},
                "patch": {
                    "operation": "ADD",
                    "value": {
                        "name": "kuadrant-auth-service",
                        "type": "STRICT_DNS",
                        "connect_timeout": "1s",
                        "lb_policy": "ROUND_ROBIN",
                        "http2_protocol_options": {},
                        "load_assignment": {
                            "cluster_name": "kuadrant-auth-service",
                            "endpoints": [{"lb_endpoints": [{"endpoint": {"address": {"socket_address": {
                                "address": authorino,
                                "port_value": 50051,
                            }}}}]}],
                        },
                        "transport_socket": {
                            "name": "envoy.transport_sockets.tls",
                            "typed_config": {
                                "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
                                "common_tls_context": {"validation_context": {"trusted_ca": {
                                    "filename": "/var/run/secrets/kubernetes.io/serviceaccount/service-ca.crt",
                                }}},
                            },
                        },
                    },
                },
            }],
        },
    })
}

/// The PodMonitor: the gateway's Envoy metrics for Prometheus.
pub fn pod_monitor(gateway: &Object) -> Value {
    json!({
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {
            "name": pod_monitor_name(gateway.name()),
            "namespace": gateway.namespace().unwrap_or_default(),
            "labels": {
                "app.kubernetes.io/component": "llm-monitoring",
                "app.kubernetes.io/part-of": PART_OF,
                MANAGED_BY: MANAGED_BY_VALUE,
                "monitoring.opendatahub.io/scrape": "true",
            },
        },
        "spec": {
            "selector": {"matchLabels": {"gateway.networking.k8s.io/gateway-name": gateway.name()}},
            "podMetricsEndpoints": [{
                "port": "metrics",
                "path": "/stats/prometheus",
                "scheme": "http",
                "relabelings": [
                    {
                        "sourceLabels": ["__meta_kubernetes_pod_label_gateway_networking_k8s_io_gateway_name"],
                        "action": "replace",
                        "targetLabel": "gateway_name",
                    },
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
