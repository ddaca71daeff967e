//! The odh-model-controller host: watch loops, admission webhooks and the model-serving-api
//! server, with every per-kind decision delegated to WebAssembly plugins.

pub mod cli;
pub mod crd;
pub mod discovery;
pub mod gvk;
pub mod label_selector;
pub mod logging;
pub mod plugin;
pub mod plugin_cli;
pub mod run;
pub mod applier;
pub mod cache;
pub mod controller;
