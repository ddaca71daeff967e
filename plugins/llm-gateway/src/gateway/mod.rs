//! The `gateway-auth-bootstrap` controller (spec §5): per Gateway "in use", the Authorino-TLS
//! EnvoyFilter, the token-review AuthPolicy and the PodMonitor.

use odh_kinds::gvk;
use odh_plugin_sdk::{
    Controller, Ctx, Error, Manifest, Outcome, Plan, ReconcileRequest, RequestKey, WatchEvent,
};

use crate::settings::Settings;

pub const CONTROLLER: &str = "gateway-auth-bootstrap";

/// This controller's part of the plugin's manifest.
pub fn declare(manifest: Manifest) -> Manifest {
    manifest.controller(Controller::new(CONTROLLER, gvk::gateway()))
}

pub fn reconcile(_request: &ReconcileRequest, _cx: &Ctx<Settings>) -> Result<Outcome, Error> {
    Ok(Plan::new().into_outcome())
}

pub fn map(_event: &WatchEvent, _cx: &Ctx<Settings>) -> Result<Vec<RequestKey>, Error> {
    Ok(Vec::new())
}
