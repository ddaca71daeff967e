//! The built-in plugins a host ships: each one's component and what it needs beyond the default
//! limits and grants. The application fills this from its registration list; the registry
//! resolves `source: builtin` entries and a built-in's starting limits and grants from it.

use odh_plugin_runtime::{Grants, Limits};

/// One built-in plugin.
#[derive(Debug, Clone)]
pub struct BuiltinComponent {
    pub name: String,
    pub component: &'static [u8],
    /// The hex sha256 of `component`, taken when the binary was built.
    pub sha256: &'static str,
    /// Where a plugins-ConfigMap entry of this name starts from (the entry refines it key by key).
    pub limits: Limits,
    pub grants: Grants,
}

/// Every built-in plugin of the host, by name.
#[derive(Debug, Clone, Default)]
pub struct Builtins(Vec<BuiltinComponent>);

impl Builtins {
    pub fn new(components: impl IntoIterator<Item = BuiltinComponent>) -> Self {
        Self(components.into_iter().collect())
    }

    fn find(&self, name: &str) -> Option<&BuiltinComponent> {
        self.0.iter().find(|b| b.name == name)
    }

    /// The component of the built-in plugin `name` and its hex sha256.
    pub fn component_and_digest(&self, name: &str) -> Option<(&'static [u8], &'static str)> {
        self.find(name).map(|b| (b.component, b.sha256))
    }

    /// The limits a plugin of this name starts from: a built-in's, else the defaults.
    pub fn limits(&self, name: &str) -> Limits {
        self.find(name)
            .map(|b| b.limits.clone())
            .unwrap_or_default()
    }

    /// The grants a plugin of this name starts from: a built-in's, else the defaults.
    pub fn grants(&self, name: &str) -> Grants {
        self.find(name)
            .map(|b| b.grants.clone())
            .unwrap_or_default()
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|b| b.name.as_str())
    }
}
