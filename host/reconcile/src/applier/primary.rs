//! Writes to the primary itself: finalizers and its own metadata (compare-and-swap merge
//! patches), and its status (server-side apply on `/status`).

use kube::ResourceExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use super::apply::{AppliedKey, api_for, hash_value};
use super::{Applier, ApplyError, Primary, contains};
use odh_plugin_runtime::gvk::Gvk;
use odh_plugin_runtime::wire::FinalizerAction;

impl Applier {
    /// Adds `finalizer` to `obj` unless it is there or the object is being deleted; returns
    /// the updated object when it wrote.
    pub(super) async fn add_finalizer(
        &self,
        primary: &Primary<'_>,
        obj: Option<&DynamicObject>,
        finalizer: Option<&str>,
    ) -> Result<Option<DynamicObject>, ApplyError> {
        let (Some(f), Some(obj)) = (finalizer, obj) else {
            return Ok(None);
        };
        if obj.metadata.deletion_timestamp.is_some() || obj.finalizers().iter().any(|x| x == f) {
            return Ok(None);
        }
        let mut list = obj.finalizers().to_vec();
        list.push(f.to_string());
        self.patch_finalizers(primary, obj, list).await.map(Some)
    }

    /// Removes `finalizer` from `obj` if it is there.
    pub(super) async fn remove_finalizer(
        &self,
        primary: &Primary<'_>,
        obj: Option<&DynamicObject>,
        finalizer: Option<&str>,
    ) -> Result<(), ApplyError> {
        let (Some(f), Some(obj)) = (finalizer, obj) else {
            return Ok(());
        };
        if !obj.finalizers().iter().any(|x| x == f) {
            return Ok(());
        }
        let list = obj
            .finalizers()
            .iter()
            .filter(|x| *x != f)
            .cloned()
            .collect();
        self.patch_finalizers(primary, obj, list).await.map(|_| ())
    }

    /// Removes `finalizer` from the primary's object if it carries it, outside any outcome
    /// (the controller lets go of an object that left its selector).
    pub async fn release_finalizer(
        &self,
        primary: &Primary<'_>,
        finalizer: &str,
    ) -> Result<(), ApplyError> {
        self.remove_finalizer(primary, primary.object, Some(finalizer))
            .await
    }

    async fn patch_finalizers(
        &self,
        primary: &Primary<'_>,
        obj: &DynamicObject,
        list: Vec<String>,
    ) -> Result<DynamicObject, ApplyError> {
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
    ) -> Result<DynamicObject, kube::Error> {
        metadata["resourceVersion"] = json!(obj.resource_version());
        self.wrote();
        api.patch(
            &obj.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&json!({ "metadata": metadata })),
        )
        .await
    }

    /// Patches the primary's labels, annotations and finalizers; returns the updated object
    /// when it wrote.
    pub(super) async fn patch_primary_metadata(
        &self,
        primary: &Primary<'_>,
        obj: &DynamicObject,
        patch: &Value,
    ) -> Result<Option<DynamicObject>, ApplyError> {
        odh_plugin_runtime::check_primary_metadata(patch).map_err(ApplyError::Invalid)?;
        let Some(fields) = patch.as_object() else {
            return Ok(None);
        };
        if metadata_holds(obj, fields) {
            return Ok(None);
        }
        self.patch_metadata(&primary_api(&self.client, primary), obj, patch.clone())
            .await
            .map(Some)
            .map_err(|source| ApplyError::Kube {
                what: format!("updating the metadata of {}", primary.name),
                source,
            })
    }

    pub(super) async fn apply_status(
        &self,
        plugin: &str,
        field_manager: &str,
        primary: &Primary<'_>,
        obj: &DynamicObject,
        status: &Value,
    ) -> Result<(), ApplyError> {
        let resource = &primary.kind.resource;
        let key = AppliedKey {
            field_manager: format!("{plugin}/status"),
            gvk: Gvk::from_api_version(&resource.api_version, &resource.kind),
            namespace: primary.namespace.map(str::to_string),
            name: primary.name.to_string(),
        };
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
            &PatchParams::apply(field_manager).force(),
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

/// `patch` with its `finalizers` list (if it has one) rebased from `seen`, the list the
/// plugin saw, onto `now`, the primary's list at this point (after the host added the manifest
/// finalizer, say): the plugin's removals and additions, in its order, and the manifest
/// finalizer's `action`. Upstream adds finalizers one by one, so each lands after those before.
pub(super) fn rebase_finalizers(
    patch: &Value,
    seen: &[String],
    now: &[String],
    action: FinalizerAction,
    finalizer: Option<&str>,
) -> Value {
    let mut patch = patch.clone();
    let Some(list) = patch.get_mut("finalizers").and_then(Value::as_array_mut) else {
        return patch;
    };
    let wanted: Vec<&str> = list.iter().filter_map(Value::as_str).collect();
    let mut rebased: Vec<String> = now
        .iter()
        .filter(|f| wanted.contains(&f.as_str()) || !seen.contains(f))
        .cloned()
        .collect();
    for f in wanted {
        if !seen.iter().any(|s| s == f) && !rebased.iter().any(|r| r == f) {
            rebased.push(f.to_string());
        }
    }
    if let Some(f) = finalizer {
        match action {
            FinalizerAction::Add if !rebased.iter().any(|x| x == f) => rebased.push(f.to_string()),
            FinalizerAction::Remove => rebased.retain(|x| x != f),
            _ => {}
        }
    }
    *list = rebased.into_iter().map(Value::from).collect();
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

#[cfg(test)]
mod tests {
    use super::*;

    const ODH: &str = "widget.example.com/finalizer";
    const MR: &str = "registry.example.com/finalizer";

    fn list(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn rebased(wanted: &[&str], seen: &[&str], now: &[&str], action: FinalizerAction) -> Value {
        let patch = json!({"finalizers": wanted, "labels": {"a": "b"}});
        let out = rebase_finalizers(&patch, &list(seen), &list(now), action, Some(ODH));
        assert_eq!(out["labels"], json!({"a": "b"}));
        out["finalizers"].clone()
    }

    #[test]
    fn d20_a_fresh_object_gets_the_manifest_finalizer_before_the_plugins() {
        // The host added ODH first; the plugin, which saw none, asks for MR.
        let out = rebased(&[MR], &[], &[ODH], FinalizerAction::Add);
        assert_eq!(out, json!([ODH, MR]));
    }

    #[test]
    fn the_plugins_removal_and_the_manifest_removal_both_hold() {
        let out = rebased(
            &["z.example/last", ODH],
            &[ODH, MR, "z.example/last"],
            &[ODH, MR, "z.example/last"],
            FinalizerAction::Remove,
        );
        assert_eq!(out, json!(["z.example/last"]));
    }

    #[test]
    fn finalizers_others_added_since_the_plugin_looked_are_kept() {
        let out = rebased(&[MR], &[], &["other.example/x"], FinalizerAction::Keep);
        assert_eq!(out, json!(["other.example/x", MR]));
    }

    #[test]
    fn a_patch_without_finalizers_is_left_alone() {
        let patch = json!({"labels": {"a": null}});
        let out = rebase_finalizers(
            &patch,
            &[],
            &list(&[ODH]),
            FinalizerAction::Remove,
            Some(ODH),
        );
        assert_eq!(out, patch);
    }
}
