//! The InferenceGraph admission webhooks (docs/plugins/isvc.md, "Webhooks"): the defaulter changes
//! nothing; the validator keeps `serviceUrl` steps inside the cluster and the graph's own
//! namespace.
//!
//! They live in this plugin because upstream registers them right after the InferenceService
//! webhooks, on the same API group, and they need nothing the InferenceService plugin does not
//! already have; a plugin of their own would cost a component for two small functions.
//! Upstream's InferenceGraph controller is not registered in production (a no-op built only by
//! its tests), so there is none here.

use odh_go_compat::strconv::quote_narrow;
use odh_go_compat::url;
use odh_plugin_sdk::{AdmissionDecision, AdmissionRequest, Error, Object, Value};

pub const VALIDATING_PATH: &str = "/validate-serving-kserve-io-v1alpha1-inferencegraph";
pub const MUTATING_PATH: &str = "/mutate-serving-kserve-io-v1alpha1-inferencegraph";

/// knative's default when neither `CLUSTER_DOMAIN` nor `/etc/resolv.conf` says otherwise.
pub const DEFAULT_CLUSTER_DOMAIN: &str = "cluster.local";
const UNPROCESSABLE: u16 = 422;

/// Whether an admission request is for the InferenceGraph webhooks.
pub fn is_for(request: &AdmissionRequest) -> bool {
    request.path == VALIDATING_PATH || request.path == MUTATING_PATH
}

/// Upstream's defaulter only logs.
pub fn mutate() -> AdmissionDecision {
    AdmissionDecision::allow()
}

/// CREATE and UPDATE look at the new object only; DELETE is allowed.
pub fn validate(
    request: &AdmissionRequest,
    cluster_domain: &str,
) -> Result<AdmissionDecision, Error> {
    let Some(graph) = request.object()? else {
        return Ok(AdmissionDecision::allow());
    };
    let namespace = graph
        .namespace()
        .or(request.namespace.as_deref())
        .unwrap_or_default();
    let errors = field_errors(&graph, namespace, cluster_domain);
    if errors.is_empty() {
        return Ok(AdmissionDecision::allow());
    }
    Ok(AdmissionDecision::deny_with_code(
        format!(
            "{} \"{}\" is invalid: {}",
            qualified_kind(&graph),
            graph.name(),
            aggregate(&errors)
        ),
        UNPROCESSABLE,
    ))
}

/// One `<field>: Invalid value: "<url>": <detail>` per offending step, nodes by name (upstream's
/// order is Go's map order, i.e. none).
pub fn field_errors(graph: &Object, namespace: &str, cluster_domain: &str) -> Vec<String> {
    let Some(nodes) = graph.pointer("/spec/nodes").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut names: Vec<&String> = nodes.keys().collect();
    names.sort();
    let mut errors = Vec::new();
    for name in names {
        let steps = nodes[name.as_str()]
            .get("steps")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (i, step) in steps.iter().enumerate() {
            let url = step
                .get("serviceUrl")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if url.is_empty() {
                continue;
            }
            if let Err(detail) = check_service_url(url, namespace, cluster_domain) {
                errors.push(format!(
                    "spec.nodes[{name}].steps[{i}].serviceUrl: Invalid value: {}: {detail}",
                    quote_narrow(url)
                ));
            }
        }
    }
    errors
}

/// Why a step's `serviceUrl` is refused, if it is.
pub fn check_service_url(url: &str, namespace: &str, cluster_domain: &str) -> Result<(), String> {
    let host = url::hostname(url).map_err(|e| format!("error when parsing serviceUrl: {e}"))?;
    let domain_suffix = format!(".svc.{cluster_domain}");
    if !(host.ends_with(".svc") || host.ends_with(&domain_suffix)) {
        return Err("using public hostnames is not allowed".into());
    }
    // Both suffixes are trimmed in turn, as upstream's two `TrimSuffix` calls do.
    let rest = host.strip_suffix(".svc").unwrap_or(&host);
    let rest = rest.strip_suffix(domain_suffix.as_str()).unwrap_or(rest);
    let parts: Vec<&str> = rest.split('.').collect();
    if parts.len() != 2 {
        return Err("unexpected number of subdomain entries in hostname".into());
    }
    if parts[1] != namespace {
        return Err("an InferenceGraph cannot refer InferenceServices in other namespaces".into());
    }
    Ok(())
}

/// `Kind.group` from the object's own type, as `apierrors.NewInvalid` is given it.
fn qualified_kind(graph: &Object) -> String {
    let kind = graph.kind();
    let api_version = graph
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match api_version.rsplit_once('/') {
        Some((group, _)) if !group.is_empty() => format!("{kind}.{group}"),
        _ => kind.to_string(),
    }
}

/// apimachinery's aggregate: one error as is, several as `[e1, e2]` without repeats.
fn aggregate(errors: &[String]) -> String {
    let mut unique: Vec<&str> = Vec::new();
    for e in errors {
        if !unique.contains(&e.as_str()) {
            unique.push(e);
        }
    }
    match unique.as_slice() {
        [one] => one.to_string(),
        many => format!("[{}]", many.join(", ")),
    }
}
