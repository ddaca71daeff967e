//! The functions a plugin exports, by name: what logs, errors and metrics call them.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Export {
    Manifest,
    ValidateSettings,
    Reconcile,
    Map,
    Mutate,
    Validate,
    Routes,
    Handle,
    Selectors,
    Filters,
}

impl Export {
    /// The WIT name (`validate-settings`), used in messages and as the metrics' `op` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Manifest => "manifest",
            Self::ValidateSettings => "validate-settings",
            Self::Reconcile => "reconcile",
            Self::Map => "map",
            Self::Mutate => "mutate",
            Self::Validate => "validate",
            Self::Routes => "routes",
            Self::Handle => "handle",
            Self::Selectors => "selectors",
            Self::Filters => "filters",
        }
    }

    /// Whether the call answers a client waiting on the other end (an admission review or an
    /// API request): these get the admission deadline, and the admission or API budget.
    pub fn is_interactive(self) -> bool {
        matches!(self, Self::Mutate | Self::Validate | Self::Handle)
    }
}

impl std::fmt::Display for Export {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
