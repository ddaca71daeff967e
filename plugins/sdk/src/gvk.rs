//! Kinds and keys: [`Gvk`] helpers, [`ObjectKey`] and [`RequestKey`] constructors.

use crate::{Gvk, ObjectKey, RequestKey};

/// A Kubernetes type: `gvk("apps", "v1", "Deployment")`. The core API has group `""`.
pub fn gvk(group: &str, version: &str, kind: &str) -> Gvk {
    Gvk {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
    }
}

/// A core (`""`, `v1`) type: `core_gvk("ConfigMap")`.
pub fn core_gvk(kind: &str) -> Gvk {
    gvk("", "v1", kind)
}

/// One object's key.
pub fn object_key(gvk: &Gvk, namespace: Option<&str>, name: &str) -> ObjectKey {
    ObjectKey {
        gvk: gvk.clone(),
        namespace: namespace.map(Into::into),
        name: name.into(),
    }
}

/// A reconcile request key (namespace/name of a primary object).
pub fn request_key(namespace: Option<&str>, name: &str) -> RequestKey {
    RequestKey {
        namespace: namespace.map(Into::into),
        name: name.into(),
    }
}

impl Gvk {
    /// `group/version`, or `version` for the core group, as in `apiVersion`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Parses `apiVersion` and `kind`.
    pub fn from_api_version(api_version: &str, kind: &str) -> Gvk {
        match api_version.split_once('/') {
            Some((group, version)) => gvk(group, version, kind),
            None => gvk("", api_version, kind),
        }
    }
}

impl std::fmt::Display for Gvk {
    /// `Deployment.apps/v1`, `ConfigMap/v1` (kubectl's `Kind.group/version`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
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
    fn gvk_helpers() {
        assert_eq!(gvk("apps", "v1", "Deployment").api_version(), "apps/v1");
        assert_eq!(core_gvk("ConfigMap").api_version(), "v1");
        assert_eq!(
            Gvk::from_api_version("apps/v1", "Deployment"),
            gvk("apps", "v1", "Deployment")
        );
        assert_eq!(Gvk::from_api_version("v1", "Pod"), core_gvk("Pod"));
        assert_eq!(
            gvk("apps", "v1", "Deployment").to_string(),
            "Deployment.apps/v1"
        );
        assert_eq!(core_gvk("Pod").to_string(), "Pod/v1");
    }
}
