//! The admission webhooks.
//!
//! Every webhook a plugin's manifest declares becomes a `POST` route at exactly its path
//! ([`WebhookTable`], [`webhook_router`]), answered by the plugin through
//! [`odh_plugin_runtime::dispatch`]; [`config_sync`] keeps the cluster's webhook configurations
//! in step with what is served. The HTTPS server they run on is [`crate::tls`]; what it holds
//! at once is bounded by an [`AdmissionGate`].

pub mod config_sync;
mod in_flight;
mod invalid;
pub mod registration;
mod review;
mod router;
mod table;
pub mod verdict;

pub use in_flight::{AdmissionGate, InFlightLimit, MAX_WAIT, MIN_WEIGHT};
pub use registration::{Registration, WebhookNames};
pub use review::{
    ADMISSION_API_VERSION, ReviewError, parse_review, review_response, review_response_bytes,
};
pub use router::{gated_webhook_router, live_webhook_router, webhook_router};
pub use table::{
    LiveWebhookTable, WebhookRoute, WebhookTable, WebhookTableError, routable, selector_admits,
};
pub use verdict::Verdict;
