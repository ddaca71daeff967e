//! Server-side apply of one desired object, skipped when nothing would change.

use std::hash::{Hash, Hasher};

use kube::ResourceExt;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use super::{Applier, ApplyError, Primary};
use crate::cache::ResolvedKind;
use odh_plugin_runtime::gvk::Gvk;
use odh_plugin_runtime::wire::{Desired, Ownership};

/// How many objects' last applies are remembered (about 60 MiB at most): past it one entry is
/// forgotten per new one.
pub(super) const MAX_REMEMBERED: usize = 1 << 18;

/// What an applied object's last write is remembered by; the status of a primary is keyed
/// under the field manager `<plugin>/status`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct AppliedKey {
    pub field_manager: String,
    pub gvk: Gvk,
    pub namespace: Option<String>,
    pub name: String,
}

/// Whether writes are stored or only answered (`dryRun=All`: a shadow call's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Write,
    DryRun,
}

/// What an apply did.
pub(super) enum Applied {
    /// Sent; the object as the API server answered.
    Written(DynamicObject),
    /// Nothing sent: the cluster holds it (the resolved target, to read it back).
    Unchanged(Target),
    /// An owned object of a primary that is gone: not applied.
    Skipped,
}

/// One object a plugin asked for, resolved against the cluster.
pub(super) struct Target {
    pub gvk: Gvk,
    pub kind: ResolvedKind,
    pub name: String,
    pub namespace: Option<String>,
    pub object: Value,
}

impl Applier {
    /// Applies `d` with field manager `fm`; `primary` (none for admission side effects) gives
    /// the default namespace and the owner.
    pub(super) async fn apply_desired(
        &self,
        plugin: &str,
        fm: &str,
        primary: Option<&Primary<'_>>,
        d: &Desired,
    ) -> Result<(), ApplyError> {
        self.apply_one(plugin, fm, primary, d, Mode::Write)
            .await
            .map(|_| ())
    }

    /// [`Applier::apply_desired`], answering what the API server stored: `Written` with the
    /// stored object, `Unchanged` when the cluster held it already (nothing sent), `Skipped`
    /// for an owned object of a primary that is gone. A dry run sends the apply with
    /// `dryRun=All` and remembers nothing.
    pub(super) async fn apply_one(
        &self,
        plugin: &str,
        fm: &str,
        primary: Option<&Primary<'_>>,
        d: &Desired,
        mode: Mode,
    ) -> Result<Applied, ApplyError> {
        let Target {
            gvk,
            kind,
            name,
            namespace,
            mut object,
        } = self
            .target(plugin, primary.and_then(|p| p.namespace), &d.object)
            .await?;
        let mut manager = fm.to_string();
        if d.ownership != Ownership::None {
            let Some((owner_kind, owner)) = primary.and_then(|p| Some((p.kind, p.object?))) else {
                tracing::debug!(plugin, %gvk, name, "not applying an owned object for a primary that is gone");
                return Ok(Applied::Skipped);
            };
            let ours = owner_reference(&owner_kind.resource, owner, d.ownership);
            if d.ownership == Ownership::Owner {
                // A shared object (e.g. KEDA's) has one plain owner per primary. Each primary
                // applies under a field manager of its own, so server-side apply merges the
                // owner references instead of one primary's apply dropping another's.
                manager = format!("{fm}/{}", ours["uid"].as_str().unwrap_or_default());
            }
            object["metadata"]["ownerReferences"] = Value::Array(vec![ours]);
        }

        let key = AppliedKey {
            field_manager: manager.clone(),
            gvk: gvk.clone(),
            namespace: namespace.clone(),
            name: name.clone(),
        };
        let digest = hash_value(&object);
        let api = api_for(&self.client, &kind, namespace.as_deref());
        if self.unchanged(&key, digest)
            && self
                .holds_now(&api, &gvk, namespace.as_deref(), &name, &object)
                .await
        {
            return Ok(Applied::Unchanged(Target {
                gvk,
                kind,
                name,
                namespace,
                object,
            }));
        }
        let mut applied = self
            .server_side_apply(&api, &gvk, &name, &manager, &object, mode)
            .await?;
        if mode == Mode::DryRun {
            return Ok(Applied::Written(applied));
        }
        let legacy = applied
            .metadata
            .managed_fields
            .as_deref()
            .and_then(|entries| super::adopt::taken_over(entries, &self.legacy_managers, &manager));
        if let Some(entries) = legacy {
            // Once per object: the legacy manager's fields become ours, and the next apply
            // removes those we do not declare.
            tracing::info!(plugin, kind = %gvk, name, "taking over the fields of a legacy field manager");
            self.wrote();
            super::adopt::replace_managed_fields(&api, &applied, &entries)
                .await
                .map_err(|source| ApplyError::Kube {
                    what: format!("taking over the fields of {gvk} {name}"),
                    source,
                })?;
            applied = self
                .server_side_apply(&api, &gvk, &name, &manager, &object, mode)
                .await?;
        }
        self.remember(key, digest);
        if let (Some(cache), Some(rv)) = (self.caches.get(&gvk), applied.resource_version())
            && cache
                .filter
                .as_ref()
                .is_none_or(|f| f.matches(applied.labels()))
        {
            cache.await_version(namespace.as_deref(), &name, &rv);
        }
        Ok(Applied::Written(applied))
    }

