//! The `details` of an `Invalid` denial, read back from its message. Plugins deny with
//! apimachinery's `NewInvalid` text (`<Kind>.<group> "<name>" is invalid: <field>: <body>`, or
//! a bracketed list of several field errors); upstream's answers also carry that structure as
//! `status.details` (kind, group, name and one cause per field error), which UIs read to point
//! at the offending field.

use serde_json::{Value, json};

/// apimachinery's field error types, by the text their messages start with.
const CAUSE_TYPES: &[(&str, &str)] = &[
    ("Invalid value", "FieldValueInvalid"),
    ("Required value", "FieldValueRequired"),
    ("Unsupported value", "FieldValueNotSupported"),
    ("Duplicate value", "FieldValueDuplicate"),
    ("Not found", "FieldValueNotFound"),
    ("Forbidden", "FieldValueForbidden"),
    ("Too long", "FieldValueTooLong"),
    ("Too many", "FieldValueTooMany"),
    ("Internal error", "InternalError"),
];

/// `status.details` for an `Invalid` message; `None` when the message is not in that form.
pub fn details(message: &str) -> Option<Value> {
    let (qualified_kind, rest) = message.split_once(" \"")?;
    let (name, errors) = rest.split_once("\" is invalid: ")?;
    let (kind, group) = qualified_kind
        .split_once('.')
        .unwrap_or((qualified_kind, ""));
    let errors = match errors.strip_prefix('[') {
        Some(list) => split_list(list.strip_suffix(']')?),
        None => vec![errors],
    };
    let causes = errors.into_iter().map(cause).collect::<Option<Vec<_>>>()?;
    Some(json!({"name": name, "group": group, "kind": kind, "causes": causes}))
}

/// One cause (metav1.StatusCause, whose type is serialised as `reason`) from `<field>: <body>` (or a bare `<body>` for an error without a field).
fn cause(error: &str) -> Option<Value> {
    let (field, body) = match cause_type(error) {
        Some(_) => ("", error),
        None => error.split_once(": ")?,
    };
    let kind = cause_type(body)?;
    Some(json!({"reason": kind, "message": body, "field": field}))
}

fn cause_type(body: &str) -> Option<&'static str> {
    CAUSE_TYPES
        .iter()
        .find(|(prefix, _)| body.starts_with(prefix))
        .map(|(_, kind)| *kind)
}

/// Splits an aggregate's `e1, e2` at the separators that start another field error.
fn split_list(list: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    for (i, _) in list.match_indices(", ") {
        let next = &list[i + 2..];
        if i >= start && cause(next.split(", ").next().unwrap_or(next)).is_some() {
            parts.push(&list[start..i]);
            start = i + 2;
        }
    }
    parts.push(&list[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_field_error() {
        let d = details(
            r#"Widget.example.com "m" is invalid: metadata.namespace: Invalid value: "ns": specified namespace is protected"#,
        )
        .unwrap();
        assert_eq!(
            d,
            json!({"name": "m", "group": "example.com", "kind": "Widget",
                   "causes": [{"reason": "FieldValueInvalid", "field": "metadata.namespace",
                               "message": "Invalid value: \"ns\": specified namespace is protected"}]})
        );
    }

    #[test]
    fn several_field_errors_with_commas_inside() {
        let d = details(
            r#"Gadget.example.com "g" is invalid: [spec.nodes.a.steps[0].serviceUrl: Invalid value: "http://a, b": bad, very bad, spec.nodes.b: Required value]"#,
        )
        .unwrap();
        let causes = d["causes"].as_array().unwrap();
        assert_eq!(causes.len(), 2, "{causes:?}");
        assert_eq!(causes[0]["field"], "spec.nodes.a.steps[0].serviceUrl");
        assert_eq!(
            causes[0]["message"],
            "Invalid value: \"http://a, b\": bad, very bad"
        );
        assert_eq!(causes[1]["reason"], "FieldValueRequired");
    }

    #[test]
    fn a_core_kind_has_no_group() {
        let d = details(r#"Pod "p" is invalid: spec: Forbidden: no"#).unwrap();
        assert_eq!(
            (d["kind"].as_str(), d["group"].as_str()),
            (Some("Pod"), Some(""))
        );
    }

    #[test]
    fn other_messages_have_no_details() {
        assert_eq!(details("canary count 3 exceeds maximum of 2"), None);
        assert_eq!(details(r#"X "a" is invalid: something odd"#), None);
    }
}
