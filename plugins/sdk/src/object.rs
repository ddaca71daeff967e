//! [`Object`]: accessors over a Kubernetes object held as JSON.
//!
//! The accessors answer "is there a value?" (`Option`), with a JSON `null` counting as absent
//! as the API server treats it. For Go's zero-value reading of raw JSON (`""` when absent)
//! see [`json`](crate::json), which documents how the two vocabularies line up.

use std::collections::BTreeMap;
use std::ops::{Deref, DerefMut};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::{Error, Gvk, ObjectKey, RequestKey};

/// A Kubernetes object as JSON, with accessors for the common metadata.
///
/// It dereferences to [`serde_json::Value`] for everything else, serializes transparently and
/// keeps every field it is given (an object handed back to the host must keep unknown fields).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Object(pub Value);

impl Deref for Object {
    type Target = Value;
    fn deref(&self) -> &Value {
        &self.0
    }
}

impl DerefMut for Object {
    fn deref_mut(&mut self) -> &mut Value {
        &mut self.0
    }
}

impl From<Value> for Object {
    fn from(value: Value) -> Self {
        Object(value)
    }
}

impl From<Object> for Value {
    fn from(object: Object) -> Self {
        object.0
    }
}

impl Object {
    /// Parses an object from JSON; anything but a JSON object is [`Error::Invalid`].
    pub fn parse(json: &str) -> Result<Object, Error> {
        match serde_json::from_str(json) {
            Ok(value @ Value::Object(_)) => Ok(Object(value)),
            Ok(other) => Err(Error::Invalid(format!(
                "expected a Kubernetes object (a JSON object), got {}",
                json_type(&other)
            ))),
            Err(e) => Err(Error::Invalid(format!("invalid object JSON: {e}"))),
        }
    }

    /// A new object with `apiVersion`, `kind`, `metadata.name` and (when some)
    /// `metadata.namespace`.
    pub fn new(gvk: &Gvk, namespace: Option<&str>, name: &str) -> Object {
        let mut metadata = Map::new();
        metadata.insert("name".into(), name.into());
        if let Some(namespace) = namespace {
            metadata.insert("namespace".into(), namespace.into());
        }
        Object(json!({ "apiVersion": gvk.api_version(), "kind": gvk.kind, "metadata": metadata }))
    }

    /// Sets a top-level field (`data`, `spec`, ...), builder style.
    pub fn with(mut self, field: &str, value: impl Into<Value>) -> Self {
        self.set(&[field], value);
        self
    }

    /// Sets a label, builder style.
    pub fn with_label(mut self, key: &str, value: &str) -> Self {
        self.set_label(key, value);
        self
    }

    /// Sets an annotation, builder style.
    pub fn with_annotation(mut self, key: &str, value: &str) -> Self {
        self.set_annotation(key, value);
        self
    }

    /// Appends an owner reference (see [`controller_owner_ref`]), builder style.
    pub fn with_owner_ref(mut self, owner_ref: Value) -> Self {
        match self.ensure_path(&["metadata", "ownerReferences"]) {
            Value::Array(refs) => refs.push(owner_ref),
            slot => *slot = Value::Array(vec![owner_ref]),
        }
        self
    }

    /// The JSON value.
    pub fn as_value(&self) -> &Value {
        &self.0
    }

    /// The JSON value, owned.
    pub fn into_value(self) -> Value {
        self.0
    }

    /// The object as JSON text.
    pub fn to_json(&self) -> String {
        self.0.to_string()
    }

    /// A string at a path of object keys (`&["data", "behaviour"]`); none when absent or not
    /// a string.
    pub fn str_at(&self, path: &[&str]) -> Option<&str> {
        self.at(path).and_then(Value::as_str)
    }

    /// The value at a path of object keys; a `null` counts as absent.
    pub fn at(&self, path: &[&str]) -> Option<&Value> {
        crate::json::at(&self.0, path)
    }

