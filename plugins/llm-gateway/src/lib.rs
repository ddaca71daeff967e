//! The LLM serving plugin (docs/plugins/llm-gateway.md). Part 1: the `llminferenceservice`
//! controller (`baseRefs` merge, the anonymous HTTPRoute AuthPolicies, the routing-group auth
//! posture check) and the LLMInferenceService mutating webhooks (ConnectionsAPI, HardwareProfile).
//! Part 2: the `gateway-auth-bootstrap` controller ([`gateway`]), the MaaS RBAC cleanup ([`maas`])
//! and the model-serving-api routes ([`api`]).

pub mod api;
pub mod gateway;
pub mod listeners;
pub mod llmisvc;
pub mod maas;
mod md5;
pub mod names;
pub mod predicates;
pub mod settings;
pub mod webhooks;

use odh_kinds::gvk;
use odh_plugin_sdk::{
    AdmissionDecision, AdmissionRequest, ApiRequest, ApiResponse, ApiRoute, Controller, Ctx, Error,
    EventFilter, Manifest, Mapping, Operation, Outcome, Plugin, ReconcileRequest, RequestKey,
    Watch, WatchChange, WatchEvent, Webhook, core_gvk,
};

use settings::Settings;

pub struct LlmGateway;

impl Plugin for LlmGateway {
    type Settings = Settings;
    const USES_WRITES: bool = true;

    fn manifest() -> Manifest {
        let operations = [Operation::Create, Operation::Update];
        // Upstream's legacy triggers: any Kuadrant or Authorino change re-reconciles every
        // service (nothing reads them any more; they also bring a service whose AuthPolicy
        // waited for Kuadrant back as soon as Kuadrant appears, where the host can watch it).
        let resync = |kind| Watch::new(kind, Mapping::All).optional();
        let controller = Controller::new(llmisvc::CONTROLLER, gvk::llm_inference_service())
            // Upstream maps the events of the policies it manages through their
            // LLMInferenceService owner reference (`map`).
            .watches(Watch::new(gvk::auth_policy(), Mapping::Custom).optional())
            .watches(resync(gvk::kuadrant()))
            .watches(resync(gvk::authorino()));
        let manifest = Manifest::new("llm-gateway", env!("CARGO_PKG_VERSION"))
            .description("LLMInferenceService controller (baseRefs merge, anonymous HTTPRoute AuthPolicies, routing-group auth posture) and webhooks (ConnectionsAPI, HardwareProfile)")
            .controller(controller)
            .webhook(Webhook::mutating(
                webhooks::MUTATING_PATH_V1ALPHA2,
                gvk::llm_inference_service(),
                operations,
            ))
            .webhook(Webhook::mutating(
                webhooks::MUTATING_PATH_V1ALPHA1,
                webhooks::llm_inference_service_v1alpha1(),
                operations,
            ))
            .reads([
                gvk::llm_inference_service_config(),
                gvk::http_route(),
                gvk::secret(),
                gvk::hardware_profile(),
            ])
            // The policies (applied with an owner reference, but the kind is optional, so it
            // is watched rather than owned); the S3 ServiceAccounts and the HardwareProfile
            // Event (admission side effects).
            .writes([gvk::auth_policy(), gvk::service_account(), core_gvk("Event")]);
        api::declare(maas::declare(gateway::declare(manifest)))
    }

    fn reconcile(request: &ReconcileRequest, cx: &Ctx<Settings>) -> Result<Outcome, Error> {
        match request.controller.as_str() {
            gateway::CONTROLLER => gateway::reconcile(request, cx),
            maas::ROLES | maas::ROLE_BINDINGS => maas::reconcile(request, cx),
            _ => llmisvc::reconcile(request, cx),
        }
    }

    fn map(event: &WatchEvent, cx: &Ctx<Settings>) -> Result<Vec<RequestKey>, Error> {
        match event.controller.as_str() {
            gateway::CONTROLLER => gateway::map(event, cx),
            _ => llmisvc::mapping::map(event),
        }
    }

    fn map_change(change: &WatchChange, cx: &Ctx<Settings>) -> Result<Vec<RequestKey>, Error> {
        match change.controller.as_str() {
            gateway::CONTROLLER => gateway::map_change(change, cx),
            _ => llmisvc::mapping::map(&change.to_event()),
        }
    }

    fn event_filters() -> Vec<EventFilter> {
        let mut filters = gateway::event_filters();
        // Upstream's AuthPolicy predicate: no creations (updates and deletions of managed
        // policies pass; `map` checks the management).
        filters.push(EventFilter::new(llmisvc::CONTROLLER, gvk::auth_policy()).no_create());
        filters
    }

    fn mutate(request: &AdmissionRequest, cx: &Ctx<Settings>) -> Result<AdmissionDecision, Error> {
        Ok(webhooks::mutate(request, cx.cluster))
    }

    fn routes() -> Vec<ApiRoute> {
        api::routes()
    }

    fn handle(request: &ApiRequest, cx: &Ctx<Settings>) -> Result<ApiResponse, Error> {
        api::handle(request, cx)
    }
}

odh_plugin_sdk::plugin!(LlmGateway);
