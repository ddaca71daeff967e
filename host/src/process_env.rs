//! The environment variables upstream's process reads (spec part 2, §2.3), with the same
//! parsing rules.

/// Which controllers and webhooks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every controller and webhook (OpenShift).
    Full,
    /// `ODH_PLATFORM_TYPE=xKS`: webhook-only, just the LLMInferenceService webhooks.
    Xks,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessEnv {
    pub mode: Mode,
    /// `ENABLE_WEBHOOKS` is anything but exactly `false`.
    pub webhooks_enabled: bool,
    /// `NIM_STATE` (empty means `managed`); `removed` disables the NIM Account controller.
    pub nim_state: String,
    /// `MODELREGISTRY_STATE=managed` turns on the model-registry sub-reconciler.
    pub model_registry_managed: bool,
    /// `MR_SKIP_TLS_VERIFY`, parsed like Go's `strconv.ParseBool` (invalid or empty: false).
    pub mr_skip_tls_verify: bool,
    /// `POD_NAMESPACE`: the controller's own namespace.
    pub pod_namespace: Option<String>,
    /// `MONITORING_NAMESPACE`; empty disables the monitoring RoleBinding.
    pub monitoring_namespace: Option<String>,
    /// `KUADRANT_NAMESPACE`, default `kuadrant-system`.
    pub kuadrant_namespace: String,
    /// `AUTH_AUDIENCE`: comma-separated audiences for AuthPolicies.
    pub auth_audiences: Vec<String>,
}

impl ProcessEnv {
    pub fn from_env() -> Self {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Self {
        let non_empty = |k: &str| get(k).filter(|v| !v.is_empty());
        let nim_state = non_empty("NIM_STATE").unwrap_or_else(|| "managed".to_string());
        Self {
            mode: if get("ODH_PLATFORM_TYPE").as_deref() == Some("xKS") {
                Mode::Xks
            } else {
                Mode::Full
            },
            webhooks_enabled: get("ENABLE_WEBHOOKS").as_deref() != Some("false"),
            nim_state,
            model_registry_managed: get("MODELREGISTRY_STATE").as_deref() == Some("managed"),
            mr_skip_tls_verify: get("MR_SKIP_TLS_VERIFY")
                .as_deref()
                .and_then(go_parse_bool)
                .unwrap_or(false),
            pod_namespace: non_empty("POD_NAMESPACE"),
            monitoring_namespace: non_empty("MONITORING_NAMESPACE"),
            kuadrant_namespace: non_empty("KUADRANT_NAMESPACE")
                .unwrap_or_else(|| "kuadrant-system".to_string()),
            auth_audiences: non_empty("AUTH_AUDIENCE")
                .map(|v| {
                    v.split(',')
                        .map(|a| a.trim().to_string())
                        .filter(|a| !a.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// The NIM Account controller runs unless `NIM_STATE=removed`.
    pub fn nim_enabled(&self) -> bool {
        self.nim_state != "removed"
    }
}

/// Go's `strconv.ParseBool`.
pub fn go_parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Go's `flag` package accepts `-name` as well as `--name`; clap only the latter. Rewrites
/// single-dash long flags so upstream's Deployment arguments keep working.
pub fn normalize_go_flags(args: impl IntoIterator<Item = String>) -> Vec<String> {
    args.into_iter()
        .enumerate()
        .map(|(i, a)| {
            let single_dash_long = i > 0
                && a.starts_with('-')
                && !a.starts_with("--")
                && a.len() > 2
                && a.as_bytes()[1].is_ascii_alphabetic();
            if single_dash_long { format!("-{a}") } else { a }
        })
        .collect()
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
        assert_eq!(e.mode, Mode::Full);
        assert!(e.webhooks_enabled && e.nim_enabled());
        assert_eq!(e.nim_state, "managed");
        assert!(!e.model_registry_managed && !e.mr_skip_tls_verify);
        assert_eq!(e.kuadrant_namespace, "kuadrant-system");
        assert!(
            e.pod_namespace.is_none()
                && e.monitoring_namespace.is_none()
                && e.auth_audiences.is_empty()
        );
    }

    #[test]
    fn exact_values_switch_modes() {
        assert_eq!(env(&[("ODH_PLATFORM_TYPE", "xKS")]).mode, Mode::Xks);
        assert_eq!(
            env(&[("ODH_PLATFORM_TYPE", "xks")]).mode,
            Mode::Full,
            "exactly xKS"
        );
        assert!(!env(&[("ENABLE_WEBHOOKS", "false")]).webhooks_enabled);
        assert!(
            env(&[("ENABLE_WEBHOOKS", "False")]).webhooks_enabled,
            "exactly false"
        );
        assert!(!env(&[("NIM_STATE", "removed")]).nim_enabled());
        assert!(env(&[("NIM_STATE", "")]).nim_enabled());
        assert!(env(&[("MODELREGISTRY_STATE", "managed")]).model_registry_managed);
        assert!(env(&[("MR_SKIP_TLS_VERIFY", "T")]).mr_skip_tls_verify);
        assert!(!env(&[("MR_SKIP_TLS_VERIFY", "yes")]).mr_skip_tls_verify);
        assert_eq!(
            env(&[("AUTH_AUDIENCE", "a, b,,c")]).auth_audiences,
            vec!["a", "b", "c"]
        );
    }

    #[test]
    fn m_02_only_exactly_xks_selects_the_xks_platform() {
        assert_eq!(env(&[]).mode, Mode::Full);
        assert_eq!(
            env(&[("ODH_PLATFORM_TYPE", "OpenDataHub")]).mode,
            Mode::Full
        );
        assert_eq!(env(&[("ODH_PLATFORM_TYPE", "xKS")]).mode, Mode::Xks);
    }

    #[test]
    fn go_style_single_dash_flags_are_accepted() {
        let args = [
            "bin",
            "-leader-elect",
            "--metrics-bind-address=:8080",
            "-h",
            "-x",
            "plain",
        ]
        .map(String::from);
        assert_eq!(
            normalize_go_flags(args),
            vec![
                "bin",
                "--leader-elect",
                "--metrics-bind-address=:8080",
                "-h",
                "-x",
                "plain"
            ]
        );
    }
}
