//! [`FakeCluster`]: an in-memory cluster for native tests.

use odh_label_selector::LabelSelector;
use serde::Serialize;
use serde_json::Value;

use crate::cluster::Cluster;
use crate::{Error, Gvk, Manifest, Object};

/// An in-memory cluster for native tests.
///
/// Holds objects (keyed by type, namespace and name; inserting the same key replaces). Like
/// the host it can refuse reads: [`FakeCluster::for_manifest`] allows only the kinds a
/// manifest declares in `reads` (a forgotten declaration fails `cargo test`, not the
/// cluster), [`FakeCluster::deny`] refuses one kind, and [`FakeCluster::fail`] makes reads of
/// a kind fail with a given error (an API server outage, say). List selectors are parsed and
/// matched by `odh-label-selector`, the host's own parser.
#[derive(Clone, Debug, Default)]
pub struct FakeCluster {
    objects: Vec<Object>,
    /// The kinds reads are limited to, with the plugin's name; none: every kind.
    declared: Option<(String, Vec<Gvk>)>,
    denied: Vec<Gvk>,
    failing: Vec<(Gvk, Error)>,
}

impl FakeCluster {
    /// An empty cluster that serves every kind.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty cluster that, as the host does, refuses with [`Error::Denied`] reads of kinds
    /// the manifest does not declare in `reads`.
    pub fn for_manifest(manifest: &Manifest) -> Self {
        FakeCluster {
            declared: Some((manifest.name.clone(), manifest.reads.clone())),
            ..Self::default()
        }
    }

    /// Adds (or replaces) an object, builder style.
    pub fn with(mut self, object: impl Serialize) -> Self {
        self.insert(object);
        self
    }

    /// Adds (or replaces) every object, builder style.
    pub fn with_all<T: Serialize>(mut self, objects: impl IntoIterator<Item = T>) -> Self {
        for object in objects {
            self.insert(object);
        }
        self
    }

    /// Adds (or replaces) an object. Panics if it does not serialize to a JSON object.
    pub fn insert(&mut self, object: impl Serialize) {
        let object = Object(serde_json::to_value(object).expect("object serializes to JSON"));
        assert!(
            object.is_object(),
            "FakeCluster holds JSON objects, got {}",
            object.0
        );
        let key = object.key();
        self.objects.retain(|o| o.key() != key);
        self.objects.push(object);
    }

    /// Removes an object, returning it.
    pub fn remove(&mut self, gvk: &Gvk, namespace: Option<&str>, name: &str) -> Option<Object> {
        let i = self
            .objects
            .iter()
            .position(|o| in_scope(o, gvk, namespace) && o.name() == name)?;
        Some(self.objects.remove(i))
    }

    /// Makes reads of `gvk` fail with [`Error::Denied`], builder style.
    pub fn deny(mut self, gvk: Gvk) -> Self {
        self.denied.push(gvk);
        self
    }

    /// Makes reads of `gvk` fail with `error` (e.g. [`Error::Transient`]), builder style, so
    /// tests can exercise how logic reports a host error.
    pub fn fail(mut self, gvk: Gvk, error: Error) -> Self {
        self.failing.push((gvk, error));
        self
    }

    /// Every object held.
    pub fn objects(&self) -> &[Object] {
        &self.objects
    }

    fn check(&self, gvk: &Gvk) -> Result<(), Error> {
        if let Some((plugin, reads)) = &self.declared
            && !reads.contains(gvk)
        {
            // The host's wording (`call_state.rs`), so tests see what the cluster would say.
            return Err(Error::Denied(format!(
                "plugin {plugin:?} may not read {gvk}: declare it in the manifest's reads and have it granted"
            )));
        }
        if let Some((_, error)) = self.failing.iter().find(|(g, _)| g == gvk) {
            Err(error.clone())
        } else if self.denied.contains(gvk) {
            Err(Error::Denied(format!(
                "reading {gvk} is not granted to this plugin"
            )))
        } else {
            Ok(())
        }
    }
}

fn in_scope(o: &Object, gvk: &Gvk, namespace: Option<&str>) -> bool {
    o.gvk() == *gvk && (namespace.is_none() || o.namespace() == namespace)
}

impl Cluster for FakeCluster {
    fn get(&self, gvk: &Gvk, namespace: Option<&str>, name: &str) -> Result<Option<Value>, Error> {
        self.check(gvk)?;
        Ok(self
            .objects
            .iter()
            .find(|o| o.gvk() == *gvk && o.namespace() == namespace && o.name() == name)
            .map(|o| o.0.clone()))
    }

