//! Which Gateways an LLMInferenceService uses (docs/plugins/llm-gateway.md, "Gateway controller
//! `gateway-auth-bootstrap`", step 2): its effective gateway refs, the
//! listeners' `allowedRoutes` filtering, and "referenced".

use odh_kinds::gvk;
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{Error, Object, Value, log};

use crate::listeners::{gateway_allows_namespace, needs_namespace_labels};
use crate::predicates::is_stopped;

use super::gateway_ref::GatewayRef;
use super::ingress;

/// The `spec.router.gateway.refs` of a service or config object.
pub fn own_refs(object: &Object) -> Vec<GatewayRef> {
    object
        .array_at(&["spec", "router", "gateway", "refs"])
        .iter()
        .map(|r| {
            let field = |key| r.get(key).and_then(Value::as_str).unwrap_or_default();
            GatewayRef::new(field("namespace"), field("name"))
        })
        .collect()
}

/// `filterAllowedRefs`: with a gateway, the refs that name it are kept only when one of its
/// listeners allows `target_ns` (with the namespace's labels); every other ref is kept, in
/// order. Without a gateway, the refs unchanged.
pub fn filter_allowed_refs(
    gateway: Option<&Object>,
    refs: Vec<GatewayRef>,
    target_ns: &str,
    ns_labels: Option<&Value>,
) -> Vec<GatewayRef> {
    let Some(gateway) = gateway else {
        return refs;
    };
    refs.into_iter()
        .filter(|r| {
            !r.names(gateway, target_ns)
                || gateway_allows_namespace(gateway, target_ns, ns_labels, |e| {
                    log::warn!(
                        "gateway {}/{}: invalid listener namespace selector: {}",
                        gateway.namespace().unwrap_or_default(),
                        gateway.name(),
                        e.0
                    )
                })
        })
        .collect()
}

/// The effective gateway refs of `service`, filtered for `gateway` when given: its own
/// refs that survive the filtering, else the refs of the last of its `baseRefs` configs that
/// has any (each looked for in the service's namespace, then in `system_ns`; a config that
/// cannot be read is skipped), filtered the same way. Namespaces are left as written.
pub fn effective_refs(
    service: &Object,
    gateway: Option<&Object>,
    system_ns: Option<&str>,
    cluster: &dyn Cluster,
) -> Vec<GatewayRef> {
    let namespace = service.namespace().unwrap_or_default();
    // Only a selector listener looks at the labels; a failed read is no labels.
    let labels = match gateway {
        Some(gw) if needs_namespace_labels(gw) => cluster
            .get(&gvk::namespace(), None, namespace)
            .ok()
            .flatten()
            .and_then(|ns| ns["metadata"].get("labels").cloned()),
        _ => None,
    };
    let own = filter_allowed_refs(gateway, own_refs(service), namespace, labels.as_ref());
    if !own.is_empty() {
        return own;
    }
    let mut candidate = Vec::new();
    for base in service.array_at(&["spec", "baseRefs"]) {
        let name = base.get("name").and_then(Value::as_str).unwrap_or_default();
        if let Some(config) = find_config(name, namespace, system_ns, cluster) {
            let refs = own_refs(&config);
            if !refs.is_empty() {
                candidate = refs;
            }
        }
    }
    filter_allowed_refs(gateway, candidate, namespace, labels.as_ref())
}

/// A config by name in the service's namespace, else in the system namespace; none when it
/// is missing or a read fails (logged).
fn find_config(
    name: &str,
    namespace: &str,
    system_ns: Option<&str>,
    cluster: &dyn Cluster,
) -> Option<Object> {
    let kind = gvk::llm_inference_service_config();
    let mut places = vec![namespace];
    places.extend(system_ns);
    for ns in places {
        match cluster.get_object(&kind, Some(ns), name) {
            Ok(Some(config)) => return Some(config),
            Ok(None) => {}
            Err(e) => {
                log::warn!("could not read LLMInferenceServiceConfig {ns}/{name}: {e}");
                return None;
            }
        }
    }
    log::debug!(
        "LLMInferenceServiceConfig {name} not found in {namespace} or the system namespace"
    );
    None
}

/// `isGatewayReferencedByLLMService`: the default gateway always is; otherwise some
/// non-stopped service's effective refs (filtered for this gateway) name it.
pub fn is_referenced(
    gateway: &Object,
    system_ns: Option<&str>,
    cluster: &dyn Cluster,
) -> Result<bool, Error> {
    let default = ingress::default_gateway(system_ns, cluster);
    if Some(default.namespace.as_str()) == gateway.namespace() && default.name == gateway.name() {
        return Ok(true);
    }
    let services = cluster
        .list_objects(&gvk::llm_inference_service(), None, None)
        .map_err(|e| e.context("failed to list LLMInferenceServices"))?;
    Ok(services.iter().filter(|s| !is_stopped(s)).any(|service| {
        let namespace = service.namespace().unwrap_or_default();
        effective_refs(service, Some(gateway), system_ns, cluster)
            .iter()
            .any(|r| r.names(gateway, namespace))
    }))
}
