//! A later version of the `owner` test plugin (same name, same controller) whose manifest also
//! reads Secrets: what a vendor's update asking for more than the admin pinned looks like. The
//! host must refuse it while the pinned grants withhold the new read; it never gets to run, so
//! its reconcile does nothing.

use odh_plugin_sdk::core_gvk;
use odh_plugin_sdk::{
    Controller, Ctx, Error, Manifest, NoSettings, Outcome, Plan, Plugin, ReconcileRequest,
};

pub struct Grown;

impl Plugin for Grown {
    type Settings = NoSettings;

    fn manifest() -> Manifest {
        let cm = core_gvk("ConfigMap");
        Manifest::new("owner", "0.2.0")
            .description("owner, asking to read Secrets too (host tests)")
            .controller(
                Controller::new("owner", cm.clone())
                    .primary_label_selector("odh-test/primary=true")
                    .owns(cm)
                    .finalizer("odh-test.opendatahub.io/cleanup"),
            )
            .reads([core_gvk("Secret")])
    }

    fn reconcile(_: &ReconcileRequest, _: &Ctx<NoSettings>) -> Result<Outcome, Error> {
        Ok(Plan::new().into_outcome())
    }
}

odh_plugin_sdk::plugin!(Grown);
