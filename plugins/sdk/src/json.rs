//! Path access and edits over raw JSON, with Go's reading of it.
//!
//! Ports of Go controllers and webhooks must read objects the way Go's typed structs do, so
//! these helpers treat a JSON `null` as absent (a nil pointer) and return Go's zero values
//! (`""`) where [`Object`](crate::Object)'s accessors return `Option`:
//!
//! | question | [`Object`](crate::Object) method | this module, over any `&Value` |
//! |---|---|---|
//! | the value at a path (`null` = absent) | `at(path) -> Option<&Value>` | [`at`] `-> Option<&Value>` |
//! | a string at a path | `str_at(path) -> Option<&str>` | [`str_at`] `-> &str` (`""` when absent) |
//! | a label / an annotation | `label(k)`, `annotation(k) -> Option<&str>` | [`label`], [`annotation`] `-> &str` |
//! | being deleted | `is_deleting()` | [`is_deleting`] |
//!
//! Use `Object` when "absent" and "empty" differ for you; use this module when porting Go
//! code that cannot tell them apart. The editing helpers never rebuild a parent: they create
//! missing objects on the way down when writing, and leave absent parents absent when
//! removing, so fields nobody models survive.

use serde_json::{Map, Value};

/// The value at a path of object keys; a JSON `null` counts as absent, as a Go nil would.
pub fn at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .filter(|v| !v.is_null())
}

/// The string at a path, or `""` when absent or not a string (Go's zero value).
pub fn str_at<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    at(value, path).and_then(Value::as_str).unwrap_or_default()
}

/// `metadata.annotations[key]`, `""` when absent.
pub fn annotation<'a>(object: &'a Value, key: &str) -> &'a str {
    str_at(object, &["metadata", "annotations", key])
}

/// `metadata.labels[key]`, `""` when absent.
pub fn label<'a>(object: &'a Value, key: &str) -> &'a str {
    str_at(object, &["metadata", "labels", key])
}

/// Whether `metadata.deletionTimestamp` is set.
pub fn is_deleting(object: &Value) -> bool {
    at(object, &["metadata", "deletionTimestamp"]).is_some()
}

/// `unstructured.NestedFieldNoCopy`: the value at `fields` (none when a step is absent or
/// `null`), or Go's accessor error text when a step is not a map
/// (`.spec.components accessor error: oops is of the type string, expected map[string]interface{}`).
pub fn nested_field<'a>(object: &'a Value, fields: &[&str]) -> Result<Option<&'a Value>, String> {
    let mut value = object;
    for (i, field) in fields.iter().enumerate() {
        if value.is_null() {
            return Ok(None);
        }
        let Some(map) = value.as_object() else {
            return Err(format!(
                ".{} accessor error: {} is of the type {}, expected map[string]interface{{}}",
                fields[..i].join("."),
                crate::go::value_text(value),
                crate::go::type_name(Some(value))
            ));
        };
        match map.get(*field) {
            Some(next) => value = next,
            None => return Ok(None),
        }
    }
    Ok(Some(value))
}

/// The object at a path, creating it (and any parent) when absent or not an object.
pub fn object_mut<'a>(value: &'a mut Value, path: &[&str]) -> &'a mut Map<String, Value> {
    let mut v = value;
    for key in path {
        v = as_object(v).entry(*key).or_insert(Value::Null);
    }
    as_object(v)
}

/// The value as an object, replacing anything else (`null` included) with an empty one.
pub fn as_object(value: &mut Value) -> &mut Map<String, Value> {
    if !value.is_object() {
        *value = Value::Object(Map::new());
    }
    match value {
        Value::Object(map) => map,
        _ => unreachable!("just made an object"),
    }
}

/// The object at a path when every step exists and is an object; never creates anything.
pub fn existing_object_mut<'a>(
    value: &'a mut Value,
    path: &[&str],
) -> Option<&'a mut Map<String, Value>> {
    path.iter()
        .try_fold(value, |v, key| v.get_mut(key))?
        .as_object_mut()
}

/// Removes `metadata.<map>[key]` and drops the map once empty (Go omits empty label and
/// annotation maps, so an emptied map must not show up as `{}` in a patch).
pub fn remove_metadata_entry(object: &mut Value, map: &str, key: &str) {
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
pub fn set_metadata_entry(object: &mut Value, map: &str, key: &str, value: &str) {
    object_mut(object, &["metadata", map]).insert(key.into(), value.into());
}

/// Stores `value` under `key`, or removes the key when there is nothing to store (Go's
/// `omitempty` for nil maps and slices).
pub fn set_or_remove(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    match value {
        Some(value) => {
            map.insert(key.into(), value);
        }
        None => {
            map.remove(key);
        }
    }
}

/// Applies an RFC 7386 JSON merge patch to `target`: objects merge key by key, `null`
/// removes a key, anything else replaces. (What the host does with an outcome's
/// `primary-metadata`.)
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    let target = as_object(target);
    for (key, value) in patch {
        if value.is_null() {
            target.remove(key);
        } else {
            merge_patch(target.entry(key.as_str()).or_insert(Value::Null), value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        assert_eq!(label(&v, "a"), "1");
        remove_metadata_entry(&mut v, "labels", "a");
        remove_metadata_entry(&mut v, "labels", "a");
        assert_eq!(
            v,
            json!({"metadata": {"annotations": {"k": "v"}, "name": "n"}})
        );
        let mut bare = json!({});
        remove_metadata_entry(&mut bare, "labels", "a");
        assert_eq!(bare, json!({}));
        assert!(!is_deleting(&bare));
        assert!(is_deleting(
            &json!({"metadata": {"deletionTimestamp": "t"}})
        ));
        assert!(!is_deleting(
            &json!({"metadata": {"deletionTimestamp": null}})
        ));
    }

    #[test]
    fn set_or_remove_follows_omitempty() {
        let mut m = Map::new();
        set_or_remove(&mut m, "k", Some(json!(1)));
        assert_eq!(m.get("k"), Some(&json!(1)));
        set_or_remove(&mut m, "k", None);
        assert!(m.is_empty());
    }

    #[test]
    fn nested_fields_the_go_way() {
        let v = json!({"spec": {"components": "oops", "n": null, "x": {"y": 1}}});
        assert_eq!(nested_field(&v, &["spec", "x", "y"]), Ok(Some(&json!(1))));
        assert_eq!(nested_field(&v, &["spec", "missing", "y"]), Ok(None));
        assert_eq!(nested_field(&v, &["spec", "n", "y"]), Ok(None));
        assert_eq!(
            nested_field(&v, &["spec", "components", "modelregistry"]),
            Err(".spec.components accessor error: oops is of the type string, expected map[string]interface{}".into())
        );
    }

    #[test]
    fn merge_patches() {
        let mut v = json!({"metadata": {"labels": {"a": "1", "b": "2"}, "finalizers": ["x", "y"]}});
        merge_patch(
            &mut v,
            &json!({"metadata": {"labels": {"a": null, "c": "3"}, "finalizers": ["y"]}}),
        );
        assert_eq!(
            v,
            json!({"metadata": {"labels": {"b": "2", "c": "3"}, "finalizers": ["y"]}})
        );
    }
}
