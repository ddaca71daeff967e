//! Deletes of objects we manage; a shared object other owners still hold is released instead.

use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject, Preconditions};
use serde_json::json;

use super::apply::{Mode, api_for};
use super::{Applier, ApplyError, Primary};
use odh_plugin_runtime::wire::ObjectKey;

impl Applier {
    pub(super) async fn delete_managed(
        &self,
        field_manager: &str,
        primary: &Primary<'_>,
        key: &ObjectKey,
    ) -> Result<(), ApplyError> {
        self.delete_one(field_manager, primary, key, Mode::Write)
            .await
            .map(|_| ())
    }

    /// [`Applier::delete_managed`], answering whether it deleted (or released) the object.
    pub(super) async fn delete_one(
        &self,
        field_manager: &str,
        primary: &Primary<'_>,
        key: &ObjectKey,
        mode: Mode,
    ) -> Result<bool, ApplyError> {
        let Some(kind) = self.resolve(&key.gvk).await? else {
            return Ok(false);
        };
        let namespace = if kind.namespaced {
            key.namespace.as_deref().or(primary.namespace)
        } else {
            None
        };
        let api = api_for(&self.client, &kind, namespace);
        // Read live: the cache strips managedFields, which say whether we manage the object.
        let existing = match api.get_opt(&key.name).await {
            Ok(Some(o)) => o,
            Ok(None) => return Ok(false),
            Err(source) => {
                return Err(ApplyError::Kube {
                    what: format!("reading {} {}", key.gvk, key.name),
                    source,
                });
            }
        };
        let primary_uid = primary.object.and_then(|p| p.uid());
        let owned = primary_uid
            .as_deref()
            .is_some_and(|uid| existing.owner_references().iter().any(|r| r.uid == uid));
        if let Some(uid) = primary_uid.as_deref()
            && owned
            && existing.owner_references().iter().any(|r| r.uid != uid)
        {
            // A shared object other owners still hold: the primary lets go of it instead.
            if mode == Mode::DryRun {
                return Ok(true);
            }
            return self.release(&api, &existing, uid, key).await.map(|()| true);
        }
        // A shared object is applied under a field manager per primary (`<field_manager>/<uid>`): one
        // managed only for another primary is that primary's to delete. A reconcile planned on
        // a cache that did not show the other primary yet must not delete it under that
        // primary's feet (it would come back, owned by that primary alone).
        let this_primary = primary_uid
            .as_deref()
            .map(|uid| format!("{field_manager}/{uid}"));
        let ours = existing.managed_fields().iter().any(|m| {
            m.manager.as_deref().is_some_and(|m| {
                m == field_manager
                    || match &this_primary {
                        Some(mine) => m == mine,
                        None => m.starts_with(&format!("{field_manager}/")),
                    }
            }) || super::adopt::is_legacy(m, &self.legacy_managers)
        });
        if !owned && !ours {
            tracing::info!(kind = %key.gvk, name = key.name, "not deleting an object this controller does not manage");
            return Ok(false);
        }
        self.delete_exact(&api, &existing, key, mode).await
    }

    /// Deletes the object `existing` was read as (its uid a precondition); false when it is gone.
    async fn delete_exact(
        &self,
        api: &Api<DynamicObject>,
        existing: &DynamicObject,
        key: &ObjectKey,
        mode: Mode,
    ) -> Result<bool, ApplyError> {
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: existing.uid(),
                resource_version: None,
            }),
            dry_run: mode == Mode::DryRun,
            ..Default::default()
        };
        self.wrote();
        match api.delete(&key.name, &params).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.is_not_found() => Ok(false),
            Err(source) => Err(ApplyError::Kube {
                what: format!("deleting {} {}", key.gvk, key.name),
                source,
            }),
        }
    }

    /// The API `key` lives in (a namespaced one without a namespace in `default_namespace`); a
    /// kind the cluster does not serve is apimachinery's "no matches".
    async fn api_of(
        &self,
        key: &ObjectKey,
        default_namespace: Option<&str>,
    ) -> Result<Api<DynamicObject>, ApplyError> {
        let Some(kind) = self.resolve(&key.gvk).await? else {
            return Err(ApplyError::Invalid(format!(
                "no matches for kind {:?} in version {:?}",
                key.gvk.kind,
                key.gvk.api_version()
            )));
        };
        let namespace = if kind.namespaced {
            key.namespace.as_deref().or(default_namespace)
        } else {
            None
        };
        Ok(api_for(&self.client, &kind, namespace))
    }

    /// Reads `key` live: its API, and the object when it exists.
    async fn read_live(
        &self,
        key: &ObjectKey,
        default_namespace: Option<&str>,
    ) -> Result<Option<(Api<DynamicObject>, DynamicObject)>, ApplyError> {
        let api = self.api_of(key, default_namespace).await?;
        match api.get_opt(&key.name).await {
            Ok(found) => Ok(found.map(|o| (api, o))),
            Err(source) => Err(ApplyError::Kube {
                what: format!("reading {} {}", key.gvk, key.name),
                source,
            }),
        }
    }

    /// Deletes `key` whoever manages it, when its live labels match `selector` (a plugin's
    /// `writes.delete-unmanaged`, granted per kind): true when deleted.
    pub(super) async fn delete_matching(
        &self,
        key: &ObjectKey,
        default_namespace: Option<&str>,
        selector: &odh_label_selector::LabelSelector,
        mode: Mode,
    ) -> Result<bool, ApplyError> {
        let Some((api, existing)) = self.read_live(key, default_namespace).await? else {
            return Ok(false);
        };
        if !selector.matches(existing.labels()) {
            tracing::info!(kind = %key.gvk, name = key.name, %selector, "not deleting an object whose labels no longer match");
            return Ok(false);
        }
        self.delete_exact(&api, &existing, key, mode).await
    }

    /// Merge-patches `key`'s labels and annotations if its resourceVersion is still
    /// `resource_version` (a plugin's `writes.patch-metadata`, granted per kind).
    pub(super) async fn patch_foreign_metadata(
        &self,
        key: &ObjectKey,
        default_namespace: Option<&str>,
        resource_version: &str,
        mut metadata: serde_json::Value,
        mode: Mode,
    ) -> Result<DynamicObject, ApplyError> {
        let api = self.api_of(key, default_namespace).await?;
        metadata["resourceVersion"] = json!(resource_version);
        let params = kube::api::PatchParams {
            dry_run: mode == Mode::DryRun,
            ..Default::default()
        };
        self.wrote();
        api.patch(
            &key.name,
            &params,
            &kube::api::Patch::Merge(&json!({ "metadata": metadata })),
        )
        .await
        .map_err(|source| ApplyError::Kube {
            what: format!("patching {} {}", key.gvk, key.name),
            source,
        })
    }

    /// Drops one owner's reference from a shared object (compare-and-swap on the
    /// resourceVersion, so a concurrent change fails and is retried).
    async fn release(
        &self,
        api: &Api<DynamicObject>,
        existing: &DynamicObject,
        uid: &str,
        key: &ObjectKey,
    ) -> Result<(), ApplyError> {
        let remaining: Vec<_> = existing
            .owner_references()
            .iter()
            .filter(|r| r.uid != uid)
            .collect();
        match self
            .patch_metadata(api, existing, json!({"ownerReferences": remaining}))
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
            Err(source) => Err(ApplyError::Kube {
                what: format!("releasing {} {}", key.gvk, key.name),
                source,
            }),
        }
    }
}
