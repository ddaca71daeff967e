//! Which namespaces a Gateway's listeners accept routes from (upstream's
//! `listenerAllowsNamespace` and its model-serving-api copy; docs/plugins/llm-gateway.md,
//! "Gateway controller `gateway-auth-bootstrap`", step 2): shared by the Gateway controller's
//! "referenced" rule
//! and the gateway discovery API, which upstream keeps as two copies of one table.

use odh_plugin_sdk::{Object, Value};

/// Why a `Selector` listener's selector could not be used (upstream logs it in the controller
/// and denies the namespace either way).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectorError(pub String);

/// Whether `listener` (one entry of a Gateway's `spec.listeners`) accepts routes from
/// `target_ns`, for a gateway in `gateway_ns`; `ns_labels` are the target namespace's labels
/// (`None` when they could not be read: a selector then matches as against no labels).
pub fn listener_allows_namespace(
    listener: &Value,
    gateway_ns: &str,
    target_ns: &str,
    ns_labels: Option<&Value>,
) -> Result<bool, SelectorError> {
    let namespaces = &listener["allowedRoutes"]["namespaces"];
    match namespaces.get("from").and_then(Value::as_str) {
        None | Some("Same") => Ok(gateway_ns == target_ns),
        Some("All") => Ok(true),
        Some("Selector") => match namespaces.get("selector") {
            None | Some(Value::Null) => Ok(false),
            Some(selector) => selector_matches(selector, ns_labels),
        },
        Some(_) => Ok(false),
    }
}

/// Whether any listener of `gateway` accepts routes from `target_ns` (none without listeners).
/// Selector errors deny; `on_error` sees each (the controller logs them).
pub fn gateway_allows_namespace(
    gateway: &Object,
    target_ns: &str,
    ns_labels: Option<&Value>,
    mut on_error: impl FnMut(&SelectorError),
) -> bool {
    let gateway_ns = gateway.namespace().unwrap_or_default();
    listeners(gateway).iter().any(|listener| {
        listener_allows_namespace(listener, gateway_ns, target_ns, ns_labels).unwrap_or_else(|e| {
            on_error(&e);
            false
        })
    })
}

/// The gateway's `spec.listeners`.
pub fn listeners(gateway: &Object) -> Vec<Value> {
    gateway.array_at(&["spec", "listeners"]).to_vec()
}

/// Whether some listener of `gateway` selects namespaces by label (the namespace's labels are
/// needed then).
pub fn needs_namespace_labels(gateway: &Object) -> bool {
    listeners(gateway).iter().any(|l| {
        l["allowedRoutes"]["namespaces"]
            .get("from")
            .and_then(Value::as_str)
            == Some("Selector")
    })
}

/// A `metav1.LabelSelector` (`matchLabels`, `matchExpressions`) against a label map, with the
/// validation of apimachinery's `LabelSelectorAsSelector`: an unknown operator, or values where
/// the operator takes none (or none where it needs some), is an error. The empty selector
/// matches everything; absent labels are an empty set.
pub fn selector_matches(selector: &Value, labels: Option<&Value>) -> Result<bool, SelectorError> {
    let label = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
    let mut matched = true;
    if let Some(match_labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (key, value) in match_labels {
            let value = value.as_str().unwrap_or_default();
            matched &= label(key) == Some(value);
        }
    }
    let expressions = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for expression in expressions {
        let key = expression["key"].as_str().unwrap_or_default();
        let operator = expression["operator"].as_str().unwrap_or_default();
        let values: Vec<&str> = expression["values"]
            .as_array()
            .map(|v| v.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let found = label(key);
        let ok = match operator {
            "In" | "NotIn" if values.is_empty() => {
                return Err(SelectorError(format!(
                    "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty (key {key:?})"
                )));
            }
            "Exists" | "DoesNotExist" if !values.is_empty() => {
                return Err(SelectorError(format!(
                    "values: Invalid value: {values:?}: values set must be empty for exists and does not exist (key {key:?})"
                )));
            }
            "In" => found.is_some_and(|v| values.contains(&v)),
            "NotIn" => found.is_none_or(|v| !values.contains(&v)),
            "Exists" => found.is_some(),
            "DoesNotExist" => found.is_none(),
            other => {
                return Err(SelectorError(format!(
                    "{other:?} is not a valid label selector operator"
                )));
            }
        };
        matched &= ok;
    }
    Ok(matched)
}

#[cfg(test)]
mod tests {
    use super::*;
    use odh_plugin_sdk::json;

    fn allows(listener: Value, gw_ns: &str, target: &str, labels: Option<Value>) -> bool {
        listener_allows_namespace(&listener, gw_ns, target, labels.as_ref()).unwrap_or(false)
    }

    #[test]
    fn from_table() {
        let prod = Some(json!({"env": "prod"}));
        let selector = json!({"allowedRoutes": {"namespaces": {"from": "Selector", "selector": {"matchLabels": {"env": "prod"}}}}});
        assert!(allows(json!({}), "ns", "ns", None));
        assert!(!allows(json!({}), "gw", "other", None));
        assert!(!allows(json!({"allowedRoutes": {}}), "gw", "other", None));
        assert!(allows(
            json!({"allowedRoutes": {"namespaces": {}}}),
            "ns",
            "ns",
            None
        ));
        assert!(allows(
            json!({"allowedRoutes": {"namespaces": {"from": "All"}}}),
            "gw",
            "other",
            None
        ));
        assert!(allows(selector.clone(), "gw", "other", prod.clone()));
        assert!(!allows(
            selector.clone(),
            "gw",
            "other",
            Some(json!({"env": "staging"}))
        ));
        assert!(!allows(selector, "gw", "other", None));
        assert!(!allows(
            json!({"allowedRoutes": {"namespaces": {"from": "Selector"}}}),
            "gw",
            "gw",
            prod.clone()
        ));
        assert!(!allows(
            json!({"allowedRoutes": {"namespaces": {"from": "Other"}}}),
            "gw",
            "gw",
            prod
        ));
    }

    #[test]
    fn selector_expressions_and_errors() {
        let labels = json!({"env": "prod"});
        let m = |s: Value| selector_matches(&s, Some(&labels));
        assert_eq!(m(json!({})), Ok(true));
        assert_eq!(
            m(
                json!({"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "staging"]}]})
            ),
            Ok(true)
        );
        assert_eq!(
            m(json!({"matchExpressions": [{"key": "env", "operator": "Exists"}]})),
            Ok(true)
        );
        assert_eq!(
            m(json!({"matchExpressions": [{"key": "restricted", "operator": "DoesNotExist"}]})),
            Ok(true)
        );
        assert_eq!(
            m(
                json!({"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]})
            ),
            Ok(false)
        );
        assert!(
            m(json!({"matchExpressions": [{"key": "env", "operator": "InvalidOperator", "values": ["prod"]}]}))
                .is_err()
        );
        assert!(m(json!({"matchExpressions": [{"key": "env", "operator": "In"}]})).is_err());
    }
}
