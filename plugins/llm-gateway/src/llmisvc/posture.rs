//! The auth posture check (docs/plugins/llm-gateway.md, "Controller `llminferenceservice`",
//! step 6): services of one `serving.kserve.io/routing-group` that
//! disagree on auth get a Warning Event; nothing is blocked or changed.

use odh_kinds::gvk;
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{Error, Object, Plan, go};

use crate::predicates::{ROUTING_GROUP, auth_enabled};

pub const REASON: &str = "AuthPostureMismatch";

pub fn reconcile(service: &Object, cluster: &dyn Cluster, plan: &mut Plan) -> Result<(), Error> {
    let Some(group) = service.label(ROUTING_GROUP).filter(|g| !g.is_empty()) else {
        return Ok(());
    };
    let members = cluster
        .list_objects(
            &gvk::llm_inference_service(),
            service.namespace(),
            Some(&format!("{ROUTING_GROUP}={group}")),
        )
        .map_err(|e| e.context(format!("listing routing group {}", go::quote(group))))?;
    if members.len() < 2 {
        return Ok(());
    }
    let (mut with_auth, mut without_auth) = (Vec::new(), Vec::new());
    for member in members.iter().filter(|m| !m.is_deleting()) {
        let names = if auth_enabled(member) {
            &mut with_auth
        } else {
            &mut without_auth
        };
        names.push(member.name().to_string());
    }
    if !with_auth.is_empty() && !without_auth.is_empty() {
        with_auth.sort();
        without_auth.sort();
        plan.event_warning(
            REASON,
            format!(
                "auth posture mismatch in group {}: [{}] have enable-auth=true, [{}] have enable-auth=false",
                go::quote(group),
                with_auth.join(", "),
                without_auth.join(", ")
            ),
        );
    }
    Ok(())
}
