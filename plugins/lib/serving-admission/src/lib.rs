//! Admission logic shared by the serving webhooks: ConnectionsAPI credential injection and
//! HardwareProfile scheduling (docs/plugins/isvc.md and docs/plugins/llm-gateway.md, "Webhooks").
//!
//! The InferenceService and LLMInferenceService webhooks apply the same rules to differently
//! shaped objects, so each feature is split in two layers:
//!
//! * generic parts that only read the cluster or transform small JSON fragments (resolve a
//!   connection Secret, decide inject/remove/replace, parse a HardwareProfile, merge node
//!   scheduling, fill resource requests and limits), and
//! * an InferenceService layer (`connections::default_inference_service`,
//!   `hardware_profile::default_inference_service`, run in that order by
//!   [`default_inference_service`]) that edits the raw ISVC JSON in place, and
//! * an LLMInferenceService layer (`connections::llm`, `hardware_profile::llm`, run in that
//!   order by [`default_llm_inference_service`]) for `spec.model.uri` and `spec.template`.
//!
//! Objects stay raw [`Value`]s throughout: the host turns the before/after difference
//! into the admission patch, so anything not named by the spec (unknown fields included) must
//! come out exactly as it went in. Where the spec says a field is "set to null/omitted", the key
//! is removed; an emptied list or map is removed rather than left empty, as Go's `omitempty`
//! serialisation would do.
//!
//! Error convention: a decision of these rules (a missing Secret, an unsupported connection type,
//! a missing or malformed HardwareProfile) is [`Error::Denied`]
//! with the spec's exact text; a failing cluster read keeps the host's error case and text,
//! prefixed with the spec's context (`failed to validate connection: <err>`), because the Go
//! webhook answers with the inner API status in that case.

pub mod connections;
pub mod hardware_profile;
pub mod quantity;

use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{Error, Operation, Value, json};

/// One InferenceService admission, as the defaulters see it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IsvcAdmission<'a> {
    pub operation: Operation,
    /// The existing object (UPDATE).
    pub old: Option<&'a Value>,
    /// The admission request's namespace (an object under CREATE may lack its own).
    pub namespace: &'a str,
    /// A dry run: no side effects are asked for.
    pub dry_run: bool,
}

impl<'a> IsvcAdmission<'a> {
    /// A CREATE in `namespace`.
    pub fn create(namespace: &'a str) -> Self {
        IsvcAdmission {
            operation: Operation::Create,
            old: None,
            namespace,
            dry_run: false,
        }
    }

    /// An UPDATE in `namespace` of `old`.
    pub fn update(namespace: &'a str, old: &'a Value) -> Self {
        IsvcAdmission {
            operation: Operation::Update,
            old: Some(old),
            ..Self::create(namespace)
        }
    }
}

/// What defaulting asks for besides editing the object: the ServiceAccounts to create (S3
/// connections, not on a dry run) and a skipped profile's Event, the warnings worth logging
/// (HardwareProfile scheduling that could not be undone, ...), and a failed step's denial (the
/// side effects still stand: upstream creates them before that step). The webhooks answer it
/// with [`AdmissionDecision::from_defaulted`](odh_plugin_sdk::AdmissionDecision::from_defaulted).
pub use odh_plugin_sdk::admission::Defaulted;

/// The InferenceService mutating webhook's defaulting: ConnectionsAPI, then HardwareProfile,
/// both editing `isvc` in place. An InferenceService being deleted is left alone.
pub fn default_inference_service(
    isvc: &mut Value,
    admission: &IsvcAdmission,
    cluster: &dyn Cluster,
) -> Result<Defaulted, Error> {
    if json::is_deleting(isvc) {
        return Ok(Defaulted::default());
    }
    let side_effects = connections::default_inference_service(isvc, admission, cluster)?;
    Ok(
        match hardware_profile::default_inference_service(isvc, admission, cluster) {
            Ok(warnings) => Defaulted {
                side_effects,
                warnings,
                denied: None,
            },
            Err(e) => Defaulted {
                side_effects,
                warnings: Vec::new(),
                denied: Some(e),
            },
        },
    )
}

/// One admission of either serving kind (the InferenceService name is historical).
pub type Admission<'a> = IsvcAdmission<'a>;

/// The LLMInferenceService mutating webhook's defaulting (either version): ConnectionsAPI,
/// then HardwareProfile, both editing `llmisvc` in place. An object being deleted is left
/// alone. A failure of either step is `denied`, and the ServiceAccounts asked for before it
/// are still returned (upstream creates them before it validates the S3 data). A skipped
/// profile's `ContainerNameMismatch` Event is one of the side effects; `now` stamps it.
pub fn default_llm_inference_service(
    llmisvc: &mut Value,
    admission: &Admission,
    cluster: &dyn Cluster,
    now: &str,
) -> Defaulted {
    if json::is_deleting(llmisvc) {
        return Defaulted::default();
    }
    let mut side_effects =
        match connections::llm::default_llm_inference_service(llmisvc, admission, cluster) {
            Ok(accounts) => accounts,
            Err((accounts, e)) => {
                return Defaulted {
                    side_effects: accounts,
                    warnings: Vec::new(),
                    denied: Some(e),
                };
            }
        };
    match hardware_profile::llm::default_llm_inference_service(llmisvc, admission, cluster, now) {
        Ok(profile) => {
            side_effects.extend(profile.event);
            Defaulted {
                side_effects,
                warnings: profile.warnings,
                denied: None,
            }
        }
        Err(e) => Defaulted {
            side_effects,
            warnings: Vec::new(),
            denied: Some(e),
        },
    }
}
