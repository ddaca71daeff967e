//! A plugin's event filters (WIT 0.1.4 `event-filters`) applied to watch events: what
//! controller-runtime's predicates decide, decided here so a dropped event costs no plugin call.

use std::borrow::Cow;

use serde_json::Value;

use crate::cache::{CachedObject, Change};
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
    if !filter.admits_name(change.object.name()) {
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
            (UpdateFilter::Changed(pointers), Some(old)) => {
                let (mut old, mut new) = (Fields::of(old), Fields::of(&change.object));
                pointers.iter().any(|p| old.at(p) != new.at(p))
            }
        },
    }
}

/// An object's values at JSON Pointers. Labels are read in place; anything else from the
/// object parsed once, on the first pointer that needs it (a cached object is JSON text).
struct Fields<'a> {
    obj: &'a CachedObject,
    parsed: Option<Value>,
}

impl<'a> Fields<'a> {
    fn of(obj: &'a CachedObject) -> Self {
        Self { obj, parsed: None }
    }

    /// The value at `pointer`, `None` when absent.
    fn at(&mut self, pointer: &str) -> Option<Value> {
        if let Some(rest) = pointer.strip_prefix("/metadata/labels")
            && (rest.is_empty() || rest.starts_with('/'))
        {
            let labels = self.obj.labels();
            if rest.is_empty() {
                return serde_json::to_value(labels).ok();
            }
            let key = unescape(rest.strip_prefix('/')?);
            return labels.get(key.as_ref()).map(|v| Value::String(v.clone()));
        }
        let obj = self.obj;
        let doc = self
            .parsed
            .get_or_insert_with(|| obj.to_value().unwrap_or(Value::Null));
        doc.pointer(pointer).cloned()
    }
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

    fn cm(labels: Value, data: Value) -> Arc<CachedObject> {
        cm_of(labels, data, 1)
    }

    fn cm_of(labels: Value, data: Value, generation: i64) -> Arc<CachedObject> {
        let obj = serde_json::from_value(json!({
            "metadata": {"name": "inferenceservice-config", "namespace": "ns", "labels": labels,
                "generation": generation, "resourceVersion": "1"},
            "data": data}))
        .unwrap();
        let types = kube::api::TypeMeta {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
        };
        Arc::new(CachedObject::new(obj, &types).unwrap())
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

    fn change(old: Option<Arc<CachedObject>>, new: Arc<CachedObject>, deleted: bool) -> Change {
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
        let bumped = cm_of(json!({"a": "1"}), json!({}), 2);
        assert!(check(&generation, &change(Some(a), bumped, false)));
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
