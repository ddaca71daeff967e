//! [`Ctx`]: what an export may use besides its request.

use crate::caller::{self, Caller};
use crate::cluster::{self, Cluster};
use crate::http::{self, Client};
use crate::writes::Writes;

/// The context handed to every export: the plugin's parsed settings and the host's services.
///
/// Inside the host the [`plugin!`](crate::plugin) glue builds it over the host imports
/// ([`Ctx::host`]); native tests build one over fakes:
///
/// ```
/// use odh_plugin_sdk::{Ctx, NoSettings, http, testing::FakeCluster};
///
/// let cluster = FakeCluster::new();
/// let registry = http::Fake::new();
/// let cx = Ctx::new(&NoSettings, &cluster).with_http(&registry);
/// # let _ = cx;
/// ```
pub struct Ctx<'a, S> {
    /// The settings, parsed from the admin's JSON (`{}` when unset).
    pub settings: &'a S,
    /// Reads of the declared kinds.
    pub cluster: &'a dyn Cluster,
    /// Outgoing HTTP to the declared hosts.
    pub http: &'a dyn Client,
    /// The caller of an HTTP API request ([`Plugin::handle`](crate::Plugin::handle) only).
    pub caller: &'a dyn Caller,
    /// Writes made now, each answered ([`Plugin::reconcile`](crate::Plugin::reconcile) only;
    /// the host's when the plugin sets [`Plugin::USES_WRITES`](crate::Plugin::USES_WRITES),
    /// a test's through [`Ctx::with_writes`]): see [`Ctx::writes`].
    pub writes: Option<&'a dyn Writes>,
}

impl<'a, S> Ctx<'a, S> {
    /// The host's cluster and caller with these settings and this HTTP client (the glue
    /// passes [`http::Host`], or [`http::Off`] for a plugin that sends no requests); no writes
    /// (the glue adds the host's for a plugin that uses them).
    pub fn host(settings: &'a S, http: &'a dyn Client) -> Ctx<'a, S> {
        Ctx {
            settings,
            cluster: &cluster::Host,
            http,
            caller: &caller::Host,
            writes: None,
        }
    }

    /// `settings` over `cluster`; HTTP, the caller and writes are the host's (which fail off
    /// `wasm32`) until replaced with [`Ctx::with_http`], [`Ctx::with_caller`] and
    /// [`Ctx::with_writes`].
    pub fn new(settings: &'a S, cluster: &'a dyn Cluster) -> Ctx<'a, S> {
        Ctx {
            cluster,
            ..Ctx::host(settings, &http::Host)
        }
    }

    /// The same context with another HTTP client.
    pub fn with_http(self, http: &'a dyn Client) -> Self {
        Ctx { http, ..self }
    }

    /// The same context with another caller.
    pub fn with_caller(self, caller: &'a dyn Caller) -> Self {
        Ctx { caller, ..self }
    }

    /// The same context with other writes.
    pub fn with_writes(self, writes: &'a dyn Writes) -> Self {
        Ctx {
            writes: Some(writes),
            ..self
        }
    }

    /// The writes, or [`Error::Internal`] saying there are none here (a native test's
    /// [`Ctx::new`] without [`Ctx::with_writes`]).
    pub fn writes(&self) -> Result<&'a dyn Writes, crate::Error> {
        self.writes.ok_or_else(|| {
            crate::Error::internal(
                "no writes in this context: a plugin that writes while it reconciles sets `const USES_WRITES: bool = true` (native tests: Ctx::with_writes with a testing::FakeWrites)",
            )
        })
    }
}
