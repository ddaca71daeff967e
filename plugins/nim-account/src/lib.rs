//! The NVIDIA NIM Account plugin (docs/plugins/nim-account.md): the `odh-nim-controller`
//! controller, which validates an Account's NGC API key against NVIDIA's APIs and generates
//! the model-info ConfigMap, the NIM runtime Template and the `nvcr.io` pull Secret; the
//! NIM-disabled cleanup when `NIM_STATE=removed`; and the one-Account-per-namespace webhook.

pub mod names;
pub mod ngc;
pub mod reconcile;
pub mod runtime_template;
pub mod settings;
pub mod spec;
pub mod status;
pub mod time;
pub mod webhook;

use odh_crd_types::account::AccountSpec;
use odh_kinds::{gvk, selector};
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::conditions;
use odh_plugin_sdk::http::Client;
use odh_plugin_sdk::writes::Writes;
use odh_plugin_sdk::{
    AdmissionDecision, AdmissionRequest, Controller, Ctx, Error, Manifest, Mapping, Object,
    Operation, Outcome, Plan, Plugin, ReconcileRequest, RequestKey, Watch, WatchEvent, Webhook,
    request_key,
};

use names::{CONTROLLER, FINALIZER, WEBHOOK_PATH};
use settings::Settings;

pub struct NimAccount;

impl Plugin for NimAccount {
    type Settings = Settings;
    // The API key is validated against NVIDIA's APIs.
    const USES_HTTP: bool = true;
    const USES_WRITES: bool = true;

    fn manifest() -> Manifest {
        // The pull Secret carries the managed label: the Secret cache stays filtered to it,
        // as upstream's is; so does the watch of API-key Secrets (upstream's quirk 1).
        let managed_secrets =
            |mapping| Watch::new(gvk::secret(), mapping).label_selector(selector::MANAGED);
        let controller = Controller::new(CONTROLLER, gvk::nim_account())
            .finalizer(FINALIZER)
            .owns(gvk::config_map())
            .watches(managed_secrets(Mapping::Owner))
            .watches(Watch::new(gvk::template(), Mapping::Owner).optional())
            .watches(managed_secrets(Mapping::Custom))
            .watches(Watch::new(gvk::config_map(), Mapping::Custom));
        Manifest::new("nim-account", env!("CARGO_PKG_VERSION"))
            .description("NVIDIA NIM Account controller and webhook: API-key validation against NVIDIA NGC, the model-info ConfigMap, the NIM runtime Template and the nvcr.io pull Secret")
            .controller(controller)
            .webhook(Webhook::validating(
                WEBHOOK_PATH,
                gvk::nim_account(),
                [Operation::Create, Operation::Update],
            ))
            .reads([gvk::data_science_cluster(), gvk::dsc_initialization()])
            .writes([gvk::secret(), gvk::template()])
            .http_hosts(ngc::HOSTS)
    }

    fn reconcile(request: &ReconcileRequest, cx: &Ctx<Settings>) -> Result<Outcome, Error> {
        let Some(account) = request.object()? else {
            log_debug("account deleted");
            return Ok(Plan::new().into_outcome());
        };
        Ok(reconcile_writing(
            &account,
            cx.cluster,
            cx.http,
            cx.writes,
            cx.settings,
            &conditions::now(),
        )
        .into_outcome())
    }

    fn map(event: &WatchEvent, cx: &Ctx<Settings>) -> Result<Vec<RequestKey>, Error> {
        map_event(event, cx.cluster)
    }

    fn validate(
        request: &AdmissionRequest,
        cx: &Ctx<Settings>,
    ) -> Result<AdmissionDecision, Error> {
        webhook::validate(request, cx.cluster)
    }
}

odh_plugin_sdk::plugin!(NimAccount);

fn log_debug(message: &str) {
    odh_plugin_sdk::log::log(odh_plugin_sdk::log::Level::Debug, message);
}

/// One reconcile of a live or deleting Account at time `now` (RFC 3339), its objects left to
/// the plan.
pub fn reconcile_at(
    account: &Object,
    cluster: &dyn Cluster,
    http: &dyn Client,
    settings: &Settings,
    now: &str,
) -> Plan {
    reconcile_writing(account, cluster, http, None, settings, now)
}

/// [`reconcile_at`] with the host's writes: the handlers' objects are applied while the pass
/// runs (status references carry their uids) and the force-validation annotation is removed
/// from the API-key Secret, as upstream does.
pub fn reconcile_writing(
    account: &Object,
    cluster: &dyn Cluster,
    http: &dyn Client,
    writes: Option<&dyn Writes>,
    settings: &Settings,
    now: &str,
) -> Plan {
    let mut plan = Plan::new();
    if settings.nim_removed() {
        disable(&mut plan, account, now);
        return plan;
    }
    let held = account.has_finalizer(FINALIZER);
    if account.is_deleting() {
        if held && let Err(e) = reconcile::finish_deletion(&mut plan, account, cluster) {
            plan.fail(e);
        }
        return plan;
    }
    if !held {
        // Upstream adds the finalizer alone and requeues; the handlers run next time.
        plan.add_finalizer();
        plan.requeue_within(reconcile::REQUEUE_MS);
        return plan;
    }
    if writes.is_some() && account.annotation(names::FORCE_VALIDATION_SEEN).is_some() {
        // What an earlier version of this plugin recorded instead of removing the annotation.
        plan.set_primary_annotation(names::FORCE_VALIDATION_SEEN, None);
    }
    reconcile::Pass::new(account, cluster, http, settings, now)
        .with_writes(writes)
        .run(&mut plan);
    plan
}

/// `NIM_STATE=removed` (docs/plugins/nim-account.md, "`NIM_STATE=removed`"): the generated objects
/// deleted and the "disabled" status written; the finalizer is left alone, as upstream's cleanup
/// runner leaves it.
pub fn disable(plan: &mut Plan, account: &Object, now: &str) {
    let current = status::Status::of(account);
    reconcile::cleanup(plan, account, &current);
    let mut disabled = status::disabled(account.generation(), now);
    // Unchanged conditions keep their transition time, so a repeat writes nothing.
    for condition in &mut disabled.conditions {
        if let Some(old) = current.conditions.iter().find(|c| {
            c.type_ == condition.type_
                && c.status == condition.status
                && c.reason == condition.reason
        }) {
            condition.last_transition_time = old.last_transition_time.clone();
        }
    }
    if disabled != current {
        plan.status(&disabled);
    }
}

/// Secrets and ConfigMaps map to every Account naming them, by name only and in any
/// namespace, as upstream's field indexes match them.
pub fn map_event(event: &WatchEvent, cluster: &dyn Cluster) -> Result<Vec<RequestKey>, Error> {
    let object = event.object()?;
    let names: fn(&AccountSpec) -> Option<&str> = match object.kind() {
        "Secret" => |s| s.api_key_secret.name.as_deref(),
        "ConfigMap" if object.name().is_empty() => return Ok(Vec::new()),
        "ConfigMap" => |s| s.model_list_config.as_ref()?.name.as_deref(),
        _ => return Ok(Vec::new()),
    };
    let accounts = cluster.list_objects(&gvk::nim_account(), None, None)?;
    Ok(accounts
        .iter()
        .filter(|a| names(&spec::spec(a)) == Some(object.name()))
        .map(|a| request_key(a.namespace(), a.name()))
        .collect())
}
