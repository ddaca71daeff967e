//! The odh-model-controller application: the command line, `run` (build, then serve), the
//! standalone model-serving-api, the offline plugin tools, and the registration list — every
//! fact about the built-in plugins and the deployment (`builtins/list.rs`), the only place the
//! host names a product.
//!
//! The crates below, each depending only on those below it:
//! `odh-serve` (servers) → `odh-reconcile` (caches, controllers, applier, leader election) and
//! `odh-plugin-sources` (plugin sources and swap) → `odh-plugin-runtime` (sandbox, the one call
//! path) → `odh-host-metrics` (docs/decisions.md, "The host's crates"). They are re-exported
//! under their module names here for tests, benches and tools.

// The static musl build's allocator (docs/performance.md, "The image's binary"): musl's own
// made plugin compilation twice as slow as glibc's. Declared in the library so the benches built
// for musl measure what the binary runs; the glibc build keeps glibc's.
#[cfg(target_env = "musl")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

// Its `memcpy` and `memmove` take the place of musl's in the static build (nothing here names
// them: the linker resolves the C symbols to it).
#[cfg(target_env = "musl")]
extern crate odh_memcopy;

pub mod builtins;
pub mod cli;
pub mod crd;
pub mod deploy_manifests;
pub mod logging;
pub mod model_serving_api;
pub mod plugin_cli;
pub mod plugin_new;
pub mod plugin_publish;
pub mod plugin_record;
pub mod plugin_replay;
pub mod profile;
pub mod record_route;
pub mod run;
mod shutdown;
pub mod startup;
pub mod traces;

pub use odh_host_metrics as metrics;
pub use odh_label_selector as label_selector;
pub use odh_plugin_runtime as plugin;
pub use odh_plugin_runtime::{dispatch, gvk};
pub use odh_plugin_sources as registry;
pub use odh_reconcile::{
    api_client, applier, cache, controller, discovery, kinds, leader, side_effects,
};
pub use odh_serve::{api_routes, metrics_auth, probes, tls, webhook};
