//! Admission logic shared by the serving webhooks: ConnectionsAPI credential injection and
//! HardwareProfile scheduling (spec `isvc.md` §4.4–§4.5, `llm.md` §7.3–§7.4).
//!
//! The InferenceService and LLMInferenceService webhooks apply the same rules to differently
//! shaped objects, so each feature is split in two layers:
//!
//! * generic parts that only read the cluster or transform small JSON fragments (resolve a
//!   connection Secret, decide inject/remove/replace, parse a HardwareProfile, merge node
//!   scheduling, fill resource requests and limits), and
//! * an InferenceService layer (`connections::default_inference_service`,
//!   `hardware_profile::default_inference_service`) that edits the raw ISVC JSON in place.
//!
//! Objects stay raw [`serde_json::Value`]s throughout: the host turns the before/after difference
//! into the admission patch, so anything not named by the spec (unknown fields included) must
//! come out exactly as it went in. Where the spec says a field is "set to null/omitted", the key
//! is removed; an emptied list or map is removed rather than left empty, as Go's `omitempty`
//! serialisation would do.
//!
//! Error convention: a decision of these rules (a missing Secret, an unsupported connection type,
//! a missing or malformed HardwareProfile) is [`Error::Denied`](odh_plugin_sdk::Error::Denied)
//! with the spec's exact text; a failing cluster read keeps the host's error case and text,
//! prefixed with the spec's context (`failed to validate connection: <err>`), because the Go
//! webhook answers with the inner API status in that case.

pub mod connections;
pub mod hardware_profile;
pub mod quantity;

mod base64;
mod json;

pub use json::is_deleting;
