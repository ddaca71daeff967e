//! The `gateway-auth-bootstrap` controller (docs/plugins/llm-gateway.md, "Gateway controller
//! `gateway-auth-bootstrap`"): per Gateway "in use", the Authorino-TLS
//! EnvoyFilter, the token-review AuthPolicy and the PodMonitor; whichever of them a Gateway no
//! longer wants is deleted when we manage it.
//!
//! Each step writes through the host's `writes` while the reconcile runs, so a failed write
//! becomes that step's `ReconcileError` Event and stops the later steps, as upstream's do. Objects
//! are server-side applied with the Gateway as controller owner (the host writes only when our
//! fields differ from the live object, which stands in for upstream's get/compare/update); an
//! object labelled as ours is deleted whoever made it, as upstream deletes it by name.

pub mod gateway_ref;
pub mod ingress;
pub mod mapping;
pub mod objects;
pub mod refs;

use odh_kinds::gvk;
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{
    Controller, Ctx, Desired, Error, EventFilter, Gvk, Manifest, Mapping, Object, Outcome,
    Ownership, Plan, ReconcileRequest, RequestKey, Watch, WatchChange, WatchEvent, log,
};

use crate::names::{auth_policy_name, envoy_filter_name, pod_monitor_name};
use crate::predicates::{
    is_authorino_tls_bootstrap_enabled, is_explicitly_unmanaged, is_managed_by_open_data_hub,
    is_owned_by_platform_controller, should_create_envoy_filter,
};
use crate::settings::Settings;

pub const CONTROLLER: &str = "gateway-auth-bootstrap";
pub const RECONCILE_ERROR: &str = "ReconcileError";
/// A Gateway's own objective expression for its AuthPolicy.
pub const OBJECTIVE_EXPRESSION: &str = "inference.opendatahub.io/objective-expression";
/// `false` on a Gateway: no PodMonitor.
pub const SCRAPE: &str = "monitoring.opendatahub.io/scrape";

/// This controller's part of the plugin's manifest.
pub fn declare(manifest: Manifest) -> Manifest {
    // Our objects: the kinds are optional (Istio, Kuadrant, Prometheus); a change maps to the
    // controlling Gateway when we manage the object (`map`).
    let owned = |kind| Watch::new(kind, Mapping::Custom).optional();
    let controller = Controller::new(CONTROLLER, gvk::gateway())
        .watches(owned(gvk::envoy_filter()))
        .watches(owned(gvk::auth_policy()))
        .watches(owned(gvk::pod_monitor()))
        // The Gateways a service names before and after a change (`map_change`).
        .watches(Watch::new(gvk::llm_inference_service(), Mapping::Custom))
        .watches(Watch::new(
            gvk::llm_inference_service_config(),
            Mapping::Custom,
        ))
        .watches(Watch::new(gvk::namespace(), Mapping::Custom))
        .watches(Watch::new(gvk::config_map(), Mapping::Custom))
        // The EnvoyFilter follows the Kuadrant namespace and Authorino's TLS setting.
        .watches(Watch::new(gvk::kuadrant(), Mapping::All).optional())
        .watches(Watch::new(gvk::authorino(), Mapping::All).optional());
    manifest
        .controller(controller)
        .reads([gvk::authentication()])
        .writes([gvk::envoy_filter(), gvk::auth_policy(), gvk::pod_monitor()])
}

/// Upstream's predicates of this controller (`SetupWithManager`), as far as the old and new
/// objects' fields decide them: a Gateway's deletion is nobody's business (its objects go with
/// it); a service or config passes when its gateway refs (or the service's stop annotation or
/// `baseRefs`) changed; a namespace's creation and label changes pass; of ConfigMaps only an
/// `ingress` change of `inferenceservice-config` passes. Pointers compare lists in order, so a
/// reordering passes where upstream's set comparison drops it: one extra reconcile, no change.
/// A Gateway update passes always: upstream's also passes whenever the new Gateway wants an
/// EnvoyFilter, which no field comparison says.
pub fn event_filters() -> Vec<EventFilter> {
    vec![
        EventFilter::new(CONTROLLER, gvk::gateway()).no_delete(),
        EventFilter::new(CONTROLLER, gvk::llm_inference_service()).update_when_changed([
            "/metadata/annotations/serving.kserve.io~1stop",
            "/spec/router/gateway/refs",
            "/spec/baseRefs",
        ]),
        EventFilter::new(CONTROLLER, gvk::llm_inference_service_config())
            .update_when_changed(["/spec/router/gateway/refs"]),
        EventFilter::new(CONTROLLER, gvk::namespace())
            .update_when_changed(["/metadata/labels"])
            .no_delete(),
        EventFilter::new(CONTROLLER, gvk::config_map())
            .names([ingress::INFERENCESERVICE_CONFIG])
            .no_create()
            .no_delete()
            .update_when_changed(["/data/ingress"]),
    ]
}

