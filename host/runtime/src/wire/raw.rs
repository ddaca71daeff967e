//! JSON text as it arrived, kept in the buffer it arrived in.

use std::collections::BTreeMap;

use hyper::body::Bytes;
use serde_json::Value;
use serde_json::value::RawValue;

/// JSON text exactly as it arrived (an AdmissionReview's `request.object`), sharing the buffer
/// of the request body it came in: taking it out of the body copies nothing, cloning it copies
/// nothing, and it is parsed only where the host needs a value (an object selector's labels,
/// the patch a mutation implies). The plugin is handed the text itself.
#[derive(Clone, PartialEq, Eq)]
pub struct RawJson(Bytes);

impl RawJson {
    /// The text of `raw`, a value borrowed from `body` while parsing it: a slice of `body`'s
    /// buffer (a copy only if `raw` does not lie inside `body`).
    pub fn within(body: &Bytes, raw: &RawValue) -> Self {
        let text = raw.get().as_bytes();
        let buffer = body.as_ptr_range();
        let span = text.as_ptr_range();
        if buffer.start <= span.start && span.end <= buffer.end {
            Self(body.slice_ref(text))
        } else {
            Self(Bytes::copy_from_slice(text))
        }
    }

    /// `{}`.
    pub fn empty_object() -> Self {
        Self(Bytes::from_static(b"{}"))
    }

    /// `value` written as JSON text.
    pub fn from_value(value: &Value) -> Self {
        Self(Bytes::from(value.to_string().into_bytes()))
    }

    pub fn as_str(&self) -> &str {
        // Built from a `&RawValue` (a `str`) or from serde_json's output only.
        std::str::from_utf8(&self.0).expect("JSON text is UTF-8")
    }

    /// The text's bytes (a view of the buffer it arrived in).
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The text parsed.
    pub fn to_value(&self) -> serde_json::Result<Value> {
        serde_json::from_slice(&self.0)
    }

    /// `metadata.labels` of the object the text holds, parsing its `metadata` only; `None` when
    /// it is not an object or has no such field (as `Value::pointer("/metadata/labels")`).
    pub fn metadata_labels(&self) -> Option<Value> {
        let object: BTreeMap<String, &RawValue> = serde_json::from_slice(&self.0).ok()?;
        let metadata: Value = serde_json::from_str(object.get("metadata")?.get()).ok()?;
        metadata.get("labels").cloned()
    }
}

impl From<Value> for RawJson {
    fn from(value: Value) -> Self {
        Self::from_value(&value)
    }
}

impl From<&Value> for RawJson {
    fn from(value: &Value) -> Self {
        Self::from_value(value)
    }
}

impl std::fmt::Debug for RawJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const SHOWN: usize = 256;
        let text = self.as_str();
        match text.char_indices().nth(SHOWN) {
            None => write!(f, "RawJson({text})"),
            Some((end, _)) => write!(f, "RawJson({}… {} bytes)", &text[..end], text.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_value_inside_a_body_is_a_view_of_it_and_parses_on_demand() {
        let body = Bytes::from_static(br#"{"object": {"spec": {"b": 1, "a": 2}, "kind": "Pod"}}"#);
        let outer: BTreeMap<String, &RawValue> = serde_json::from_slice(&body).unwrap();
        let raw = RawJson::within(&body, outer["object"]);
        // The text as written (order, spaces), in the body's own buffer.
        assert_eq!(raw.as_str(), r#"{"spec": {"b": 1, "a": 2}, "kind": "Pod"}"#);
        assert!(body.as_ptr_range().contains(&raw.as_bytes().as_ptr()));
        assert_eq!(
            raw.to_value().unwrap(),
            json!({"kind": "Pod", "spec": {"a": 2, "b": 1}})
        );
        // Elsewhere, it is copied.
        let other: &RawValue = serde_json::from_str("[1]").unwrap();
        assert_eq!(RawJson::within(&body, other).as_str(), "[1]");
    }

    #[test]
    fn labels_are_read_as_a_pointer_would() {
        let labels = |v: Value| RawJson::from(v).metadata_labels();
        assert_eq!(
            labels(json!({"metadata": {"labels": {"a": "b"}}, "spec": {}})),
            Some(json!({"a": "b"}))
        );
        assert_eq!(
            labels(json!({"metadata": {"labels": null}})),
            Some(Value::Null)
        );
        assert_eq!(labels(json!({"metadata": {"name": "x"}})), None);
        assert_eq!(labels(json!({"metadata": "x"})), None);
        assert_eq!(labels(json!({"spec": {}})), None);
        assert_eq!(labels(json!("not an object")), None);
        // A repeated key counts as its last occurrence, as when parsed whole.
        let body = Bytes::from_static(
            br#"{"metadata": {"labels": {"a": "1"}}, "metadata": {"labels": {"a": "2"}}}"#,
        );
        let raw: &RawValue = serde_json::from_slice(&body).unwrap();
        let repeated = RawJson::within(&body, raw);
        assert_eq!(
            repeated.metadata_labels(),
            repeated
                .to_value()
                .unwrap()
                .pointer("/metadata/labels")
                .cloned()
        );
    }
}
