//! Plugins compiled into the host binary (see build.rs): a fresh deploy works with no
//! ConfigMap at all.

include!(concat!(env!("OUT_DIR"), "/builtin_plugins.rs"));

/// The embedded component bytes of a built-in plugin.
pub fn get(name: &str) -> Option<&'static [u8]> {
    BUILTINS.iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
}

/// Names of every built-in plugin.
pub fn names() -> impl Iterator<Item = &'static str> {
    BUILTINS.iter().map(|(n, _)| *n)
}

/// The built-in plugins `run` serves when no `--plugin` is given: the production ones.
pub const DEFAULTS: &[&str] = &["isvc"];

/// The settings a built-in plugin starts with, from upstream's environment variables.
pub fn settings_from_env(
    name: &str,
    env: &crate::process_env::ProcessEnv,
    bearer_token: Option<&str>,
) -> serde_json::Value {
    match name {
        "isvc" => serde_json::json!({
            "podNamespace": env.pod_namespace,
            "modelRegistry": {
                "enabled": env.model_registry_managed,
                "bearerToken": bearer_token.filter(|_| env.model_registry_managed),
            },
        }),
        _ => serde_json::json!({}),
    }
}