/// Which objects a Gateway gets (the doc's step 3, "Wants").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wants {
    pub envoy_filter: bool,
    pub auth_policy: bool,
    pub pod_monitor: bool,
}

impl Wants {
    pub fn of(gateway: &Object, referenced: bool) -> Wants {
        let in_use = is_authorino_tls_bootstrap_enabled(gateway) || referenced;
        Wants {
            envoy_filter: in_use && should_create_envoy_filter(gateway),
            auth_policy: in_use
                && !is_explicitly_unmanaged(gateway)
                && !is_owned_by_platform_controller(gateway),
            pod_monitor: referenced && gateway.label(SCRAPE) != Some("false"),
        }
    }
}

/// The three kinds, in the order their steps run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    EnvoyFilter,
    AuthPolicy,
    PodMonitor,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::EnvoyFilter, Kind::AuthPolicy, Kind::PodMonitor];

    pub fn gvk(self) -> Gvk {
        match self {
            Kind::EnvoyFilter => gvk::envoy_filter(),
            Kind::AuthPolicy => gvk::auth_policy(),
            Kind::PodMonitor => gvk::pod_monitor(),
        }
    }

    /// The object's name for `gateway`.
    pub fn name(self, gateway: &str) -> String {
        match self {
            Kind::EnvoyFilter => envoy_filter_name(gateway),
            Kind::AuthPolicy => auth_policy_name(gateway),
            Kind::PodMonitor => pod_monitor_name(gateway),
        }
    }

    /// How the step's Event names the object.
    fn event_name(self) -> &'static str {
        match self {
            Kind::EnvoyFilter => "EnvoyFilter",
            Kind::AuthPolicy => "AuthPolicy",
            Kind::PodMonitor => "gateway PodMonitor",
        }
    }

    fn want(self, wants: Wants) -> bool {
        match self {
            Kind::EnvoyFilter => wants.envoy_filter,
            Kind::AuthPolicy => wants.auth_policy,
            Kind::PodMonitor => wants.pod_monitor,
        }
    }
}

pub fn reconcile(request: &ReconcileRequest, cx: &Ctx<Settings>) -> Result<Outcome, Error> {
    let mut plan = Plan::new();
    // Gone: our objects go with it (garbage collection). Being deleted: the same.
    let Some(gateway) = request.object()? else {
        return Ok(plan.into_outcome());
    };
    if gateway.is_deleting() {
        return Ok(plan.into_outcome());
    }
    let system_ns = cx.settings.system_namespace();
    // Upstream returns this error without an Event.
    let referenced = match refs::is_referenced(&gateway, system_ns, cx.cluster) {
        Ok(referenced) => referenced,
        Err(e) => {
            plan.fail(e);
            return Ok(plan.into_outcome());
        }
    };
    let wants = Wants::of(&gateway, referenced);
    for kind in Kind::ALL {
        let want = kind.want(wants);
        let result = if want {
            ensure(kind, &gateway, cx)
        } else {
            delete_if_managed(kind, &gateway, cx)
        };
        match result {
            Ok(()) => {}
            // The kind is not served (its CRD is not installed): nothing to make or remove.
            Err(e) if e.is_no_match() => {
                log::debug!("{} not served: {}", kind.event_name(), e.message());
            }
            Err(e) => {
                let verb = if want { "reconcile" } else { "delete" };
                plan.event_warning(
                    RECONCILE_ERROR,
                    format!("Failed to {verb} {}: {}", kind.event_name(), e.message()),
                );
                plan.fail(e);
                break;
            }
        }
    }
    Ok(plan.into_outcome())
}

