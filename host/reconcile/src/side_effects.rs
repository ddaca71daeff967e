//! Where the objects an admission decision asks for (`side-effects`) go: the port the admission
//! server writes through, implemented by the [`crate::applier::Applier`].

use std::future::Future;
use std::pin::Pin;

use odh_plugin_runtime::wire::Desired;

/// The future a [`SideEffectSink`] returns.
pub type SideEffectFuture<'a> =
    Pin<Box<dyn Future<Output = Result<(), SideEffectError>> + Send + 'a>>;

/// Why a side effect could not be made, in the two shapes controller-runtime answers errors
/// with.
#[derive(Debug, thiserror::Error)]
pub enum SideEffectError {
    /// The API server refused (RBAC, quota, a timeout): its status is the answer, unchanged.
    #[error("{}", .0.message)]
    Status(Box<kube::core::Status>),
    /// Anything else (no such kind, no connection): a 403 denial with this message.
    #[error("{0}")]
    Failed(String),
}

/// Creates the side effects of a non-dry-run admission decision that do not exist yet (an
/// existing object of that name is left alone), before the response is sent, as the plugin
/// named `plugin` (whose write capabilities were checked already). An error becomes the
/// response.
pub trait SideEffectSink: Send + Sync {
    fn apply<'a>(&'a self, plugin: &'a str, objects: Vec<Desired>) -> SideEffectFuture<'a>;
}

/// Drops side effects (with a debug line): for tests and hosts without a writer yet.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSideEffects;

impl SideEffectSink for NoSideEffects {
    fn apply<'a>(&'a self, plugin: &'a str, objects: Vec<Desired>) -> SideEffectFuture<'a> {
        tracing::debug!(
            plugin,
            count = objects.len(),
            "admission side effects dropped (no sink configured)"
        );
        Box::pin(std::future::ready(Ok(())))
    }
}
