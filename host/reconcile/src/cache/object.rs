//! An object as a kind's cache holds it: the JSON text plugins are handed, and the few
//! metadata fields the host reads on every event (keys, label selectors, owner mappings)
//! typed beside it.
//!
//! Kept as text rather than as a `DynamicObject`: a parsed object's value tree costs about
//! four times its JSON (a cached 1 KiB ConfigMap took ~4 KB), and what plugins read is the
//! JSON anyway, which a cached value tree had to be serialised into at every read. The rare
//! reader of the whole object (the applier's primary, an update filter on a field) parses it.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use kube::api::{DynamicObject, TypeMeta};
use serde_json::Value;

#[derive(Debug)]
pub struct CachedObject {
    name: Box<str>,
    namespace: Option<Box<str>>,
    uid: Option<Box<str>>,
    resource_version: Option<Box<str>>,
    labels: BTreeMap<String, String>,
    owner_references: Box<[OwnerReference]>,
    json: Box<str>,
}

impl CachedObject {
    /// `obj` as plugins get it: without `managedFields` (noise, and large), with `apiVersion`
    /// and `kind` (list items come without them).
    pub fn new(mut obj: DynamicObject, types: &TypeMeta) -> serde_json::Result<Self> {
        for_plugins(&mut obj, types);
        let json = serde_json::to_string(&obj)?.into_boxed_str();
        let meta = obj.metadata;
        Ok(Self {
            name: meta.name.unwrap_or_default().into(),
            namespace: meta.namespace.map(Into::into),
            uid: meta.uid.map(Into::into),
            resource_version: meta.resource_version.map(Into::into),
            labels: meta.labels.unwrap_or_default(),
            owner_references: meta.owner_references.unwrap_or_default().into(),
            json,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    pub fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }

    pub fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }

    pub fn labels(&self) -> &BTreeMap<String, String> {
        &self.labels
    }

    pub fn owner_references(&self) -> &[OwnerReference] {
        &self.owner_references
    }

    /// The object as plugins get it.
    pub fn json(&self) -> &str {
        &self.json
    }

    /// The whole object, parsed.
    pub fn to_value(&self) -> serde_json::Result<Value> {
        serde_json::from_str(&self.json)
    }

    /// The whole object, parsed as the applier takes it.
    pub fn to_object(&self) -> serde_json::Result<DynamicObject> {
        serde_json::from_str(&self.json)
    }
}

/// An object as plugins get it, cached or read directly.
pub(super) fn for_plugins(obj: &mut DynamicObject, types: &TypeMeta) {
    obj.managed_fields_mut().clear();
    obj.types = Some(types.clone());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn types() -> TypeMeta {
        TypeMeta {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
        }
    }

    #[test]
    fn holds_the_object_as_plugins_get_it_with_its_keys_typed() {
        let obj: DynamicObject = serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "a", "namespace": "ns", "uid": "u-1", "resourceVersion": "7",
                "labels": {"team": "x"},
                "annotations": {"note": "kept in the text"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "s",
                                     "uid": "u-2", "controller": true}],
                "managedFields": [{"manager": "kubectl", "operation": "Apply"}]
            },
            "data": {"k": "v"}
        }))
        .unwrap();
        let cached = CachedObject::new(obj, &types()).unwrap();
        assert_eq!(cached.name(), "a");
        assert_eq!(cached.namespace(), Some("ns"));
        assert_eq!(cached.uid(), Some("u-1"));
        assert_eq!(cached.resource_version(), Some("7"));
        assert_eq!(cached.labels().get("team").map(String::as_str), Some("x"));
        assert_eq!(cached.owner_references()[0].name, "s");
        let value = cached.to_value().unwrap();
        assert_eq!(value["apiVersion"], "v1");
        assert_eq!(value["kind"], "ConfigMap");
        assert_eq!(value["data"]["k"], "v");
        assert_eq!(value["metadata"]["annotations"]["note"], "kept in the text");
        // As before the compaction: an empty list, not an absent field.
        assert_eq!(value["metadata"]["managedFields"], serde_json::json!([]));
        let back = cached.to_object().unwrap();
        assert_eq!(
            back.annotations().get("note").map(String::as_str),
            Some("kept in the text")
        );
        assert!(back.metadata.managed_fields.unwrap_or_default().is_empty());
    }
}
