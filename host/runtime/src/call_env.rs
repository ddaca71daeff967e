//! What one call may reach outside the sandbox: the cluster state it reads, whether it may
//! change the outside world, and (API calls) who is calling.

use std::sync::Arc;
use std::time::Duration;

use crate::cluster_view::ClusterView;
use crate::wire::AccessAttributes;
use crate::writes::Writer;

/// Whether a call's outgoing HTTP may change anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effects {
    /// Any method to the granted hosts: the active version serving the cluster.
    Live,
    /// Only `GET` and `HEAD` go out: a shadow candidate, whose decisions are never applied, and
    /// an offline `plugin eval`. Anything else fails in the plugin with a message saying so.
    ReadOnly,
}

/// The caller of an API request: answers access questions with the caller's own credentials,
/// which never reach the plugin.
pub trait CallerView: Send + Sync {
    /// Whether the caller may do what `attributes` describe; `within` bounds the check.
    fn allowed(&self, attributes: &AccessAttributes, within: Duration) -> anyhow::Result<bool>;
}

#[derive(Clone)]
pub struct CallEnv {
    pub cluster: Arc<dyn ClusterView>,
    pub effects: Effects,
    /// Set for API calls on routes that authenticate their caller.
    pub caller: Option<Arc<dyn CallerView>>,
    /// Makes a reconcile's `writes` (the controller's); without one a reconcile's writes are
    /// simulated over `cluster`, and other calls may not write.
    pub writer: Option<Arc<dyn Writer>>,
}

impl CallEnv {
    /// A call whose decisions are applied.
    pub fn live(cluster: Arc<dyn ClusterView>) -> Self {
        Self {
            cluster,
            effects: Effects::Live,
            caller: None,
            writer: None,
        }
    }

    /// A call whose decisions are only looked at (shadow, eval).
    pub fn read_only(cluster: Arc<dyn ClusterView>) -> Self {
        Self {
            cluster,
            effects: Effects::ReadOnly,
            caller: None,
            writer: None,
        }
    }

    /// The same reach, without effects: what a shadow candidate gets beside a live call (its
    /// writes are dry runs).
    pub fn without_effects(&self) -> Self {
        Self {
            effects: Effects::ReadOnly,
            writer: self.writer.as_ref().map(|w| w.dry_run()),
            ..self.clone()
        }
    }

    /// A reconcile's writer.
    pub fn with_writer(mut self, writer: Arc<dyn Writer>) -> Self {
        self.writer = Some(writer);
        self
    }

    pub fn with_caller(mut self, caller: Arc<dyn CallerView>) -> Self {
        self.caller = Some(caller);
        self
    }
}
