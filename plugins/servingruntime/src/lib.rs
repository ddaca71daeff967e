//! The servingruntime plugin (docs/plugins/servingruntime.md; "The Ray TLS flow" shows how its
//! two controllers and the pod-mutator webhook fit together): the `servingruntime` controller
//! (the monitoring RoleBinding; the Ray TLS CA `ray-ca-tls` and the per-namespace `ray-tls`)
//! and the `core-pod` controller (per-pod Ray TLS certificates in `ray-tls`).
//!
//! Certificates are built here; their keys and signatures come from the host's `keys` import
//! (docs/decisions.md, "Keys are made by the host"), which needs the `secureRandom` grant.

pub mod certs;
pub mod entropy;
pub mod monitoring;
pub mod names;
pub mod pod;
pub mod ray_tls;
pub mod secrets;
pub mod settings;

use std::time::SystemTime;

use odh_kinds::{gvk, label, selector};
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{
    Controller, Ctx, Error, EventFilter, Manifest, Mapping, Outcome, Plan, Plugin,
    ReconcileRequest, RequestKey, Watch, WatchChange, WatchEvent, request_key,
};

use certs::KeySource;
use names::*;
use settings::Settings;

pub struct ServingRuntime;

/// What a reconcile takes from outside the cluster: the time and where keys come from.
pub struct Env<'a> {
    pub now: SystemTime,
    pub keys: &'a mut dyn KeySource,
}

impl Plugin for ServingRuntime {
    type Settings = Settings;

    fn manifest() -> Manifest {
        // Upstream caches only managed Secrets and predictor Pods: the watches say so, and
        // the host's caches are filtered by them.
        let servingruntime = Controller::new(SERVINGRUNTIME_CONTROLLER, gvk::serving_runtime())
            .watches(Watch::new(gvk::secret(), Mapping::Custom).label_selector(selector::MANAGED))
            .watches(Watch::new(gvk::namespace(), Mapping::Custom))
            .watches(
                Watch::new(gvk::role_binding(), Mapping::Custom).label_selector(label::MANAGED),
            );
        // Level-based where upstream is edge-triggered: a `ray-tls` change (a CA fan-out, a
        // prune racing another pod's write) re-reconciles that namespace's Ray TLS pods, so an
        // entry it removed comes back without waiting for a pod event that may never come.
        let pod = Controller::new(POD_CONTROLLER, gvk::pod())
            .primary_label_selector(PREDICTOR_SELECTOR)
            .watches(Watch::new(gvk::secret(), Mapping::Custom).label_selector(selector::MANAGED));
        Manifest::new("servingruntime", env!("CARGO_PKG_VERSION"))
            .description("ServingRuntime controller (monitoring RoleBinding, Ray TLS CA and ray-tls Secrets) and Pod controller (per-pod Ray TLS certificates)")
            .controller(servingruntime)
            .controller(pod)
            .writes([gvk::secret(), gvk::role_binding()])
    }

    /// Upstream's Pod predicate as far as fields decide it: an update passes only when the pod's
    /// IP changed (a pod's status changes often; its certificate follows the IP alone), and a
    /// deletion never (a pod that is gone has nothing to do). Whether it is a Ray TLS pod stays
    /// the reconcile's check.
    fn event_filters() -> Vec<EventFilter> {
        vec![
            EventFilter::new(POD_CONTROLLER, gvk::pod())
                .update_when_changed(["/status/podIP"])
                .no_delete(),
        ]
    }

    fn reconcile(request: &ReconcileRequest, cx: &Ctx<Settings>) -> Result<Outcome, Error> {
        let mut keys = entropy::SystemKeys;
        let mut env = Env {
            now: SystemTime::now(),
            keys: &mut keys,
        };
        decide(request, cx.settings, cx.cluster, &mut env)
    }

    fn map(event: &WatchEvent, cx: &Ctx<Settings>) -> Result<Vec<RequestKey>, Error> {
        let object = event.object()?;
        if event.controller == POD_CONTROLLER {
            return pod::pods_of_ray_tls(&object, event.deleted, cx.cluster);
        }
        Ok(map_event(&object, cx.settings).into_iter().collect())
    }

