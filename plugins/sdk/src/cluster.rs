//! Reading cluster state through the host.
//!
//! Reads are served from the host's caches and limited to the kinds the manifest lists in
//! `reads` (and the admin grants); any other read fails with [`Error::Denied`]. Write plugin
//! logic against `&dyn Cluster` (or `impl Cluster`) and pass [`Host`] from the exports and a
//! [`FakeCluster`] from native tests:
//!
//! ```
//! use odh_plugin_sdk::cluster::{Cluster, FakeCluster};
//! use odh_plugin_sdk::{core_gvk, json, Error};
//!
//! fn has_secret(cluster: &dyn Cluster, ns: &str) -> Result<bool, Error> {
//!     Ok(cluster.get(&core_gvk("Secret"), Some(ns), "creds")?.is_some())
//! }
//!
//! let fake = FakeCluster::new().with(json!({
//!     "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds", "namespace": "ns"}
//! }));
//! assert!(has_secret(&fake, "ns").unwrap());
//! assert!(!has_secret(&fake, "other").unwrap());
//! ```

use serde::Serialize;
use serde_json::Value;

use crate::{Error, Gvk, Object};

/// Read access to cluster objects.
pub trait Cluster {
    /// The object, or none when it does not exist. `namespace` is none for cluster-scoped
    /// kinds.
    fn get(&self, gvk: &Gvk, namespace: Option<&str>, name: &str) -> Result<Option<Value>, Error>;

    /// Objects of a kind in one namespace or (none) all, optionally filtered by a label
    /// selector (`key=value,key2!=value2,key3,!key4,key5 in (a,b)`).
    fn list(
        &self,
        gvk: &Gvk,
        namespace: Option<&str>,
        label_selector: Option<&str>,
    ) -> Result<Vec<Value>, Error>;

    /// [`Cluster::get`] as an [`Object`].
    fn get_object(
        &self,
        gvk: &Gvk,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Object>, Error> {
        Ok(self.get(gvk, namespace, name)?.map(Object))
    }

    /// [`Cluster::list`] as [`Object`]s.
    fn list_objects(
        &self,
        gvk: &Gvk,
        namespace: Option<&str>,
        label_selector: Option<&str>,
    ) -> Result<Vec<Object>, Error> {
        Ok(self
            .list(gvk, namespace, label_selector)?
            .into_iter()
            .map(Object)
            .collect())
    }
}

/// The cluster as the plugin host serves it (the WIT `cluster` import).
///
/// Off `wasm32` every call fails with [`Error::Transient`]; use [`FakeCluster`] in tests.
#[derive(Clone, Copy, Debug, Default)]
pub struct Host;

#[cfg(target_arch = "wasm32")]
fn parse(gvk: &Gvk, json: &str) -> Result<Value, Error> {
    serde_json::from_str(json)
        .map_err(|e| Error::Internal(format!("the host returned invalid JSON for a {gvk}: {e}")))
}

impl Cluster for Host {
    #[cfg(target_arch = "wasm32")]
    fn get(&self, gvk: &Gvk, namespace: Option<&str>, name: &str) -> Result<Option<Value>, Error> {
        crate::bindings::odh::controller::cluster::get(gvk, namespace, name)?
            .map(|json| parse(gvk, &json))
            .transpose()
    }

    #[cfg(target_arch = "wasm32")]
    fn list(
        &self,
        gvk: &Gvk,
        namespace: Option<&str>,
        label_selector: Option<&str>,
    ) -> Result<Vec<Value>, Error> {
        crate::bindings::odh::controller::cluster::list(gvk, namespace, label_selector)?
            .iter()
            .map(|json| parse(gvk, json))
            .collect()
    }

    #[cfg(not(target_arch = "wasm32"))]
    fn get(&self, _: &Gvk, _: Option<&str>, _: &str) -> Result<Option<Value>, Error> {
        Err(outside_host())
    }

