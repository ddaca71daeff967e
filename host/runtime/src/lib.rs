//! The plugin runtime: the WIT bindings, the sandboxed engine, loaded plugins and the slots that
//! hold them, and [`dispatch`], the one call path every controller, webhook and API route takes.
//!
//! Layers, each using only those above it: `gvk`, `bindings`, `wire` (the host's view of what
//! crosses the boundary), `errors`, `limits`, `capabilities`, `source`, `export`; then
//! `call_clock`, `call_env`, `cluster_view`, `http_connect`, `http_gate`, `call_state` (one call's
//! store); then `engine` and `loaded`; `slot` and `set`; `dispatch` on top.
//!
//! The sandbox (`call_state` and what it uses) records no metric: what it refused or dropped in a
//! call comes back to `loaded`, which counts it, and `dispatch` meters every call. Nothing here
//! knows Kubernetes clients, servers or any product: those are the crates above.

pub mod bindings;
mod bounded_waits;
mod call_clock;
pub mod call_env;
mod call_state;
mod call_writes;
pub mod capabilities;
pub mod cluster_view;
pub mod dispatch;
pub mod engine;
pub mod errors;
pub mod export;
pub mod gvk;
pub mod host_wait;
pub mod http_connect;
mod http_gate;
pub mod http_trust;
pub mod identity;
pub mod isa_baseline;
pub mod keys;
pub mod limits;
mod loaded;
pub mod log_budget;
pub mod memory_budget;
pub mod parallel;
pub mod precompile;
pub mod record;
pub mod rollout;
pub mod set;
pub mod shadow_report;
pub mod shadow_stats;
pub mod slot;
pub mod source;
pub mod wire;
pub mod writes;

pub use call_env::{CallEnv, CallerView, Effects};
pub use call_state::MAX_HOST_CALLS_PER_CALL;
pub use capabilities::{Capabilities, Grants};
pub use cluster_view::{ClusterView, MemoryCluster, NoCluster};
pub use engine::{EngineOptions, PRECOMPILED_DIR, PluginEngine};
pub use errors::{CallError, GuestError};
pub use export::Export;
pub use http_trust::HttpTrust;
pub use identity::Identity;
pub use limits::Limits;
pub use loaded::{
    AdmissionInput, LoadError, LoadRequest, LoadedPlugin, ReconcileInput, WatchEventInput,
    check_primary_metadata,
};
pub use memory_budget::MemoryBudget;
pub use set::PluginSet;
pub use slot::PluginSlot;
pub use source::Source;
pub use writes::{ApiStatus, Simulated, WriteError, Writer};
