//! How a reconcile's failures reach the cluster. A slow host call fails that call, not the
//! reconcile (review D1): a plugin whose reconcile asks an HTTP server that never answers still
//! gets everything else it decided applied; the failed request is reported (a Warning Event on
//! the primary) and the reconcile is retried. A write outside the plugin's grants refuses the
//! whole outcome: nothing is written, a `WriteRefused` Warning Event and a counted metric say
//! why.

use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, PostParams};
use odh_model_controller::metrics::Metrics;
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

/// The first Event (of `reason`, or any) regarding the primary `name`, once there is one.
async fn event_on(t: &TestContext, name: &str, reason: Option<&str>) -> anyhow::Result<Event> {
    let events: Api<Event> = t.api();
    eventually("an Event on the primary", Timing::default(), || async {
        events
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .find(|e| {
                reason.is_none_or(|r| e.reason.as_deref() == Some(r))
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
            })
            .ok_or_else(|| anyhow::anyhow!("no {reason:?} Event on {name} yet"))
    })
    .await
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
    let event = event_on(&t, "caller", Some("ReconcileFailed")).await?;
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

/// `odh_refused_writes_total` of misbehave writing Secrets.
fn refused_secret_writes() -> f64 {
    Metrics::global()
        .render()
        .lines()
        .find(|l| l.starts_with(r#"odh_refused_writes_total{plugin="misbehave",kind="Secret/v1"}"#))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_outside_the_grants_writes_nothing_and_is_reported() -> anyhow::Result<()> {
    let t = TestContext::new("write-refused").await?;
    let before = refused_secret_writes();
    let shutdown = CancellationToken::new();
    let _started = start_controllers(
        t.client.clone(),
        vec![load_with("misbehave", |r| r)],
        1,
        shutdown.clone(),
    )
    .await?;
    let cms: Api<ConfigMap> = t.api();
    for (name, write) in [("thief", "apply-secret"), ("adopter", "foreign-owner")] {
        let primary = json!({"metadata": {"name": name, "labels": {"odh-test/misbehave": "true"}},
            "data": {"behaviour": "write", "write": write, "owner": "bystander", "ownerUid": "u-2"}});
        cms.create(&PostParams::default(), &serde_json::from_value(primary)?)
            .await?;
    }
    // A well-behaved primary of the same plugin, reconciled after them: the refusals are
    // settled by the time it converges.
    let good = json!({"metadata": {"name": "honest", "labels": {"odh-test/misbehave": "true"}}});
    cms.create(&PostParams::default(), &serde_json::from_value(good)?)
        .await?;
    exists(&cms, "honest-ok").await?;

    for (name, says) in [
        ("thief", "may not write Secret/v1"),
        ("adopter", "may not make ConfigMap"),
    ] {
        let event = event_on(&t, name, None).await?;
        let note = event.note.clone().unwrap_or_default();
        assert_eq!(event.reason.as_deref(), Some("WriteRefused"), "{note}");
        assert_eq!(event.type_.as_deref(), Some("Warning"));
        assert!(note.contains(says), "{name}: {note}");
    }
    let secrets: Api<Secret> = t.api();
    assert!(secrets.get_opt("thief-stolen").await?.is_none());
    assert!(cms.get_opt("adopter-adopted").await?.is_none());
    assert!(
        refused_secret_writes() > before,
        "odh_refused_writes_total for Secret did not grow"
    );
    shutdown.cancel();
    Ok(())
}
