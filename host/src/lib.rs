//! The odh-model-controller host: watch loops, admission webhooks and the model-serving-api
//! server, with every per-kind decision delegated to WebAssembly plugins.
//!
//! The host knows no KServe, OpenShift or ODH kind: what it watches, caches, serves and runs
//! comes from the plugins' manifests; the built-in plugins and their environment are listed in
//! one place, `builtins/list.rs`.

pub mod api_client;
pub mod api_server;
pub mod applier;
pub mod builtins;
pub mod cache;
pub mod cli;
pub mod controller;
pub mod crd;
pub mod deploy_manifests;
pub mod discovery;
pub mod dispatch;
pub mod gvk;
pub mod label_selector;
pub mod leader;
pub mod logging;
pub mod metrics;
pub mod model_serving_api;
pub mod plugin;
pub mod plugin_cli;
pub mod plugin_publish;
pub mod profile;
pub mod registry;
pub mod run;
pub mod servers;
pub mod webhook;
