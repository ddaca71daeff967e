//! Turns a plugin's outcome into API writes: server-side apply with one field manager per
//! plugin, nothing sent when the cache already holds what the plugin wants, deletes only of
//! objects we manage, status through the status subresource, finalizers, Events. Every write is
//! checked against the plugin's write grant before anything is sent.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, Preconditions};
use kube::runtime::events::{Event as KubeEvent, EventType, Recorder, Reporter};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use crate::cache::{self, Caches};
use crate::gvk::Gvk;
use crate::plugin::Plugin;
use crate::plugin::wire::{Desired, Event, FinalizerAction, ObjectKey, Outcome, Ownership};

/// Field manager of a plugin's writes.
pub fn field_manager(plugin: &str) -> String {
    format!("odh-model-controller/{plugin}")
}

/// The primary object a reconcile was about.
pub struct Primary<'a> {
    pub resource: &'a ApiResource,
    pub namespaced: bool,
    /// `None` when the object is gone.
    pub object: Option<&'a DynamicObject>,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
}

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error(
        "plugin {plugin:?} may not write {kind}: declare it in the manifest's writes and have it granted"
    )]
    Refused { plugin: String, kind: Gvk },
    #[error("{what}: {source}")]
    Kube { what: String, source: kube::Error },
    #[error("{0}")]
    Invalid(String),
}

type AppliedKey = (String, Gvk, Option<String>, String);

pub struct Applier {
    client: Client,
    caches: Arc<Caches>,
    recorder: Recorder,
    /// Hash of what each plugin last applied per object: a changed desired state is applied
    /// even when the cache still "contains" it, so fields a plugin stops declaring are removed.
    last_applied: Mutex<HashMap<AppliedKey, u64>>,
    writes: AtomicU64,
}

impl Applier {
    pub fn new(client: Client, caches: Arc<Caches>, instance: Option<String>) -> Self {
        let reporter = Reporter {
            controller: "odh-model-controller".into(),
            instance,
        };
        Self {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            caches,
            last_applied: Mutex::new(HashMap::new()),
            writes: AtomicU64::new(0),
        }
    }

    /// Write requests sent so far (applies, deletes, status and finalizer patches, Events).
    pub fn write_count(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }

    fn wrote(&self) {
        self.writes.fetch_add(1, Ordering::Relaxed);
    }

    /// Checks every object of an outcome against the plugin's write grant.
    pub fn check_grants(plugin: &Plugin, outcome: &Outcome) -> Result<(), ApplyError> {
        let refused = |kind: Gvk| ApplyError::Refused {
            plugin: plugin.name().to_string(),
            kind,
        };
        for d in &outcome.apply {
            let gvk = Gvk::of_object(&d.object).ok_or_else(|| {
                ApplyError::Invalid(format!(
                    "plugin {:?} returned an object without apiVersion/kind",
                    plugin.name()
                ))
            })?;
            if !plugin.capabilities().may_write(&gvk) {
                return Err(refused(gvk));
            }
        }
        for k in &outcome.delete {
            if !plugin.capabilities().may_write(&k.gvk) {
                return Err(refused(k.gvk.clone()));
            }
        }
        Ok(())
    }