    #[cfg(not(target_arch = "wasm32"))]
    fn list(&self, _: &Gvk, _: Option<&str>, _: Option<&str>) -> Result<Vec<Value>, Error> {
        Err(outside_host())
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn outside_host() -> Error {
    Error::Transient("the cluster is only available inside the plugin host".into())
}

/// [`Host::get`](Cluster::get).
pub fn get(gvk: &Gvk, namespace: Option<&str>, name: &str) -> Result<Option<Value>, Error> {
    Host.get(gvk, namespace, name)
}

/// [`Host::list`](Cluster::list).
pub fn list(
    gvk: &Gvk,
    namespace: Option<&str>,
    label_selector: Option<&str>,
) -> Result<Vec<Value>, Error> {
    Host.list(gvk, namespace, label_selector)
}

/// An in-memory cluster for native tests.
///
/// Holds objects (keyed by type, namespace and name; inserting the same key replaces) and can
/// simulate ungranted kinds: reads of a kind passed to [`FakeCluster::deny`] fail with
/// [`Error::Denied`], as the host does for kinds a plugin did not declare. Reads of a kind passed
/// to [`FakeCluster::fail`] fail with the given error (an API server outage, say).
#[derive(Clone, Debug, Default)]
pub struct FakeCluster {
    objects: Vec<Object>,
    denied: Vec<Gvk>,
    failing: Vec<(Gvk, Error)>,
}

impl FakeCluster {
    /// An empty cluster.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) an object, builder style.
    pub fn with(mut self, object: impl Serialize) -> Self {
        self.insert(object);
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
            .position(|o| matches(o, gvk, namespace) && o.name() == name)?;
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

fn matches(o: &Object, gvk: &Gvk, namespace: Option<&str>) -> bool {
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
        let selector = Selector::parse(label_selector.unwrap_or_default())?;
        Ok(self
            .objects
            .iter()
            .filter(|o| matches(o, gvk, namespace) && selector.matches(o))
            .map(|o| o.0.clone())
            .collect())
    }
}

/// A parsed label selector (equality- and set-based, as `kubectl -l` takes it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector(Vec<Requirement>);

#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    Eq(String, String),
    NotEq(String, String),
    Exists(String),
    NotExists(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
}

impl Selector {
    /// Parses `key=value,key==value,key!=value,key,!key,key in (a,b),key notin (a)`; an empty
    /// selector matches everything. A malformed one is [`Error::Invalid`].
    pub fn parse(selector: &str) -> Result<Selector, Error> {
        let invalid = |term: &str| Error::Invalid(format!("invalid label selector term {term:?}"));
        let mut requirements = Vec::new();
        for term in split_terms(selector) {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            let set = |rest: &str| -> Option<Vec<String>> {
                let inner = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
                Some(inner.split(',').map(|v| v.trim().to_string()).collect())
            };
            let req = if let Some((k, v)) = term.split_once("!=") {
                Requirement::NotEq(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                Requirement::Eq(k.trim().into(), v.trim().into())
            } else if let Some((k, rest)) = term.split_once(" notin ") {
                Requirement::NotIn(k.trim().into(), set(rest).ok_or_else(|| invalid(term))?)
            } else if let Some((k, rest)) = term.split_once(" in ") {
                Requirement::In(k.trim().into(), set(rest).ok_or_else(|| invalid(term))?)
            } else if let Some(k) = term.strip_prefix('!') {
                Requirement::NotExists(k.trim().into())
            } else if term.contains([' ', '(', ')']) {
                return Err(invalid(term));
            } else {
                Requirement::Exists(term.into())
            };
            requirements.push(req);
        }
        Ok(Selector(requirements))
    }

    /// Whether the object's labels satisfy every requirement.
    pub fn matches(&self, object: &Object) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Eq(k, v) => object.label(k) == Some(v),
            Requirement::NotEq(k, v) => object.label(k) != Some(v),
            Requirement::Exists(k) => object.label(k).is_some(),
            Requirement::NotExists(k) => object.label(k).is_none(),
            Requirement::In(k, vs) => object.label(k).is_some_and(|l| vs.iter().any(|v| v == l)),
            Requirement::NotIn(k, vs) => object.label(k).is_none_or(|l| vs.iter().all(|v| v != l)),
        })
    }
}

/// Splits on commas outside parentheses.
fn split_terms(selector: &str) -> Vec<&str> {
    let (mut terms, mut depth, mut start) = (Vec::new(), 0usize, 0);
    for (i, c) in selector.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                terms.push(&selector[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&selector[start..]);
    terms
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{core_gvk, gvk, json};

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
            names(c.list(&cmk, None, Some("app=x,tier")).unwrap()),
            ["one"]
        );
        assert_eq!(
            names(c.list(&cmk, None, Some("!tier")).unwrap()),
            ["two", "three"]
        );
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
            Err(Error::Invalid(_))
        ));
        assert!(matches!(
            c.get(&core_gvk("Secret"), Some("a"), "s"),
            Err(Error::Denied(_))
        ));
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

    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn host_is_unavailable_natively() {
        assert!(matches!(
            get(&core_gvk("ConfigMap"), None, "x"),
            Err(Error::Transient(_))
        ));
    }
}
