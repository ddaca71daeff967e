//! `GET /api/v1/gateways?namespace=<ns>` (docs/plugins/llm-gateway.md, "Endpoints"): the Gateway
//! listeners a caller who may
//! create LLMInferenceServices in `<ns>` can attach a service to.
//!
//! Checks in upstream's order (the host has already authenticated the bearer token, so a
//! request without one never gets here and a POST without a token gets 401):
//!
//! | # | condition | status | `error` |
//! |---|---|---|---|
//! | 2 | method other than GET (HEAD included) | 405 | `method not allowed` |
//! | 3 | `namespace` empty or absent | 400 | `missing required query parameter: namespace` |
//! | 4 | `namespace` not an RFC 1123 label | 400 | `invalid namespace: must match RFC 1123` |
//! | 6 | discovery failed | 500 | `internal server error` |
//!
//! Discovery ([`discover`]): the caller's `create llminferenceservices` access in `<ns>` (a
//! `SelfSubjectAccessReview` the host sends with the caller's token; a review that fails is
//! logged and answered with an empty list, so nothing leaks), then every Gateway cluster-wide
//! (with `GATEWAY_LABEL_SELECTOR`), the namespace's labels when some listener selects by
//! label, and one entry per (gateway, listener) whose `allowedRoutes` admit `<ns>`.

use odh_go_compat::json as go_json;
pub use odh_go_compat::validation::is_dns1123_label;
use odh_kinds::gvk;
use odh_plugin_sdk::caller::AccessAttributes;
use odh_plugin_sdk::{ApiRequest, ApiResponse, Ctx, Error, Object, Value, log};

use crate::listeners::{listener_allows_namespace, listeners, needs_namespace_labels};
use crate::settings::{Settings, gateway_label_selector};

/// `openshift.io/display-name`: a gateway's `displayName`.
pub const DISPLAY_NAME_ANNOTATION: &str = "openshift.io/display-name";
/// `openshift.io/description`: a gateway's `description`.
pub const DESCRIPTION_ANNOTATION: &str = "openshift.io/description";

/// One listener a caller may attach to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayRef {
    pub name: String,
    pub namespace: String,
    pub listener: String,
    pub status: &'static str,
    /// Empty when the annotation is absent (and then left out of the JSON).
    pub display_name: String,
    pub description: String,
}

impl GatewayRef {
    /// The entry's JSON object, fields in upstream's order, empty optional fields omitted.
    pub fn to_json(&self) -> String {
        let mut out = format!(
            "{{\"name\":{},\"namespace\":{},\"listener\":{},\"status\":{}",
            go_json::string_before_go_1_22(&self.name),
            go_json::string_before_go_1_22(&self.namespace),
            go_json::string_before_go_1_22(&self.listener),
            go_json::string_before_go_1_22(self.status),
        );
        if !self.display_name.is_empty() {
            out.push_str(",\"displayName\":");
            out.push_str(&go_json::string_before_go_1_22(&self.display_name));
        }
        if !self.description.is_empty() {
            out.push_str(",\"description\":");
            out.push_str(&go_json::string_before_go_1_22(&self.description));
        }
        out.push('}');
        out
    }
}

/// The 200 body: `{"gateways":[...]}`, never `null`.
pub fn response_body(refs: &[GatewayRef]) -> String {
    let entries: Vec<String> = refs.iter().map(GatewayRef::to_json).collect();
    format!("{{\"gateways\":[{}]}}", entries.join(","))
}

pub fn handle(request: &ApiRequest, cx: &Ctx<Settings>) -> ApiResponse {
    if request.method != "GET" {
        return super::method_not_allowed();
    }
    let namespace = request.query_param("namespace").unwrap_or_default();
    if namespace.is_empty() {
        return super::error(400, "missing required query parameter: namespace");
    }
    if !is_dns1123_label(&namespace) {
        return super::error(400, "invalid namespace: must match RFC 1123");
    }
    match discover(cx, &namespace) {
        Ok(refs) => super::json(200, response_body(&refs)),
        Err(e) => {
            log::error!("gateway discovery for namespace {namespace:?} failed: {e}");
            super::error(500, "internal server error")
        }
    }
}

/// The access a caller needs to see `namespace`'s gateways.
pub fn required_access(namespace: &str) -> AccessAttributes {
    AccessAttributes::new("create", "serving.kserve.io", "llminferenceservices")
        .namespace(namespace)
}

