//! Assertions on an [`Outcome`], whose objects travel as JSON text.

use crate::{Manifest, Object, Outcome, Ownership};

/// One object an outcome applies, parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct Applied {
    pub object: Object,
    pub ownership: Ownership,
}

impl Outcome {
    /// Every applied object, parsed (panics on JSON the host would refuse).
    pub fn applied_objects(&self) -> Vec<Applied> {
        self.apply
            .iter()
            .map(|d| Applied {
                object: Object::parse(&d.object).expect("an applied object is a JSON object"),
                ownership: d.ownership,
            })
            .collect()
    }

    /// The applied object of `kind` named `name`, if any.
    pub fn applied(&self, kind: &str, name: &str) -> Option<Applied> {
        self.applied_objects()
            .into_iter()
            .find(|a| a.object.kind() == kind && a.object.name() == name)
    }

    /// The applied object of `kind` named `name`; panics (showing the outcome) when absent.
    pub fn applied_object(&self, kind: &str, name: &str) -> Object {
        self.applied(kind, name)
            .unwrap_or_else(|| panic!("{kind} {name} not applied; outcome: {self:?}"))
            .object
    }

    /// `Kind/name` of every applied object, in order.
    pub fn applied_kinds(&self) -> Vec<String> {
        self.applied_objects()
            .iter()
            .map(|a| format!("{}/{}", a.object.kind(), a.object.name()))
            .collect()
    }

    /// Whether the outcome asks to delete the object of `kind` named `name`.
    pub fn deleted(&self, kind: &str, name: &str) -> bool {
        self.delete
            .iter()
            .any(|k| k.gvk.kind == kind && k.name == name)
    }

    /// The message of the outcome's error, if it has one.
    pub fn error_message(&self) -> Option<&str> {
        self.error.as_ref().map(|e| e.message())
    }

    /// The merge patch of the primary's metadata, parsed.
    pub fn primary_metadata_patch(&self) -> Option<serde_json::Value> {
        self.primary_metadata
            .as_deref()
            .map(|p| serde_json::from_str(p).expect("primary-metadata is JSON"))
    }

    /// The primary as the host leaves it after the metadata patch (the finalizer action not
    /// folded in).
    pub fn patched_primary(&self, primary: &Object) -> Object {
        let mut patched = primary.clone();
        if let Some(patch) = self.primary_metadata_patch() {
            crate::json::merge_patch(&mut patched.0, &serde_json::json!({ "metadata": patch }));
        }
        patched
    }

    /// Panics unless every kind the outcome applies or deletes is in the manifest's `writes`
    /// (the host refuses the others).
    pub fn assert_declared(&self, manifest: &Manifest) {
        let applied = self.applied_objects().into_iter().map(|a| a.object.gvk());
        let deleted = self.delete.iter().map(|k| k.gvk.clone());
        let undeclared: Vec<String> = applied
            .chain(deleted)
            .filter(|gvk| !manifest.writes.contains(gvk))
            .map(|gvk| gvk.to_string())
            .collect();
        assert!(
            undeclared.is_empty(),
            "plugin {:?} writes kinds its manifest does not declare in `writes`: {}",
            manifest.name,
            undeclared.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::{Controller, Manifest, Object, Ownership, Plan, core_gvk, gvk, json, object_key};

    fn manifest() -> Manifest {
        let cm = core_gvk("ConfigMap");
        Manifest::new("p", "0.1.0")
            .controller(Controller::new("p", cm.clone()).owns(cm))
            .writes([core_gvk("Secret")])
    }

    fn outcome() -> crate::Outcome {
        let mut plan = Plan::new();
        plan.apply_owned(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}),
        );
        plan.apply_shared(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}));
        plan.delete(object_key(&core_gvk("Secret"), Some("ns"), "old"));
        plan.set_primary_label("l", Some("v"));
        plan.set_primary_label("gone", None);
        plan.into_outcome()
    }

    #[test]
    fn finds_applied_and_deleted_objects() {
        let o = outcome();
        assert_eq!(
            o.applied("Secret", "s").unwrap().ownership,
            Ownership::Owner
        );
        assert!(o.applied("Secret", "a").is_none());
        assert_eq!(o.applied_object("ConfigMap", "a").name(), "a");
        assert_eq!(o.applied_kinds(), ["ConfigMap/a", "Secret/s"]);
        assert!(o.deleted("Secret", "old") && !o.deleted("Secret", "s"));
        assert_eq!(o.error_message(), None);
    }

    #[test]
    fn patched_primary_applies_the_metadata_patch() {
        let primary =
            Object(json!({"metadata": {"name": "p", "labels": {"gone": "1", "kept": "2"}}}));
        let patched = outcome().patched_primary(&primary);
        assert_eq!(
            patched.0,
            json!({"metadata": {"name": "p", "labels": {"kept": "2", "l": "v"}}})
        );
    }

    #[test]
    fn declared_writes_pass() {
        outcome().assert_declared(&manifest());
    }

    #[test]
    #[should_panic(
        expected = "writes kinds its manifest does not declare in `writes`: Route.route.openshift.io/v1"
    )]
    fn undeclared_writes_panic() {
        let mut plan = Plan::new();
        plan.delete(object_key(
            &gvk("route.openshift.io", "v1", "Route"),
            Some("ns"),
            "r",
        ));
        plan.into_outcome().assert_declared(&manifest());
    }

    #[test]
    #[should_panic(expected = "ConfigMap x not applied")]
    fn applied_object_panics_when_absent() {
        outcome().applied_object("ConfigMap", "x");
    }
}
