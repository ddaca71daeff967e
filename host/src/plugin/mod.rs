//! The plugin runtime: the WIT bindings, the sandboxed engine and loaded plugins.

pub mod bindings;
pub mod builtin;
mod call_state;
pub mod capabilities;
pub mod cluster_view;
pub mod engine;
pub mod errors;
pub mod limits;
mod loaded;
pub mod slot;
pub mod wire;

pub use capabilities::{Capabilities, Grants};
pub use cluster_view::{ClusterView, MemoryCluster, NoCluster};
pub use engine::{EngineOptions, PluginEngine};
pub use errors::{CallError, GuestError};
pub use limits::Limits;
pub use loaded::{
    AdmissionInput, LoadError, LoadRequest, Plugin, PluginSource, ReconcileInput, WatchEventInput,
};
pub use slot::PluginSlot;
