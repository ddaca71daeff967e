//! Names the apiserver derives from a kind.

use kube::api::{ApiResource, GroupVersionKind};
use odh_plugin_runtime::gvk::Gvk;

/// The resource name of a kind, as kube derives it (the apiserver's convention for CRDs;
/// irregular built-ins such as `endpoints` included).
pub fn plural(gvk: &Gvk) -> String {
    ApiResource::from_gvk(&GroupVersionKind::gvk(&gvk.group, &gvk.version, &gvk.kind)).plural
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_follow_the_apiserver_convention() {
        let p = |g: &str, k: &str| plural(&Gvk::new(g, "v1", k));
        assert_eq!(p("networking.k8s.io", "NetworkPolicy"), "networkpolicies");
        assert_eq!(p("", "Endpoints"), "endpoints");
        assert_eq!(p("example.com", "Widget"), "widgets");
        assert_eq!(p("example.com", "AuthPolicy"), "authpolicies");
        assert_eq!(p("example.com", "DNSInitialization"), "dnsinitializations");
    }
}
