//! Helpers for native tests of plugin logic (not built for `wasm32`).
//!
//! * [`FakeCluster`]: an in-memory cluster; [`FakeCluster::for_manifest`] refuses reads of
//!   kinds the manifest does not declare, as the host does.
//! * Assertions on an [`Outcome`](crate::Outcome): [`applied`](crate::Outcome::applied),
//!   [`deleted`](crate::Outcome::deleted), [`assert_declared`](crate::Outcome::assert_declared)
//!   (every applied or deleted kind is in the manifest's `writes`) and
//!   [`patched_primary`](crate::Outcome::patched_primary) (what the host's metadata patch
//!   makes of the primary).
//! * [`FakeWrites`]: records the writes a reconcile makes now ([`Ctx::writes`](crate::Ctx)),
//!   failing those of a kind when asked.
//! * [`Case`]: a table-driven admission test case, in the style of Kubewarden's `Testcase`.
//!
//! ```
//! use odh_plugin_sdk::testing::FakeCluster;
//! use odh_plugin_sdk::{Controller, Manifest, Plan, core_gvk, json};
//!
//! let cm = core_gvk("ConfigMap");
//! let manifest = Manifest::new("p", "0.1.0").controller(Controller::new("p", cm.clone()).owns(cm));
//! let _cluster = FakeCluster::for_manifest(&manifest);
//! let mut plan = Plan::new();
//! plan.apply_owned(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}));
//! let outcome = plan.into_outcome();
//! outcome.assert_declared(&manifest);
//! assert!(outcome.applied("ConfigMap", "a").is_some());
//! ```

mod admission;
mod fake_cluster;
mod fake_writes;
mod outcome;

pub use admission::Case;
pub use fake_cluster::FakeCluster;
pub use fake_writes::FakeWrites;
pub use outcome::Applied;
