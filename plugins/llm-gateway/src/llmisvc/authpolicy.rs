//! The HTTPRoute AuthPolicy sub-reconciler (docs/plugins/llm-gateway.md, "Controller
//! `llminferenceservice`", steps 2 and 5): an anonymous Kuadrant
//! AuthPolicy per HTTPRoute of a service that turned auth off; removed again when auth is on.
//!
//! Objects are server-side applied: the host writes only when our fields differ from the live
//! object, which is upstream's derivative comparison (extra labels and rules a user adds
//! survive, a drifted templated field is restored).

use odh_kinds::gvk;
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{Error, Object, Ownership, Plan, Value, json};

use crate::names::{auth_policy_name, default_route_name};
use crate::predicates::{MANAGED_BY, MANAGED_BY_VALUE, auth_enabled, is_managed_by_open_data_hub};

pub const COMPONENT: &str = "llminferenceservice-policies";
pub const PART_OF: &str = "llminferenceservice";

/// The HTTPRoutes of a service: its `spec.router.route.http.refs` names, else KServe's default
/// route `<svc>-kserve-route`.
pub fn route_names(service: &Object) -> Vec<String> {
    let refs: Vec<String> = service
        .array_at(&["spec", "router", "route", "http", "refs"])
        .iter()
        .map(|r| {
            r.get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    if refs.is_empty() {
        vec![default_route_name(service.name())]
    } else {
        refs
    }
}

/// The labels of every AuthPolicy we make (anonymous and userdefined), with
/// `app.kubernetes.io/name: name`.
pub fn policy_labels(name: &str) -> Value {
    json!({
        "app.kubernetes.io/component": COMPONENT,
        "app.kubernetes.io/part-of": PART_OF,
        MANAGED_BY: MANAGED_BY_VALUE,
        "app.kubernetes.io/name": name,
    })
}

/// The flow-control response headers of every AuthPolicy we make (anonymous and userdefined).
pub fn flow_control_headers() -> Value {
    let header = |expression: &str| json!({"metrics": false, "plain": {"expression": expression}, "priority": 0});
    json!({
        "x-gateway-inference-fairness-id": header("auth.identity.fairness"),
        "x-gateway-inference-objective": header("auth.identity.objective"),
    })
}

/// The anonymous AuthPolicy for HTTPRoute `route` of `service` (without the owner
/// reference, which the host adds).
pub fn anonymous_policy(service: &Object, route: &str) -> Value {
    let unauthenticated = json!({"value": "unauthenticated"});
    json!({
        "apiVersion": "kuadrant.io/v1",
        "kind": "AuthPolicy",
        "metadata": {
            "name": auth_policy_name(route),
            "namespace": service.namespace().unwrap_or_default(),
            "labels": policy_labels(service.name()),
        },
        "spec": {
            "targetRef": {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": route},
            "rules": {
                "authentication": {"public": {
                    "anonymous": {},
                    "metrics": false,
                    "priority": 0,
                    "overrides": {"fairness": unauthenticated.clone(), "objective": unauthenticated},
                }},
                "response": {"success": {"headers": flow_control_headers()}},
            },
        },
    })
}

/// Reconciles the AuthPolicy of every route of `merged` (the service with its configs merged
/// in). Stops at the first failure, as upstream's loop does.
pub fn reconcile(merged: &Object, cluster: &dyn Cluster, plan: &mut Plan) -> Result<(), Error> {
    let namespace = merged.namespace().unwrap_or_default();
    for route in route_names(merged) {
        let desired = anonymous_policy(merged, &route);
        let name = auth_policy_name(&route);
        let existing = match cluster.get_object(&gvk::auth_policy(), Some(namespace), &name) {
            Ok(existing) => existing,
            // Without Kuadrant there is no policy to remove.
            Err(e) if e.is_no_match() && auth_enabled(merged) => continue,
            Err(e) => {
                return Err(e.context(format!("could not GET AuthPolicy {namespace}/{name}")));
            }
        };
        // A policy the user made, or opted out of our management, is theirs.
        if existing
            .as_ref()
            .is_some_and(|e| !is_managed_by_open_data_hub(e))
        {
            continue;
        }
        if auth_enabled(merged) {
            if let Some(existing) = existing {
                claim_and_delete(plan, desired, &existing, Ownership::Controller);
            }
            continue;
        }
        let found = cluster
            .get(&gvk::http_route(), Some(namespace), &route)
            .and_then(|r| {
                r.ok_or_else(|| {
                    Error::Transient(format!(
                        "httproutes.gateway.networking.k8s.io \"{route}\" not found"
                    ))
                })
            });
        if let Err(e) = found {
            return Err(e.context(format!(
                "failed to get HTTPRoute for AuthPolicy {name}: failed to get HTTPRoute {namespace}/{route}"
            )));
        }
        plan.apply_owned(desired);
    }
    Ok(())
}

/// The deletion path: the policies of the routes the stored spec names (not the merged
/// one) are removed by name, whoever manages them. A cluster without the AuthPolicy kind has
/// none to remove.
pub fn delete(service: &Object, cluster: &dyn Cluster, plan: &mut Plan) -> Result<(), Error> {
    let namespace = service.namespace().unwrap_or_default();
    for route in route_names(service) {
        let name = auth_policy_name(&route);
        match cluster.get_object(&gvk::auth_policy(), Some(namespace), &name) {
            Ok(Some(existing)) => claim_and_delete(
                plan,
                anonymous_policy(service, &route),
                &existing,
                Ownership::None,
            ),
            Ok(None) => {}
            Err(e) if e.is_no_match() => return Ok(()),
            Err(e) => {
                return Err(e.context(format!("could not DELETE AuthPolicy {namespace}/{name}")));
            }
        }
    }
    Ok(())
}

/// Upstream deletes by name; the host deletes only objects it manages. Applying our fields to
/// that very object (its uid: the API server refuses a different one) first makes it ours, so
/// a policy the Go controller created before an upgrade is removed too. For one we already
/// manage the apply changes nothing and costs no write.
fn claim_and_delete(plan: &mut Plan, mut claim: Value, existing: &Object, ownership: Ownership) {
    if let (Some(uid), Some(metadata)) = (existing.uid(), claim["metadata"].as_object_mut()) {
        metadata.insert("uid".into(), uid.into());
    }
    plan.apply(claim, ownership);
    plan.delete(existing.key());
}