    /// Applies a whole outcome, in the documented order.
    pub async fn apply_outcome(
        &self,
        plugin: &Plugin,
        finalizer: Option<&str>,
        primary: &Primary<'_>,
        outcome: &Outcome,
    ) -> Result<(), ApplyError> {
        Self::check_grants(plugin, outcome)?;
        let fm = field_manager(plugin.name());
        // A metadata patch that sets the whole finalizer list carries the finalizer action
        // too: two patches of one resourceVersion would conflict.
        let metadata = outcome
            .primary_metadata
            .as_ref()
            .map(|m| fold_finalizer(m, outcome.finalizer, finalizer));
        let finalizer_in_metadata = metadata
            .as_ref()
            .is_some_and(|m| m.get("finalizers").is_some());
        if let (FinalizerAction::Add, Some(f), Some(obj), false) = (
            outcome.finalizer,
            finalizer,
            primary.object,
            finalizer_in_metadata,
        ) && obj.metadata.deletion_timestamp.is_none()
            && !obj.finalizers().iter().any(|x| x == f)
        {
            let mut list = obj.finalizers().to_vec();
            list.push(f.to_string());
            self.patch_finalizers(primary, obj, list).await?;
        }
        // Objects are independent: one failing write does not hold back the others (a Route
        // on a cluster without Routes must not stop the rest), but it does hold back the
        // steps that assume them done.
        let mut failed = Vec::new();
        for d in &outcome.apply {
            if let Err(e) = self.apply_desired(plugin.name(), &fm, primary, d).await {
                failed.push(e);
            }
        }
        for key in &outcome.delete {
            if let Err(e) = self.delete_managed(&fm, primary, key).await {
                failed.push(e);
            }
        }
        if !failed.is_empty() {
            for later in &failed[1..] {
                tracing::error!(plugin = plugin.name(), object = primary.name, "{later}");
            }
            return Err(failed.swap_remove(0));
        }
        if let (Some(patch), Some(obj)) = (&metadata, primary.object) {
            self.patch_primary_metadata(primary, obj, patch).await?;
        }
        if let (Some(status), Some(obj)) = (&outcome.status, primary.object) {
            self.apply_status(plugin.name(), &fm, primary, obj, status)
                .await?;
        }
        for e in &outcome.events {
            self.event(primary, e).await;
        }
        if let (FinalizerAction::Remove, Some(f), Some(obj), false) = (
            outcome.finalizer,
            finalizer,
            primary.object,
            finalizer_in_metadata,
        ) && obj.finalizers().iter().any(|x| x == f)
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

    /// Applies objects that belong to no primary (admission side effects), after the same
    /// write-grant check. Objects must name their namespace.
    pub async fn apply_unowned(
        &self,
        plugin: &Plugin,
        objects: &[Desired],
    ) -> Result<(), ApplyError> {
        let outcome = Outcome {
            apply: objects.to_vec(),
            delete: vec![],
            status: None,
            finalizer: FinalizerAction::Keep,
            events: vec![],
            requeue_after_ms: None,
            primary_metadata: None,
            error: None,
        };
        Self::check_grants(plugin, &outcome)?;
        let nothing = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        let primary = Primary {
            resource: &nothing,
            namespaced: true,
            object: None,
            namespace: None,
            name: "",
        };
        let fm = field_manager(plugin.name());
        for d in objects {
            let unowned = Desired {
                object: d.object.clone(),
                ownership: Ownership::None,
            };
            self.apply_desired(plugin.name(), &fm, &primary, &unowned)
                .await?;
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
    async fn patch_metadata(
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

    async fn patch_primary_metadata(
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

    async fn apply_desired(
        &self,
        plugin: &str,
        fm: &str,
        primary: &Primary<'_>,
        d: &Desired,
    ) -> Result<(), ApplyError> {
        let gvk = Gvk::of_object(&d.object).expect("checked by check_grants");
        let (resource, namespaced) = cache::resolve(self.caches.client(), &gvk)
            .await
            .map_err(|e| ApplyError::Invalid(e.to_string()))?
            .ok_or_else(|| ApplyError::Invalid(format!("the cluster does not serve {gvk}")))?;
        let mut object = d.object.clone();
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                ApplyError::Invalid(format!(
                    "plugin {plugin:?} returned a {gvk} without metadata.name"
                ))
            })?
            .to_string();
        let namespace = if namespaced {
            let ns = object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .map(str::to_string);
            let ns = ns
                .or_else(|| primary.namespace.map(str::to_string))
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
        let mut manager = fm.to_string();
        if d.ownership != Ownership::None {
            let Some(owner) = primary.object else {
                tracing::debug!(plugin, %gvk, name, "not applying an owned object for a primary that is gone");
                return Ok(());
            };
            let ours = owner_reference(primary.resource, owner, d.ownership);
            if d.ownership == Ownership::Owner {
                // A shared object (e.g. KEDA's) has one plain owner per primary. Each primary
                // applies under a field manager of its own, so server-side apply merges the
                // owner references instead of one primary's apply dropping another's.
                manager = format!("{fm}/{}", ours["uid"].as_str().unwrap_or_default());
            }
            object["metadata"]["ownerReferences"] = Value::Array(vec![ours]);
        }

        let key: AppliedKey = (
            manager.clone(),
            gvk.clone(),
            namespace.clone(),
            name.clone(),
        );
        let digest = hash_value(&object);
        let unchanged = self.last_applied.lock().expect("applied lock").get(&key) == Some(&digest);
        if unchanged
            && let Some(cached) = self
                .caches
                .get(&gvk)
                .and_then(|c| c.get(namespace.as_deref(), &name))
            && holds(
                &serde_json::to_value(&*cached).unwrap_or(Value::Null),
                &object,
            )
        {
            return Ok(());
        }
        let api = api_for(&self.client, &resource, namespaced, namespace.as_deref());
        self.wrote();
        api.patch(
            &name,
            &PatchParams::apply(&manager).force(),
            &Patch::Apply(&object),
        )
        .await
        .map_err(|source| ApplyError::Kube {
            what: format!("applying {gvk} {name}"),
            source,
        })?;
        self.last_applied
            .lock()
            .expect("applied lock")
            .insert(key, digest);
        Ok(())
    }

    async fn delete_managed(
        &self,
        fm: &str,
        primary: &Primary<'_>,
        key: &ObjectKey,
    ) -> Result<(), ApplyError> {
        let Some((resource, namespaced)) = cache::resolve(self.caches.client(), &key.gvk)
            .await
            .map_err(|e| ApplyError::Invalid(e.to_string()))?
        else {
            return Ok(());
        };
        let namespace = if namespaced {
            key.namespace.as_deref().or(primary.namespace)
        } else {
            None
        };
        let api = api_for(&self.client, &resource, namespaced, namespace);
        // Read live: the cache strips managedFields, which say whether we manage the object.
        let existing = match api.get_opt(&key.name).await {
            Ok(Some(o)) => o,
            Ok(None) => return Ok(()),
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
            return self.release(&api, &existing, uid, key).await;
        }
        let ours = existing.managed_fields().iter().any(|m| {
            m.manager
                .as_deref()
                .is_some_and(|m| m == fm || m.starts_with(&format!("{fm}/")))
        });
        if !owned && !ours {
            tracing::info!(kind = %key.gvk, name = key.name, "not deleting an object this controller does not manage");
            return Ok(());
        }
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: existing.uid(),
                resource_version: None,
            }),
            ..Default::default()
        };
        self.wrote();
        match api.delete(&key.name, &params).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
            Err(source) => Err(ApplyError::Kube {
                what: format!("deleting {} {}", key.gvk, key.name),
                source,
            }),
        }
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
            Ok(()) => Ok(()),
            Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
            Err(source) => Err(ApplyError::Kube {
                what: format!("releasing {} {}", key.gvk, key.name),
                source,
            }),
        }
    }

    async fn apply_status(
        &self,
        plugin: &str,
        fm: &str,
        primary: &Primary<'_>,
        obj: &DynamicObject,
        status: &Value,
    ) -> Result<(), ApplyError> {
        let gvk = Gvk::from_api_version(&primary.resource.api_version, &primary.resource.kind);
        let key: AppliedKey = (
            format!("{plugin}/status"),
            gvk,
            primary.namespace.map(str::to_string),
            primary.name.to_string(),
        );
        let digest = hash_value(status);
        let unchanged = self.last_applied.lock().expect("applied lock").get(&key) == Some(&digest);
        if unchanged && obj.data.get("status").is_some_and(|s| contains(s, status)) {
            return Ok(());
        }
        let body = json!({
            "apiVersion": primary.resource.api_version,
            "kind": primary.resource.kind,
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
        self.last_applied
            .lock()
            .expect("applied lock")
            .insert(key, digest);
        Ok(())
    }

    /// Records an Event about the primary (or the object the plugin named). Failures are logged:
    /// an Event is never worth failing a reconcile over.
    pub async fn event(&self, primary: &Primary<'_>, e: &Event) {
        let reference = match &e.regarding {
            Some(k) => ObjectReference {
                api_version: Some(k.gvk.api_version()),
                kind: Some(k.gvk.kind.clone()),
                name: Some(k.name.clone()),
                namespace: k.namespace.clone(),
                ..Default::default()
            },
            None => ObjectReference {
                api_version: Some(primary.resource.api_version.clone()),
                kind: Some(primary.resource.kind.clone()),
                name: Some(primary.name.to_string()),
                namespace: primary.namespace.map(str::to_string),
                uid: primary.object.and_then(|o| o.uid()),
                ..Default::default()
            },
        };
        let ev = KubeEvent {
            type_: if e.type_ == "Warning" {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: e.reason.clone(),
            note: Some(event_note(&e.message)),
            action: e.reason.clone(),
            secondary: None,
        };
        self.wrote();
        if let Err(err) = self.recorder.publish(&ev, &reference).await {
            tracing::warn!(reason = e.reason, "could not record an Event: {err}");
        }
    }
}

/// The API of the primary's own kind and namespace.
fn primary_api(client: &Client, primary: &Primary<'_>) -> Api<DynamicObject> {
    api_for(
        client,
        primary.resource,
        primary.namespaced,
        primary.namespace,
    )
}

fn api_for(
    client: &Client,
    resource: &ApiResource,
    namespaced: bool,
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    match (namespaced, namespace) {
        (true, Some(ns)) => Api::namespaced_with(client.clone(), ns, resource),
        _ => Api::all_with(client.clone(), resource),
    }
}

fn owner_reference(resource: &ApiResource, owner: &DynamicObject, ownership: Ownership) -> Value {
    let mut r = json!({
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "name": owner.name_any(),
        "uid": owner.uid().unwrap_or_default(),
    });
    if ownership == Ownership::Controller {
        r["controller"] = json!(true);
        r["blockOwnerDeletion"] = json!(true);
    }
    r
}

fn hash_value(v: &Value) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    v.to_string().hash(&mut h);
    h.finish()
}

/// The apiserver refuses an Event whose note exceeds 1 kB (the whole Event is lost): longer
/// messages are cut at a character boundary, marked with an ellipsis.
fn event_note(message: &str) -> String {
    const MAX: usize = 1024;
    if message.len() <= MAX {
        return message.to_string();
    }
    let mut end = MAX - '…'.len_utf8();
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &message[..end])
}

/// `patch` with the manifest finalizer added to or removed from its `finalizers` list, if it
/// has one.
fn fold_finalizer(patch: &Value, action: FinalizerAction, finalizer: Option<&str>) -> Value {
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

impl crate::webhook::SideEffectSink for Applier {
    fn apply<'a>(
        &'a self,
        plugin: &'a Plugin,
        objects: Vec<Desired>,
    ) -> crate::webhook::SideEffectFuture<'a> {
        Box::pin(async move {
            self.apply_unowned(plugin, &objects).await.map_err(|e| {
                if let ApplyError::Refused { plugin, kind } = &e {
                    crate::metrics::Metrics::global().refused_write(plugin, &kind.to_string());
                }
                anyhow::Error::new(e)
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn event_notes_are_cut_to_what_the_apiserver_accepts() {
        assert_eq!(event_note("short"), "short");
        let long = "é".repeat(700);
        let note = event_note(&long);
        assert!(note.len() <= 1024 && note.ends_with('…'), "{}", note.len());
        assert!(long.starts_with(note.trim_end_matches('…')));
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
    fn controller_owner_references_block_deletion() {
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
        assert!(
            owner_reference(&ar, &owner, Ownership::Owner)
                .get("controller")
                .is_none()
        );
    }
}
