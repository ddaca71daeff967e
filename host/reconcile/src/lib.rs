//! The reconcile engine: the shared caches of every watched kind, the controllers with their
//! work queues, the applier that writes what a plugin's outcome asks for, and leader election.
//!
//! A controller asks its plugin through [`odh_plugin_runtime::dispatch`]; nothing here knows a
//! plugin, a product or a server.

pub mod api_client;
pub mod applier;
pub mod cache;
pub mod controller;
pub mod discovery;
pub mod kinds;
pub mod leader;
pub mod side_effects;
