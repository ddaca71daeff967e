//! Which of the plugins' controllers and webhooks this process runs, chosen by the environment
//! as upstream's process does: read once by start-up (`run`), nowhere else.
//!
//! * The **full** profile runs every controller and webhook.
//! * The **webhook-only** profile (the registration list names its switch: upstream's
//!   `ODH_PLATFORM_TYPE=xKS`) runs no controller and only the webhooks of the kinds the
//!   built-in plugins list for it.
//! * `ENABLE_WEBHOOKS=false` turns every webhook off; `POD_NAMESPACE` is the controller's own
//!   namespace (the plugins ConfigMap, the leader-election Lease).

use crate::builtins::{self, Builtin, WEBHOOK_ONLY_DEPLOY_DIR, WEBHOOK_ONLY_PROFILE};
use odh_serve::webhook::{WebhookRoute, WebhookTable};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    Full,
    WebhookOnly,
}

/// The host's own switches from the process environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessEnv {
    pub profile: Profile,
    /// `ENABLE_WEBHOOKS` is anything but exactly `false`.
    pub webhooks_enabled: bool,
    /// `POD_NAMESPACE`: the controller's own namespace.
    pub pod_namespace: Option<String>,
}

impl ProcessEnv {
    pub fn from_env() -> Self {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Self {
        let (variable, value) = WEBHOOK_ONLY_PROFILE;
        Self {
            profile: if get(variable).as_deref() == Some(value) {
                Profile::WebhookOnly
            } else {
                Profile::Full
            },
            webhooks_enabled: get("ENABLE_WEBHOOKS").as_deref() != Some("false"),
            pod_namespace: get("POD_NAMESPACE").filter(|v| !v.is_empty()),
        }
    }
}

impl Profile {
    pub const ALL: [Profile; 2] = [Profile::Full, Profile::WebhookOnly];

    /// The directory of the profile's generated manifests under `deploy/`.
    pub fn deploy_dir(self) -> &'static str {
        match self {
            Profile::Full => "generated/full",
            Profile::WebhookOnly => WEBHOOK_ONLY_DEPLOY_DIR,
        }
    }

    /// Whether the profile serves `plugin`'s webhook for `kind`.
    pub fn serves_webhook(self, plugin: &str, kind: &str) -> bool {
        self.serves_webhook_of(builtins::find(plugin), kind)
    }

    /// Whether the profile serves a webhook for `kind` of the plugin registered as `entry`
    /// (`None`: not a built-in).
    pub fn serves_webhook_of(self, entry: Option<&Builtin>, kind: &str) -> bool {
        match self {
            Profile::Full => true,
            Profile::WebhookOnly => entry.is_some_and(|b| b.webhook_only_kinds.contains(&kind)),
        }
    }

    pub fn runs_controllers(self) -> bool {
        self == Profile::Full
    }

    /// Whether the profile serves this route.
    pub fn serves(self, route: &WebhookRoute) -> bool {
        self.serves_webhook(route.plugin.name(), &route.gvk.kind)
    }

    /// The routes of `table` this profile serves.
    pub fn webhooks(self, mut table: WebhookTable) -> WebhookTable {
        table.retain(|r| self.serves(r));
        table
    }

    /// A line for the start-up log.
    pub fn describe(self) -> String {
        match self {
            Profile::Full => "full profile: every controller and webhook".into(),
            Profile::WebhookOnly => format!(
                "{}={}: webhook-only profile, no controllers",
                WEBHOOK_ONLY_PROFILE.0, WEBHOOK_ONLY_PROFILE.1
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> ProcessEnv {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ProcessEnv::from_lookup(|k| m.get(k).cloned())
    }

    #[test]
    fn defaults_match_upstream() {
        let e = env(&[]);
        assert_eq!(e.profile, Profile::Full);
        assert!(e.webhooks_enabled && e.pod_namespace.is_none());
        assert!(e.profile.runs_controllers());
    }

    #[test]
    fn exact_values_switch_profiles() {
        assert!(!env(&[("ENABLE_WEBHOOKS", "false")]).webhooks_enabled);
        assert!(
            env(&[("ENABLE_WEBHOOKS", "False")]).webhooks_enabled,
            "exactly false"
        );
        assert_eq!(
            env(&[("POD_NAMESPACE", "")]).pod_namespace,
            None,
            "empty is unset"
        );
    }

    #[test]
    fn m_02_only_the_exact_value_selects_the_webhook_only_profile() {
        let (variable, value) = WEBHOOK_ONLY_PROFILE;
        let other_case = value.to_lowercase();
        assert_eq!(env(&[(variable, &other_case)]).profile, Profile::Full);
        assert_eq!(env(&[(variable, "Other")]).profile, Profile::Full);
        let webhook_only = env(&[(variable, value)]).profile;
        assert_eq!(webhook_only, Profile::WebhookOnly);
        assert!(!webhook_only.runs_controllers());
    }
}
