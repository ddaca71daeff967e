//! The MaaS RBAC cleanup (docs/plugins/llm-gateway.md, "MaaS RBAC cleanup"): the Roles
//! `*-model-post-access` and RoleBindings `*-model-post-access-tier-binding` the 3.3 release made
//! (labelled `app.kubernetes.io/managed-by: odh-model-controller`) are deleted.
//!
//! Upstream runs it once on the leader at start-up and a failure stops the process. Here two
//! controllers (they run on the leader only) reconcile the labelled Roles and RoleBindings and
//! delete those with the legacy names, whoever made them (`writes.delete-unmanaged`, granted for
//! Roles and RoleBindings): at start every existing one, later any that appears; a failed delete
//! (`failed to delete Role <ns>/<name>: ...`) is reported by the host and retried with back-off,
//! never fatal.

use odh_kinds::gvk;
use odh_plugin_sdk::{Controller, Ctx, Error, Manifest, Outcome, Plan, ReconcileRequest, log};

use crate::predicates::{MANAGED_BY, MANAGED_BY_VALUE};
use crate::settings::Settings;

pub const ROLES: &str = "maas-rbac-cleanup-roles";
pub const ROLE_BINDINGS: &str = "maas-rbac-cleanup-rolebindings";
pub const ROLE_SUFFIX: &str = "-model-post-access";
pub const ROLE_BINDING_SUFFIX: &str = "-model-post-access-tier-binding";
/// Only objects with this label are looked at (the host's cache holds no others).
pub const SELECTOR: &str = "app.kubernetes.io/managed-by=odh-model-controller";

/// This cleanup's part of the plugin's manifest.
pub fn declare(manifest: Manifest) -> Manifest {
    manifest
        .controller(Controller::new(ROLES, gvk::role()).primary_label_selector(SELECTOR))
        .controller(
            Controller::new(ROLE_BINDINGS, gvk::role_binding()).primary_label_selector(SELECTOR),
        )
        .writes([gvk::role(), gvk::role_binding()])
}

/// Whether the cleanup removes `name` (of a Role for [`ROLES`], else of a RoleBinding).
pub fn is_legacy_name(controller: &str, name: &str) -> bool {
    let suffix = if controller == ROLES {
        ROLE_SUFFIX
    } else {
        ROLE_BINDING_SUFFIX
    };
    name.ends_with(suffix)
}

pub fn reconcile(request: &ReconcileRequest, cx: &Ctx<Settings>) -> Result<Outcome, Error> {
    let plan = Plan::new();
    // Gone (NotFound): already removed.
    let Some(object) = request.object()? else {
        return Ok(plan.into_outcome());
    };
    let ours = object.label(MANAGED_BY) == Some(MANAGED_BY_VALUE);
    if !ours || !is_legacy_name(&request.controller, object.name()) || object.is_deleting() {
        return Ok(plan.into_outcome());
    }
    log::info!(
        "MaaS RBAC cleanup: deleting {} {}/{}",
        object.kind(),
        object.namespace().unwrap_or_default(),
        object.name()
    );
    // Whoever made it (upstream deletes every labelled object of a legacy name), as long as
    // the live object still carries the label.
    let namespace = object.namespace().unwrap_or_default();
    cx.writes()?
        .delete_unmanaged(vec![object.key()], SELECTOR)
        .pop()
        .unwrap_or(Ok(false))
        .map_err(|e| {
            Error::from(e).context(format!(
                "failed to delete {} {namespace}/{}",
                object.kind(),
                object.name()
            ))
        })?;
    Ok(plan.into_outcome())
}
