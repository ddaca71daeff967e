//! A Gateway reference (`spec.router.gateway.refs[]`), what the effective refs
//! ([`super::refs`]) and the default gateway ([`super::ingress`]) both produce.

use odh_plugin_sdk::Object;

/// One entry of `spec.router.gateway.refs`; an empty namespace means the service's own.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GatewayRef {
    pub namespace: String,
    pub name: String,
}

impl GatewayRef {
    pub fn new(namespace: &str, name: &str) -> GatewayRef {
        GatewayRef {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// The ref with an empty namespace replaced by `namespace`.
    pub fn in_namespace(&self, namespace: &str) -> GatewayRef {
        if self.namespace.is_empty() {
            GatewayRef::new(namespace, &self.name)
        } else {
            self.clone()
        }
    }

    /// Whether the ref (its namespace defaulted to `namespace`) names `gateway`.
    pub fn names(&self, gateway: &Object, namespace: &str) -> bool {
        let resolved = self.in_namespace(namespace);
        resolved.name == gateway.name() && Some(resolved.namespace.as_str()) == gateway.namespace()
    }
}