/// The live object of `kind` for `gateway`; read errors carry the spec's texts (the stores'
/// `could not GET ...` for the EnvoyFilter and the AuthPolicy).
fn existing(kind: Kind, gateway: &Object, cluster: &dyn Cluster) -> Result<Option<Object>, Error> {
    let namespace = gateway.namespace().unwrap_or_default();
    let name = kind.name(gateway.name());
    let kind_name = kind.gvk().kind;
    cluster
        .get_object(&kind.gvk(), Some(namespace), &name)
        .map_err(|e| {
            let e = match kind {
                Kind::PodMonitor => e,
                _ => e.context(format!("could not GET {kind_name} {namespace}/{name}")),
            };
            e.context(format!("failed to get existing {kind_name}"))
        })
}

/// The object applied with the Gateway as controller owner (the doc's step 4).
fn ensure(kind: Kind, gateway: &Object, cx: &Ctx<Settings>) -> Result<(), Error> {
    let cluster = cx.cluster;
    let settings = cx.settings;
    let (existed, object) = match kind {
        Kind::EnvoyFilter => {
            let kuadrant_ns =
                ingress::kuadrant_namespace(settings.kuadrant_namespace.as_deref(), cluster);
            // Without Authorino TLS there is nothing to bootstrap; an existing filter stays.
            if !ingress::authorino_tls_enabled(&kuadrant_ns, cluster) {
                return Ok(());
            }
            // Whoever manages an existing filter of that name, it is made ours (as upstream).
            let existing = existing(kind, gateway, cluster)?;
            (
                existing.is_some(),
                objects::envoy_filter(gateway, &kuadrant_ns),
            )
        }
        Kind::AuthPolicy => {
            let existing = existing(kind, gateway, cluster)?;
            if existing
                .as_ref()
                .is_some_and(|e| !is_managed_by_open_data_hub(e))
            {
                return Ok(());
            }
            let audiences = ingress::audiences(settings.auth_audience.as_deref(), cluster);
            let objective = gateway
                .annotation(OBJECTIVE_EXPRESSION)
                .filter(|e| !e.is_empty())
                .unwrap_or(objects::DEFAULT_OBJECTIVE);
            let header = ingress::routing_header(settings.system_namespace(), cluster);
            let policy = objects::gateway_policy(gateway, audiences, objective, &header)
                .map_err(|e| e.context("failed to load AuthPolicy template"))?;
            (existing.is_some(), policy)
        }
        Kind::PodMonitor => {
            let existing = existing(kind, gateway, cluster)?;
            if existing
                .as_ref()
                .is_some_and(|e| !is_managed_by_open_data_hub(e))
            {
                return Ok(());
            }
            (existing.is_some(), objects::pod_monitor(gateway))
        }
    };
    // Upstream's create or update of the step, named as its error names it.
    let verb = if existed { "update" } else { "create" };
    cx.writes()?
        .apply_one(Desired::new(&object, Ownership::Controller))
        .map(|_| ())
        .map_err(|e| Error::from(e).context(format!("failed to {verb} {}", kind.gvk().kind)))
}

/// Deleted when it exists and is labelled as ours (the doc's step 4, *Delete*), whoever made it,
/// as upstream deletes it by name; a user's (or opted-out) object stays.
fn delete_if_managed(kind: Kind, gateway: &Object, cx: &Ctx<Settings>) -> Result<(), Error> {
    let Some(existing) = existing(kind, gateway, cx.cluster)? else {
        return Ok(());
    };
    if !is_managed_by_open_data_hub(&existing) {
        log::info!(
            "keeping {} {}/{}: not managed by Open Data Hub",
            existing.kind(),
            existing.namespace().unwrap_or_default(),
            existing.name()
        );
        return Ok(());
    }
    // The host checks the label again on the live object (an opt-out label added since keeps
    // it); an opt-out annotation is this read's to see.
    cx.writes()?
        .delete_unmanaged(vec![existing.key()], MANAGED_SELECTOR)
        .pop()
        .unwrap_or(Ok(false))
        .map(|_| ())
        .map_err(|e| Error::from(e).context(format!("failed to delete {}", existing.kind())))
}

/// Objects labelled as ours and not opted out by label.
pub const MANAGED_SELECTOR: &str =
    "app.kubernetes.io/managed-by=odh-model-controller,opendatahub.io/managed!=false";

pub fn map(event: &WatchEvent, cx: &Ctx<Settings>) -> Result<Vec<RequestKey>, Error> {
    mapping::map(event, cx)
}

pub fn map_change(change: &WatchChange, cx: &Ctx<Settings>) -> Result<Vec<RequestKey>, Error> {
    mapping::map_change(change, cx)
}
