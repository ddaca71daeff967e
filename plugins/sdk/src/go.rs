//! Go's spellings, for ports of Go controllers whose error texts and parsing must match
//! byte for byte. The Go-compatible functions themselves live in `odh-go-compat` (shared with
//! the host) and are re-exported here: `strconv.ParseBool`, `%q`, `net/url`'s escaping and
//! `net/http`'s status lines. What is the SDK's own: [`parse_int`] as an [`Error`], and `%v` and
//! `%T` of decoded JSON.

use serde_json::Value;

use crate::Error;

pub use odh_go_compat::http::status_line;
pub use odh_go_compat::strconv::{parse_bool, quote};
pub use odh_go_compat::url::{path_escape, query_escape, query_unescape};

/// Go's `strconv.ParseInt(value, 10, bits)` for `bits` of 8, 16, 32 or 64, with Go's error
/// text as an [`Error::Transient`] (upstream controllers return it as a reconcile error):
/// `strconv.ParseInt: parsing "abc": invalid syntax` or `... value out of range`.
pub fn parse_int(value: &str, bits: u32) -> Result<i64, Error> {
    odh_go_compat::strconv::parse_int(value, bits).map_err(Error::Transient)
}

/// The Go type name (`%T`) a value has after decoding into `interface{}`; an absent value is
/// `<nil>` like a JSON `null`.
pub fn type_name(value: Option<&Value>) -> &'static str {
    match value {
        None | Some(Value::Null) => "<nil>",
        Some(Value::Bool(_)) => "bool",
        Some(Value::Number(n)) if n.is_i64() => "int64",
        Some(Value::Number(_)) => "float64",
        Some(Value::String(_)) => "string",
        Some(Value::Array(_)) => "[]interface {}",
        Some(Value::Object(_)) => "map[string]interface {}",
    }
}

/// A value as Go's `%v` prints it after decoding into `interface{}` (`map[a:1 b:[x y]]`).
pub fn value_text(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(value_text).collect();
            format!("[{}]", items.join(" "))
        }
        Value::Object(map) => {
            let entries: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{k}:{}", value_text(v)))
                .collect();
            format!("map[{}]", entries.join(" "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parse_int_errors_are_transient() {
        assert_eq!(parse_int("8888", 32), Ok(8888));
        assert_eq!(
            parse_int("abc", 32),
            Err(Error::Transient(
                "strconv.ParseInt: parsing \"abc\": invalid syntax".into()
            ))
        );
        assert_eq!(
            parse_int("2147483648", 32).unwrap_err().message(),
            "strconv.ParseInt: parsing \"2147483648\": value out of range"
        );
    }

    #[test]
    fn go_formatting() {
        assert_eq!(quote("plain"), "\"plain\"");
        assert_eq!(type_name(None), "<nil>");
        assert_eq!(type_name(Some(&json!(true))), "bool");
        assert_eq!(type_name(Some(&json!(1.5))), "float64");
        assert_eq!(type_name(Some(&json!(1))), "int64");
        assert_eq!(type_name(Some(&json!("s"))), "string");
        assert_eq!(type_name(Some(&json!({}))), "map[string]interface {}");
        assert_eq!(type_name(Some(&json!([]))), "[]interface {}");
        assert_eq!(
            value_text(&json!({"a": 1, "b": ["x", null]})),
            "map[a:1 b:[x <nil>]]"
        );
    }
}