/// The gateway listeners the caller may use from `namespace` (see the module docs). An error
/// is a failed read (a 500); a failed access review is an empty answer.
pub fn discover(cx: &Ctx<Settings>, namespace: &str) -> Result<Vec<GatewayRef>, Error> {
    match cx.caller.allowed(&required_access(namespace)) {
        Ok(true) => {}
        Ok(false) => return Ok(Vec::new()),
        Err(e) => {
            log::error!(
                "SelfSubjectAccessReview for namespace {namespace:?} failed, returning no gateways: {e}"
            );
            return Ok(Vec::new());
        }
    }
    let selector =
        label_selector(cx.settings.gateway_label_selector.as_deref()).map_err(Error::Invalid)?;
    let mut gateways = cx
        .cluster
        .list_objects(&gvk::gateway(), None, selector.as_deref())?;
    // The API server's list order (by storage key), whoever answers the list.
    gateways.sort_by_cached_key(|g| format!("{}/{}", g.namespace().unwrap_or_default(), g.name()));
    let labels = if gateways.iter().any(needs_namespace_labels) {
        let ns = cx
            .cluster
            .get_object(&gvk::namespace(), None, namespace)?
            .ok_or_else(|| Error::Transient(format!("namespace {namespace:?} not found")))?;
        ns.at(&["metadata", "labels"]).cloned()
    } else {
        None
    };
    Ok(filter_listeners(&gateways, namespace, labels.as_ref()))
}

/// One entry per (gateway, listener) whose `allowedRoutes` admit `target_ns`, gateways and
/// listeners in the given order. A selector that does not parse denies (not logged here).
pub fn filter_listeners(
    gateways: &[Object],
    target_ns: &str,
    ns_labels: Option<&Value>,
) -> Vec<GatewayRef> {
    let mut refs = Vec::new();
    for gateway in gateways {
        let gateway_ns = gateway.namespace().unwrap_or_default();
        for listener in listeners(gateway) {
            if listener_allows_namespace(&listener, gateway_ns, target_ns, ns_labels)
                .unwrap_or(false)
            {
                refs.push(GatewayRef {
                    name: gateway.name().to_string(),
                    namespace: gateway_ns.to_string(),
                    listener: listener["name"].as_str().unwrap_or_default().to_string(),
                    status: status(gateway),
                    display_name: gateway
                        .annotation(DISPLAY_NAME_ANNOTATION)
                        .unwrap_or_default()
                        .to_string(),
                    description: gateway
                        .annotation(DESCRIPTION_ANNOTATION)
                        .unwrap_or_default()
                        .to_string(),
                });
            }
        }
    }
    refs
}

/// `Ready` when `Accepted` and `Programmed` are both `True`; else `NotReady` when either is
/// `False`; else `Unknown` (missing conditions, only one of them `True`, or `Unknown`).
pub fn status(gateway: &Object) -> &'static str {
    let condition = |kind: &str| {
        gateway
            .array_at(&["status", "conditions"])
            .iter()
            .find(|c| c["type"].as_str() == Some(kind))
            .and_then(|c| c["status"].as_str())
    };
    let (accepted, programmed) = (condition("Accepted"), condition("Programmed"));
    if accepted == Some("True") && programmed == Some("True") {
        "Ready"
    } else if accepted == Some("False") || programmed == Some("False") {
        "NotReady"
    } else {
        "Unknown"
    }
}

/// `GATEWAY_LABEL_SELECTOR` (`key=value` pairs, comma-separated; pairs trimmed, empty ones
/// skipped) as an equality label selector; none when unset or empty. The settings' validation
/// refuses a malformed value with the same message before a version of the plugin goes live
/// ([`gateway_label_selector`]); one that reaches discovery anyway fails it.
pub fn label_selector(raw: Option<&str>) -> Result<Option<String>, String> {
    Ok(gateway_label_selector(raw)?.map(|pairs| {
        pairs
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors() {
        assert_eq!(label_selector(None), Ok(None));
        assert_eq!(label_selector(Some("")), Ok(None));
        assert_eq!(
            label_selector(Some(" a=b , ,c=d ")),
            Ok(Some("a=b,c=d".into()))
        );
        assert_eq!(
            label_selector(Some("a")),
            Err(r#"invalid GATEWAY_LABEL_SELECTOR: invalid label "a": must be key=value"#.into())
        );
        assert_eq!(
            label_selector(Some("=b")),
            Err(r#"invalid GATEWAY_LABEL_SELECTOR: invalid label "=b": must be key=value"#.into())
        );
        assert_eq!(
            label_selector(Some(" , ")),
            Err("invalid GATEWAY_LABEL_SELECTOR: empty label selector".into())
        );
    }
}