    /// The array at a path, empty when absent or not an array.
    pub fn array_at(&self, path: &[&str]) -> &[Value] {
        self.at(path)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// Sets the value at a path of object keys, creating (or replacing non-object) parents.
    pub fn set(&mut self, path: &[&str], value: impl Into<Value>) {
        *self.ensure_path(path) = value.into();
    }

    /// Removes the value at a path of object keys, returning it.
    pub fn remove(&mut self, path: &[&str]) -> Option<Value> {
        let (last, parents) = path.split_last()?;
        let mut v = &mut self.0;
        for key in parents {
            v = v.get_mut(key)?;
        }
        v.as_object_mut()?.remove(*last)
    }

    fn ensure_path(&mut self, path: &[&str]) -> &mut Value {
        let mut v = &mut self.0;
        for key in path {
            if !v.is_object() {
                *v = Value::Object(Map::new());
            }
            v = v
                .as_object_mut()
                .expect("just made an object")
                .entry(*key)
                .or_insert(Value::Null);
        }
        v
    }

    /// `apiVersion`, empty when unset.
    pub fn api_version(&self) -> &str {
        self.str_at(&["apiVersion"]).unwrap_or_default()
    }

    /// `kind`, empty when unset.
    pub fn kind(&self) -> &str {
        self.str_at(&["kind"]).unwrap_or_default()
    }

    /// The type, from `apiVersion` and `kind`.
    pub fn gvk(&self) -> Gvk {
        Gvk::from_api_version(self.api_version(), self.kind())
    }

    /// `metadata.name`; empty when unset (e.g. an admission CREATE using `generateName`).
    pub fn name(&self) -> &str {
        self.str_at(&["metadata", "name"]).unwrap_or_default()
    }

    /// `metadata.namespace`; none for cluster-scoped objects.
    pub fn namespace(&self) -> Option<&str> {
        self.str_at(&["metadata", "namespace"])
            .filter(|ns| !ns.is_empty())
    }

    /// `metadata.uid`.
    pub fn uid(&self) -> Option<&str> {
        self.str_at(&["metadata", "uid"])
    }

    /// `metadata.generation`.
    pub fn generation(&self) -> Option<i64> {
        self.at(&["metadata", "generation"]).and_then(Value::as_i64)
    }

    /// `metadata.resourceVersion`.
    pub fn resource_version(&self) -> Option<&str> {
        self.str_at(&["metadata", "resourceVersion"])
    }

    /// The object's key.
    pub fn key(&self) -> ObjectKey {
        crate::object_key(&self.gvk(), self.namespace(), self.name())
    }

    /// The object's namespace/name as a reconcile request key.
    pub fn request_key(&self) -> RequestKey {
        crate::request_key(self.namespace(), self.name())
    }

    /// `metadata.labels` (string values only).
    pub fn labels(&self) -> BTreeMap<String, String> {
        self.string_map(&["metadata", "labels"])
    }

    /// One label.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.str_at(&["metadata", "labels", key])
    }

    /// Sets a label.
    pub fn set_label(&mut self, key: &str, value: &str) {
        self.set(&["metadata", "labels", key], value);
    }

    /// Removes a label, returning its value.
    pub fn remove_label(&mut self, key: &str) -> Option<String> {
        self.remove(&["metadata", "labels", key])
            .and_then(into_string)
    }

    /// `metadata.annotations` (string values only).
    pub fn annotations(&self) -> BTreeMap<String, String> {
        self.string_map(&["metadata", "annotations"])
    }

    /// One annotation.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.str_at(&["metadata", "annotations", key])
    }

    /// Sets an annotation.
    pub fn set_annotation(&mut self, key: &str, value: &str) {
        self.set(&["metadata", "annotations", key], value);
    }

    /// Removes an annotation, returning its value.
    pub fn remove_annotation(&mut self, key: &str) -> Option<String> {
        self.remove(&["metadata", "annotations", key])
            .and_then(into_string)
    }

    /// `metadata.deletionTimestamp`.
    pub fn deletion_timestamp(&self) -> Option<&str> {
        self.str_at(&["metadata", "deletionTimestamp"])
    }

    /// Whether the object is being deleted (`metadata.deletionTimestamp` is set).
    pub fn is_deleting(&self) -> bool {
        self.deletion_timestamp().is_some()
    }

    /// `metadata.finalizers`.
    pub fn finalizers(&self) -> Vec<&str> {
        self.at(&["metadata", "finalizers"])
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// Whether `metadata.finalizers` contains `finalizer`.
    pub fn has_finalizer(&self, finalizer: &str) -> bool {
        self.finalizers().contains(&finalizer)
    }

    /// `metadata.ownerReferences`.
    pub fn owner_references(&self) -> &[Value] {
        self.array_at(&["metadata", "ownerReferences"])
    }

    /// The owner reference with `controller: true`, if any.
    pub fn controller_ref(&self) -> Option<&Value> {
        self.owner_references()
            .iter()
            .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
    }

    /// Whether `owner` (by uid) is among the owner references.
    pub fn is_owned_by(&self, owner: &Object) -> bool {
        let Some(uid) = owner.uid() else { return false };
        self.owner_references()
            .iter()
            .any(|r| r.get("uid").and_then(Value::as_str) == Some(uid))
    }

    fn string_map(&self, path: &[&str]) -> BTreeMap<String, String> {
        self.at(path)
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn into_string(v: Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s),
        _ => None,
    }
}

