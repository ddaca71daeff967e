//! Writes to the primary itself: finalizers and its own metadata (compare-and-swap merge
//! patches), and its status (server-side apply on `/status`).

use kube::ResourceExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use super::apply::{AppliedKey, api_for, hash_value};
use super::{Applier, ApplyError, Primary, contains};
use crate::gvk::Gvk;
use crate::plugin::wire::FinalizerAction;

impl Applier {
    pub(super) async fn add_finalizer(
        &self,
        primary: &Primary<'_>,
        finalizer: Option<&str>,
    ) -> Result<(), ApplyError> {
        if let (Some(f), Some(obj)) = (finalizer, primary.object)
            && obj.metadata.deletion_timestamp.is_none()
            && !obj.finalizers().iter().any(|x| x == f)
        {
            let mut list = obj.finalizers().to_vec();
            list.push(f.to_string());
            self.patch_finalizers(primary, obj, list).await?;
        }
        Ok(())
    }

    pub(super) async fn remove_finalizer(
        &self,
        primary: &Primary<'_>,
        finalizer: Option<&str>,
    ) -> Result<(), ApplyError> {
        if let (Some(f), Some(obj)) = (finalizer, primary.object)
            && obj.finalizers().iter().any(|x| x == f)
        {
            let list = obj
                .finalizers()
                .iter()
                .filter(|x| *x != f)
                .cloned()
                .collect();
            self.patch_finalizers(primary, obj, list).await?;
        }
        Ok(())
    }

    async fn patch_finalizers(
        &self,
        primary: &Primary<'_>,
        obj: &DynamicObject,
        list: Vec<String>,
    ) -> Result<(), ApplyError> {
        self.patch_metadata(
            &primary_api(&self.client, primary),
            obj,
            json!({"finalizers": list}),
        )
        .await
        .map_err(|source| ApplyError::Kube {
            what: format!("updating the finalizers of {}", primary.name),
            source,
        })
    }

    /// A JSON merge patch of `obj`'s metadata carrying its resourceVersion: a compare-and-swap,
    /// so a concurrent change fails (409) and the reconcile retries on fresh state.
    pub(super) async fn patch_metadata(
        &self,
        api: &Api<DynamicObject>,
        obj: &DynamicObject,
        mut metadata: Value,
    ) -> Result<(), kube::Error> {
        metadata["resourceVersion"] = json!(obj.resource_version());
        self.wrote();
        api.patch(
            &obj.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&json!({ "metadata": metadata })),
        )
        .await
        .map(|_| ())
    }

    pub(super) async fn patch_primary_metadata(
        &self,
        primary: &Primary<'_>,
        obj: &DynamicObject,
        patch: &Value,
    ) -> Result<(), ApplyError> {
        let Some(fields) = patch.as_object() else {
            return Err(ApplyError::Invalid(
                "primaryMetadata must be a JSON object".into(),
            ));
        };
        if let Some(other) = fields
            .keys()
            .find(|k| !matches!(k.as_str(), "labels" | "annotations" | "finalizers"))
        {
            return Err(ApplyError::Invalid(format!(
                "primaryMetadata may only change labels, annotations and finalizers, not {other:?}"
            )));
        }
        if metadata_holds(obj, fields) {
            return Ok(());
        }
        self.patch_metadata(&primary_api(&self.client, primary), obj, patch.clone())
            .await
            .map_err(|source| ApplyError::Kube {
                what: format!("updating the metadata of {}", primary.name),
                source,
            })
    }

    pub(super) async fn apply_status(
        &self,
        plugin: &str,
        fm: &str,
        primary: &Primary<'_>,
        obj: &DynamicObject,
        status: &Value,
    ) -> Result<(), ApplyError> {
        let resource = &primary.kind.resource;
        let key: AppliedKey = (
            format!("{plugin}/status"),
            Gvk::from_api_version(&resource.api_version, &resource.kind),
            primary.namespace.map(str::to_string),
            primary.name.to_string(),
        );
        let digest = hash_value(status);
        if self.unchanged(&key, digest)
            && obj.data.get("status").is_some_and(|s| contains(s, status))
        {
            return Ok(());
        }
        let body = json!({
            "apiVersion": resource.api_version,
            "kind": resource.kind,
            "metadata": {"name": primary.name},
            "status": status,
        });
        let api = primary_api(&self.client, primary);
        self.wrote();
        api.patch_status(
            primary.name,
            &PatchParams::apply(fm).force(),
            &Patch::Apply(&body),
        )
        .await
        .map_err(|source| ApplyError::Kube {
            what: format!("updating the status of {}", primary.name),
            source,
        })?;
        self.remember(key, digest);
        Ok(())
    }
}

/// The API of the primary's own kind and namespace.
fn primary_api(client: &kube::Client, primary: &Primary<'_>) -> Api<DynamicObject> {
    api_for(client, primary.kind, primary.namespace)
}

/// `patch` with the manifest finalizer added to or removed from its `finalizers` list, if it
/// has one.
pub(super) fn fold_finalizer(
    patch: &Value,
    action: FinalizerAction,
    finalizer: Option<&str>,
) -> Value {
    let mut patch = patch.clone();
    if let (Some(list), Some(f)) = (
        patch.get_mut("finalizers").and_then(Value::as_array_mut),
        finalizer,
    ) {
        match action {
            FinalizerAction::Add if !list.iter().any(|x| x == f) => list.push(json!(f)),
            FinalizerAction::Remove => list.retain(|x| x != f),
            _ => {}
        }
    }
    patch
}

/// Whether the primary already carries every label, annotation (`null` = absent) and exactly
/// the finalizer list a metadata patch asks for.
fn metadata_holds(obj: &DynamicObject, fields: &serde_json::Map<String, Value>) -> bool {
    let map_holds = |actual: &std::collections::BTreeMap<String, String>, want: &Value| {
        want.as_object().is_some_and(|want| {
            want.iter().all(|(k, v)| match v {
                Value::Null => !actual.contains_key(k),
                Value::String(s) => actual.get(k) == Some(s),
                _ => false,
            })
        })
    };
    fields.iter().all(|(k, want)| match k.as_str() {
        "labels" => map_holds(obj.labels(), want),
        "annotations" => map_holds(obj.annotations(), want),
        "finalizers" => serde_json::to_value(obj.finalizers()).ok().as_ref() == Some(want),
        _ => false,
    })
}
