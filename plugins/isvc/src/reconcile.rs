//! One InferenceService reconcile (spec §1.4): the finalizer, the six steps in upstream's
//! order, the deletion path, the namespace cleanup and the Model Registry sync.

use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{Error, Object, Outcome, ReconcileRequest, json};

use crate::kinds::{self, FINALIZER};
use crate::model_registry::{self, Http};
use crate::plan::Plan;
use crate::settings::Settings;
use crate::{auth_delegator, keda, metrics, route, runtime};

pub fn reconcile(
    request: &ReconcileRequest,
    settings: &Settings,
    cluster: &dyn Cluster,
    http: &dyn Http,
) -> Result<Outcome, Error> {
    let isvc = request.object()?;
    let namespace = request.key.namespace.clone().unwrap_or_default();
    let mut plan = Plan::default();
    let mut outcome = Outcome::default();
    match &isvc {
        None => {
            plan.step(|plan| namespace_cleanup(&namespace, cluster, plan));
        }
        Some(isvc) if isvc.is_deleting() => {
            if isvc.has_finalizer(FINALIZER) {
                plan.step(|plan| auth_delegator::delete(isvc, cluster, plan));
                plan.step(|plan| keda::delete(isvc, cluster, plan));
                plan.step(|plan| namespace_cleanup(&namespace, cluster, plan));
                // Removed even when a step failed, as upstream does; the error still retries.
                outcome = outcome.remove_finalizer();
            }
        }
        Some(isvc) => {
            outcome = outcome.add_finalizer();
            serving_steps(isvc, cluster, &mut plan);
        }
    }
    if settings.model_registry.enabled {
        let config = model_registry::Config {
            bearer_token: settings.model_registry.bearer_token.clone(),
        };
        match model_registry::reconcile(isvc.as_ref().map(Object::as_value), cluster, http, &config)
        {
            Ok(mr) => {
                if let Some(change) = mr.change {
                    outcome = outcome.primary_metadata(json!({
                        "labels": change.labels,
                        "finalizers": change.finalizers,
                    }));
                }
                if let Some(ms) = mr.requeue_after_ms {
                    outcome.requeue_after_ms =
                        Some(outcome.requeue_after_ms.map_or(ms, |mine| mine.min(ms)));
                }
            }
            Err(e) => plan.errors.push(e),
        }
    }
    Ok(plan.into_outcome(outcome))
}

/// The six sub-reconcilers, always all of them, in upstream's order.
fn serving_steps(isvc: &Object, cluster: &dyn Cluster, plan: &mut Plan) {
    plan.step(|plan| auth_delegator::reconcile(isvc, cluster, plan));
    plan.step(|plan| route::reconcile(isvc, cluster, plan));
    let runtime = runtime::resolve(isvc, cluster);
    plan.step(|plan| metrics::reconcile_service(isvc, &runtime, cluster, plan));
    plan.step(|plan| metrics::reconcile_service_monitor(isvc, &runtime, cluster, plan));
    plan.step(|plan| metrics::reconcile_dashboard(isvc, &runtime, plan));
    plan.step(|plan| keda::reconcile(isvc, cluster, plan));
}

/// With no active InferenceService left in the namespace, the shared objects go (§1.6).
fn namespace_cleanup(namespace: &str, cluster: &dyn Cluster, plan: &mut Plan) -> Result<(), Error> {
    let isvcs = cluster.list_objects(&kinds::inference_service(), Some(namespace), None)?;
    if isvcs.iter().all(Object::is_deleting) {
        keda::cleanup(namespace, cluster, plan);
    }
    Ok(())
}
