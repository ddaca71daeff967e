//! The `odh-model-controller-plugins` ConfigMap: which plugin versions serve, from where, with
//! which settings, limits and grants. Format: docs/plugins-configmap.md.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::builtins::Builtins;
pub use odh_plugin_runtime::Source;
use odh_plugin_runtime::record::RecordConfig;
use odh_plugin_runtime::rollout::{Guards, Slice, Step};
use odh_plugin_runtime::{Grants, Limits};

/// Name of the ConfigMap (in `POD_NAMESPACE`) that configures the plugins.
pub const CONFIGMAP_NAME: &str = "odh-model-controller-plugins";
/// The data key holding the configuration.
pub const CONFIG_KEY: &str = "plugins.yaml";

/// How a configured version takes part: serving, or only watched beside the serving one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rollout {
    /// Serves: its decisions are applied.
    #[default]
    Active,
    /// Runs beside the active version on the same inputs; only differences are recorded.
    Shadow,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum FailurePolicy {
    Fail,
    Ignore,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawEntry {
    source: String,
    #[serde(default)]
    sha256: Option<String>,
    #[serde(default)]
    settings: Option<serde_json::Value>,
    /// Refines the limits a plugin of this name starts from, key by key.
    #[serde(default)]
    limits: Option<serde_json::Value>,
    /// Refines the grants a plugin of this name starts from, key by key.
    #[serde(default)]
    grants: Option<serde_json::Value>,
    #[serde(default)]
    mode: Rollout,
    #[serde(default)]
    failure_policy: Option<FailurePolicy>,
    /// A `kubernetes.io/dockerconfigjson` Secret with credentials for an `oci://` source.
    #[serde(default)]
    pull_secret: Option<String>,
    #[serde(default)]
    signature: Option<RawSignature>,
    /// Records a sample of the active version's calls (off without it).
    #[serde(default)]
    record: Option<RawRecord>,
    /// Serves this version to a slice of the objects only, beside the serving version.
    #[serde(default)]
    rollout: Option<RawRollout>,
    /// Replays the serving version's record against this version before it serves.
    #[serde(default)]
    replay_gate: Option<RawReplayGate>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawReplayGate {
    #[serde(default)]
    max_changed: Option<u64>,
    #[serde(default)]
    max_changed_ratio: Option<f64>,
    #[serde(default)]
    min_replayed: Option<u64>,
}

/// Before a version serves (replacing the serving one, or starting a rollout beside it), the
/// record the serving version keeps is replayed against it; past either bound, or with fewer
/// than `min_replayed` recorded calls, it is refused.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayGate {
    pub thresholds: odh_plugin_runtime::record::replay::Thresholds,
    pub min_replayed: u64,
}

impl RawReplayGate {
    fn check(self) -> Result<ReplayGate, String> {
        if self.max_changed.is_none() && self.max_changed_ratio.is_none() {
            return Err(
                "replayGate needs maxChanged or maxChangedRatio (a gate without a bound passes everything)".into(),
            );
        }
        if let Some(r) = self.max_changed_ratio
            && !(0.0..=1.0).contains(&r)
        {
            return Err(format!(
                "replayGate.maxChangedRatio must be between 0 and 1, not {r}"
            ));
        }
        Ok(ReplayGate {
            thresholds: odh_plugin_runtime::record::replay::Thresholds {
                max_changed: self.max_changed,
                max_changed_ratio: self.max_changed_ratio,
            },
            min_replayed: self.min_replayed.unwrap_or(1),
        })
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawRollout {
    #[serde(default)]
    percent: Option<f64>,
    #[serde(default)]
    namespaces: Vec<String>,
    /// A label selector (`env=canary`, `tier in (a,b)`) on the namespaces' labels.
    #[serde(default)]
    namespace_selector: Option<String>,
    /// Percentages served in turn, each for its pause; excludes `percent`.
    #[serde(default)]
    steps: Vec<RawStep>,
    #[serde(default)]
    guards: Option<RawGuards>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawStep {
    percent: f64,
    /// A Go duration (`10m`, `1h30m`); every step but the last has one.
    #[serde(default)]
    pause: Option<String>,
}

/// `rollout.steps` checked: percentages between 0 and 100 that never go down (an object never
/// moves back to the stable version by itself), a positive pause on every step but the last,
/// none on the last (it stays until the entry changes).
fn check_steps(raw: Vec<RawStep>) -> Result<Vec<Step>, String> {
    let last = raw.len().saturating_sub(1);
    let mut steps: Vec<Step> = Vec::with_capacity(raw.len());
    for (i, step) in raw.into_iter().enumerate() {
        let at = format!("rollout.steps[{i}]");
        if !(0.0..=100.0).contains(&step.percent) {
            return Err(format!(
                "{at}.percent must be between 0 and 100, not {}",
                step.percent
            ));
        }
        if let Some(before) = steps.last()
            && step.percent < before.percent
        {
            return Err(format!(
                "{at}.percent {} is below the step before ({}): a step never moves objects back to the stable version (roll back by editing the entry)",
                step.percent, before.percent
            ));
        }
        let pause = match (step.pause.as_deref(), i == last) {
            (None, true) => None,
            (Some(_), true) => {
                return Err(format!(
                    "{at}.pause: the last step stays until the entry changes, it takes no pause"
                ));
            }
            (None, false) => return Err(format!("{at}.pause is missing (e.g. 10m)")),
            (Some(text), false) => match odh_go_compat::time::parse_duration(text) {
                Ok(nanos) if nanos > 0 => Some(std::time::Duration::from_nanos(nanos as u64)),
                Ok(_) => return Err(format!("{at}.pause must be positive, not {text:?}")),
                Err(e) => return Err(format!("{at}.pause: {e}")),
            },
        };
        steps.push(Step {
            percent: step.percent,
            pause,
        });
    }
    Ok(steps)
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawGuards {
    #[serde(default)]
    min_calls: Option<u64>,
    #[serde(default)]
    max_error_rate: Option<f64>,
    #[serde(default)]
    max_deny_rate_increase: Option<f64>,
    #[serde(default)]
    max_deadline_overruns: Option<u64>,
    #[serde(default)]
    max_p99_ms: Option<u64>,
}

/// A progressive rollout: the slice the entry's version serves and its guards.
#[derive(Debug, Clone, PartialEq)]
pub struct RolloutPlan {
    pub slice: Slice,
    pub guards: Guards,
}

impl RawRollout {
    fn check(self) -> Result<RolloutPlan, String> {
        if self.percent.is_some() && !self.steps.is_empty() {
            return Err(
                "rollout.percent and rollout.steps exclude each other: the steps give the percentage".into(),
            );
        }
        let steps = check_steps(self.steps)?;
        let percent = self
            .percent
            .or(steps.first().map(|s| s.percent))
            .unwrap_or(0.0);
        if !(0.0..=100.0).contains(&percent) {
            return Err(format!(
                "rollout.percent must be between 0 and 100, not {percent}"
            ));
        }
        let namespace_selector = match self.namespace_selector.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(text) => Some(
                odh_label_selector::LabelSelector::parse(text)
                    .map_err(|e| format!("rollout.namespaceSelector: {e}"))?,
            ),
        };
        let grows = steps.iter().any(|s| s.percent > 0.0);
        if percent == 0.0 && !grows && self.namespaces.is_empty() && namespace_selector.is_none() {
            return Err(
                "rollout needs a percent above 0, namespaces or a namespaceSelector: the candidate would serve nothing (use mode: shadow to run it beside the active version)".into(),
            );
        }
        let default = Guards::default();
        let guards = match self.guards {
            None => default,
            Some(g) => {
                for (name, rate) in [
                    ("maxErrorRate", g.max_error_rate),
                    ("maxDenyRateIncrease", g.max_deny_rate_increase),
                ] {
                    if let Some(r) = rate
                        && !(0.0..=1.0).contains(&r)
                    {
                        return Err(format!(
                            "rollout.guards.{name} must be between 0 and 1, not {r}"
                        ));
                    }
                }
                Guards {
                    min_calls: g.min_calls.unwrap_or(default.min_calls).max(1),
                    max_error_rate: g.max_error_rate.or(default.max_error_rate),
                    max_deny_rate_increase: g
                        .max_deny_rate_increase
                        .or(default.max_deny_rate_increase),
                    max_deadline_overruns: g
                        .max_deadline_overruns
                        .or(default.max_deadline_overruns),
                    max_p99: g.max_p99_ms.map(std::time::Duration::from_millis),
                }
            }
        };
        Ok(RolloutPlan {
            slice: Slice {
                percent,
                namespaces: self.namespaces.into_iter().collect(),
                namespace_selector,
                steps,
            },
            guards,
        })
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawRecord {
    #[serde(default)]
    sample_rate: Option<f64>,
    #[serde(default)]
    max_entries: Option<u64>,
    #[serde(default)]
    max_bytes: Option<u64>,
}

/// The smallest `record.maxBytes`: one line of an ordinary admission review.
const MIN_RECORD_BYTES: u64 = 64 << 10;

impl RawRecord {
    fn check(self) -> Result<RecordConfig, String> {
        let default = RecordConfig::default();
        let config = RecordConfig {
            sample_rate: self.sample_rate.unwrap_or(default.sample_rate),
            max_entries: self.max_entries.unwrap_or(default.max_entries),
            max_bytes: self.max_bytes.unwrap_or(default.max_bytes),
        };
        if !(config.sample_rate > 0.0 && config.sample_rate <= 1.0) {
            return Err(format!(
                "record.sampleRate must be above 0 and at most 1, not {}",
                config.sample_rate
            ));
        }
        if config.max_entries == 0 {
            return Err("record.maxEntries must be at least 1".into());
        }
        if config.max_bytes < MIN_RECORD_BYTES {
            return Err(format!(
                "record.maxBytes must be at least {MIN_RECORD_BYTES}, not {}",
                config.max_bytes
            ));
        }
        Ok(config)
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawSignature {
    public_keys: RawKeySource,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawKeySource {
    #[serde(default)]
    config_map: Option<String>,
    #[serde(default)]
    secret: Option<String>,
}

/// Where the public keys a signature must be made with are (in the controller's namespace):
/// every data key holds one or more PEM public keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    ConfigMap(String),
    Secret(String),
}

/// An `oci://` candidate must carry a cosign signature by one of these keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignaturePolicy {
    pub public_keys: KeySource,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    plugins: BTreeMap<String, RawEntry>,
}

/// One plugin's configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginEntry {
    pub name: String,
    pub source: Source,
    /// Lower-case hex sha256 of the component (after gzip decompression).
    pub sha256: Option<String>,
    pub settings: serde_json::Value,
    pub limits: Limits,
    pub grants: Grants,
    pub rollout: Rollout,
    pub failure_policy: Option<FailurePolicy>,
    /// Secret (dockerconfigjson) with the registry credentials of an `oci://` source.
    pub pull_secret: Option<String>,
    /// The signature an `oci://` candidate must carry.
    pub signature: Option<SignaturePolicy>,
    /// Recording of the active version's calls; `None`: off.
    pub record: Option<RecordConfig>,
    /// A progressive rollout of this version beside the serving one; `None`: it serves all.
    pub progressive: Option<RolloutPlan>,
    /// Replay of the serving version's record before this version serves; `None`: none.
    pub replay_gate: Option<ReplayGate>,
}

/// The whole configuration: plugins by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RegistryConfig {
    pub plugins: BTreeMap<String, PluginEntry>,
}

impl RegistryConfig {
    /// Parses the `plugins.yaml` text. Every error names the plugin and the field.
    pub fn parse(text: &str, builtins: &Builtins) -> Result<Self, String> {
        let raw: RawConfig =
            serde_yaml::from_str(text).map_err(|e| format!("{CONFIG_KEY}: {e}"))?;
        let mut plugins = BTreeMap::new();
        for (name, e) in raw.plugins {
            let valid_name = !name.is_empty()
                && name.len() <= 63
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
            if !valid_name {
                return Err(format!(
                    "plugin name {name:?} must be 1-63 characters of [a-z0-9-]"
                ));
            }
            let source =
                Source::parse(&name, &e.source).map_err(|m| format!("plugin {name}: {m}"))?;
            let is_oci = matches!(source, Source::Oci(_));
            if e.pull_secret.is_some() && !is_oci {
                return Err(format!(
                    "plugin {name}: pullSecret applies to oci:// sources only"
                ));
            }
            let signature = match e.signature {
                None => None,
                Some(_) if !is_oci => {
                    return Err(format!(
                        "plugin {name}: signature applies to oci:// sources only (signatures are stored beside the artifact in its registry)"
                    ));
                }
                Some(RawSignature {
                    public_keys: RawKeySource { config_map, secret },
                }) => Some(SignaturePolicy {
                    public_keys: match (config_map, secret) {
                        (Some(cm), None) if !cm.is_empty() => KeySource::ConfigMap(cm),
                        (None, Some(s)) if !s.is_empty() => KeySource::Secret(s),
                        _ => {
                            return Err(format!(
                                "plugin {name}: signature.publicKeys names exactly one of configMap or secret"
                            ));
                        }
                    },
                }),
            };
            if e.pull_secret.as_deref() == Some("") {
                return Err(format!("plugin {name}: pullSecret must name a Secret"));
            }
            let sha256 = match e.sha256 {
                Some(s) => {
                    let s = s.to_ascii_lowercase();
                    if s.len() != 64 || !s.chars().all(|c| c.is_ascii_hexdigit()) {
                        return Err(format!("plugin {name}: sha256 must be 64 hex digits"));
                    }
                    Some(s)
                }
                None if source.is_builtin() || signature.is_some() => None,
                None => {
                    return Err(format!(
                        "plugin {name}: sha256 is required for source {source} (or, for an oci:// source, a signature)"
                    ));
                }
            };
            let settings = e.settings.unwrap_or_else(|| serde_json::json!({}));
            if !settings.is_object() {
                return Err(format!(
                    "plugin {name}: settings must be a JSON/YAML object (a mapping), not {}",
                    json_type(&settings)
                ));
            }
            let limits = refine(builtins.limits(&name), e.limits)
                .map_err(|m| format!("plugin {name}: limits: {m}"))?;
            let mut base_grants = builtins.grants(&name);
            if !source.is_builtin() {
                // Code from outside the host authenticates as the controller only where the
                // admin's entry says, never by taking a built-in's name.
                base_grants.service_account_namespaces.clear();
                base_grants.foreign_writes.clear();
            }
            let grants =
                refine(base_grants, e.grants).map_err(|m| format!("plugin {name}: grants: {m}"))?;
            let record = e
                .record
                .map(RawRecord::check)
                .transpose()
                .map_err(|m| format!("plugin {name}: {m}"))?;
            if e.rollout.is_some() && e.mode == Rollout::Shadow {
                return Err(format!(
                    "plugin {name}: rollout and mode: shadow exclude each other (a shadow serves nothing)"
                ));
            }
            let progressive = e
                .rollout
                .map(RawRollout::check)
                .transpose()
                .map_err(|m| format!("plugin {name}: {m}"))?;
            let replay_gate = e
                .replay_gate
                .map(RawReplayGate::check)
                .transpose()
                .map_err(|m| format!("plugin {name}: {m}"))?;
            plugins.insert(
                name.clone(),
                PluginEntry {
                    name,
                    source,
                    sha256,
                    settings,
                    limits,
                    grants,
                    rollout: e.mode,
                    failure_policy: e.failure_policy,
                    pull_secret: e.pull_secret,
                    signature,
                    record,
                    progressive,
                    replay_gate,
                },
            );
        }
        Ok(Self { plugins })
    }
}

fn json_type(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "a mapping",
    }
}

/// `base` with the keys `given` sets replaced (built-ins start from what they need, the admin's
/// entry refines it).
fn refine<T: serde::Serialize + serde::de::DeserializeOwned>(
    base: T,
    given: Option<serde_json::Value>,
) -> Result<T, String> {
    let Some(given) = given else {
        return Ok(base);
    };
    let serde_json::Value::Object(given) = given else {
        return Err("must be a mapping".into());
    };
    let mut merged = serde_json::to_value(base).map_err(|e| e.to_string())?;
    for (key, value) in given {
        merged[key] = value;
    }
    serde_json::from_value(merged).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtins::BuiltinComponent;

    /// A built-in `servingruntime` that needs longer reconciles and real randomness.
    fn builtins() -> Builtins {
        Builtins::new([BuiltinComponent {
            name: "servingruntime".into(),
            component: b"",
            sha256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            limits: Limits {
                reconcile_timeout_ms: 60_000,
                ..Limits::default()
            },
            grants: Grants {
                secure_random: true,
                service_account_namespaces: ["registries".to_string()].into(),
                foreign_writes: [odh_plugin_runtime::gvk::Gvk::new("", "v1", "Secret")].into(),
                ..Grants::default()
            },
        }])
    }

    #[test]
    fn a_rollout_names_a_slice_and_guards() {
        let parse = |extra: &str| {
            RegistryConfig::parse(
                &format!("plugins:\n  servingruntime:\n    source: builtin\n{extra}"),
                &builtins(),
            )
        };
        let plan = parse("    rollout: {percent: 25, namespaces: [team-a], guards: {maxErrorRate: 0.2, maxP99Ms: 300}}\n")
            .unwrap()
            .plugins["servingruntime"]
            .progressive
            .clone()
            .unwrap();
        assert_eq!(plan.slice.percent, 25.0);
        assert!(plan.slice.namespaces.contains("team-a"));
        assert_eq!(plan.guards.max_error_rate, Some(0.2));
        assert_eq!(
            plan.guards.max_deny_rate_increase,
            Some(0.1),
            "defaults stay"
        );
        assert_eq!(
            plan.guards.max_p99,
            Some(std::time::Duration::from_millis(300))
        );
        let stepped = parse("    rollout: {steps: [{percent: 5, pause: 10m}, {percent: 50, pause: 1h30m}, {percent: 100}]}\n")
            .unwrap()
            .plugins["servingruntime"]
            .progressive
            .clone()
            .unwrap();
        assert_eq!(stepped.slice.percent, 5.0, "the first step's to begin with");
        assert_eq!(
            stepped.slice.steps,
            [
                Step {
                    percent: 5.0,
                    pause: Some(std::time::Duration::from_secs(600))
                },
                Step {
                    percent: 50.0,
                    pause: Some(std::time::Duration::from_secs(5400))
                },
                Step {
                    percent: 100.0,
                    pause: None
                },
            ]
        );
        let selected = parse("    rollout: {namespaceSelector: \"rollout=canary\"}\n")
            .unwrap()
            .plugins["servingruntime"]
            .progressive
            .clone()
            .unwrap();
        assert_eq!(selected.slice.percent, 0.0);
        assert_eq!(
            selected
                .slice
                .namespace_selector
                .map(|s| s.to_string())
                .as_deref(),
            Some("rollout=canary")
        );
        for (bad, says) in [
            ("    rollout: {percent: 120}\n", "rollout.percent"),
            ("    rollout: {}\n", "serve nothing"),
            (
                "    rollout: {percent: 5}\n    mode: shadow\n",
                "exclude each other",
            ),
            (
                "    rollout: {percent: 5, guards: {maxErrorRate: 2}}\n",
                "maxErrorRate",
            ),
            (
                "    rollout: {percent: 5, steps: [{percent: 10}]}\n",
                "exclude each other",
            ),
            (
                "    rollout: {steps: [{percent: 10, pause: 1m}, {percent: 5}]}\n",
                "below the step before",
            ),
            (
                "    rollout: {steps: [{percent: 10}, {percent: 50}]}\n",
                "pause is missing",
            ),
            (
                "    rollout: {steps: [{percent: 10, pause: 1m}]}\n",
                "takes no pause",
            ),
            (
                "    rollout: {steps: [{percent: 10, pause: soon}, {percent: 50}]}\n",
                "time: invalid duration",
            ),
            ("    rollout: {steps: [{percent: 0}]}\n", "serve nothing"),
            (
                "    rollout: {namespaceSelector: \"env in (a\"}\n",
                "rollout.namespaceSelector",
            ),
        ] {
            let err = parse(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn a_replay_gate_needs_a_bound() {
        let parse = |extra: &str| {
            RegistryConfig::parse(
                &format!("plugins:\n  servingruntime:\n    source: builtin\n{extra}"),
                &builtins(),
            )
        };
        let gate = parse("    replayGate: {maxChangedRatio: 0.01}\n")
            .unwrap()
            .plugins["servingruntime"]
            .replay_gate
            .clone()
            .unwrap();
        assert_eq!(gate.thresholds.max_changed_ratio, Some(0.01));
        assert_eq!(gate.min_replayed, 1);
        for (bad, says) in [
            (
                "    replayGate: {}\n",
                "needs maxChanged or maxChangedRatio",
            ),
            ("    replayGate: {maxChangedRatio: 3}\n", "between 0 and 1"),
            (
                "    replayGate: {maxChanged: 1, other: 2}\n",
                "unknown field",
            ),
        ] {
            let err = parse(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn record_is_off_by_default_and_checked_when_on() {
        let parse = |yaml: &str| RegistryConfig::parse(yaml, &builtins());
        let off = parse("plugins:\n  servingruntime:\n    source: builtin\n").unwrap();
        assert_eq!(off.plugins["servingruntime"].record, None);
        let on = parse(
            "plugins:\n  servingruntime:\n    source: builtin\n    record: {sampleRate: 0.05, maxEntries: 500}\n",
        )
        .unwrap();
        assert_eq!(
            on.plugins["servingruntime"].record,
            Some(RecordConfig {
                sample_rate: 0.05,
                max_entries: 500,
                max_bytes: RecordConfig::default().max_bytes,
            })
        );
        let defaults =
            parse("plugins:\n  servingruntime:\n    source: builtin\n    record: {}\n").unwrap();
        assert_eq!(
            defaults.plugins["servingruntime"].record,
            Some(RecordConfig::default())
        );
        for (bad, says) in [
            ("{sampleRate: 0}", "record.sampleRate"),
            ("{sampleRate: 1.5}", "record.sampleRate"),
            ("{maxEntries: 0}", "record.maxEntries"),
            ("{maxBytes: 10}", "record.maxBytes"),
            ("{rate: 1}", "unknown field"),
        ] {
            let err = parse(&format!(
                "plugins:\n  servingruntime:\n    source: builtin\n    record: {bad}\n"
            ))
            .unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn only_the_builtin_itself_inherits_where_the_controllers_identity_may_go_and_foreign_writes() {
        let parse = |yaml: &str| RegistryConfig::parse(yaml, &builtins()).unwrap();
        let builtin = parse("plugins:\n  servingruntime:\n    source: builtin\n");
        assert_eq!(
            builtin.plugins["servingruntime"]
                .grants
                .service_account_namespaces,
            ["registries".to_string()].into()
        );
        let sha = "a".repeat(64);
        let replacement = parse(&format!(
            "plugins:\n  servingruntime:\n    source: https://example.com/p.wasm\n    sha256: {sha}\n"
        ));
        let e = &replacement.plugins["servingruntime"];
        assert!(e.grants.service_account_namespaces.is_empty(), "{e:?}");
        assert!(e.grants.foreign_writes.is_empty(), "{e:?}");
        assert_eq!(
            builtin.plugins["servingruntime"]
                .grants
                .foreign_writes
                .len(),
            1
        );
        assert!(e.grants.secure_random, "other needs of the name stay");
        let granted = parse(&format!(
            "plugins:\n  servingruntime:\n    source: https://example.com/p.wasm\n    sha256: {sha}\n    grants: {{serviceAccountNamespaces: [mine]}}\n"
        ));
        assert_eq!(
            granted.plugins["servingruntime"]
                .grants
                .service_account_namespaces,
            ["mine".to_string()].into()
        );
    }

    const FULL: &str = r#"
plugins:
  isvc:
    source: builtin
  vendor-runtime:
    source: configmap://vendor-runtime-plugin/plugin.wasm.gz
    sha256: 3B0C0000000000000000000000000000000000000000000000000000000000AA
    mode: shadow
    failurePolicy: Ignore
    settings:
      replicas: 2
    limits:
      reconcileTimeoutMs: 500
      memoryMib: 64
    grants:
      reads: [{group: "", version: v1, kind: ConfigMap}]
      httpHosts: [api.example.com]
"#;

    #[test]
    fn parses_every_field() {
        let c = RegistryConfig::parse(FULL, &builtins()).unwrap();
        assert_eq!(c.plugins["isvc"].source, Source::Builtin("isvc".into()));
        assert_eq!(c.plugins["isvc"].rollout, Rollout::Active);
        let v = &c.plugins["vendor-runtime"];
        assert_eq!(
            v.source,
            Source::ConfigMap {
                name: "vendor-runtime-plugin".into(),
                key: "plugin.wasm.gz".into()
            }
        );
        assert_eq!(
            v.sha256.as_deref(),
            Some("3b0c0000000000000000000000000000000000000000000000000000000000aa")
        );
        assert_eq!(v.rollout, Rollout::Shadow);
        assert_eq!(v.failure_policy, Some(FailurePolicy::Ignore));
        assert_eq!(v.settings["replicas"], 2);
        assert_eq!(v.limits.reconcile_timeout_ms, 500);
        assert_eq!(
            v.limits.admission_timeout_ms,
            Limits::default().admission_timeout_ms
        );
        assert_eq!(v.grants.http_hosts.as_ref().map(|h| h.len()), Some(1));
        assert!(v.grants.writes.is_none());
    }

    #[test]
    fn a_builtin_starts_from_what_it_needs_and_the_entry_refines_it() {
        let c = RegistryConfig::parse(
            "plugins:\n  servingruntime:\n    source: builtin\n    limits: {memoryMib: 64}\n",
            &builtins(),
        )
        .unwrap();
        let e = &c.plugins["servingruntime"];
        assert_eq!(
            (e.limits.reconcile_timeout_ms, e.limits.memory_mib),
            (60_000, 64)
        );
        assert!(e.grants.secure_random);
        let c = RegistryConfig::parse(
            "plugins:\n  servingruntime:\n    source: builtin\n    limits: {reconcileTimeoutMs: 5000}\n    grants: {secureRandom: false}\n",
            &builtins(),
        )
        .unwrap();
        let e = &c.plugins["servingruntime"];
        assert_eq!(e.limits.reconcile_timeout_ms, 5_000);
        assert!(!e.grants.secure_random, "the admin's word wins");
        let bad = RegistryConfig::parse(
            "plugins:\n  isvc:\n    source: builtin\n    limits: {reconcileTimeoutMS: 1}\n",
            &builtins(),
        )
        .unwrap_err();
        assert!(
            bad.starts_with("plugin isvc: limits: unknown field `reconcileTimeoutMS`"),
            "{bad}"
        );
    }

    #[test]
    fn sources_parse_and_print_back() {
        for text in [
            "builtin:hello",
            "configmap://cm/key",
            "file:///opt/p.wasm",
            "https://example.com/p.wasm",
            "oci://registry.local:5000/p:1.0",
        ] {
            assert_eq!(Source::parse("x", text).unwrap().to_string(), text);
        }
        for bad in [
            "configmap://cm",
            "configmap:///k",
            "file://relative/p.wasm",
            "http://plain.example.com/p.wasm",
            "ftp://x",
        ] {
            assert!(Source::parse("x", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_signed_oci_entry_needs_no_pinned_digest() {
        let c = RegistryConfig::parse(
            "plugins:\n  v:\n    source: oci://quay.io/vendor/v:1\n    pullSecret: vendor-pull\n    signature:\n      publicKeys:\n        secret: vendor-keys\n",
            &builtins(),
        )
        .unwrap();
        let v = &c.plugins["v"];
        assert_eq!(v.sha256, None);
        assert_eq!(v.pull_secret.as_deref(), Some("vendor-pull"));
        assert_eq!(
            v.signature,
            Some(SignaturePolicy {
                public_keys: KeySource::Secret("vendor-keys".into())
            })
        );
        let unsigned = RegistryConfig::parse(
            "plugins: {v: {source: 'oci://quay.io/vendor/v:1'}}",
            &builtins(),
        );
        assert!(
            unsigned
                .unwrap_err()
                .contains("or, for an oci:// source, a signature")
        );
    }

    #[test]
    fn settings_left_empty_are_no_settings() {
        for text in [
            "plugins: {p: {source: builtin}}",
            "plugins:\n  p:\n    source: builtin\n    settings:\n",
        ] {
            let c = RegistryConfig::parse(text, &builtins()).unwrap();
            assert_eq!(c.plugins["p"].settings, serde_json::json!({}), "{text}");
        }
    }

    #[test]
    fn bad_configurations_name_the_plugin_and_field() {
        let cases = [
            (
                "plugins: {p: {source: 'file:///p.wasm'}}",
                "plugin p: sha256 is required",
            ),
            (
                "plugins: {p: {source: 'file:///p.wasm', sha256: abc}}",
                "plugin p: sha256 must be 64 hex digits",
            ),
            (
                "plugins: {p: {source: builtin, settings: [1]}}",
                "plugin p: settings must be a JSON/YAML object (a mapping), not a list",
            ),
            (
                "plugins: {p: {source: builtin, settings: '{\"a\": 1}'}}",
                "plugin p: settings must be a JSON/YAML object (a mapping), not a string",
            ),
            (
                "plugins: {p: {source: builtin, mode: sideways}}",
                "plugins.yaml",
            ),
            (
                "plugins: {p: {source: builtin, grants: {everything: true}}}",
                "plugin p: grants: unknown field `everything`",
            ),
            ("plugins: {P: {source: builtin}}", "plugin name \"P\""),
            (
                "plugins: {p: {source: 'nope'}}",
                "plugin p: source \"nope\"",
            ),
            (
                "plugins: {p: {source: builtin, pullSecret: s}}",
                "plugin p: pullSecret applies to oci:// sources only",
            ),
            (
                "plugins: {p: {source: 'https://x/p.wasm', signature: {publicKeys: {configMap: k}}}}",
                "plugin p: signature applies to oci:// sources only",
            ),
            (
                "plugins: {p: {source: 'oci://r.example/p:1', signature: {publicKeys: {configMap: k, secret: s}}}}",
                "exactly one of configMap or secret",
            ),
            (
                "plugins: {p: {source: 'oci://r.example/p:1', signature: {publicKeys: {}}}}",
                "exactly one of configMap or secret",
            ),
            (
                "plugins: {p: {source: 'oci://r.example/p:1', signature: {keys: k}}}",
                "unknown field `keys`",
            ),
            (
                "plugins: {p: {source: 'oci://r.example/p:1', pullSecret: ''}}",
                "pullSecret must name a Secret",
            ),
        ];
        for (text, want) in cases {
            let err = RegistryConfig::parse(text, &builtins()).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
        }
    }
}
