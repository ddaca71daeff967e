//! Plugin settings: parsed from the admin's JSON before each export, checked by
//! `validate-settings` before a plugin version goes live.
//!
//! ```
//! use odh_plugin_sdk::{Validatable, parse_settings};
//!
//! #[derive(serde::Deserialize)]
//! #[serde(rename_all = "camelCase", deny_unknown_fields)]
//! struct Settings {
//!     #[serde(default)]
//!     replicas: u32,
//! }
//!
//! impl Validatable for Settings {
//!     fn validate(&self) -> Result<(), String> {
//!         if self.replicas > 10 { Err("replicas: at most 10".into()) } else { Ok(()) }
//!     }
//! }
//!
//! assert_eq!(parse_settings::<Settings>("").unwrap().replicas, 0);
//! ```

use serde::de::{Deserialize, DeserializeOwned, Deserializer, Error as _};

use crate::Error;

/// A check of settings that parsed, in the style of Kubewarden's `Validatable`: the message
/// of an `Err` is reported as `invalid plugin settings: <message>`. The default accepts
/// anything that parses.
pub trait Validatable {
    /// Whether the parsed settings make sense together.
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

/// The settings of a plugin that has none: any JSON object (its fields ignored), nothing else.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoSettings;

impl Validatable for NoSettings {}

impl<'de> Deserialize<'de> for NoSettings {
    // Through `Value`, which every plugin links anyway: a visitor of its own would pull in
    // serde's error formatting (floats included), some tens of KiB of component.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(deserializer)? {
            serde_json::Value::Object(_) => Ok(NoSettings),
            other => Err(D::Error::custom(format_args!(
                "expected a JSON object, got {}",
                crate::object::json_type(&other)
            ))),
        }
    }
}

/// Parses settings JSON into `S`; an empty (or blank) string is read as `{}`. A parse failure
/// is an [`Error::Invalid`] naming the problem and where it is, e.g.
/// `invalid plugin settings: unknown field "x" at line 1 column 4`.
pub fn parse_settings<S: DeserializeOwned>(json: &str) -> Result<S, Error> {
    let json = if json.trim().is_empty() { "{}" } else { json };
    // serde reads a struct from an array of its fields in order too: `[]` would pass as the
    // defaults and `["ns"]` as the first field, which is never what an admin meant.
    let other = match json.trim_start().chars().next() {
        Some('{') => None,
        Some('[') => Some("an array"),
        Some('"') => Some("a string"),
        Some('t' | 'f') => Some("a boolean"),
        Some('n') => Some("null"),
        Some('-' | '0'..='9') => Some("a number"),
        // Not JSON at all: serde's error says where.
        _ => None,
    };
    if let Some(other) = other {
        return Err(Error::Invalid(format!(
            "invalid plugin settings: expected a JSON object, got {other}"
        )));
    }
    serde_json::from_str(json).map_err(|e| Error::Invalid(format!("invalid plugin settings: {e}")))
}

/// What `validate-settings` does: [`parse_settings`], then [`Validatable::validate`].
pub fn validate_settings<S: DeserializeOwned + Validatable>(json: &str) -> Result<(), Error> {
    parse_settings::<S>(json)?
        .validate()
        .map_err(|m| Error::Invalid(format!("invalid plugin settings: {m}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct S {
        #[serde(default)]
        replicas: u32,
    }

    impl Validatable for S {
        fn validate(&self) -> Result<(), String> {
            match self.replicas {
                0..=10 => Ok(()),
                n => Err(format!("replicas: {n} is more than 10")),
            }
        }
    }

    #[test]
    fn settings_parse_and_report() {
        assert_eq!(parse_settings::<S>("").unwrap(), S { replicas: 0 });
        assert_eq!(
            parse_settings::<S>(r#"{"replicas": 3}"#).unwrap(),
            S { replicas: 3 }
        );
        let Err(Error::Invalid(msg)) = parse_settings::<S>(r#"{"x": 1}"#) else {
            panic!("expected Invalid")
        };
        assert!(
            msg.starts_with("invalid plugin settings: unknown field `x`"),
            "{msg}"
        );
        assert!(msg.contains("line 1"), "{msg}");
    }

    #[test]
    fn typed_settings_are_an_object_not_an_array_of_fields() {
        for (bad, got) in [
            ("[]", "an array"),
            ("[3]", "an array"),
            (" \"x\"", "a string"),
            ("3", "a number"),
            ("null", "null"),
            ("true", "a boolean"),
        ] {
            assert_eq!(
                parse_settings::<S>(bad),
                Err(Error::Invalid(format!(
                    "invalid plugin settings: expected a JSON object, got {got}"
                ))),
                "{bad}"
            );
        }
        assert_eq!(parse_settings::<S>(" {} ").unwrap(), S { replicas: 0 });
    }

    #[test]
    fn validation_runs_after_parsing() {
        assert_eq!(validate_settings::<S>(r#"{"replicas": 3}"#), Ok(()));
        assert_eq!(
            validate_settings::<S>(r#"{"replicas": 11}"#),
            Err(Error::Invalid(
                "invalid plugin settings: replicas: 11 is more than 10".into()
            ))
        );
        assert!(matches!(
            validate_settings::<S>("{"),
            Err(Error::Invalid(_))
        ));
    }

    #[test]
    fn no_settings_takes_any_object_only() {
        assert_eq!(validate_settings::<NoSettings>(""), Ok(()));
        assert_eq!(
            validate_settings::<NoSettings>(r#"{"a": [1, {"b": null}]}"#),
            Ok(())
        );
        for bad in ["[1]", "[]", "3", "\"x\"", "{"] {
            let Err(Error::Invalid(m)) = validate_settings::<NoSettings>(bad) else {
                panic!("{bad} accepted")
            };
            assert!(m.starts_with("invalid plugin settings: "), "{m}");
        }
        let Err(Error::Invalid(m)) = validate_settings::<NoSettings>("[1]") else {
            panic!()
        };
        assert!(m.contains("expected a JSON object"), "{m}");
    }
}