pub(crate) fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// An owner reference to `primary` with `controller: true` and `blockOwnerDeletion: true`
/// (what [`Ownership::Controller`](crate::Ownership::Controller) makes the host add).
///
/// [`Error::Invalid`] when `primary` lacks `apiVersion`, `kind`, `metadata.name` or
/// `metadata.uid`.
pub fn controller_owner_ref(primary: &Object) -> Result<Value, Error> {
    let mut r = owner_ref(primary)?;
    r["controller"] = true.into();
    r["blockOwnerDeletion"] = true.into();
    Ok(r)
}

/// A plain owner reference to `owner` (no `controller`, no `blockOwnerDeletion`).
pub fn owner_ref(owner: &Object) -> Result<Value, Error> {
    let missing = |field: &str| {
        Error::Invalid(format!(
            "cannot reference {} {:?} as an owner: it has no {field}",
            owner.kind(),
            owner.name()
        ))
    };
    let api_version = Some(owner.api_version()).filter(|s| !s.is_empty());
    let kind = Some(owner.kind()).filter(|s| !s.is_empty());
    let name = Some(owner.name()).filter(|s| !s.is_empty());
    Ok(json!({
        "apiVersion": api_version.ok_or_else(|| missing("apiVersion"))?,
        "kind": kind.ok_or_else(|| missing("kind"))?,
        "name": name.ok_or_else(|| missing("metadata.name"))?,
        "uid": owner.uid().ok_or_else(|| missing("metadata.uid"))?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{core_gvk, gvk};

    fn deployment() -> Object {
        Object(json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "d", "namespace": "ns", "uid": "u-1", "generation": 3,
                "labels": {"app": "x"},
                "annotations": {"a": "b"},
                "finalizers": ["x.io/f"],
                "deletionTimestamp": "2024-01-01T00:00:00Z",
            },
            "spec": {"replicas": 1},
            "unknown": {"kept": true},
        }))
    }

    #[test]
    fn accessors() {
        let d = deployment();
        assert_eq!(d.gvk(), gvk("apps", "v1", "Deployment"));
        assert_eq!(
            (d.name(), d.namespace(), d.uid()),
            ("d", Some("ns"), Some("u-1"))
        );
        assert_eq!(d.generation(), Some(3));
        assert_eq!(d.label("app"), Some("x"));
        assert_eq!(d.annotations().get("a").map(String::as_str), Some("b"));
        assert!(d.is_deleting());
        assert!(d.has_finalizer("x.io/f") && !d.has_finalizer("y"));
        assert_eq!(d.key().gvk.kind, "Deployment");
        assert_eq!(d.at(&["spec", "replicas"]), Some(&json!(1)));
        assert_eq!(d.owner_references(), &[] as &[Value]);
        let mut n = d.clone();
        n.set(&["spec", "replicas"], Value::Null);
        assert_eq!(n.at(&["spec", "replicas"]), None, "null is absent");
        assert_eq!(n.array_at(&["metadata", "finalizers"]), &[json!("x.io/f")]);
    }

    #[test]
    fn mutation_keeps_unknown_fields() {
        let mut d = deployment();
        d.set_label("new", "1");
        d.set_annotation("z", "y");
        assert_eq!(d.remove_label("app"), Some("x".into()));
        assert_eq!(d.label("new"), Some("1"));
        assert_eq!(d["unknown"], json!({"kept": true}));
        let mut bare = Object::new(&core_gvk("ConfigMap"), None, "c");
        assert_eq!(bare.labels(), BTreeMap::new());
        bare.set_label("k", "v");
        assert_eq!(
            bare.0,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"k": "v"}}})
        );
    }

    #[test]
    fn owner_refs() {
        let d = deployment();
        let r = controller_owner_ref(&d).unwrap();
        assert_eq!(
            r,
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "uid": "u-1", "controller": true, "blockOwnerDeletion": true})
        );
        let child = Object::new(&core_gvk("ConfigMap"), Some("ns"), "c").with_owner_ref(r);
        assert!(child.is_owned_by(&d));
        assert!(child.controller_ref().is_some());
        let no_uid = Object::new(&core_gvk("ConfigMap"), Some("ns"), "c");
        assert!(
            matches!(controller_owner_ref(&no_uid), Err(Error::Invalid(m)) if m.contains("metadata.uid"))
        );
    }

    #[test]
    fn parse() {
        assert!(Object::parse(r#"{"kind": "Pod"}"#).is_ok());
        assert!(matches!(Object::parse("[]"), Err(Error::Invalid(m)) if m.contains("an array")));
        assert!(matches!(Object::parse("{"), Err(Error::Invalid(_))));
    }
}
