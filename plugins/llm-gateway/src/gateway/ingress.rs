//! The Gateway controller's inputs from the cluster: the `inferenceservice-config` readers
//! (default gateway, model routing header), the token-review audiences, the Kuadrant namespace
//! and Authorino TLS detection (docs/plugins/llm-gateway.md, "Shared building blocks").

use odh_kinds::gvk;
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{Object, Value};

use super::gateway_ref::GatewayRef;

/// The ConfigMap of KServe's ingress settings, in the system namespace.
pub const INFERENCESERVICE_CONFIG: &str = "inferenceservice-config";
pub const DEFAULT_GATEWAY_NAMESPACE: &str = "openshift-ingress";
pub const DEFAULT_GATEWAY_NAME: &str = "openshift-ai-inference";
pub const DEFAULT_ROUTING_HEADER: &str = "x-gateway-model-name";
pub const DEFAULT_AUDIENCE: &str = "https://kubernetes.default.svc";
pub const DEFAULT_KUADRANT_NAMESPACE: &str = "kuadrant-system";

/// The parsed `ingress` key; none when the system namespace is unknown, the ConfigMap cannot
/// be read, or the key is missing, empty or not JSON.
fn ingress(system_ns: Option<&str>, cluster: &dyn Cluster) -> Option<Value> {
    let config = cluster
        .get_object(
            &gvk::config_map(),
            Some(system_ns?),
            INFERENCESERVICE_CONFIG,
        )
        .ok()??;
    let text = config
        .str_at(&["data", "ingress"])
        .filter(|t| !t.is_empty())?;
    odh_plugin_sdk::serde_json::from_str(text).ok()
}

/// `kserveIngressGateway` (`<namespace>/<name>`, exactly two parts, empty ones accepted), else
/// `openshift-ingress/openshift-ai-inference`.
pub fn default_gateway(system_ns: Option<&str>, cluster: &dyn Cluster) -> GatewayRef {
    ingress(system_ns, cluster)
        .as_ref()
        .and_then(|i| i.get("kserveIngressGateway"))
        .and_then(Value::as_str)
        .and_then(|value| {
            let parts: Vec<&str> = value.split('/').collect();
            match parts[..] {
                [namespace, name] => Some(GatewayRef::new(namespace, name)),
                _ => None,
            }
        })
        .unwrap_or_else(|| GatewayRef::new(DEFAULT_GATEWAY_NAMESPACE, DEFAULT_GATEWAY_NAME))
}

/// `modelBasedRoutingHeaderName`, lowercased, when it is a safe header name; else
/// `x-gateway-model-name`.
pub fn routing_header(system_ns: Option<&str>, cluster: &dyn Cluster) -> String {
    ingress(system_ns, cluster)
        .as_ref()
        .and_then(|i| i.get("modelBasedRoutingHeaderName"))
        .and_then(Value::as_str)
        .map(str::to_ascii_lowercase)
        .filter(|h| is_safe_header_name(h))
        .unwrap_or_else(|| DEFAULT_ROUTING_HEADER.into())
}

/// An RFC 7230 token (`tchar`s, at least one) without `'`, `"`, `` ` `` or `\` (it is put
/// inside single-quoted CEL strings).
pub fn is_safe_header_name(name: &str) -> bool {
    !name.is_empty()
        && name.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'!' | b'#'
                        | b'$'
                        | b'%'
                        | b'&'
                        | b'*'
                        | b'+'
                        | b'-'
                        | b'.'
                        | b'^'
                        | b'_'
                        | b'|'
                        | b'~'
                )
        })
}

/// `GetAuthAudience`: `AUTH_AUDIENCE` split on `,` and trimmed (empty entries kept), else the
/// cluster's `serviceAccountIssuer` (OpenShift `Authentication` `cluster`), else
/// `https://kubernetes.default.svc`.
pub fn audiences(auth_audience: Option<&str>, cluster: &dyn Cluster) -> Vec<String> {
    if let Some(list) = auth_audience.filter(|a| !a.is_empty()) {
        return list.split(',').map(|a| a.trim().to_string()).collect();
    }
    let issuer = cluster
        .get_object(&gvk::authentication(), None, "cluster")
        .ok()
        .flatten()
        .and_then(|a| {
            a.str_at(&["spec", "serviceAccountIssuer"])
                .map(str::to_string)
        })
        .filter(|i| !i.is_empty());
    vec![issuer.unwrap_or_else(|| DEFAULT_AUDIENCE.into())]
}

/// `GetKuadrantNamespace`: the preferred namespace (`KUADRANT_NAMESPACE`, else
/// `kuadrant-system`) when no Kuadrant can be listed or one lives there; else the namespace of
/// the first Kuadrant by (namespace, name).
pub fn kuadrant_namespace(preferred: Option<&str>, cluster: &dyn Cluster) -> String {
    let preferred = preferred.unwrap_or(DEFAULT_KUADRANT_NAMESPACE);
    let mut found: Vec<(String, String)> = match cluster.list_objects(&gvk::kuadrant(), None, None)
    {
        Ok(list) => list
            .iter()
            .map(|k| {
                (
                    k.namespace().unwrap_or_default().to_string(),
                    k.name().to_string(),
                )
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    found.sort();
    if found.is_empty() || found.iter().any(|(ns, _)| ns == preferred) {
        return preferred.to_string();
    }
    found.swap_remove(0).0
}

/// `IsAuthorinoTLSEnabled`: `spec.listener.tls.enabled` of the first Authorino (by name) in the
/// Kuadrant namespace, unset meaning false; true when none can be listed.
pub fn authorino_tls_enabled(kuadrant_ns: &str, cluster: &dyn Cluster) -> bool {
    let mut authorinos = match cluster.list_objects(&gvk::authorino(), Some(kuadrant_ns), None) {
        Ok(list) if !list.is_empty() => list,
        _ => return true,
    };
    authorinos.sort_by(|a: &Object, b: &Object| a.name().cmp(b.name()));
    authorinos[0]
        .at(&["spec", "listener", "tls", "enabled"])
        .and_then(Value::as_bool)
        .unwrap_or(false)
}
