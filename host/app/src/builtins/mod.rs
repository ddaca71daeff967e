//! The built-in plugins: compiled into the binary by `host/app/build.rs` from the registration
//! list in `list.rs`, so a fresh deploy works with no ConfigMap; their starting settings,
//! derived from the process environment as the list declares; and what the crates below learn
//! from the list (the components and needs the registry resolves, the names webhooks are
//! registered with).

mod list;

pub use list::{
    BUILTINS, Builtin, DEPLOYMENT, Deployment, FromProcess, RbacNeeds, WEBHOOK_ONLY_DEPLOY_DIR,
    WEBHOOK_ONLY_PROFILE, Webhook,
};

use std::sync::{Arc, LazyLock};

use odh_plugin_runtime::{Grants, Limits};
use odh_plugin_sources::{BuiltinComponent, Builtins};
use odh_serve::webhook::{Registration, WebhookNames};
use serde_json::Value;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/builtin_plugins.rs"));
}

/// The registration entry of a built-in plugin.
pub fn find(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

/// The embedded component bytes of a built-in plugin.
pub fn component(name: &str) -> Option<&'static [u8]> {
    embedded(name).map(|(b, _)| b)
}

/// The embedded component bytes of a built-in plugin and their hex sha256, taken when the
/// binary was built.
pub(crate) fn embedded(name: &str) -> Option<(&'static [u8], &'static str)> {
    embedded::COMPONENTS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, b, d)| (*b, *d))
}

/// Names of every built-in plugin.
pub fn names() -> impl Iterator<Item = &'static str> {
    BUILTINS.iter().map(|b| b.name)
}

/// The built-ins `run` serves unless `--no-default-plugins` is given.
pub fn defaults() -> impl Iterator<Item = &'static Builtin> {
    BUILTINS.iter().filter(|b| b.default)
}

/// The built-ins whose API routes the standalone `model-serving-api` serves by default.
pub fn model_serving_api_defaults() -> impl Iterator<Item = &'static Builtin> {
    BUILTINS.iter().filter(|b| b.model_serving_api)
}

/// The limits a plugin of this name starts from: the defaults, with what a built-in of that
/// name needs (the plugins ConfigMap refines them key by key).
pub fn default_limits(name: &str) -> Limits {
    find(name).map(Builtin::limits).unwrap_or_default()
}

/// The grants a plugin of this name starts from: whatever it declares, and real randomness
/// when a built-in of that name needs it.
pub fn default_grants(name: &str) -> Grants {
    find(name).map(Builtin::grants).unwrap_or_default()
}

/// Every built-in's component and needs, as the registry resolves `source: builtin`.
pub fn catalog() -> Arc<Builtins> {
    static CATALOG: LazyLock<Arc<Builtins>> = LazyLock::new(|| {
        Arc::new(Builtins::new(BUILTINS.iter().filter_map(|b| {
            let (component, sha256) = embedded(b.name)?;
            Some(BuiltinComponent {
                name: b.name.to_string(),
                component,
                sha256,
                limits: default_limits(b.name),
                grants: default_grants(b.name),
            })
        })))
    });
    CATALOG.clone()
}

/// The names the deployment registers webhooks with: its configurations, every listed
/// webhook's registration, and the domain of derived names.
pub fn webhook_names() -> WebhookNames {
    webhook_names_for(BUILTINS)
}

/// [`webhook_names`] with the registrations `entries` list.
pub fn webhook_names_for<'a>(entries: impl IntoIterator<Item = &'a Builtin>) -> WebhookNames {
    WebhookNames {
        mutating_configuration: DEPLOYMENT.mutating_configuration.into(),
        validating_configuration: DEPLOYMENT.validating_configuration.into(),
        listed: entries
            .into_iter()
            .flat_map(|b| b.webhooks)
            .map(|w| {
                (
                    w.path.to_string(),
                    Registration {
                        name: w.name.to_string(),
                        side_effects: w.side_effects,
                    },
                )
            })
            .collect(),
        domain: DEPLOYMENT.plugin_webhook_domain.into(),
    }
}

