//! Management and auth predicates (docs/plugins/llm-gateway.md, "Shared building blocks").

use odh_plugin_sdk::Object;

/// `opendatahub.io/managed`, as a label (which wins) or annotation.
pub const MANAGED: &str = "opendatahub.io/managed";
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
pub const MANAGED_BY_VALUE: &str = "odh-model-controller";
pub const ENABLE_AUTH: &str = "security.opendatahub.io/enable-auth";
pub const STOP: &str = "serving.kserve.io/stop";
pub const ROUTING_GROUP: &str = "serving.kserve.io/routing-group";

/// Labelled (or, without the label, annotated) `opendatahub.io/managed: "false"`.
pub fn is_explicitly_unmanaged(object: &Object) -> bool {
    let value = object.label(MANAGED).or_else(|| object.annotation(MANAGED));
    value.is_some_and(|v| v.trim().eq_ignore_ascii_case("false"))
}

/// Made by this controller (or upstream's) and not opted out by the user.
pub fn is_managed_by_open_data_hub(object: &Object) -> bool {
    !is_explicitly_unmanaged(object) && object.label(MANAGED_BY) == Some(MANAGED_BY_VALUE)
}

/// Auth is on unless `security.opendatahub.io/enable-auth` is `false` (trimmed, any case).
pub fn auth_enabled(service: &Object) -> bool {
    !service
        .annotation(ENABLE_AUTH)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("false"))
}

/// `serving.kserve.io/stop: "true"` (any case, not trimmed: KServe's `GetForceStopRuntime`).
pub fn is_stopped(service: &Object) -> bool {
    service
        .annotation(STOP)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// `security.opendatahub.io/authorino-tls-bootstrap` on a Gateway.
pub const AUTHORINO_TLS_BOOTSTRAP: &str = "security.opendatahub.io/authorino-tls-bootstrap";
/// The kind of the platform controller's Gateway owner.
pub const GATEWAY_CONFIG: &str = "GatewayConfig";

/// The bootstrap annotation is present and `true` (trimmed, any case).
pub fn is_authorino_tls_bootstrap_enabled(gateway: &Object) -> bool {
    gateway
        .annotation(AUTHORINO_TLS_BOOTSTRAP)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// Controlled (`controller: true`) by a `GatewayConfig`, whatever its apiVersion.
pub fn is_owned_by_platform_controller(gateway: &Object) -> bool {
    gateway.owner_references().iter().any(|r| {
        r.get("controller").and_then(|c| c.as_bool()) == Some(true)
            && r.get("kind").and_then(|k| k.as_str()) == Some(GATEWAY_CONFIG)
    })
}

/// Upstream's `ShouldCreateEnvoyFilterForGateway`: the bootstrap annotation wins; else not for a
/// platform-owned gateway; else unless explicitly unmanaged.
pub fn should_create_envoy_filter(gateway: &Object) -> bool {
    if is_authorino_tls_bootstrap_enabled(gateway) {
        return true;
    }
    !is_owned_by_platform_controller(gateway) && !is_explicitly_unmanaged(gateway)
}

#[cfg(test)]
mod tests {
    use super::*;
    use odh_plugin_sdk::json;

    fn with(labels: odh_plugin_sdk::Value, annotations: odh_plugin_sdk::Value) -> Object {
        Object(json!({"metadata": {"name": "x", "labels": labels, "annotations": annotations}}))
    }

    fn auth(value: Option<&str>) -> bool {
        let annotations = match value {
            Some(v) => json!({ENABLE_AUTH: v}),
            None => json!({}),
        };
        auth_enabled(&with(json!({}), annotations))
    }

    /// RA-01..RA-07: the AuthType detector (on = userdefined, off = anonymous).
    #[test]
    fn ra_01_to_07_auth_type_detection() {
        assert!(auth(Some("true")), "RA-01");
        assert!(!auth(Some("false")), "RA-02");
        assert!(auth(Some("")), "RA-03");
        assert!(auth(None), "RA-04");
        for v in ["TRUE", "True", "tRuE"] {
            assert!(auth(Some(v)), "RA-05 {v}");
        }
        for v in ["FALSE", "False", "fAlSe", " false "] {
            assert!(!auth(Some(v)), "RA-06 {v}");
        }
        for v in ["yes", "1", "enabled", "on", "invalid", "123"] {
            assert!(auth(Some(v)), "RA-07 {v}");
        }
    }

    #[test]
    fn management_label_wins_over_annotation() {
        let managed = |l, a| is_managed_by_open_data_hub(&with(l, a));
        let ours = json!({MANAGED_BY: MANAGED_BY_VALUE});
        assert!(managed(ours.clone(), json!({})));
        assert!(!managed(json!({MANAGED_BY: "someone"}), json!({})));
        assert!(!managed(
            json!({MANAGED_BY: MANAGED_BY_VALUE, MANAGED: " FALSE "}),
            json!({})
        ));
        assert!(!managed(ours.clone(), json!({MANAGED: "false"})));
        // The label is consulted alone when present.
        assert!(managed(
            json!({MANAGED_BY: MANAGED_BY_VALUE, MANAGED: "true"}),
            json!({MANAGED: "false"})
        ));
    }

    #[test]
    fn stop_is_case_insensitive_but_not_trimmed() {
        let stopped = |v: &str| is_stopped(&with(json!({}), json!({STOP: v})));
        assert!(stopped("true"));
        assert!(stopped("TRUE"));
        assert!(!stopped(" true"));
        assert!(!stopped("false"));
        assert!(!is_stopped(&with(json!({}), json!({}))));
    }

    fn gateway(
        annotations: odh_plugin_sdk::Value,
        labels: odh_plugin_sdk::Value,
        owners: odh_plugin_sdk::Value,
    ) -> Object {
        Object(
            json!({"metadata": {"name": "gw", "labels": labels, "annotations": annotations, "ownerReferences": owners}}),
        )
    }

    #[test]
    fn envoy_filter_predicate() {
        let platform = json!([{"apiVersion": "services.platform.opendatahub.io/v1alpha1", "kind": "GatewayConfig", "name": "default-gateway", "uid": "u", "controller": true}]);
        let bootstrap = json!({AUTHORINO_TLS_BOOTSTRAP: " TRUE "});
        let unmanaged = json!({MANAGED: "false"});
        assert!(should_create_envoy_filter(&gateway(
            json!({}),
            json!({}),
            json!([])
        )));
        assert!(!should_create_envoy_filter(&gateway(
            json!({}),
            unmanaged.clone(),
            json!([])
        )));
        assert!(!should_create_envoy_filter(&gateway(
            json!({}),
            json!({}),
            platform.clone()
        )));
        assert!(should_create_envoy_filter(&gateway(
            bootstrap.clone(),
            unmanaged,
            json!([])
        )));
        assert!(should_create_envoy_filter(&gateway(
            bootstrap,
            json!({}),
            platform.clone()
        )));
        assert!(is_owned_by_platform_controller(&gateway(
            json!({}),
            json!({}),
            platform
        )));
        // Not the controller: not platform-owned.
        let plain =
            json!([{"apiVersion": "x/v1", "kind": "GatewayConfig", "name": "g", "uid": "u"}]);
        assert!(!is_owned_by_platform_controller(&gateway(
            json!({}),
            json!({}),
            plain
        )));
        assert!(!is_authorino_tls_bootstrap_enabled(&gateway(
            json!({AUTHORINO_TLS_BOOTSTRAP: "yes"}),
            json!({}),
            json!([])
        )));
    }
}
