//! The name and side effects a plugin webhook is registered with: the listed ones for the paths
//! the application lists (upstream's, so the deploy manifests, the live sync and the Go
//! controller's kustomize output agree and an upgrade in place finds the same entries), and for
//! a plugin's own path a name derived from the path and the plugin. One rule, for the live sync
//! and the generated manifests alike.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    pub name: String,
    pub side_effects: &'static str,
}

/// How the deployment names what it registers with the apiserver: its two webhook
/// configurations, the registrations of the paths the application lists (upstream's names and
/// side effects), and the domain of the names derived for every other path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookNames {
    pub mutating_configuration: String,
    pub validating_configuration: String,
    /// Registrations by webhook path.
    pub listed: BTreeMap<String, Registration>,
    /// Suffix of derived names: `<path label>.<plugin>.<domain>`.
    pub domain: String,
}

impl WebhookNames {
    /// The registration of `plugin`'s webhook at `path`: the listed one, else a name derived
    /// from the path and the plugin, with side effects only when the request is not a dry run
    /// (the host applies a plugin's admission side effects only then).
    pub fn registration(&self, plugin: &str, path: &str) -> Registration {
        if let Some(listed) = self.listed.get(path) {
            return listed.clone();
        }
        Registration {
            name: format!("{}.{plugin}.{}", path_label(path), self.domain),
            side_effects: "NoneOnDryRun",
        }
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

    fn names() -> WebhookNames {
        WebhookNames {
            mutating_configuration: "mutating.example.com".into(),
            validating_configuration: "validating.example.com".into(),
            listed: BTreeMap::from([(
                "/mutate--v1-pod".to_string(),
                Registration {
                    name: "mutating.pod.example.com".into(),
                    side_effects: "None",
                },
            )]),
            domain: "plugins.example.com".into(),
        }
    }

    fn registration(plugin: &str, path: &str) -> Registration {
        names().registration(plugin, path)
    }

    #[test]
    fn listed_paths_keep_their_names_and_plugin_paths_get_unique_dns_labels() {
        let pod = registration("pod-mutator", "/mutate--v1-pod");
        assert_eq!(pod.name, "mutating.pod.example.com");
        assert_eq!(pod.side_effects, "None");
        let hello = registration("hello", "/mutate-hello-configmap");
        assert_eq!(
            hello.name,
            "mutate-hello-configmap.hello.plugins.example.com"
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
