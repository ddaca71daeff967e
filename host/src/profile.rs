//! Which of the plugins' controllers and webhooks this process runs, chosen by the environment
//! as upstream's process does: read once by start-up (`run`), nowhere else.
//!
//! * The **full** profile runs every controller and webhook.
//! * The **webhook-only** profile (the registration list names its switch: upstream's
//!   `ODH_PLATFORM_TYPE=xKS`) runs no controller and only the webhooks of the kinds the
//!   built-in plugins list for it.
//! * `ENABLE_WEBHOOKS=false` turns every webhook off; `POD_NAMESPACE` is the controller's own
//!   namespace (the plugins ConfigMap, the leader-election Lease).

use crate::builtins::{self, WEBHOOK_ONLY_PROFILE};
use crate::webhook::{WebhookRoute, WebhookTable};

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
    pub fn runs_controllers(self) -> bool {
        self == Profile::Full
    }

    /// Whether the profile serves this route.
    pub fn serves(self, route: &WebhookRoute) -> bool {
        match self {
            Profile::Full => true,
            Profile::WebhookOnly => builtins::find(route.plugin.name())
                .is_some_and(|b| b.webhook_only_kinds.contains(&route.gvk.kind.as_str())),
        }
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

/// The kinds with webhooks in `table`, in the order upstream registers them: the order of the
/// registration list, then plugins that are not built in, by name.
pub fn webhook_kinds(table: &WebhookTable) -> Vec<String> {
    let rank = |plugin: &str| {
        builtins::BUILTINS
            .iter()
            .position(|b| b.name == plugin)
            .unwrap_or(usize::MAX)
    };
    // Within a plugin, the order its manifest declares its webhooks in.
    let declared = |r: &WebhookRoute| {
        r.plugin
            .current()
            .manifest()
            .webhooks
            .iter()
            .position(|w| w.path == r.path)
            .unwrap_or(usize::MAX)
    };
    let mut routes: Vec<_> = table.routes().collect();
    routes.sort_by_key(|r| {
        (
            rank(r.plugin.name()),
            r.plugin.name().to_string(),
            declared(r),
        )
    });
    let mut kinds: Vec<String> = Vec::new();
    for r in routes {
        // Upstream names the NIM Account's webhook setup `NIMAccount`.
        let kind = if r.gvk.group == "nim.opendatahub.io" && r.gvk.kind == "Account" {
            "NIMAccount".to_string()
        } else {
            r.gvk.kind.clone()
        };
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    kinds
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