impl Builtin {
    /// The limits this plugin starts from: the defaults with what it needs.
    pub fn limits(&self) -> Limits {
        let mut limits = serde_json::to_value(Limits::default()).expect("limits serialise");
        for (key, value) in self.limits {
            limits[*key] = Value::from(*value);
        }
        serde_json::from_value(limits)
            .expect("a built-in's limits name fields of Limits (a test checks)")
    }

    /// The grants this plugin starts from: whatever it declares, and real randomness when it
    /// needs it.
    pub fn grants(&self) -> Grants {
        Grants {
            secure_random: self.secure_random,
            service_account_namespaces: self
                .service_account_namespaces
                .iter()
                .map(|ns| ns.to_string())
                .collect(),
            foreign_writes: self
                .foreign_writes
                .iter()
                .map(|(g, v, k)| odh_plugin_runtime::gvk::Gvk::new(g, v, k))
                .collect(),
            ..Grants::default()
        }
    }

    /// The settings this plugin starts with: each declared source read through `env` (a
    /// variable lookup), set at its JSON pointer. No credential is ever a setting.
    pub fn starting_settings(&self, env: impl Fn(&str) -> Option<String>) -> Value {
        let mut settings = Value::Object(Default::default());
        for (pointer, source) in self.settings {
            let value = match *source {
                FromProcess::Env(var) => env(var).filter(|v| !v.is_empty()).map(Value::String),
                FromProcess::EnvIs(var, want) => {
                    Some(Value::Bool(env(var).as_deref() == Some(want)))
                }
                FromProcess::ClusterDomain(var) => Some(Value::String(cluster_domain(
                    env(var),
                    std::fs::read_to_string(RESOLV_CONF).ok().as_deref(),
                ))),
            };
            if let Some(value) = value {
                set_pointer(&mut settings, pointer, value);
            }
        }
        settings
    }
}

const RESOLV_CONF: &str = "/etc/resolv.conf";
const DEFAULT_CLUSTER_DOMAIN: &str = "cluster.local";

/// knative's `GetClusterDomainName`, which upstream's InferenceGraph validator uses.
fn cluster_domain(variable: Option<String>, resolv_conf: Option<&str>) -> String {
    let Some(resolv_conf) = resolv_conf else {
        return DEFAULT_CLUSTER_DOMAIN.into();
    };
    if let Some(domain) = variable.filter(|d| !d.is_empty()) {
        return domain;
    }
    resolv_conf
        .lines()
        .map(|line| line.split(' ').collect::<Vec<_>>())
        .filter(|words| words[0] == "search")
        .flat_map(|words| words.into_iter().skip(1))
        .find_map(|entry| entry.strip_prefix("svc."))
        .map(|domain| domain.trim_end_matches('.').to_string())
        .unwrap_or_else(|| DEFAULT_CLUSTER_DOMAIN.into())
}

