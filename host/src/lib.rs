//! The odh-model-controller host: watch loops, admission webhooks and the model-serving-api
//! server, with every per-kind decision delegated to WebAssembly plugins.

pub mod applier;
pub mod cache;
pub mod cli;
pub mod controller;
pub mod crd;
pub mod discovery;
pub mod gvk;
pub mod label_selector;
pub mod leader;
pub mod logging;
pub mod metrics;
pub mod plugin;
pub mod plugin_cli;
pub mod process_env;
pub mod registry;
pub mod run;
pub mod servers;
pub mod webhook;
