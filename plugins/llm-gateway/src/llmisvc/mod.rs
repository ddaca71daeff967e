//! The `llminferenceservice` controller (docs/plugins/llm-gateway.md, "Controller
//! `llminferenceservice`"): the `baseRefs` merge, then the HTTPRoute
//! AuthPolicy and auth posture sub-reconcilers; the deletion path.

pub mod authpolicy;
pub mod config;
pub mod mapping;
pub mod posture;

use odh_kinds::gvk;
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{Ctx, Error, Object, Outcome, Plan, ReconcileRequest};

use crate::predicates::is_stopped;
use crate::settings::Settings;

pub const CONTROLLER: &str = "llminferenceservice";
pub const RECONCILE_ERROR: &str = "ReconcileError";

/// How soon a service whose AuthPolicy cannot be made for want of Kuadrant (or the Gateway
/// API) is looked at again: the CRDs may be installed later (nothing else would tell us), and
/// a kind that is briefly not served while its CRD is being updated must not hold the policy
/// back for long.
pub const KIND_MISSING_RETRY_MS: u64 = 60 * 1000;

pub fn reconcile(request: &ReconcileRequest, cx: &Ctx<Settings>) -> Result<Outcome, Error> {
    let mut plan = Plan::new();
    // Gone: the owned AuthPolicies go with it (garbage collection).
    let Some(service) = request.object()? else {
        return Ok(plan.into_outcome());
    };
    if service.is_deleting() {
        plan.step(|plan| deletion(&service, cx.cluster, plan));
        return Ok(plan.into_outcome());
    }
    let specs = match config::base_specs(&service, cx.settings.system_namespace(), cx.cluster) {
        Ok(specs) => specs,
        // Upstream returns this without an Event.
        Err(e) => {
            plan.fail(e);
            return Ok(plan.into_outcome());
        }
    };
    let merged = config::merged(&service, specs);
    if is_stopped(&merged) {
        return Ok(plan.into_outcome());
    }
    let mut errors = Vec::new();
    if let Err(e) = authpolicy::reconcile(&merged, cx.cluster, &mut plan) {
        errors.push(e);
    }
    if let Err(e) = posture::reconcile(&merged, cx.cluster, &mut plan) {
        errors.push(e);
    }
    let (missing_kinds, errors): (Vec<Error>, Vec<Error>) =
        errors.into_iter().partition(Error::is_no_match);
    // Kuadrant not installed (the doc's paragraph of that name): upstream fails (and retries)
    // every reconcile. The
    // same Warning is recorded here, but as a standing condition: a slow recheck, not an error
    // loop with back-off and a log line per attempt.
    if !missing_kinds.is_empty() {
        plan.event_warning(RECONCILE_ERROR, failure_message(&missing_kinds));
        plan.requeue_within(KIND_MISSING_RETRY_MS);
    }
    if !errors.is_empty() {
        plan.event_warning(RECONCILE_ERROR, failure_message(&errors));
        let joined = errors.into_iter().reduce(Error::join).expect("not empty");
        plan.fail(joined);
    }
    Ok(plan.into_outcome())
}

/// Upstream's Event text: `Failed to reconcile LLMInferenceService: ` and Go's multi-error list.
pub fn failure_message(errors: &[Error]) -> String {
    let count = match errors.len() {
        1 => "1 error occurred".to_string(),
        n => format!("{n} errors occurred"),
    };
    let points: Vec<String> = errors
        .iter()
        .map(|e| format!("* {}", e.message()))
        .collect();
    format!(
        "Failed to reconcile LLMInferenceService: {count}:\n\t{}\n\n",
        points.join("\n\t")
    )
}

/// The deletion path (the doc's step 2): this controller holds no finalizer; the path runs while
/// another one (KServe's) keeps the service. Upstream's cleanup of a namespace's last service does
/// nothing; only the list it depends on is kept, so a failing list still fails the reconcile.
fn deletion(service: &Object, cluster: &dyn Cluster, plan: &mut Plan) -> Result<(), Error> {
    authpolicy::delete(service, cluster, plan)?;
    cluster.list(&gvk::llm_inference_service(), service.namespace(), None)?;
    Ok(())
}
