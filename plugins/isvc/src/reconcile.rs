//! One InferenceService reconcile (docs/plugins/isvc.md, "Controller `inferenceservice`"): the
//! finalizer, the six steps in upstream's order, the deletion path, the namespace cleanup and the
//! Model Registry sync.

use odh_kinds::{finalizer, gvk, resolve_runtime};
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::finalizer::{Event, Release};
use odh_plugin_sdk::{Ctx, Error, Object, Outcome, Plan, ReconcileRequest};

use crate::settings::Settings;
use crate::{auth_delegator, keda, metrics, model_registry, route};

pub fn reconcile(request: &ReconcileRequest, cx: &Ctx<Settings>) -> Result<Outcome, Error> {
    let isvc = request.object()?;
    let namespace = request.key.namespace.clone().unwrap_or_default();
    let cluster = cx.cluster;
    let mut plan = Plan::new();
    match &isvc {
        None => plan.step(|plan| namespace_cleanup(&namespace, cluster, plan)),
        // Upstream removes its finalizer even when a cleanup step failed; the error still
        // retries.
        Some(isvc) => odh_plugin_sdk::finalizer::finalizer(
            &mut plan,
            isvc,
            finalizer::INFERENCE_SERVICE,
            Release::Always,
            |event, plan| {
                match event {
                    Event::Apply(isvc) => serving_steps(isvc, cluster, plan),
                    Event::Cleanup(isvc) => {
                        plan.step(|plan| auth_delegator::delete(isvc, cluster, plan));
                        plan.step(|plan| keda::delete(isvc, cluster, plan));
                        plan.step(|plan| namespace_cleanup(&namespace, cluster, plan));
                    }
                }
                Ok(())
            },
        ),
    }
    if cx.settings.model_registry.enabled {
        plan.step(|plan| {
            model_registry::reconcile(
                isvc.as_ref(),
                cluster,
                cx.http,
                &cx.settings.model_registry,
                plan,
            )
        });
    }
    Ok(plan.into_outcome())
}

/// The six sub-reconcilers, always all of them, in upstream's order.
fn serving_steps(isvc: &Object, cluster: &dyn Cluster, plan: &mut Plan) {
    plan.step(|plan| auth_delegator::reconcile(isvc, cluster, plan));
    plan.step(|plan| route::reconcile(isvc, cluster, plan));
    let runtime = resolve_runtime(isvc, cluster);
    plan.step(|plan| metrics::reconcile_service(isvc, &runtime, cluster, plan));
    plan.step(|plan| metrics::reconcile_service_monitor(isvc, &runtime, cluster, plan));
    plan.step(|plan| metrics::reconcile_dashboard(isvc, &runtime, plan));
    plan.step(|plan| keda::reconcile(isvc, cluster, plan));
}

/// With no active InferenceService left in the namespace, the shared objects go
/// (docs/plugins/isvc.md, "Deletion and the namespace cleanup").
fn namespace_cleanup(namespace: &str, cluster: &dyn Cluster, plan: &mut Plan) -> Result<(), Error> {
    let isvcs = cluster.list_objects(&gvk::inference_service(), Some(namespace), None)?;
    if isvcs.iter().all(Object::is_deleting) {
        keda::cleanup(namespace, cluster, plan)?;
    }
    Ok(())
}
