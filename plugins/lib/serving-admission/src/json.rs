//! Small helpers over raw JSON objects.
//!
//! The webhooks edit objects they only partly understand, so these helpers never rebuild a
//! parent: they create missing objects on the way down when writing, and leave absent parents
//! absent when removing.

use odh_plugin_sdk::Value;
use odh_plugin_sdk::serde_json::Map;

/// The value at a path of object keys; a JSON `null` counts as absent, as a Go nil pointer would.
pub(crate) fn at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .filter(|v| !v.is_null())
}

/// The string at a path, or `""` when absent or not a string (Go's zero value).
pub(crate) fn str_at<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    at(value, path).and_then(Value::as_str).unwrap_or_default()
}

/// `metadata.annotations[key]`, `""` when absent.
pub(crate) fn annotation<'a>(object: &'a Value, key: &str) -> &'a str {
    str_at(object, &["metadata", "annotations", key])
}

/// `metadata.labels[key]`, `""` when absent.
pub(crate) fn label<'a>(object: &'a Value, key: &str) -> &'a str {
    str_at(object, &["metadata", "labels", key])
}

/// Whether `metadata.deletionTimestamp` is set: both webhooks leave objects being deleted alone.
pub fn is_deleting(object: &Value) -> bool {
    at(object, &["metadata", "deletionTimestamp"]).is_some()
}

/// The object at a path, creating it (and any parent) when absent or not an object.
pub(crate) fn object_mut<'a>(value: &'a mut Value, path: &[&str]) -> &'a mut Map<String, Value> {
    let mut v = value;
    for key in path {
        v = as_object(v).entry(*key).or_insert(Value::Null);
    }
    as_object(v)
}

/// The value as an object, replacing anything else (null included) with an empty one.
pub(crate) fn as_object(value: &mut Value) -> &mut Map<String, Value> {
    if !value.is_object() {
        *value = Value::Object(Map::new());
    }
    match value {
        Value::Object(map) => map,
        _ => unreachable!("just made an object"),
    }
}

/// The object at a path when every step exists and is an object; never creates anything.
pub(crate) fn existing_object_mut<'a>(
    value: &'a mut Value,
    path: &[&str],
) -> Option<&'a mut Map<String, Value>> {
    path.iter()
        .try_fold(value, |v, key| v.get_mut(key))?
        .as_object_mut()
}

/// Removes `metadata.<map>[key]` and drops the map once empty (Go omits empty label and
/// annotation maps, so an emptied map must not show up as `{}` in the patch).
pub(crate) fn remove_metadata_entry(object: &mut Value, map: &str, key: &str) {
    let Some(metadata) = existing_object_mut(object, &["metadata"]) else {
        return;
    };
    let Some(entries) = metadata.get_mut(map).and_then(Value::as_object_mut) else {
        return;
    };
    if entries.remove(key).is_some() && entries.is_empty() {
        metadata.remove(map);
    }
}

/// Sets `metadata.<map>[key]`, creating the map when needed.
pub(crate) fn set_metadata_entry(object: &mut Value, map: &str, key: &str, value: &str) {
    object_mut(object, &["metadata", map]).insert(key.into(), value.into());
}

/// Stores `value` under `key`, or removes the key when there is nothing to store (Go's
/// `omitempty` for nil maps and slices).
pub(crate) fn set_or_remove(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    match value {
        Some(value) => {
            map.insert(key.into(), value);
        }
        None => {
            map.remove(key);
        }
    }
}

/// A string quoted as Go's `%q` prints it, so error texts match the Go webhook byte for byte.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The Go type name (`%T`) a value has after decoding into `interface{}`; an absent value is
/// `<nil>` like a JSON `null`.
pub(crate) fn go_type_name(value: Option<&Value>) -> &'static str {
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

#[cfg(test)]
mod tests {
    use super::*;
    use odh_plugin_sdk::json;

    #[test]
    fn paths() {
        let mut v = json!({"a": {"b": "x", "n": null}, "s": 1});
        assert_eq!(str_at(&v, &["a", "b"]), "x");
        assert_eq!(at(&v, &["a", "n"]), None);
        assert_eq!(str_at(&v, &["s"]), "");
        object_mut(&mut v, &["s", "t"]).insert("u".into(), json!(1));
        assert_eq!(v["s"], json!({"t": {"u": 1}}));
        assert!(existing_object_mut(&mut v, &["missing", "x"]).is_none());
        assert_eq!(v.get("missing"), None);
    }

    #[test]
    fn metadata_entries() {
        let mut v = json!({"metadata": {"labels": {"a": "1"}, "name": "n"}});
        set_metadata_entry(&mut v, "annotations", "k", "v");
        assert_eq!(annotation(&v, "k"), "v");
        remove_metadata_entry(&mut v, "labels", "a");
        remove_metadata_entry(&mut v, "labels", "a");
        assert_eq!(
            v,
            json!({"metadata": {"annotations": {"k": "v"}, "name": "n"}})
        );
        let mut bare = json!({});
        remove_metadata_entry(&mut bare, "labels", "a");
        assert_eq!(bare, json!({}));
    }

    #[test]
    fn go_formatting() {
        assert_eq!(go_quote("plain"), "\"plain\"");
        assert_eq!(go_quote("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\x01\"");
        assert_eq!(go_quote("é"), "\"é\"");
        assert_eq!(go_type_name(None), "<nil>");
        assert_eq!(go_type_name(Some(&json!(true))), "bool");
        assert_eq!(go_type_name(Some(&json!({}))), "map[string]interface {}");
        assert_eq!(go_type_name(Some(&json!([]))), "[]interface {}");
    }
}
