//! What a plugin's `cluster.get/list` reads from: the host's caches in the controller, files
//! in `plugin eval`. Objects are handed over as JSON text.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::gvk::Gvk;
use odh_label_selector::LabelSelector;

/// A read-only view of cluster state. Reads are complete: a view that holds only part of a
/// kind (a label-filtered cache) answers the rest from the source. `within` bounds a read that
/// has to leave the process.
pub trait ClusterView: Send + Sync {
    /// The object as JSON, or `None` when absent.
    fn get(
        &self,
        gvk: &Gvk,
        namespace: Option<&str>,
        name: &str,
        within: Duration,
    ) -> anyhow::Result<Option<String>>;

    /// The object as JSON from what the view holds in memory, never asking the API server:
    /// `None` when it does not hold that kind (a read would leave the process). For what must
    /// not wait on the network, e.g. routing an admission review.
    fn get_held(
        &self,
        _gvk: &Gvk,
        _namespace: Option<&str>,
        _name: &str,
    ) -> Option<Option<String>> {
        None
    }

    /// Objects of a kind as JSON, in `namespace` or everywhere, matching `selector`.
    fn list(
        &self,
        gvk: &Gvk,
        namespace: Option<&str>,
        selector: &LabelSelector,
        within: Duration,
    ) -> anyhow::Result<Vec<String>>;
}

/// An empty cluster.
pub struct NoCluster;

impl ClusterView for NoCluster {
    fn get(
        &self,
        _: &Gvk,
        _: Option<&str>,
        _: &str,
        _: Duration,
    ) -> anyhow::Result<Option<String>> {
        Ok(None)
    }

    fn list(
        &self,
        _: &Gvk,
        _: Option<&str>,
        _: &LabelSelector,
        _: Duration,
    ) -> anyhow::Result<Vec<String>> {
        Ok(Vec::new())
    }
}

type Key = (Gvk, Option<String>, String);

/// Objects held in memory, e.g. loaded from `plugin eval --state` files.
#[derive(Default)]
pub struct MemoryCluster {
    objects: BTreeMap<Key, Arc<Value>>,
}

impl MemoryCluster {
    /// Adds (or replaces) an object; it needs `apiVersion`, `kind` and `metadata.name`.
    pub fn insert(&mut self, obj: Value) -> anyhow::Result<()> {
        let gvk = Gvk::of_object(&obj)
            .ok_or_else(|| anyhow::anyhow!("object without apiVersion/kind"))?;
        let meta = obj.get("metadata");
        let name = meta
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .ok_or_else(|| anyhow::anyhow!("{gvk} object without metadata.name"))?
            .to_string();
        let namespace = meta
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .map(str::to_string);
        self.objects.insert((gvk, namespace, name), Arc::new(obj));
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
}

impl ClusterView for MemoryCluster {
    fn get(
        &self,
        gvk: &Gvk,
        namespace: Option<&str>,
        name: &str,
        _: Duration,
    ) -> anyhow::Result<Option<String>> {
        let key = (gvk.clone(), namespace.map(str::to_string), name.to_string());
        Ok(self.objects.get(&key).map(|o| o.to_string()))
    }

    fn get_held(&self, gvk: &Gvk, namespace: Option<&str>, name: &str) -> Option<Option<String>> {
        self.get(gvk, namespace, name, Duration::ZERO).ok()
    }

    fn list(
        &self,
        gvk: &Gvk,
        namespace: Option<&str>,
        selector: &LabelSelector,
        _: Duration,
    ) -> anyhow::Result<Vec<String>> {
        Ok(self
            .objects
            .iter()
            .filter(|((g, ns, _), _)| {
                g == gvk && (namespace.is_none() || ns.as_deref() == namespace)
            })
            .filter(|(_, o)| selector.matches_json(o.get("metadata").and_then(|m| m.get("labels"))))
            .map(|(_, o)| o.to_string())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn memory_cluster_gets_and_lists_by_namespace_and_labels() {
        let mut c = MemoryCluster::default();
        let cm = Gvk::new("", "v1", "ConfigMap");
        for (ns, name, label) in [("a", "one", "x"), ("a", "two", "y"), ("b", "one", "x")] {
            c.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": ns, "labels": {"l": label}}}))
                .unwrap();
        }
        let t = Duration::from_secs(1);
        assert!(c.get(&cm, Some("a"), "one", t).unwrap().is_some());
        assert!(c.get(&cm, Some("c"), "one", t).unwrap().is_none());
        assert!(
            c.get(&Gvk::new("", "v1", "Secret"), Some("a"), "one", t)
                .unwrap()
                .is_none()
        );
        let sel = LabelSelector::parse("l=x").unwrap();
        assert_eq!(c.list(&cm, None, &sel, t).unwrap().len(), 2);
        assert_eq!(
            c.list(&cm, Some("a"), &LabelSelector::everything(), t)
                .unwrap()
                .len(),
            2
        );
        assert!(c.insert(json!({"kind": "ConfigMap"})).is_err());
    }
}
