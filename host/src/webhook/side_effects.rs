//! Where the objects a webhook decision asks for (`side-effects`) go.

use std::future::Future;
use std::pin::Pin;

use crate::plugin::wire::Desired;

/// The future a [`SideEffectSink`] returns.
pub type SideEffectFuture<'a> = Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send + 'a>>;

/// Applies the side effects of an allowed, non-dry-run admission decision before the response
/// is sent, as the plugin named `plugin` (whose write capabilities were checked already). An
/// error turns the response into a denial (code 500) naming the plugin.
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
