//! A plugin's event filters (WIT 0.1.4 `event-filters`) applied to watch events: what
//! controller-runtime's predicates decide, decided here so a dropped event costs no plugin call.

use std::borrow::Cow;

use kube::ResourceExt;
use kube::api::DynamicObject;
use serde_json::Value;

use crate::cache::Change;
use odh_plugin_runtime::wire::{EventFilter, UpdateFilter};

/// What kind of event a change is to a filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Seen {
    /// The cache did not hold the object (a creation, the initial list).
    Created,
    /// The cache held it before.
    Updated,
    Deleted,
}

impl Seen {
    pub(super) fn of(change: &Change) -> Seen {
        match (change.deleted, &change.old) {
            (true, _) => Seen::Deleted,
            (false, None) => Seen::Created,
            (false, Some(_)) => Seen::Updated,
        }
    }
}

/// Whether `change`, seen as `seen`, passes `filter`.
pub(super) fn passes(filter: &EventFilter, change: &Change, seen: Seen) -> bool {
    if !filter.admits_name(&change.object.name_any()) {
        return false;
    }
    match seen {
        Seen::Created => filter.create,
        Seen::Deleted => filter.delete,
        Seen::Updated => match (&filter.update, &change.old) {
            (UpdateFilter::Always, _) => true,
            (UpdateFilter::Never, _) => false,
            // An update whose previous state is unknown passes (the contract says so).
            (UpdateFilter::Changed(_), None) => true,
            (UpdateFilter::Changed(pointers), Some(old)) => pointers
                .iter()
                .any(|p| value_at(old, p) != value_at(&change.object, p)),
        },
    }
}

/// The value at a JSON Pointer of an object, `None` when absent. Labels, annotations and the
/// generation are read in place: serialising the metadata (managed fields included) for every
/// event of a busy kind would cost more than the plugin call the filter saves.
fn value_at<'a>(obj: &'a DynamicObject, pointer: &str) -> Option<Cow<'a, Value>> {
    let Some(meta) = pointer.strip_prefix("/metadata") else {
        if pointer.is_empty() {
            return serde_json::to_value(obj).ok().map(Cow::Owned);
        }
        return obj.data.pointer(pointer).map(Cow::Borrowed);
    };
    let in_map = |map: &std::collections::BTreeMap<String, String>, rest: &str| {
        if rest.is_empty() {
            return Some(Cow::Owned(serde_json::to_value(map).ok()?));
        }
        let key = unescape(rest.strip_prefix('/')?);
        map.get(key.as_ref())
            .map(|v| Cow::Owned(Value::String(v.clone())))
    };
    if let Some(rest) = meta.strip_prefix("/labels")
        && (rest.is_empty() || rest.starts_with('/'))
    {
        return in_map(obj.labels(), rest);
    }
    if let Some(rest) = meta.strip_prefix("/annotations")
        && (rest.is_empty() || rest.starts_with('/'))
    {
        return in_map(obj.annotations(), rest);
    }
    if meta == "/generation" {
        return obj.metadata.generation.map(|g| Cow::Owned(Value::from(g)));
    }
    let whole = serde_json::to_value(&obj.metadata).ok()?;
    if meta.is_empty() {
        return Some(Cow::Owned(whole));
    }
    whole.pointer(meta).cloned().map(Cow::Owned)
}

/// A reference token of RFC 6901: `~1` is `/`, `~0` is `~`.
fn unescape(token: &str) -> Cow<'_, str> {
    if token.contains('~') {
        Cow::Owned(token.replace("~1", "/").replace("~0", "~"))
    } else {
        Cow::Borrowed(token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use odh_plugin_runtime::gvk::Gvk;
    use serde_json::json;
    use std::sync::Arc;

    fn object(v: Value) -> Arc<DynamicObject> {
        Arc::new(serde_json::from_value(v).unwrap())
    }

    fn cm(labels: Value, data: Value) -> Arc<DynamicObject> {
        object(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "inferenceservice-config", "namespace": "ns", "labels": labels,
                "generation": 1, "resourceVersion": "1"},
            "data": data}))
    }

    fn filter(update: UpdateFilter) -> EventFilter {
        EventFilter {
            gvk: Gvk::new("", "v1", "ConfigMap"),
            names: vec!["inferenceservice-config".into()],
            create: false,
            update,
            delete: true,
        }
    }

    fn change(old: Option<Arc<DynamicObject>>, new: Arc<DynamicObject>, deleted: bool) -> Change {
        Change {
            object: new,
            old,
            deleted,
        }
    }

    fn check(f: &EventFilter, c: &Change) -> bool {
        passes(f, c, Seen::of(c))
    }

    #[test]
    fn an_update_passes_when_a_declared_pointer_changed() {
        let f = filter(UpdateFilter::Changed(vec![
            "/data/ingress".into(),
            "/metadata/labels/opendatahub.io~1managed".into(),
        ]));
        let base = cm(json!({"a": "1"}), json!({"ingress": "x", "other": "1"}));
        let other_changed = cm(json!({"a": "2"}), json!({"ingress": "x", "other": "2"}));
        assert!(!check(
            &f,
            &change(Some(base.clone()), other_changed, false)
        ));
        let ingress = cm(json!({"a": "1"}), json!({"ingress": "y"}));
        assert!(check(&f, &change(Some(base.clone()), ingress, false)));
        let managed = cm(
            json!({"opendatahub.io/managed": "true"}),
            json!({"ingress": "x"}),
        );
        assert!(
            check(&f, &change(Some(base.clone()), managed, false)),
            "absent → present"
        );
        let gone = cm(json!({"a": "1"}), json!({"other": "1"}));
        assert!(
            check(&f, &change(Some(base.clone()), gone, false)),
            "present → absent"
        );
        assert!(
            check(&f, &change(None, base.clone(), true)),
            "a deletion passes"
        );
        assert!(!check(&f, &change(None, base, false)), "no creations");
    }

    #[test]
    fn whole_maps_and_other_metadata_compare_by_value() {
        let f = filter(UpdateFilter::Changed(vec![
            "/metadata/labels".into(),
            "/metadata/resourceVersion".into(),
        ]));
        let a = cm(json!({"a": "1"}), json!({}));
        let relabelled = cm(json!({"a": "1", "b": "2"}), json!({}));
        assert!(check(&f, &change(Some(a.clone()), relabelled, false)));
        assert!(!check(&f, &change(Some(a.clone()), a.clone(), false)));
        let generation = filter(UpdateFilter::Changed(vec!["/metadata/generation".into()]));
        assert!(!check(
            &generation,
            &change(Some(a.clone()), a.clone(), false)
        ));
        let mut bumped = (*a).clone();
        bumped.metadata.generation = Some(2);
        assert!(check(
            &generation,
            &change(Some(a), Arc::new(bumped), false)
        ));
    }

    #[test]
    fn names_always_and_never() {
        let obj = cm(json!({}), json!({}));
        let mut f = filter(UpdateFilter::Never);
        assert!(!check(&f, &change(Some(obj.clone()), obj.clone(), false)));
        f.update = UpdateFilter::Always;
        assert!(check(&f, &change(Some(obj.clone()), obj.clone(), false)));
        f.names = vec!["other".into()];
        assert!(!check(&f, &change(Some(obj.clone()), obj.clone(), false)));
        assert!(
            !check(&f, &change(None, obj, true)),
            "the name decides deletes too"
        );
    }

    #[test]
    fn pointer_tokens_are_unescaped() {
        assert_eq!(unescape("a~1b~0c"), "a/b~c");
        assert_eq!(unescape("plain"), "plain");
    }
}
