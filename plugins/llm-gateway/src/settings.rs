//! The plugin's settings. The host fills them from upstream's environment (`POD_NAMESPACE`);
//! an admin may override them in the plugins ConfigMap. JSON:
//! `{"podNamespace": "...", "kuadrantNamespace": "...", "authAudience": "...",
//! "gatewayLabelSelector": "..."}`.

use odh_go_compat::strconv::quote;
use odh_go_compat::validation::{label_value_errors, qualified_name_errors};
use odh_plugin_sdk::Validatable;
use serde::Deserialize;

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// The system namespace: where `baseRefs` configs are looked for when the service's own
    /// namespace lacks them. Unset or empty: a missing config is skipped.
    #[serde(default)]
    pub pod_namespace: Option<String>,
    /// `KUADRANT_NAMESPACE`: where Kuadrant is looked for first (docs/plugins/llm-gateway.md,
    /// "Shared building blocks"); unset means
    /// `kuadrant-system`.
    #[serde(default)]
    pub kuadrant_namespace: Option<String>,
    /// `AUTH_AUDIENCE`: comma-separated token-review audiences of the Gateway AuthPolicy
    /// (docs/plugins/llm-gateway.md, "Shared building blocks"); unset or empty means discovered.
    #[serde(default)]
    pub auth_audience: Option<String>,
    /// `GATEWAY_LABEL_SELECTOR`: `key=value` pairs every Gateway the model-serving-api lists
    /// must carry (docs/plugins/llm-gateway.md, "Running it"); checked by
    /// [`Validatable::validate`].
    #[serde(default)]
    pub gateway_label_selector: Option<String>,
}

impl Settings {
    /// The system namespace, none when unset or empty.
    pub fn system_namespace(&self) -> Option<&str> {
        self.pod_namespace.as_deref().filter(|ns| !ns.is_empty())
    }
}

/// `gatewayLabelSelector` as (key, value) pairs, none when unset or empty; the error is
/// upstream's `invalid GATEWAY_LABEL_SELECTOR: <reason>`.
pub fn gateway_label_selector(raw: Option<&str>) -> Result<Option<Vec<(String, String)>>, String> {
    match raw {
        None | Some("") => Ok(None),
        Some(value) => parse_gateway_label_selector(value)
            .map(Some)
            .map_err(|e| format!("invalid GATEWAY_LABEL_SELECTOR: {e}")),
    }
}

/// `gatewayLabelSelector` is checked as upstream's `config.Load` checks `GATEWAY_LABEL_SELECTOR`
/// (the model-serving-api refuses to start on a bad one): the message is
/// `invalid GATEWAY_LABEL_SELECTOR: <reason>` (see [`parse_gateway_label_selector`]). The
/// other settings are read without checks, as upstream reads them.
impl Validatable for Settings {
    fn validate(&self) -> Result<(), String> {
        gateway_label_selector(self.gateway_label_selector.as_deref()).map(|_| ())
    }
}

