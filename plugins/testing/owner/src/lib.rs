//! A test plugin for the host's reconcile machinery: every ConfigMap labelled
//! `odh-test/primary=true` gets a `<name>-owned` ConfigMap (controller owner reference) mirroring
//! its `data.value`, and a finalizer that deletes the owned ConfigMap before the primary goes.
//! A primary with `data.shared: <name>` also co-owns ConfigMap `<name>` (a plain owner
//! reference, as objects shared by several primaries need). A primary with
//! `data.tombstone: <name>` writes an unowned ConfigMap `<name>` recording its deletion during
//! its cleanup (a cleanup write that can be made to fail with a name the apiserver refuses).
//! A primary reconciled as gone (deleted, or no longer labelled) has its owned ConfigMap deleted
//! by name: garbage collection takes it only from a primary that is really deleted.

use odh_plugin_sdk::{
    Controller, Ctx, Error, Manifest, NoSettings, Object, Outcome, Plan, Plugin, ReconcileRequest,
};
use odh_plugin_sdk::{core_gvk, json, object_key};

pub const FINALIZER: &str = "odh-test.opendatahub.io/cleanup";
pub const PRIMARY_SELECTOR: &str = "odh-test/primary=true";

pub struct Owner;

impl Plugin for Owner {
    type Settings = NoSettings;

    fn manifest() -> Manifest {
        let cm = core_gvk("ConfigMap");
        Manifest::new("owner", "0.1.0")
            .description("Owns a <name>-owned ConfigMap per labelled ConfigMap (host tests)")
            .controller(
                Controller::new("owner", cm.clone())
                    .primary_label_selector(PRIMARY_SELECTOR)
                    .owns(cm.clone())
                    .finalizer(FINALIZER),
            )
    }

    fn reconcile(request: &ReconcileRequest, _: &Ctx<NoSettings>) -> Result<Outcome, Error> {
        Ok(match request.object()? {
            Some(primary) => decide(&primary),
            None => gone(request.key.namespace.as_deref(), &request.key.name),
        })
    }
}

odh_plugin_sdk::plugin!(Owner);

fn owned_name(primary: &Object) -> String {
    format!("{}-owned", primary.name())
}

/// A primary this controller no longer sees: its owned ConfigMap goes (a no-op when the
/// primary's cleanup deleted it already).
pub fn gone(namespace: Option<&str>, name: &str) -> Outcome {
    let mut plan = Plan::new();
    plan.delete(object_key(
        &core_gvk("ConfigMap"),
        namespace,
        &format!("{name}-owned"),
    ));
    plan.into_outcome()
}

/// What the world around one primary should look like.
pub fn decide(primary: &Object) -> Outcome {
    let mut plan = Plan::new();
    if primary.is_deleting() {
        let key = object_key(
            &core_gvk("ConfigMap"),
            primary.namespace(),
            &owned_name(primary),
        );
        plan.delete(key);
        if let Some(tombstone) = primary.str_at(&["data", "tombstone"]) {
            let record = Object::new(&core_gvk("ConfigMap"), primary.namespace(), tombstone)
                .with("data", json!({ "deleted": primary.name() }));
            plan.apply_unowned(record);
        }
        plan.remove_finalizer();
        plan.event_normal("Finalized", "deleted the owned ConfigMap");
        return plan.into_outcome();
    }
    let value = primary
        .str_at(&["data", "value"])
        .unwrap_or_default()
        .to_string();
    let owned = Object::new(
        &core_gvk("ConfigMap"),
        primary.namespace(),
        &owned_name(primary),
    )
    .with("data", json!({ "source": primary.name(), "value": value }));
    // The shared object comes first: a failing one (a bad name) must not hold back the rest.
    plan.add_finalizer();
    if let Some(shared) = primary.str_at(&["data", "shared"]) {
        let shared = Object::new(&core_gvk("ConfigMap"), primary.namespace(), shared)
            .with("data", json!({ "shared": "true" }));
        plan.apply_shared(shared);
    }
    plan.apply_owned(owned);
    plan.into_outcome()
}

#[cfg(test)]
mod tests {
    use super::*;
    use odh_plugin_sdk::{FinalizerAction, Ownership};

    fn primary(deleting: bool) -> Object {
        let mut o = Object::new(&core_gvk("ConfigMap"), Some("ns"), "p")
            .with("data", json!({"value": "v1"}));
        if deleting {
            o.set(
                &["metadata", "deletionTimestamp"],
                json!("2026-01-01T00:00:00Z"),
            );
        }
        o
    }

    #[test]
    fn a_live_primary_gets_its_owned_config_map_and_the_finalizer() {
        let out = decide(&primary(false));
        assert_eq!(out.apply.len(), 1);
        assert_eq!(out.finalizer, FinalizerAction::Add);
        let owned: odh_plugin_sdk::Value =
            odh_plugin_sdk::serde_json::from_str(&out.apply[0].object).unwrap();
        assert_eq!(owned["metadata"]["name"], "p-owned");
        assert_eq!(owned["data"]["value"], "v1");
    }

    #[test]
    fn a_shared_object_comes_first_and_is_co_owned() {
        let mut primary = primary(false);
        primary.set(&["data", "shared"], "common");
        let out = decide(&primary);
        assert_eq!(
            out.applied_kinds(),
            ["ConfigMap/common", "ConfigMap/p-owned"]
        );
        assert_eq!(out.apply[0].ownership, Ownership::Owner);
        assert_eq!(out.apply[1].ownership, Ownership::Controller);
        out.assert_declared(&Owner::manifest());
    }

    #[test]
    fn a_deleted_primary_with_a_tombstone_writes_it_unowned() {
        let mut primary = primary(true);
        primary.set(&["data", "tombstone"], "gone");
        let out = decide(&primary);
        assert_eq!(out.applied_kinds(), ["ConfigMap/gone"]);
        assert_eq!(out.apply[0].ownership, Ownership::None);
        assert_eq!(out.finalizer, FinalizerAction::Remove);
    }

    #[test]
    fn a_primary_seen_as_gone_loses_its_owned_config_map() {
        let out = Owner::reconcile(
            &ReconcileRequest::new("owner", Some("ns"), "p"),
            &Ctx::new(&NoSettings, &odh_plugin_sdk::testing::FakeCluster::new()),
        )
        .unwrap();
        assert!(out.apply.is_empty());
        assert!(out.deleted("ConfigMap", "p-owned"));
        assert_eq!(out.finalizer, FinalizerAction::Keep);
    }

    #[test]
    fn a_deleted_primary_cleans_up_and_releases_the_finalizer() {
        let out = decide(&primary(true));
        assert!(out.apply.is_empty());
        assert_eq!(out.delete.len(), 1);
        assert_eq!(out.finalizer, FinalizerAction::Remove);
        assert_eq!(out.events[0].reason, "Finalized");
    }
}