/// Sets `value` at a JSON pointer of objects (`/a/b`), creating the objects on the way.
fn set_pointer(target: &mut Value, pointer: &str, value: Value) {
    let mut at = target;
    let mut keys = pointer.trim_start_matches('/').split('/').peekable();
    while let Some(key) = keys.next() {
        if !at.is_object() {
            *at = Value::Object(Default::default());
        }
        let map = at.as_object_mut().expect("made an object above");
        if keys.peek().is_none() {
            map.insert(key.to_string(), value);
            return;
        }
        at = map
            .entry(key.to_string())
            .or_insert_with(|| Value::Object(Default::default()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    const PLUGIN: Builtin = Builtin {
        settings: &[
            ("/namespace", FromProcess::Env("NS")),
            ("/feature/enabled", FromProcess::EnvIs("STATE", "managed")),
        ],
        ..Builtin::named("p")
    };

    /// The digest recorded at build time is the one of the bytes embedded beside it: the
    /// caches find a built-in's compiled code by it without reading the bytes.
    #[test]
    fn every_built_in_carries_the_digest_of_its_bytes() {
        assert!(!embedded::COMPONENTS.is_empty());
        for (name, bytes, digest) in embedded::COMPONENTS {
            assert_eq!(
                *digest,
                hex::encode(odh_crypto::sha256(bytes)),
                "built-in {name}"
            );
        }
    }

    #[test]
    fn settings_follow_the_declared_sources() {
        assert_eq!(
            PLUGIN.starting_settings(env(&[("NS", "odh"), ("STATE", "managed")])),
            json!({"namespace": "odh", "feature": {"enabled": true}})
        );
        assert_eq!(
            PLUGIN.starting_settings(env(&[("NS", ""), ("STATE", "Managed")])),
            json!({"feature": {"enabled": false}}),
            "empty variables are unset; a condition holds for its exact value only"
        );
    }

    #[test]
    fn the_cluster_domain_follows_knative() {
        let resolv = "nameserver 10.0.0.10\nsearch ns.svc.corp.example. svc.corp.example. corp.example\noptions ndots:5\n";
        assert_eq!(cluster_domain(None, Some(resolv)), "corp.example");
        assert_eq!(cluster_domain(Some("x.y".into()), Some(resolv)), "x.y");
        assert_eq!(
            cluster_domain(Some(String::new()), Some(resolv)),
            "corp.example"
        );
        assert_eq!(
            cluster_domain(None, Some("nameserver 1.1.1.1\n")),
            "cluster.local"
        );
        assert_eq!(
            cluster_domain(Some("x.y".into()), None),
            "cluster.local",
            "without a readable resolv.conf knative never looks at the variable"
        );
    }

    #[test]
    fn no_setting_of_a_builtin_holds_a_credential() {
        for b in BUILTINS {
            let settings = b.starting_settings(|_| Some("managed".into())).to_string();
            for word in ["token", "password", "secret", "bearer"] {
                assert!(
                    !settings.to_ascii_lowercase().contains(word),
                    "{}: {settings}",
                    b.name
                );
            }
        }
    }

    #[test]
    fn limits_name_fields_of_the_limits() {
        for b in BUILTINS {
            let limits = serde_json::to_value(default_limits(b.name)).unwrap();
            for (key, value) in b.limits {
                assert_eq!(limits[*key], *value, "{}: {key}", b.name);
            }
            assert_eq!(default_grants(b.name).secure_random, b.secure_random);
            assert_eq!(catalog().limits(b.name), default_limits(b.name));
        }
        assert_eq!(default_limits("no-such-plugin"), Limits::default());
        assert_eq!(default_grants("no-such-plugin"), Grants::default());
        assert!(default_grants("servingruntime").secure_random);
        assert_eq!(
            default_limits("servingruntime").reconcile_timeout_ms,
            60_000
        );
    }

    #[test]
    fn every_listed_webhook_path_is_named_once() {
        let mut paths = std::collections::BTreeSet::new();
        for w in BUILTINS.iter().flat_map(|b| b.webhooks) {
            assert!(paths.insert(w.path), "{} is listed twice", w.path);
            assert!(
                matches!(w.side_effects, "None" | "NoneOnDryRun"),
                "{}",
                w.path
            );
        }
        let names = webhook_names();
        assert_eq!(names.listed.len(), paths.len());
    }

    #[test]
    fn every_builtin_is_embedded_and_named_uniquely() {
        let mut seen = std::collections::BTreeSet::new();
        for b in BUILTINS {
            assert!(seen.insert(b.name), "{} is listed twice", b.name);
            assert!(component(b.name).is_some(), "{} is not embedded", b.name);
        }
        assert!(defaults().count() > 0);
    }
}