    async fn server_side_apply(
        &self,
        api: &Api<DynamicObject>,
        gvk: &Gvk,
        name: &str,
        manager: &str,
        object: &Value,
        mode: Mode,
    ) -> Result<DynamicObject, ApplyError> {
        self.wrote();
        let mut params = PatchParams::apply(manager).force();
        params.dry_run = mode == Mode::DryRun;
        api.patch(name, &params, &Patch::Apply(object))
            .await
            .map_err(|source| ApplyError::Kube {
                what: format!("applying {gvk} {name}"),
                source,
            })
    }

    /// Where `object` goes: its kind as the cluster serves it, its name and namespace
    /// (`default_namespace` when a namespaced object names none, written into the object).
    pub(super) async fn target(
        &self,
        plugin: &str,
        default_namespace: Option<&str>,
        object: &Value,
    ) -> Result<Target, ApplyError> {
        let gvk = Gvk::of_object(object).ok_or_else(|| {
            ApplyError::Invalid(format!(
                "plugin {plugin:?} returned an object without apiVersion/kind"
            ))
        })?;
        let kind = self.resolve(&gvk).await?.ok_or_else(|| {
            ApplyError::Invalid(format!(
                "no matches for kind {:?} in version {:?}",
                gvk.kind,
                gvk.api_version()
            ))
        })?;
        let mut object = object.clone();
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                ApplyError::Invalid(format!(
                    "plugin {plugin:?} returned a {gvk} without metadata.name"
                ))
            })?
            .to_string();
        let namespace = if kind.namespaced {
            let ns = object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .or(default_namespace)
                .map(str::to_string)
                .ok_or_else(|| {
                    ApplyError::Invalid(format!(
                        "plugin {plugin:?} returned {gvk} {name} without a namespace"
                    ))
                })?;
            object["metadata"]["namespace"] = json!(ns);
            Some(ns)
        } else {
            None
        };
        Ok(Target {
            gvk,
            kind,
            name,
            namespace,
            object,
        })
    }

    /// Whether the cluster holds `desired` now: from the kind's cache, or, for an object a
    /// cache does not hold (a label-filtered cache, an uncached kind), from the apiserver (a
    /// read instead of a write).
    async fn holds_now(
        &self,
        api: &Api<DynamicObject>,
        gvk: &Gvk,
        namespace: Option<&str>,
        name: &str,
        desired: &Value,
    ) -> bool {
        let cache = self.caches.get(gvk);
        // The last apply of this very content is not in the cache yet: the cache is behind
        // our own write, not the cluster behind what we want.
        if cache.as_ref().is_some_and(|c| c.is_behind(namespace, name)) {
            return true;
        }
        let current = match cache.as_ref().map(|c| (c.get(namespace, name), &c.filter)) {
            Some((Some(cached), _)) => cached.to_value().ok(),
            // A whole cache without it: the object is gone.
            Some((None, None)) => None,
            _ => api
                .get_opt(name)
                .await
                .ok()
                .flatten()
                .and_then(|o| serde_json::to_value(o).ok()),
        };
        current.is_some_and(|c| holds(&c, desired))
    }

    /// Whether the last apply under `key` was of exactly this content.
    pub(super) fn unchanged(&self, key: &AppliedKey, digest: u64) -> bool {
        self.last_applied.lock().expect("applied lock").get(key) == Some(digest)
    }

    pub(super) fn remember(&self, key: AppliedKey, digest: u64) {
        self.last_applied
            .lock()
            .expect("applied lock")
            .insert(key, digest);
    }
}

/// The digest of each object's last apply, for at most `cap` objects.
#[derive(Debug)]
pub(super) struct LastApplied {
    digests: std::collections::HashMap<AppliedKey, u64>,
    cap: usize,
}

impl LastApplied {
    pub(super) fn new(cap: usize) -> Self {
        Self {
            digests: Default::default(),
            cap,
        }
    }

    pub(super) fn get(&self, key: &AppliedKey) -> Option<u64> {
        self.digests.get(key).copied()
    }

    pub(super) fn insert(&mut self, key: AppliedKey, digest: u64) {
        if self.digests.len() >= self.cap && !self.digests.contains_key(&key) {
            // Deleted objects' entries would otherwise stay for good. Forgetting any one costs
            // at most one apply that could have been skipped.
            if let Some(evicted) = self.digests.keys().next().cloned() {
                self.digests.remove(&evicted);
            }
        }
        self.digests.insert(key, digest);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.digests.len()
    }
}

/// The API of a resolved kind in `namespace` (all namespaces for cluster-scoped kinds).
pub(super) fn api_for(
    client: &kube::Client,
    kind: &ResolvedKind,
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    match (kind.namespaced, namespace) {
        (true, Some(ns)) => Api::namespaced_with(client.clone(), ns, &kind.resource),
        _ => Api::all_with(client.clone(), &kind.resource),
    }
}

