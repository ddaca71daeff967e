//! The process's servers: the TLS server ([`tls`]), the admission webhooks on it ([`webhook`]),
//! the plugins' API routes ([`api_routes`]) and the model-serving-api around them
//! ([`model_serving_api`]), and the plain-HTTP probes and metrics ([`probes`]).
//!
//! Decisions are the plugins', asked through [`odh_plugin_runtime::dispatch`]; reads go to the
//! reconcile engine's caches and side effects to its applier. Names the deployment gives its
//! webhooks come from the application ([`webhook::WebhookNames`]): nothing here names a product.

pub mod api_routes;
pub mod metrics_auth;
pub mod model_serving_api;
pub mod probes;
pub mod tls;
pub mod webhook;
