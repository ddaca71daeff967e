//! Which Gateways a watched change concerns (docs/plugins/llm-gateway.md, "Gateway controller
//! `gateway-auth-bootstrap`", the watches' table). The host filters events first (the
//! controller's `event_filters`); a service's or config's change maps both its old and its
//! new state, as controller-runtime's map functions see an update, so a Gateway a reference
//! moved away from is reconciled too.

use std::collections::BTreeSet;

use odh_kinds::gvk;
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{Ctx, Error, Object, RequestKey, Value, WatchChange, WatchEvent, request_key};

use crate::listeners::needs_namespace_labels;
use crate::predicates::is_managed_by_open_data_hub;
use crate::settings::Settings;

use super::gateway_ref::GatewayRef;
use super::ingress::{INFERENCESERVICE_CONFIG, default_gateway};
use super::objects::GATEWAY_API_GROUP;
use super::refs::{effective_refs, own_refs};

pub fn map(event: &WatchEvent, cx: &Ctx<Settings>) -> Result<Vec<RequestKey>, Error> {
    map_object(&event.gvk.kind, &event.object()?, cx)
}

/// A change with its previous state: a service's and a config's old state is mapped too (the
/// Gateways it no longer names); other kinds map as [`map`].
pub fn map_change(change: &WatchChange, cx: &Ctx<Settings>) -> Result<Vec<RequestKey>, Error> {
    let kind = change.gvk.kind.as_str();
    let mut keys = map_object(kind, &change.object()?, cx)?;
    let old_matters = matches!(kind, "LLMInferenceService" | "LLMInferenceServiceConfig");
    if let Some(old) = change.old_object()?.filter(|_| old_matters) {
        for key in map_object(kind, &old, cx)? {
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    Ok(keys)
}

fn map_object(kind: &str, object: &Object, cx: &Ctx<Settings>) -> Result<Vec<RequestKey>, Error> {
    let system_ns = cx.settings.system_namespace();
    let refs = match kind {
        "EnvoyFilter" | "AuthPolicy" | "PodMonitor" => return Ok(controlling_gateway(object)),
        "LLMInferenceService" => service_refs(object, system_ns, cx.cluster),
        "LLMInferenceServiceConfig" => config_refs(object, system_ns, cx.cluster),
        "Namespace" => namespace_refs(object, system_ns, cx.cluster),
        "ConfigMap" => return ingress_config_change(object, system_ns, cx.cluster),
        _ => BTreeSet::new(),
    };
    Ok(refs
        .into_iter()
        .map(|r| request_key(Some(&r.namespace), &r.name))
        .collect())
}

/// An object we manage (not opted out) maps to its controlling Gateway.
pub fn controlling_gateway(object: &Object) -> Vec<RequestKey> {
    if !is_managed_by_open_data_hub(object) {
        return Vec::new();
    }
    let is_gateway = |r: &Value| {
        let field = |key| r.get(key).and_then(Value::as_str).unwrap_or_default();
        r.get("controller").and_then(Value::as_bool) == Some(true)
            && field("kind") == "Gateway"
            && field("apiVersion").split('/').next() == Some(GATEWAY_API_GROUP)
    };
    object
        .owner_references()
        .iter()
        .find(|r| is_gateway(r))
        .and_then(|r| r.get("name").and_then(Value::as_str))
        .map(|name| request_key(object.namespace(), name))
        .into_iter()
        .collect()
}

/// A config change: the effective refs (unfiltered) of every service with a `baseRefs` entry of
/// the config's name (namespaces not compared); if the services cannot be listed, the config's
/// own refs.
pub fn config_refs(
    config: &Object,
    system_ns: Option<&str>,
    cluster: &dyn Cluster,
) -> BTreeSet<GatewayRef> {
    let namespace = config.namespace().unwrap_or_default();
    let services = match cluster.list_objects(&gvk::llm_inference_service(), None, None) {
        Ok(services) => services,
        Err(_) => {
            return own_refs(config)
                .iter()
                .map(|r| r.in_namespace(namespace))
                .collect();
        }
    };
    let uses_config = |service: &Object| {
        service
            .array_at(&["spec", "baseRefs"])
            .iter()
            .any(|b| b.get("name").and_then(Value::as_str) == Some(config.name()))
    };
    services
        .iter()
        .filter(|s| uses_config(s))
        .flat_map(|s| resolved_refs(s, system_ns, cluster))
        .collect()
}

/// A namespace change (its labels may open or close a `Selector` listener): the Gateways the
/// namespace's services name that select namespaces by label (or could not be read).
pub fn namespace_refs(
    namespace: &Object,
    system_ns: Option<&str>,
    cluster: &dyn Cluster,
) -> BTreeSet<GatewayRef> {
    let Ok(services) =
        cluster.list_objects(&gvk::llm_inference_service(), Some(namespace.name()), None)
    else {
        return BTreeSet::new();
    };
    let refs: BTreeSet<GatewayRef> = services
        .iter()
        .flat_map(|s| resolved_refs(s, system_ns, cluster))
        .collect();
    refs.into_iter()
        .filter(
            |r| match cluster.get_object(&gvk::gateway(), Some(&r.namespace), &r.name) {
                Ok(None) => false,
                Ok(Some(gateway)) => needs_namespace_labels(&gateway),
                Err(_) => true,
            },
        )
        .collect()
}

/// A change of `inferenceservice-config` in the system namespace (default gateway, routing
/// header): every Gateway. Without a system namespace nothing matches.
pub fn ingress_config_change(
    config_map: &Object,
    system_ns: Option<&str>,
    cluster: &dyn Cluster,
) -> Result<Vec<RequestKey>, Error> {
    if config_map.name() != INFERENCESERVICE_CONFIG
        || system_ns.is_none()
        || config_map.namespace() != system_ns
    {
        return Ok(Vec::new());
    }
    Ok(cluster
        .list_objects(&gvk::gateway(), None, None)?
        .iter()
        .map(Object::request_key)
        .collect())
}

/// The Gateways a service names (its unfiltered effective refs), or the default Gateway when it
/// names none (upstream's `enqueueGatewaysFromLLMInferenceService`).
pub fn service_refs(
    service: &Object,
    system_ns: Option<&str>,
    cluster: &dyn Cluster,
) -> BTreeSet<GatewayRef> {
    let refs: BTreeSet<GatewayRef> = resolved_refs(service, system_ns, cluster)
        .into_iter()
        .collect();
    if refs.is_empty() {
        return BTreeSet::from([default_gateway(system_ns, cluster)]);
    }
    refs
}

/// The service's unfiltered effective refs with their namespaces resolved.
fn resolved_refs(
    service: &Object,
    system_ns: Option<&str>,
    cluster: &dyn Cluster,
) -> Vec<GatewayRef> {
    let namespace = service.namespace().unwrap_or_default();
    effective_refs(service, None, system_ns, cluster)
        .iter()
        .map(|r| r.in_namespace(namespace))
        .collect()
}
