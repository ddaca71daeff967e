//! The `odh-model-controller-plugins` ConfigMap parser: any text is a configuration or an
//! error message, never a panic; a valid configuration written out as YAML comes back field
//! for field; a bad plugin name is refused naming it.

use std::collections::BTreeMap;

use odh_model_controller::builtins::default_limits;
use odh_model_controller::registry::{FailurePolicy, RegistryConfig, Rollout};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use crate::json::any_json;

/// One generated plugin entry.
#[derive(Debug, Clone)]
struct Entry {
    source: String,
    sha256: Option<String>,
    mode: Option<Rollout>,
    failure_policy: Option<FailurePolicy>,
    settings: Option<Map<String, Value>>,
    limits: BTreeMap<&'static str, u32>,
}

const LIMIT_KEYS: [&str; 9] = [
    "reconcileTimeoutMs",
    "admissionTimeoutMs",
    "reconcileBudgetMs",
    "admissionBudgetMs",
    "httpConnectTimeoutMs",
    "httpTimeoutMs",
    "memoryMib",
    "maxOutputBytes",
    "concurrency",
];

fn plugin_name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9-]{1,63}",
        prop::sample::select(vec!["isvc", "servingruntime", "storage", "hello"])
            .prop_map(str::to_string),
    ]
}

/// A source text and whether it names a built-in (which needs no sha256).
fn source() -> impl Strategy<Value = (String, bool)> {
    prop_oneof![
        Just(("builtin".to_string(), true)),
        "builtin:[a-z-]{1,12}".prop_map(|s| (s, true)),
        "configmap://[a-z0-9-]{1,20}/[a-z0-9._-]{1,12}".prop_map(|s| (s, false)),
        "file:///[a-z0-9/._-]{0,30}".prop_map(|s| (s, false)),
        "https://[a-z.]{1,20}/[a-z/.]{0,20}".prop_map(|s| (s, false)),
        "oci://[a-z.:0-9]{1,20}/[a-z]{1,10}(:[0-9.]{1,6})?".prop_map(|s| (s, false)),
    ]
}

/// Settings values YAML writes and reads back unchanged (no floats: their text form is the
/// YAML library's business, not the parser's).
fn settings_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::String),
        // Strings YAML would read as something else unless quoted.
        prop::sample::select(vec![
            "yes", "no", "null", "~", "1e3", "0x10", "- a", ": b", "#c"
        ])
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-zA-Z0-9_.-]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn entry() -> impl Strategy<Value = Entry> {
    (
        source(),
        "[0-9a-fA-F]{64}",
        any::<bool>(),
        prop::option::of(prop::sample::select(vec![Rollout::Active, Rollout::Shadow])),
        prop::option::of(prop::sample::select(vec![
            FailurePolicy::Fail,
            FailurePolicy::Ignore,
        ])),
        prop::option::of(prop::collection::btree_map(
            "[a-zA-Z_]{1,8}",
            settings_value(),
            0..4,
        )),
        prop::collection::btree_map(prop::sample::select(LIMIT_KEYS.to_vec()), 1u32.., 0..4),
    )
        .prop_map(
            |((source, builtin), sha, with_sha, mode, failure_policy, settings, limits)| Entry {
                source,
                sha256: (with_sha || !builtin).then_some(sha),
                mode,
                failure_policy,
                settings: settings.map(|s| s.into_iter().collect()),
                limits,
            },
        )
}

/// The configuration as an admin would write it.
fn yaml(entries: &BTreeMap<String, Entry>) -> String {
    let mut plugins = Map::new();
    for (name, e) in entries {
        let mut m = Map::new();
        m.insert("source".into(), json!(e.source));
        if let Some(s) = &e.sha256 {
            m.insert("sha256".into(), json!(s));
        }
        if let Some(mode) = e.mode {
            let mode = if mode == Rollout::Active {
                "active"
            } else {
                "shadow"
            };
            m.insert("mode".into(), json!(mode));
        }
        if let Some(p) = e.failure_policy {
            let p = if p == FailurePolicy::Fail {
                "Fail"
            } else {
                "Ignore"
            };
            m.insert("failurePolicy".into(), json!(p));
        }
        if let Some(s) = &e.settings {
            m.insert("settings".into(), Value::Object(s.clone()));
        }
        if !e.limits.is_empty() {
            m.insert("limits".into(), json!(e.limits));
        }
        plugins.insert(name.clone(), Value::Object(m));
    }
    serde_yaml::to_string(&json!({ "plugins": plugins })).unwrap()
}

