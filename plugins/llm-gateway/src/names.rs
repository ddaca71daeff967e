//! Child-object names (docs/plugins/llm-gateway.md, "Shared building blocks"): knative's
//! `kmeta.ChildName`, which keeps a name within 63 characters by cutting the parent and adding the
//! parent's MD5, so long names stay unique and stable across releases (upstream-made objects are
//! found again under the same names).

use crate::md5::md5_hex;

/// Suffix of an AuthPolicy name (`GetAuthPolicyName`).
pub const AUTHN: &str = "-authn";
/// Suffix of an LLMInferenceService's default HTTPRoute.
pub const KSERVE_ROUTE: &str = "-kserve-route";
/// Suffix of a Gateway's Authorino-TLS EnvoyFilter.
pub const AUTHN_SSL: &str = "-authn-ssl";
/// Suffix of a Gateway's PodMonitor.
pub const METRICS: &str = "-metrics";

const MAX: usize = 63;
const HASH_LEN: usize = 32;

/// `parent + suffix` when that fits in 63 characters; else the parent cut to leave room for its
/// MD5 (hex) and the suffix.
pub fn child_name(parent: &str, suffix: &str) -> String {
    if parent.len() + suffix.len() <= MAX {
        return format!("{parent}{suffix}");
    }
    // kmeta: for suffixes shorter than 32 characters the cut parent, the hash and the suffix
    // add up to exactly 63 (every suffix here is short).
    let keep = (MAX - HASH_LEN).saturating_sub(suffix.len());
    let cut = parent.get(..keep).unwrap_or(parent);
    format!("{cut}{}{suffix}", md5_hex(parent.as_bytes()))
}

/// The AuthPolicy that targets `target` (`ChildName(target, "-authn")`).
pub fn auth_policy_name(target: &str) -> String {
    child_name(target, AUTHN)
}

/// The HTTPRoute KServe makes for an LLMInferenceService without route refs.
pub fn default_route_name(service: &str) -> String {
    child_name(service, KSERVE_ROUTE)
}

/// The Authorino-TLS EnvoyFilter of a Gateway (`ChildName(gateway, "-authn-ssl")`).
pub fn envoy_filter_name(gateway: &str) -> String {
    child_name(gateway, AUTHN_SSL)
}

/// The PodMonitor of a Gateway (`ChildName(gateway, "-metrics")`).
pub fn pod_monitor_name(gateway: &str) -> String {
    child_name(gateway, METRICS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_are_joined() {
        assert_eq!(auth_policy_name("test-route"), "test-route-authn");
        assert_eq!(
            auth_policy_name(&default_route_name("test-llmisvc")),
            "test-llmisvc-kserve-route-authn"
        );
    }

    #[test]
    fn long_names_are_cut_and_hashed_to_63() {
        let parent = "a".repeat(60);
        let name = child_name(&parent, AUTHN);
        assert_eq!(name.len(), 63);
        assert_eq!(
            name,
            format!("{}{}-authn", "a".repeat(25), md5_hex(parent.as_bytes()))
        );
        // Exactly 63 is kept whole.
        assert_eq!(child_name(&"b".repeat(57), AUTHN).len(), 63);
        assert!(child_name(&"b".repeat(57), AUTHN).starts_with(&"b".repeat(57)));
    }

    #[test]
    fn gateway_children() {
        assert_eq!(
            envoy_filter_name("openshift-ai-inference"),
            "openshift-ai-inference-authn-ssl"
        );
        assert_eq!(
            pod_monitor_name("openshift-ai-inference"),
            "openshift-ai-inference-metrics"
        );
        let long = "g".repeat(60);
        for name in [envoy_filter_name(&long), pod_monitor_name(&long)] {
            assert_eq!(name.len(), 63, "{name}");
            assert!(name.contains(&md5_hex(long.as_bytes())));
        }
    }
}
