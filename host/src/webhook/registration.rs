//! The name and side effects a plugin webhook is registered with: upstream's
//! for the paths upstream serves (the deploy manifests and the live sync must agree with the
//! Go controller's kustomize output, so an upgrade in place finds the same entries), and for a
//! plugin's own path a name derived from the path and the plugin.

use crate::deploy_manifests::UPSTREAM_WEBHOOKS;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    pub name: String,
    pub side_effects: &'static str,
}

/// Suffix of the names given to webhooks upstream does not name.
pub const PLUGIN_WEBHOOK_DOMAIN: &str = "plugins.odh-model-controller.opendatahub.io";

pub fn registration(plugin: &str, path: &str) -> Registration {
    if let Some(u) = UPSTREAM_WEBHOOKS.iter().find(|u| u.path == path) {
        return Registration {
            name: u.name.to_string(),
            side_effects: u.side_effects,
        };
    }
    Registration {
        name: format!("{}.{plugin}.{PLUGIN_WEBHOOK_DOMAIN}", path_label(path)),
        // The host applies a plugin's admission side effects only when the request is not a
        // dry run.
        side_effects: "NoneOnDryRun",
    }
}

/// A DNS label from a webhook path: `/mutate-example-com-v1-widget` gives
/// `mutate-example-com-v1-widget`; characters a label cannot hold become `-`, and a label too
/// long keeps its start and a digest of the whole path (two paths never share a label).
fn path_label(path: &str) -> String {
    let mut label: String = path
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    while label.contains("--") {
        label = label.replace("--", "-");
    }
    let label = label.trim_matches('-').to_string();
    let lossless = label.len() <= 63
        && !label.is_empty()
        && path.trim_start_matches('/').to_ascii_lowercase() == label
        && path == path.to_ascii_lowercase();
    if lossless {
        return label;
    }
    use sha2::Digest as _;
    let digest = hex::encode(&sha2::Sha256::digest(path.as_bytes())[..4]);
    let keep = label.chars().take(54).collect::<String>();
    let keep = keep.trim_end_matches('-');
    if keep.is_empty() {
        format!("w-{digest}")
    } else {
        format!("{keep}-{digest}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_paths_keep_upstream_names_and_plugin_paths_get_unique_dns_labels() {
        let pod = registration("pod-mutator", "/mutate--v1-pod");
        assert_eq!(pod.name, "mutating.pod.odh-model-controller.opendatahub.io");
        assert_eq!(pod.side_effects, "None");
        let hello = registration("hello", "/mutate-hello-configmap");
        assert_eq!(
            hello.name,
            "mutate-hello-configmap.hello.plugins.odh-model-controller.opendatahub.io"
        );
        assert_eq!(hello.side_effects, "NoneOnDryRun");
        // Paths that differ only where a label cannot: distinct names.
        let a = registration("p", "/a/b").name;
        let b = registration("p", "/a-b").name;
        let c = registration("p", "/A-b").name;
        assert!(a != b && b != c && a != c, "{a} {b} {c}");
        let long = registration("p", &format!("/{}", "x".repeat(100))).name;
        let label = long.split('.').next().unwrap();
        assert!(label.len() <= 63, "{label}");
        for name in [a, b, c, long] {
            let first = name.split('.').next().unwrap();
            assert!(!first.starts_with('-') && !first.ends_with('-'), "{first}");
        }
    }
}
