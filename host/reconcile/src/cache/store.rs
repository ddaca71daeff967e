//! The objects of one kind's cache, by namespace and name: looked up with borrowed names (no
//! key built per read), keyed without the kind (the cache is of one kind already).

use std::collections::HashMap;
use std::sync::Arc;

use super::object::CachedObject;

type ByName = HashMap<Box<str>, Arc<CachedObject>>;

/// A kind's objects; a cluster-scoped kind's are under the namespace "".
#[derive(Default)]
pub(super) struct Objects {
    by_namespace: HashMap<Box<str>, ByName>,
}

impl Objects {
    pub(super) fn get(&self, namespace: Option<&str>, name: &str) -> Option<Arc<CachedObject>> {
        self.by_namespace
            .get(namespace.unwrap_or_default())?
            .get(name)
            .cloned()
    }

    /// Holds `obj`; what was held under its name before.
    pub(super) fn insert(&mut self, obj: Arc<CachedObject>) -> Option<Arc<CachedObject>> {
        let namespace = obj.namespace().unwrap_or_default();
        let names = match self.by_namespace.get_mut(namespace) {
            Some(names) => names,
            None => self.by_namespace.entry(namespace.into()).or_default(),
        };
        names.insert(obj.name().into(), obj)
    }

    pub(super) fn remove(&mut self, obj: &CachedObject) -> Option<Arc<CachedObject>> {
        let namespace = obj.namespace().unwrap_or_default();
        let names = self.by_namespace.get_mut(namespace)?;
        let gone = names.remove(obj.name());
        if names.is_empty() {
            self.by_namespace.remove(namespace);
        }
        gone
    }

    pub(super) fn all(&self) -> Vec<Arc<CachedObject>> {
        self.by_namespace
            .values()
            .flat_map(|names| names.values().cloned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::{DynamicObject, TypeMeta};

    fn object(namespace: Option<&str>, name: &str, rv: &str) -> Arc<CachedObject> {
        let mut meta = serde_json::json!({"name": name, "resourceVersion": rv});
        if let Some(ns) = namespace {
            meta["namespace"] = ns.into();
        }
        let obj: DynamicObject =
            serde_json::from_value(serde_json::json!({"metadata": meta})).expect("an object");
        let types = TypeMeta {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
        };
        Arc::new(CachedObject::new(obj, &types).expect("compacts"))
    }

    #[test]
    fn objects_are_found_by_namespace_and_name_and_replaced_in_place() {
        let mut objects = Objects::default();
        assert!(objects.insert(object(Some("a"), "x", "1")).is_none());
        assert!(objects.insert(object(Some("b"), "x", "2")).is_none());
        assert!(objects.insert(object(None, "x", "3")).is_none());
        let old = objects
            .insert(object(Some("a"), "x", "4"))
            .expect("held before");
        assert_eq!(old.resource_version(), Some("1"));
        let rv = |ns, name| {
            objects
                .get(ns, name)
                .and_then(|o| o.resource_version().map(str::to_owned))
        };
        assert_eq!(rv(Some("a"), "x").as_deref(), Some("4"));
        assert_eq!(rv(Some("b"), "x").as_deref(), Some("2"));
        assert_eq!(rv(None, "x").as_deref(), Some("3"));
        assert_eq!(rv(Some("c"), "x"), None);
        assert_eq!(objects.all().len(), 3);

        let gone = objects.remove(&object(Some("b"), "x", "5")).expect("held");
        assert_eq!(gone.resource_version(), Some("2"));
        assert!(objects.get(Some("b"), "x").is_none());
        assert!(objects.remove(&object(Some("b"), "x", "5")).is_none());
        assert_eq!(objects.all().len(), 2);
    }
}
