//! Where the Model Registry listens, from its Service in the cluster.

use super::*;

/// `getMRUrlFromService`: the Model Registry Service (by name, or the unique one labelled
/// `component=model-registry`) turned into a base URL.
pub(super) fn url_from_service(
    cluster: &dyn Cluster,
    name: &str,
    namespace: &str,
) -> Result<String, Error> {
    let service = find_service(cluster, name, namespace)
        .map_err(|e| Error::Transient(format!("unable to find the Model Registry service: {e}")))?;
    let service = Object(service);
    if let Some(address) = service.annotation(MR_EXTERNAL_ADDRESS_REST) {
        return Ok(format!("https://{address}"));
    }
    let port = service
        .array_at(&["spec", "ports"])
        .iter()
        .find(|p| p.get("name").and_then(Value::as_str) == Some(HTTP_API_PORT_NAME))
        .and_then(|p| p.get("port"))
        .and_then(Value::as_i64)
        .ok_or_else(|| {
            Error::Transient("unable to find the http port in the Model Registry service".into())
        })?;
    Ok(format!(
        "http://{}.{}.svc.cluster.local:{port}",
        service.name(),
        service.namespace().unwrap_or_default()
    ))
}

/// `getMRService` (its errors unwrapped, as text).
fn find_service(cluster: &dyn Cluster, name: &str, namespace: &str) -> Result<Value, String> {
    let service_gvk = gvk::service();
    if name.is_empty() {
        // An empty namespace lists every namespace, as controller-runtime's `InNamespace("")`.
        let scope = Some(namespace).filter(|ns| !ns.is_empty());
        let mut services = cluster
            .list(&service_gvk, scope, Some("component=model-registry"))
            .map_err(|e| {
                format!(
                    "unable to list services in the namespace {namespace}: {}",
                    e.message()
                )
            })?;
        return match services.len() {
            0 => Err(format!(
                "no model registry services found in the namespace {namespace}"
            )),
            1 => Ok(services.remove(0)),
            _ => Err(format!(
                "more than one model registry service found in the namespace {namespace}, consider to specify the name in the label {MR_NAME_LABEL}"
            )),
        };
    }
    match cluster.get(&service_gvk, Some(namespace), name) {
        Ok(Some(service)) => Ok(service),
        Ok(None) => Err(format!("services \"{name}\" not found")),
        Err(e) => Err(e.message().to_string()),
    }
}