/// YAML-looking text: the configuration's own keys and YAML's punctuation.
fn yaml_like() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("plugins:"),
        Just("\n"),
        Just("  "),
        Just("p:"),
        Just("source: builtin"),
        Just("source: 'file:///x'"),
        Just("sha256: "),
        Just("limits: {memoryMib: 1}"),
        Just("grants:"),
        Just("settings:"),
        Just("mode: shadow"),
        Just("- "),
        Just("{"),
        Just("}"),
        Just("["),
        Just("]"),
        Just(": "),
        Just("&a "),
        Just("*a"),
        Just("!!binary "),
        Just("<<: "),
        Just("? "),
        Just("|"),
        Just("'"),
        Just("\""),
        Just("# c"),
        Just("---\n"),
    ];
    prop::collection::vec(token, 0..30).prop_map(|t| t.concat())
}

/// Parsing `text` returns; an error is a message naming the key or, for YAML errors, the data
/// key of the ConfigMap.
fn check_any(text: &str) -> Result<(), TestCaseError> {
    if let Err(e) = RegistryConfig::parse(text, &odh_model_controller::builtins::catalog()) {
        prop_assert!(
            e.starts_with("plugins.yaml: ") || e.starts_with("plugin "),
            "{:?}",
            e
        );
    }
    Ok(())
}

proptest! {
    #[test]
    fn arbitrary_text_is_a_configuration_or_an_error(text in any::<String>()) {
        check_any(&text)?;
    }

    #[test]
    fn yaml_shaped_text_is_a_configuration_or_an_error(text in yaml_like()) {
        check_any(&text)?;
    }

    #[test]
    fn arbitrary_documents_under_plugins_are_a_configuration_or_an_error(
        name in plugin_name(),
        doc in any_json(),
    ) {
        let text = serde_yaml::to_string(&json!({ "plugins": { name: doc } })).unwrap();
        check_any(&text)?;
    }

    #[test]
    fn a_valid_configuration_comes_back_field_for_field(
        entries in prop::collection::btree_map(plugin_name(), entry(), 0..5),
    ) {
        let text = yaml(&entries);
        let config = RegistryConfig::parse(&text, &odh_model_controller::builtins::catalog())
            .map_err(|e| TestCaseError::fail(format!("refused: {e}\n{text}")))?;
        prop_assert_eq!(config.plugins.len(), entries.len());
        for (name, e) in &entries {
            let got = &config.plugins[name];
            prop_assert_eq!(&got.name, name);
            let want_source = if e.source == "builtin" {
                format!("builtin:{name}")
            } else {
                e.source.clone()
            };
            prop_assert_eq!(got.source.to_string(), want_source);
            prop_assert_eq!(&got.sha256, &e.sha256.as_ref().map(|s| s.to_ascii_lowercase()));
            prop_assert_eq!(got.rollout, e.mode.unwrap_or_default());
            prop_assert_eq!(got.failure_policy, e.failure_policy);
            let settings = e.settings.clone().map(Value::Object).unwrap_or_else(|| json!({}));
            prop_assert_eq!(&got.settings, &settings);
            // Limits: the plugin's defaults, with exactly the given keys replaced.
            let mut want = serde_json::to_value(default_limits(name)).unwrap();
            for (k, v) in &e.limits {
                want[*k] = json!(v);
            }
            prop_assert_eq!(serde_json::to_value(&got.limits).unwrap(), want);
        }
    }

    #[test]
    fn a_bad_plugin_name_is_refused_naming_it(name in "\\PC{0,70}") {
        let valid = !name.is_empty()
            && name.len() <= 63
            && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        let text = serde_yaml::to_string(&json!({ "plugins": { &name: { "source": "builtin" } } }))
            .unwrap();
        match RegistryConfig::parse(&text, &odh_model_controller::builtins::catalog()) {
            Ok(c) => prop_assert!(valid && c.plugins.contains_key(&name), "{:?} accepted", name),
            Err(e) => {
                prop_assert!(!valid, "{:?} refused: {}", name, e);
                prop_assert_eq!(
                    e,
                    format!("plugin name {name:?} must be 1-63 characters of [a-z0-9-]")
                );
            }
        }
    }
}
