//! Reading cluster state through the host.
//!
//! Reads are served from the host's caches and limited to the kinds the manifest lists in
//! `reads` (and the admin grants); any other read fails with [`Error::Denied`]. Write plugin
//! logic against `&dyn Cluster` (the [`Ctx`](crate::Ctx)'s `cluster`, which is [`Host`] inside
//! the host) and pass a [`FakeCluster`](crate::testing::FakeCluster) from native tests:
//!
//! ```
//! use odh_plugin_sdk::cluster::Cluster;
//! use odh_plugin_sdk::testing::FakeCluster;
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
/// Off `wasm32` every call fails with [`Error::Transient`]; use
/// [`FakeCluster`](crate::testing::FakeCluster) in tests.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core_gvk;

    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn host_is_unavailable_natively() {
        assert!(matches!(
            Host.get(&core_gvk("ConfigMap"), None, "x"),
            Err(Error::Transient(_))
        ));
        assert!(matches!(
            Host.list_objects(&core_gvk("ConfigMap"), None, None),
            Err(Error::Transient(_))
        ));
    }
}
