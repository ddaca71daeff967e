//! A graceful stop: the process turns not ready and its TLS servers answer with
//! `Connection: close` while they drain, the controllers finish what they are doing, the leader
//! election ends, then the servers stop.

use std::sync::Arc;

use odh_reconcile::controller;
use odh_reconcile::leader::ElectionEnd;
use odh_serve::probes::ReadyCheck;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::info;

/// The servers' tasks.
pub(crate) type Servers = JoinSet<anyhow::Result<()>>;

/// Whether the process is stopping: its TLS servers then close every connection after its
/// answer, and it is not ready.
#[derive(Clone, Default)]
pub(crate) struct Draining(Arc<std::sync::atomic::AtomicBool>);

impl Draining {
    pub(crate) fn start(&self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub(crate) fn ready_check(&self) -> ReadyCheck {
        let draining = self.0.clone();
        Arc::new(move || !draining.load(std::sync::atomic::Ordering::SeqCst))
    }

    /// `router` answering with `Connection: close` once draining: a client then opens its next
    /// connection elsewhere, where a request sent on an idle connection the server is closing
    /// would fail with EOF (the apiserver does not retry a webhook call).
    pub(crate) fn closing_connections(&self, router: axum::Router) -> axum::Router {
        let draining = self.0.clone();
        router.layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                let draining = draining.clone();
                async move {
                    let mut response = next.run(request).await;
                    if draining.load(std::sync::atomic::Ordering::SeqCst) {
                        response.headers_mut().insert(
                            http::header::CONNECTION,
                            http::HeaderValue::from_static("close"),
                        );
                    }
                    response
                }
            },
        ))
    }
}

/// What a stop needs.
pub(crate) struct Stopping {
    /// Controllers and background tasks.
    pub(crate) shutdown: CancellationToken,
    /// The servers (probes, metrics, webhooks, model-serving API).
    pub(crate) servers_stop: CancellationToken,
    pub(crate) servers: Servers,
    pub(crate) draining: Draining,
    /// How long the TLS servers drain before they stop accepting.
    pub(crate) drain: std::time::Duration,
}

impl Stopping {
    /// A graceful stop. The process turns not ready and its TLS servers answer with
    /// `Connection: close` for the drain; meanwhile the controllers finish the reconciles in
    /// progress (bounded) and the leader election ends (releasing the lease when configured
    /// to), so a successor is not held up by the drain. Then the servers stop accepting and let
    /// the requests in flight finish.
    pub(crate) async fn stop(
        self,
        controllers: Option<JoinSet<()>>,
        election_stop: CancellationToken,
        election: Option<tokio::task::JoinHandle<ElectionEnd>>,
    ) -> anyhow::Result<()> {
        let Self {
            shutdown,
            servers_stop,
            mut servers,
            draining,
            drain,
        } = self;
        info!(drain = ?drain, "shutting down");
        let drained = tokio::time::Instant::now() + drain;
        draining.start();
        shutdown.cancel();
        if let Some(mut controllers) = controllers {
            let grace = controller::SHUTDOWN_GRACE + std::time::Duration::from_secs(1);
            let stopped = tokio::time::timeout(grace, async {
                while controllers.join_next().await.is_some() {}
            })
            .await;
            if stopped.is_err() {
                tracing::warn!("controllers still running after {grace:?}; stopping them");
            }
        }
        election_stop.cancel();
        if let Some(handle) = election {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), handle).await;
        }
        tokio::time::sleep_until(drained).await;
        servers_stop.cancel();
        while let Some(r) = servers.join_next().await {
            if let Ok(Err(e)) = r {
                tracing::warn!("a server stopped with an error: {e:#}");
            }
        }
        info!("stopped");
        Ok(())
    }
}