fn owner_reference(resource: &ApiResource, owner: &DynamicObject, ownership: Ownership) -> Value {
    let mut r = json!({
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "name": owner.name_any(),
        "uid": owner.uid().unwrap_or_default(),
    });
    // A plain owner (a shared object) also blocks its owner's foreground deletion, as
    // upstream's `AsOwnerRef` (controller: false, blockOwnerDeletion: true).
    r["controller"] = json!(ownership == Ownership::Controller);
    r["blockOwnerDeletion"] = json!(true);
    r
}

pub(super) fn hash_value(v: &Value) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    v.to_string().hash(&mut h);
    h.finish()
}

/// Whether a cached object already holds a desired one: every field, with the desired owner
/// references among the object's (others may own it too).
fn holds(actual: &Value, desired: &Value) -> bool {
    let mut rest = desired.clone();
    let wanted = rest
        .get_mut("metadata")
        .and_then(|m| m.as_object_mut())
        .and_then(|m| m.remove("ownerReferences"));
    let present = actual
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let refs_held = wanted
        .as_ref()
        .and_then(Value::as_array)
        .is_none_or(|w| w.iter().all(|r| present.iter().any(|p| contains(p, r))));
    refs_held && contains(actual, &rest)
}

/// Whether `actual` already holds every field of `desired` (lists compared element-wise).
pub fn contains(actual: &Value, desired: &Value) -> bool {
    match (actual, desired) {
        (Value::Object(a), Value::Object(d)) => d.iter().all(|(k, dv)| match a.get(k) {
            Some(av) => contains(av, dv),
            None => dv.is_null(),
        }),
        (Value::Array(a), Value::Array(d)) => {
            a.len() == d.len() && a.iter().zip(d).all(|(x, y)| contains(x, y))
        }
        (Value::Number(a), Value::Number(d)) => a.as_f64() == d.as_f64(),
        (a, d) => a == d,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_applies_are_remembered_for_a_bounded_number_of_objects() {
        let key = |name: &str| AppliedKey {
            field_manager: "odh-model-controller/p".into(),
            gvk: Gvk::new("", "v1", "ConfigMap"),
            namespace: Some("ns".into()),
            name: name.into(),
        };
        let mut applied = LastApplied::new(3);
        for (i, name) in ["a", "b", "c"].into_iter().enumerate() {
            applied.insert(key(name), i as u64);
        }
        applied.insert(key("a"), 9);
        assert_eq!(applied.len(), 3, "a known object updates in place");
        assert_eq!(applied.get(&key("a")), Some(9));
        applied.insert(key("d"), 4);
        assert_eq!(applied.len(), 3, "a new one past the cap makes room");
        assert_eq!(applied.get(&key("d")), Some(4));
    }

    #[test]
    fn contains_ignores_extra_fields_but_not_changed_ones() {
        let actual = json!({"metadata": {"name": "a", "uid": "1", "labels": {"x": "1", "y": "2"}}, "data": {"k": "v"}, "spec": {"n": 1.0}});
        assert!(contains(
            &actual,
            &json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v"}})
        ));
        assert!(contains(&actual, &json!({"spec": {"n": 1}})));
        assert!(!contains(&actual, &json!({"data": {"k": "changed"}})));
        assert!(!contains(&actual, &json!({"data": {"missing": "v"}})));
        assert!(contains(
            &json!({"l": [{"a": 1, "b": 2}]}),
            &json!({"l": [{"a": 1}]})
        ));
        assert!(!contains(&json!({"l": [1, 2]}), &json!({"l": [1]})));
    }

    #[test]
    fn holds_accepts_other_owners_beside_ours() {
        let ours = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "1"});
        let theirs = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "b", "uid": "2"});
        let actual = json!({"metadata": {"name": "s", "ownerReferences": [theirs, ours.clone()]}, "data": {"k": "v"}});
        let desired =
            json!({"metadata": {"name": "s", "ownerReferences": [ours]}, "data": {"k": "v"}});
        assert!(holds(&actual, &desired));
        let missing = json!({"metadata": {"name": "s", "ownerReferences": [{"uid": "3"}]}, "data": {"k": "v"}});
        assert!(!holds(&actual, &missing));
        let changed = json!({"metadata": {"name": "s"}, "data": {"k": "other"}});
        assert!(!holds(&actual, &changed));
    }

    #[test]
    fn owner_references_block_deletion() {
        let ar = ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("", "v1", "ConfigMap"),
            "configmaps",
        );
        let mut owner = DynamicObject::new("p", &ar);
        owner.metadata.uid = Some("u1".into());
        let r = owner_reference(&ar, &owner, Ownership::Controller);
        assert_eq!(
            r,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "p", "uid": "u1", "controller": true, "blockOwnerDeletion": true})
        );
        // Plain owners as upstream's `AsOwnerRef` writes them (review D11).
        assert_eq!(
            owner_reference(&ar, &owner, Ownership::Owner),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "p", "uid": "u1", "controller": false, "blockOwnerDeletion": true})
        );
    }
}
