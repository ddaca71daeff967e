//! Group/version/kind as the host passes it around.

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Gvk {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl Gvk {
    pub fn new(group: &str, version: &str, kind: &str) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    /// `group/version`, or just `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// From an object's `apiVersion` and `kind`.
    pub fn from_api_version(api_version: &str, kind: &str) -> Self {
        match api_version.split_once('/') {
            Some((g, v)) => Self::new(g, v, kind),
            None => Self::new("", api_version, kind),
        }
    }

    /// From a raw object's `apiVersion` and `kind` fields.
    pub fn of_object(obj: &serde_json::Value) -> Option<Self> {
        let api_version = obj.get("apiVersion")?.as_str()?;
        let kind = obj.get("kind")?.as_str()?;
        Some(Self::from_api_version(api_version, kind))
    }
}

impl fmt::Display for Gvk {
    /// `Kind.group/version` (`Deployment.apps/v1`, `ConfigMap/v1`), as the plugin SDK prints
    /// kinds: a kind reads the same in the host's logs and in a plugin's errors.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            write!(f, "{}/{}", self.kind, self.version)
        } else {
            write!(f, "{}.{}/{}", self.kind, self.group, self.version)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_version_round_trips() {
        let core = Gvk::from_api_version("v1", "Pod");
        assert_eq!(core, Gvk::new("", "v1", "Pod"));
        assert_eq!(core.api_version(), "v1");
        let widget = Gvk::from_api_version("example.com/v1beta1", "Widget");
        assert_eq!(widget.api_version(), "example.com/v1beta1");
        assert_eq!(widget.to_string(), "Widget.example.com/v1beta1");
        assert_eq!(core.to_string(), "Pod/v1");
    }
}