/// `GATEWAY_LABEL_SELECTOR` (comma-separated `key=value`): pairs trimmed and empty ones
/// skipped; each key a qualified name and each value a label value, with apimachinery's
/// messages. The reasons, the first bad pair's:
///
/// - `invalid label "<pair>": must be key=value` (no `=`, or an empty key or value);
/// - `invalid label key "<key>": <IsQualifiedName's errors joined by "; ">`;
/// - `invalid label value "<value>" for key "<key>": <IsValidLabelValue's errors joined by "; ">`;
/// - `empty label selector` (nothing but commas and spaces).
pub fn parse_gateway_label_selector(value: &str) -> Result<Vec<(String, String)>, String> {
    let mut pairs = Vec::new();
    for pair in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, val) = match pair.split_once('=') {
            Some((k, v)) if !k.is_empty() && !v.is_empty() => (k, v),
            _ => return Err(format!("invalid label {}: must be key=value", quote(pair))),
        };
        let errs = qualified_name_errors(key);
        if !errs.is_empty() {
            return Err(format!(
                "invalid label key {}: {}",
                quote(key),
                errs.join("; ")
            ));
        }
        let errs = label_value_errors(val);
        if !errs.is_empty() {
            return Err(format!(
                "invalid label value {} for key {}: {}",
                quote(val),
                quote(key),
                errs.join("; ")
            ));
        }
        pairs.push((key.to_string(), val.to_string()));
    }
    if pairs.is_empty() {
        return Err("empty label selector".into());
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use odh_plugin_sdk::{Error, validate_settings};

    fn with(selector: &str) -> Settings {
        Settings {
            gateway_label_selector: Some(selector.into()),
            ..Settings::default()
        }
    }

    fn err(selector: &str) -> String {
        with(selector).validate().unwrap_err()
    }

    #[test]
    fn unset_or_empty_is_no_selector() {
        assert_eq!(gateway_label_selector(None), Ok(None));
        assert_eq!(gateway_label_selector(Some("")), Ok(None));
        assert_eq!(Settings::default().validate(), Ok(()));
        assert_eq!(with("").validate(), Ok(()));
    }

    #[test]
    fn pairs_are_trimmed_and_empty_ones_skipped() {
        assert_eq!(
            gateway_label_selector(Some(" app=llm , ,example.com/tier=edge")),
            Ok(Some(vec![
                ("app".to_string(), "llm".to_string()),
                ("example.com/tier".to_string(), "edge".to_string())
            ]))
        );
        assert_eq!(with("app=llm,").validate(), Ok(()));
    }

    /// The host's `GATEWAY_LABEL_SELECTOR` cases (its config unit tests and the
    /// model-serving-api process tests), with the same texts.
    #[test]
    fn gateway_label_selector_errors() {
        assert_eq!(
            err(" , "),
            "invalid GATEWAY_LABEL_SELECTOR: empty label selector"
        );
        assert_eq!(
            err("app"),
            "invalid GATEWAY_LABEL_SELECTOR: invalid label \"app\": must be key=value"
        );
        assert_eq!(
            err("app="),
            "invalid GATEWAY_LABEL_SELECTOR: invalid label \"app=\": must be key=value"
        );
        assert_eq!(
            err("=x"),
            "invalid GATEWAY_LABEL_SELECTOR: invalid label \"=x\": must be key=value"
        );
        assert_eq!(
            err("bad key=x"),
            "invalid GATEWAY_LABEL_SELECTOR: invalid label key \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        );
        assert_eq!(
            err("Example.com/x=y"),
            "invalid GATEWAY_LABEL_SELECTOR: invalid label key \"Example.com/x\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        );
        assert_eq!(
            err("/x=y"),
            "invalid GATEWAY_LABEL_SELECTOR: invalid label key \"/x\": prefix part must be non-empty"
        );
        assert_eq!(
            err("a/b/c=y"),
            "invalid GATEWAY_LABEL_SELECTOR: invalid label key \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        );
        let long = "k".repeat(64);
        assert_eq!(
            err(&format!("{long}=v")),
            format!(
                "invalid GATEWAY_LABEL_SELECTOR: invalid label key \"{long}\": name part must be no more than 63 characters"
            )
        );
        assert_eq!(
            err("app=-bad"),
            "invalid GATEWAY_LABEL_SELECTOR: invalid label value \"-bad\" for key \"app\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        );
        assert!(err("app=-x").starts_with("invalid GATEWAY_LABEL_SELECTOR: invalid label value \"-x\" for key \"app\": a valid label must be an empty string or consist of alphanumeric characters"));
        assert_eq!(
            err(&format!("app={}", "v".repeat(64))),
            format!(
                "invalid GATEWAY_LABEL_SELECTOR: invalid label value \"{}\" for key \"app\": must be no more than 63 characters",
                "v".repeat(64)
            )
        );
        // The first bad pair is reported.
        assert!(err("ok=1,bad").contains("\"bad\""));
        // Several errors of one key are joined with "; ".
        assert_eq!(
            err("a/=x"),
            "invalid GATEWAY_LABEL_SELECTOR: invalid label key \"a/\": name part must be non-empty; name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        );
    }

    /// What `validate-settings` returns to the host: the SDK puts `invalid plugin settings: `
    /// before the message, in an `invalid` error.
    #[test]
    fn validate_settings_reports_the_selector() {
        assert_eq!(
            validate_settings::<Settings>(r#"{"gatewayLabelSelector": "app"}"#),
            Err(Error::Invalid(
                "invalid plugin settings: invalid GATEWAY_LABEL_SELECTOR: invalid label \"app\": must be key=value".into()
            ))
        );
        assert_eq!(
            validate_settings::<Settings>(r#"{"gatewayLabelSelector": "app=llm"}"#),
            Ok(())
        );
        assert_eq!(
            validate_settings::<Settings>(r#"{"gatewayLabelSelector": ""}"#),
            Ok(())
        );
        assert_eq!(validate_settings::<Settings>("{}"), Ok(()));
    }
}