    /// The previous state maps too (as upstream's map functions see an update): a RoleBinding
    /// whose managed label was just removed still triggers its reconcile.
    fn map_change(change: &WatchChange, cx: &Ctx<Settings>) -> Result<Vec<RequestKey>, Error> {
        let mut keys = Self::map(&change.to_event(), cx)?;
        if change.controller == SERVINGRUNTIME_CONTROLLER
            && let Some(old) = change.old_object()?
            && let Some(key) = map_event(&old, cx.settings)
            && !keys.contains(&key)
        {
            keys.push(key);
        }
        Ok(keys)
    }
}

/// The reconcile with its clock and key source given (native tests pass fixtures).
pub fn decide(
    request: &ReconcileRequest,
    settings: &Settings,
    cluster: &dyn Cluster,
    env: &mut Env<'_>,
) -> Result<Outcome, Error> {
    let mut plan = Plan::new();
    let result = match request.controller.as_str() {
        POD_CONTROLLER => match request.object()? {
            // Upstream: a pod that is gone is a success.
            None => Ok(()),
            Some(pod) => pod::reconcile(&pod, settings.pod_namespace(), cluster, env, &mut plan),
        },
        SERVINGRUNTIME_CONTROLLER => {
            let namespace = request.key.namespace.as_deref().unwrap_or_default();
            servingruntime(
                namespace,
                &request.key.name,
                settings,
                cluster,
                env,
                &mut plan,
            )
        }
        other => Err(Error::invalid(format!("unknown controller {other:?}"))),
    };
    if let Err(e) = result {
        plan.fail(e);
    }
    Ok(plan.into_outcome())
}

/// The request is a namespace/name pair, whatever kind it came from
/// (docs/plugins/servingruntime.md, "Controller `servingruntime`").
fn servingruntime(
    namespace: &str,
    name: &str,
    settings: &Settings,
    cluster: &dyn Cluster,
    env: &mut Env<'_>,
    plan: &mut Plan,
) -> Result<(), Error> {
    if cluster.get(&gvk::namespace(), None, namespace)?.is_none() {
        return Err(Error::transient(format!(
            "namespaces \"{namespace}\" not found"
        )));
    }
    let monitoring_namespace = settings.monitoring_namespace();
    if monitoring_namespace.is_empty() {
        odh_plugin_sdk::log::log(
            odh_plugin_sdk::log::Level::Debug,
            "No monitoring namespace detected, skipping monitoring reconciliation.",
        );
    } else {
        monitoring::reconcile(namespace, monitoring_namespace, cluster, plan)?;
    }
    let multi_node = cluster
        .list_objects(&gvk::serving_runtime(), Some(namespace), None)?
        .iter()
        .any(ray_tls::is_multi_node);
    ray_tls::reconcile(
        name,
        namespace,
        multi_node,
        settings.pod_namespace(),
        cluster,
        env,
        plan,
    )
}

/// The watches' table of docs/plugins/servingruntime.md ("Controller `servingruntime`"): the
/// Ray Secrets by name, the monitoring namespaces, and RoleBindings
/// carrying the managed label key (any value). Upstream also maps an update's old object, so
/// removing the label still triggers; the host hands over the new object only, so the
/// monitoring RoleBinding is mapped by its name too.
pub fn map_event(object: &odh_plugin_sdk::Object, settings: &Settings) -> Option<RequestKey> {
    let name = object.name();
    match object.kind() {
        "Secret" if [RAY_CA_SECRET, RAY_TLS_SECRET].contains(&name) => {
            Some(request_key(object.namespace(), name))
        }
        "Namespace" if name == OPENSHIFT_MONITORING || name == settings.monitoring_namespace() => {
            Some(request_key(Some(name), name))
        }
        "RoleBinding" if object.label(label::MANAGED).is_some() || name == ROLE_BINDING => {
            odh_plugin_sdk::log::log(
                odh_plugin_sdk::log::Level::Info,
                &format!("Reconcile event triggered by Rolebinding: {name}"),
            );
            Some(request_key(object.namespace(), name))
        }
        _ => None,
    }
}

odh_plugin_sdk::plugin!(ServingRuntime);
