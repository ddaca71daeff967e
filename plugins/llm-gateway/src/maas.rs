//! The MaaS RBAC cleanup (spec §6): legacy Roles and RoleBindings of the 3.3 release.

use odh_plugin_sdk::{Ctx, Error, Manifest, Outcome, Plan, ReconcileRequest};

use crate::settings::Settings;

pub const ROLES: &str = "maas-rbac-cleanup-roles";
pub const ROLE_BINDINGS: &str = "maas-rbac-cleanup-rolebindings";

/// This cleanup's part of the plugin's manifest.
pub fn declare(manifest: Manifest) -> Manifest {
    manifest
}

pub fn reconcile(_request: &ReconcileRequest, _cx: &Ctx<Settings>) -> Result<Outcome, Error> {
    Ok(Plan::new().into_outcome())
}
