//! A slow host call fails that call, not the reconcile (review D1): a plugin whose reconcile
//! asks an HTTP server that never answers still gets everything else it decided applied; the failed
//! request is reported (a Warning Event on the primary) and the reconcile is retried.

use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, PostParams};
use odh_model_controller::plugin::Limits;
use odh_test_support::host::{load_with, start_controllers};
use odh_test_support::{TestContext, Timing, eventually, exists};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A loopback server that accepts connections, reads the request and never answers; counts the
/// connections.
fn silent_server() -> (String, Arc<AtomicUsize>) {
    use std::io::Read;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let counter = connections.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            counter.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            held.push(conn);
        }
    });
    (format!("http://{addr}/never"), connections)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_request_fails_alone_and_the_reconcile_is_retried() -> anyhow::Result<()> {
    let t = TestContext::new("http-hang").await?;
    let (url, connections) = silent_server();
    let plugin = load_with("misbehave", |r| {
        r.limits(Limits {
            http_timeout_ms: 400,
            ..Limits::default()
        })
    });
    let shutdown = CancellationToken::new();
    let _started = start_controllers(t.client.clone(), vec![plugin], 1, shutdown.clone()).await?;
    let cms: Api<ConfigMap> = t.api();
    let primary = json!({"metadata": {"name": "caller", "labels": {"odh-test/misbehave": "true"}}, "data": {"behaviour": "http-get", "url": url}});
    cms.create(&PostParams::default(), &serde_json::from_value(primary)?)
        .await?;

    exists(&cms, "caller-ok").await?;
    let events: Api<Event> = t.api();
    let event = eventually(
        "the failed request is reported on the primary",
        Timing::default(),
        || async {
            events
                .list(&ListParams::default())
                .await?
                .items
                .into_iter()
                .find(|e| {
                    e.reason.as_deref() == Some("ReconcileFailed")
                        && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("caller")
                })
                .ok_or_else(|| anyhow::anyhow!("no ReconcileFailed Event yet"))
        },
    )
    .await?;
    let note = event.note.unwrap_or_default();
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert!(
        note.contains("transient") && note.contains("Timeout"),
        "{note}"
    );
    eventually("the reconcile is retried", Timing::default(), || async {
        anyhow::ensure!(
            connections.load(Ordering::SeqCst) >= 2,
            "{} attempts",
            connections.load(Ordering::SeqCst)
        );
        Ok(())
    })
    .await?;
    shutdown.cancel();
    Ok(())
}