    fn list(
        &self,
        gvk: &Gvk,
        namespace: Option<&str>,
        label_selector: Option<&str>,
    ) -> Result<Vec<Value>, Error> {
        self.check(gvk)?;
        let selector = LabelSelector::parse(label_selector.unwrap_or_default())
            .map_err(|e| Error::Invalid(e.to_string()))?;
        Ok(self
            .objects
            .iter()
            .filter(|o| {
                in_scope(o, gvk, namespace) && selector.matches_json(o.at(&["metadata", "labels"]))
            })
            .map(|o| o.0.clone())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Controller, core_gvk, gvk, json};

    fn cm(ns: &str, name: &str, labels: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns, "labels": labels}})
    }

    fn fake() -> FakeCluster {
        FakeCluster::new()
            .with(cm("a", "one", json!({"app": "x", "tier": "web"})))
            .with(cm("a", "two", json!({"app": "y"})))
            .with(cm("b", "three", json!({"app": "x"})))
            .with(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "one", "namespace": "a"}}))
            .deny(core_gvk("Secret"))
    }

    fn names(v: Vec<Value>) -> Vec<String> {
        v.into_iter()
            .map(|o| Object(o).name().to_string())
            .collect()
    }

    #[test]
    fn get_and_list() {
        let c = fake();
        let cmk = core_gvk("ConfigMap");
        assert!(c.get(&cmk, Some("a"), "one").unwrap().is_some());
        assert!(c.get(&cmk, Some("b"), "one").unwrap().is_none());
        assert!(
            c.get(&gvk("apps", "v1", "Deployment"), Some("a"), "one")
                .unwrap()
                .is_some()
        );
        assert_eq!(
            names(c.list(&cmk, None, None).unwrap()),
            ["one", "two", "three"]
        );
        assert_eq!(
            names(c.list(&cmk, Some("a"), None).unwrap()),
            ["one", "two"]
        );
        assert_eq!(
            names(c.list(&cmk, None, Some("app=x")).unwrap()),
            ["one", "three"]
        );
        assert_eq!(names(c.list(&cmk, None, Some("app!=x")).unwrap()), ["two"]);
        assert_eq!(
            names(c.list(&cmk, None, Some("app in (y, z)")).unwrap()),
            ["two"]
        );
        assert_eq!(
            names(c.list(&cmk, None, Some("app notin (y),tier")).unwrap()),
            ["one"]
        );
        assert!(matches!(
            c.list(&cmk, None, Some("app in y")),
            Err(Error::Invalid(m)) if m.starts_with("invalid label selector \"app in y\"")
        ));
        assert!(matches!(
            c.get(&core_gvk("Secret"), Some("a"), "s"),
            Err(Error::Denied(_))
        ));
    }

    #[test]
    fn for_manifest_refuses_undeclared_kinds() {
        let cmk = core_gvk("ConfigMap");
        let manifest = Manifest::new("p", "0.1.0").controller(Controller::new("c", cmk.clone()));
        let c = FakeCluster::for_manifest(&manifest).with(cm("a", "one", json!({})));
        assert_eq!(names(c.list(&cmk, None, None).unwrap()), ["one"]);
        assert_eq!(
            c.get(&core_gvk("Secret"), Some("a"), "s"),
            Err(Error::Denied(
                "plugin \"p\" may not read Secret/v1: declare it in the manifest's reads and have it granted".into()
            ))
        );
    }

    #[test]
    fn failing_kind() {
        let c = fake().fail(core_gvk("ConfigMap"), Error::transient("etcd is down"));
        let err = Error::Transient("etcd is down".into());
        assert_eq!(
            c.get(&core_gvk("ConfigMap"), Some("a"), "one"),
            Err(err.clone())
        );
        assert_eq!(c.list(&core_gvk("ConfigMap"), None, None), Err(err));
    }

    #[test]
    fn insert_replaces() {
        let mut c = fake();
        c.insert(cm("a", "one", json!({"app": "z"})));
        let one = c
            .get_object(&core_gvk("ConfigMap"), Some("a"), "one")
            .unwrap()
            .unwrap();
        assert_eq!(one.label("app"), Some("z"));
        assert_eq!(c.objects().len(), 4);
        assert!(c.remove(&core_gvk("ConfigMap"), Some("a"), "one").is_some());
        assert_eq!(c.objects().len(), 3);
    }
}
