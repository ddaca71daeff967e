//! The InferenceService plugin (spec isvc.md): the `inferenceservice` controller, which adds
//! platform integrations around KServe's RawDeployment InferenceServices, and the
//! InferenceService admission webhooks.

pub mod auth_delegator;
pub mod dashboard;
pub mod keda;
pub mod kinds;
pub mod metrics;
pub mod model_registry;
pub mod plan;
pub mod reconcile;
pub mod route;
pub mod runtime;
pub mod settings;
pub mod webhooks;

use odh_plugin_sdk::cluster::Host;
use odh_plugin_sdk::{
    AdmissionDecision, AdmissionRequest, Controller, Error, Manifest, Mapping, Operation, Outcome,
    Plugin, ReconcileRequest, RequestKey, Watch, WatchEvent, Webhook, request_key,
};

use kinds::*;
use settings::Settings;

pub struct Isvc;

impl Plugin for Isvc {
    fn manifest() -> Manifest {
        let keda_selector = format!("{KEDA_LABEL}={KEDA_LABEL_VALUE}");
        let controller = Controller::new(CONTROLLER, inference_service())
            .finalizer(FINALIZER)
            .owns(serving_runtime())
            .owns(namespace())
            .owns(route())
            .owns(service())
            .owns(config_map())
            .owns(cluster_role_binding())
            .owns(network_policy())
            .owns(service_monitor())
            .owns(pod_monitor())
            .watches(Watch::new(service_account(), Mapping::Owner))
            .watches(Watch::new(secret(), Mapping::Owner))
            .watches(Watch::new(role(), Mapping::Owner).label_selector(&keda_selector))
            .watches(Watch::new(role_binding(), Mapping::Owner).label_selector(&keda_selector))
            .watches(
                Watch::new(trigger_authentication(), Mapping::Owner)
                    .label_selector(&keda_selector)
                    .optional(),
            )
            .watches(Watch::new(serving_runtime(), Mapping::Custom))
            .watches(Watch::new(secret(), Mapping::Custom));
        Manifest::new("isvc", env!("CARGO_PKG_VERSION"))
            .description("InferenceService controller and webhooks: auth-delegator binding, Route, metrics Service and ServiceMonitor, metrics dashboard, KEDA Prometheus auth, Model Registry sync; ConnectionsAPI and HardwareProfile defaulting")
            .controller(controller)
            .webhook(Webhook::validating(
                webhooks::VALIDATING_PATH,
                inference_service(),
                [Operation::Create, Operation::Update],
            ))
            .webhook(Webhook::mutating(
                webhooks::MUTATING_PATH,
                inference_service(),
                [Operation::Create, Operation::Update],
            ))
            .reads([
                inference_service(),
                serving_runtime(),
                route(),
                service(),
                service_monitor(),
                config_map(),
                secret(),
                service_account(),
                cluster_role_binding(),
                role(),
                role_binding(),
                trigger_authentication(),
                data_science_cluster(),
                dsc_initialization(),
                hardware_profile(),
            ])
            .writes([
                route(),
                service(),
                service_monitor(),
                config_map(),
                secret(),
                service_account(),
                cluster_role_binding(),
                role(),
                role_binding(),
                trigger_authentication(),
            ])
            // The Model Registry's address is found at run time (a Service or a Route).
            .http_hosts(["*"])
    }

    fn validate_settings(settings: &str) -> Result<(), Error> {
        parse_settings(settings).map(|_| ())
    }

    fn reconcile(request: ReconcileRequest) -> Result<Outcome, Error> {
        let settings = parse_settings(&request.settings)?;
        reconcile::reconcile(&request, &settings, &Host, &model_registry::HostHttp)
    }

    fn map(event: WatchEvent) -> Result<Vec<RequestKey>, Error> {
        map_event(&event, &Host)
    }

    fn mutate(request: AdmissionRequest) -> Result<AdmissionDecision, Error> {
        denial_on_error(webhooks::mutate(&request, &Host))
    }

    fn validate(request: AdmissionRequest) -> Result<AdmissionDecision, Error> {
        let settings = parse_settings(&request.settings)?;
        denial_on_error(webhooks::validate(&request, &settings, &Host))
    }
}

odh_plugin_sdk::plugin!(Isvc);

/// Upstream's webhooks deny with 403 and the bare error text whatever went wrong (a failed
/// read included), rather than failing the call.
pub fn denial_on_error(
    result: Result<AdmissionDecision, Error>,
) -> Result<AdmissionDecision, Error> {
    match result {
        Err(e) => Ok(AdmissionDecision::deny_with_code(e.message(), 403)),
        ok => ok,
    }
}

pub fn parse_settings(json: &str) -> Result<Settings, Error> {
    if json.trim().is_empty() {
        return Ok(Settings::default());
    }
    odh_plugin_sdk::settings(json)
}

/// The custom mappings of §3: a ServingRuntime change concerns every InferenceService of its
/// namespace; a managed Secret concerns the InferenceService of the same name, if any.
pub fn map_event(
    event: &WatchEvent,
    cluster: &dyn odh_plugin_sdk::cluster::Cluster,
) -> Result<Vec<RequestKey>, Error> {
    let object = event.object()?;
    let namespace = object.namespace();
    match event.gvk.kind.as_str() {
        "ServingRuntime" => Ok(cluster
            .list_objects(&inference_service(), namespace, None)?
            .iter()
            .map(|isvc| request_key(namespace, isvc.name()))
            .collect()),
        "Secret" if RAY_SECRETS.contains(&object.name()) => Ok(Vec::new()),
        "Secret" => Ok(cluster
            .get(&inference_service(), namespace, object.name())?
            .map(|_| request_key(namespace, object.name()))
            .into_iter()
            .collect()),
        _ => Ok(Vec::new()),
    }
}
