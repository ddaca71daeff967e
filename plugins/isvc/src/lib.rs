//! The InferenceService plugin (docs/plugins/isvc.md): the `inferenceservice` controller, which
//! adds platform integrations around KServe's RawDeployment InferenceServices, and the
//! InferenceService admission webhooks; and the InferenceGraph admission webhooks.

pub mod auth_delegator;
pub mod dashboard;
pub mod inference_graph;
pub mod keda;
pub mod metrics;
pub mod model_registry;
pub mod names;
pub mod reconcile;
pub mod route;
pub mod settings;
pub mod webhooks;

use odh_kinds::{finalizer, gvk, selector};
use odh_plugin_sdk::admission::Expect;
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{
    AdmissionDecision, AdmissionRequest, Controller, Ctx, Error, Manifest, Mapping, Operation,
    Outcome, Plugin, ReconcileRequest, RequestKey, Watch, WatchEvent, Webhook, request_key,
};

use names::{CONTROLLER, RAY_SECRETS};
use settings::Settings;

pub struct Isvc;

impl Plugin for Isvc {
    type Settings = Settings;
    // The Model Registry sync talks to the registry's REST API.
    const USES_HTTP: bool = true;

    fn manifest() -> Manifest {
        let keda = |kind| Watch::new(kind, Mapping::Owner).label_selector(selector::KEDA);
        // Upstream caches only managed Secrets; the host's Secret cache is the union of what the
        // watches select, so each Secret watch says so.
        let managed_secrets =
            |mapping| Watch::new(gvk::secret(), mapping).label_selector(selector::MANAGED);
        // Upstream `Owns` these too, but the plugin never writes them: watching them by owner
        // reference keeps them out of `writes` (owned kinds are writable). The host maps such a
        // watch by every InferenceService owner reference rather than the controller one only;
        // nothing here sets owner references on them, so at most a no-op reconcile differs.
        let owner_only = |kind| Watch::new(kind, Mapping::Owner).optional();
        let controller = Controller::new(CONTROLLER, gvk::inference_service())
            .finalizer(finalizer::INFERENCE_SERVICE)
            .owns(gvk::route())
            .owns(gvk::service())
            .owns(gvk::config_map())
            .owns(gvk::cluster_role_binding())
            .owns(gvk::service_monitor())
            .watches(owner_only(gvk::serving_runtime()))
            .watches(owner_only(gvk::namespace()))
            .watches(owner_only(gvk::network_policy()))
            .watches(owner_only(gvk::pod_monitor()))
            .watches(Watch::new(gvk::service_account(), Mapping::Owner))
            .watches(managed_secrets(Mapping::Owner))
            .watches(keda(gvk::role()))
            .watches(keda(gvk::role_binding()))
            .watches(keda(gvk::trigger_authentication()).optional())
            .watches(Watch::new(gvk::serving_runtime(), Mapping::Custom))
            .watches(managed_secrets(Mapping::Custom));
        Manifest::new("isvc", env!("CARGO_PKG_VERSION"))
            .description("InferenceService controller and webhooks (and the InferenceGraph webhooks): auth-delegator binding, Route, metrics Service and ServiceMonitor, metrics dashboard, KEDA Prometheus auth, Model Registry sync; ConnectionsAPI and HardwareProfile defaulting")
            .controller(controller)
            .webhook(Webhook::validating(
                webhooks::VALIDATING_PATH,
                gvk::inference_service(),
                [Operation::Create, Operation::Update],
            ))
            .webhook(Webhook::mutating(
                webhooks::MUTATING_PATH,
                gvk::inference_service(),
                [Operation::Create, Operation::Update],
            ))
            .webhook(Webhook::mutating(
                inference_graph::MUTATING_PATH,
                gvk::inference_graph(),
                [Operation::Create],
            ))
            .webhook(Webhook::validating(
                inference_graph::VALIDATING_PATH,
                gvk::inference_graph(),
                [Operation::Create, Operation::Update],
            ))
            // Beyond the controller's kinds: the platform objects and the webhooks' profiles.
            .reads([
                gvk::data_science_cluster(),
                gvk::dsc_initialization(),
                gvk::hardware_profile(),
            ])
            // Beyond the owned kinds: the KEDA objects (shared, not controlled).
            .writes(keda::kinds())
            // The Model Registry's address is found at run time (a Service or a Route).
            .http_hosts(["*"])
    }

    fn reconcile(request: &ReconcileRequest, cx: &Ctx<Settings>) -> Result<Outcome, Error> {
        reconcile::reconcile(request, cx)
    }

    fn map(event: &WatchEvent, cx: &Ctx<Settings>) -> Result<Vec<RequestKey>, Error> {
        map_event(event, cx.cluster)
    }

    fn mutate(request: &AdmissionRequest, cx: &Ctx<Settings>) -> Result<AdmissionDecision, Error> {
        let decoded = match request.decode_as(&EXPECT) {
            Ok(decoded) => decoded,
            Err(bad) => return Ok(bad),
        };
        if inference_graph::is_for(request) {
            return Ok(inference_graph::mutate());
        }
        // The objects as decoded above: parsed once per call.
        let (object, old) = match decoded {
            Some(d) => (Some(d.object), d.old_object),
            None => (None, None),
        };
        Ok(AdmissionDecision::or_forbidden(webhooks::mutate_objects(
            request, object, old, cx.cluster,
        )))
    }

    fn validate(
        request: &AdmissionRequest,
        cx: &Ctx<Settings>,
    ) -> Result<AdmissionDecision, Error> {
        let decoded = match request.decode_as(&EXPECT) {
            Ok(decoded) => decoded,
            Err(bad) => return Ok(bad),
        };
        if inference_graph::is_for(request) {
            return Ok(AdmissionDecision::or_forbidden(inference_graph::validate(
                request,
                cx.settings.cluster_domain(),
            )));
        }
        Ok(AdmissionDecision::or_forbidden(webhooks::validate_object(
            request,
            decoded.map(|d| d.object),
            cx.settings,
            cx.cluster,
        )))
    }
}

odh_plugin_sdk::plugin!(Isvc);

/// Both objects of every webhook's request must decode (else 400, as controller-runtime's
/// decoder answers, before any rule runs); the webhooks serve two kinds and dispatch
/// themselves. A rule's error is upstream's 403 with the bare text
/// ([`AdmissionDecision::or_forbidden`]).
const EXPECT: Expect = Expect::any().with_old_object();

/// The custom mappings (docs/plugins/isvc.md, "Watches"): a ServingRuntime change concerns every
/// InferenceService of its namespace; a managed Secret concerns the InferenceService of the same
/// name, if any.
pub fn map_event(event: &WatchEvent, cluster: &dyn Cluster) -> Result<Vec<RequestKey>, Error> {
    let object = event.object()?;
    let namespace = object.namespace();
    match event.gvk.kind.as_str() {
        "ServingRuntime" => Ok(cluster
            .list_objects(&gvk::inference_service(), namespace, None)?
            .iter()
            .map(|isvc| request_key(namespace, isvc.name()))
            .collect()),
        "Secret" if RAY_SECRETS.contains(&object.name()) => Ok(Vec::new()),
        "Secret" => Ok(cluster
            .get(&gvk::inference_service(), namespace, object.name())?
            .map(|_| request_key(namespace, object.name()))
            .into_iter()
            .collect()),
        _ => Ok(Vec::new()),
    }
}
