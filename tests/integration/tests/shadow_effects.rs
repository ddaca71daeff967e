//! Plugins decide; the host does. A shadow candidate runs beside the active version on the
//! same reconcile requests, and its outgoing HTTP is limited to safe methods: its POST never
//! reaches the server, while its GET does (so the shadow did run and could reach it).

use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use odh_model_controller::metrics::Metrics;
use odh_model_controller::plugin::Grants;
use odh_test_support::host::{load, load_with, start_controllers};
use odh_test_support::{TestContext, Timing, consistently, eventually, exists};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Requests a loopback server received, by method.
#[derive(Default)]
struct Received {
    posts: AtomicUsize,
    gets: AtomicUsize,
}

/// A loopback HTTP server answering 200 to everything, counting POSTs and GETs.
fn recording_server() -> (String, Arc<Received>) {
    use std::io::{Read, Write};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let received = Arc::new(Received::default());
    let counts = received.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut buf = [0u8; 8192];
            let n = conn.read(&mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]);
            if head.starts_with("POST ") {
                counts.posts.fetch_add(1, Ordering::SeqCst);
            } else if head.starts_with("GET ") {
                counts.gets.fetch_add(1, Ordering::SeqCst);
            }
            let _ = conn
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
        }
    });
    (format!("http://{addr}/records"), received)
}

fn shadow_differences() -> f64 {
    let text = Metrics::global().render();
    text.lines()
        .find(|l| {
            l.starts_with("odh_plugin_shadow_differences_total{")
                && l.contains(r#"plugin="misbehave""#)
                && l.contains(r#"op="reconcile""#)
        })
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// The sum of a metric's samples whose labels include every one of `labels`.
fn total(metric: &str, labels: &[&str]) -> f64 {
    let text = Metrics::global().render();
    text.lines()
        .filter(|l| l.starts_with(&format!("{metric}{{")) && labels.iter().all(|x| l.contains(x)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shadow_calls_are_counted_apart_from_the_active_calls() -> anyhow::Result<()> {
    let t = TestContext::new("shadow-metrics").await?;
    let shutdown = CancellationToken::new();
    let started =
        start_controllers(t.client.clone(), vec![load("hello")], 1, shutdown.clone()).await?;
    started.slots[0].set_shadow(Some(load("hello")));
    let cms: Api<ConfigMap> = t.api();
    let hello = [r#"plugin="hello""#, r#"op="reconcile""#];
    let counts = || {
        (
            total(
                "controller_runtime_reconcile_total",
                &[r#"controller="hello""#],
            ),
            total("odh_plugin_calls_total", &hello),
            total("odh_plugin_shadow_calls_total", &hello),
        )
    };
    let (reconciles_before, active_before, shadow_before) = counts();

    let greeted = json!({"metadata": {"name": "greeted", "labels": {"hello.opendatahub.io/enabled": "true"}}});
    cms.create(&PostParams::default(), &serde_json::from_value(greeted)?)
        .await?;
    exists(&cms, "greeted-hello").await?;
    // Each reconcile is one call of the active version and one of the shadow, each counted once
    // in its own series: both series grow, and neither by more than the reconciles (a shadow
    // call counted as an active one would make the active series twice the reconciles). Bounds,
    // not equalities: the controller watches the whole cluster, and other test processes'
    // labelled ConfigMaps (deleted with their namespaces) are reconciled without a call.
    eventually(
        "every reconcile counted once as an active call and once as a shadow call",
        Timing::default(),
        || async {
            let (reconciles, active, shadow) = counts();
            let (reconciles, active, shadow) = (
                reconciles - reconciles_before,
                active - active_before,
                shadow - shadow_before,
            );
            anyhow::ensure!(
                reconciles >= 1.0
                    && active >= 1.0
                    && shadow >= 1.0
                    && active <= reconciles
                    && shadow <= reconciles,
                "reconciles {reconciles}, active calls {active}, shadow calls {shadow}"
            );
            Ok(())
        },
    )
    .await?;
    shutdown.cancel();
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shadow_candidate_sends_no_post() -> anyhow::Result<()> {
    let t = TestContext::new("shadow-effects").await?;
    let (url, received) = recording_server();
    // The active version may not reach any host: whatever arrives came from the shadow.
    let active = load_with("misbehave", |r| {
        r.grants(Grants {
            http_hosts: Some(Default::default()),
            ..Default::default()
        })
    });
    let shutdown = CancellationToken::new();
    let started = start_controllers(t.client.clone(), vec![active], 1, shutdown.clone()).await?;
    started.slots[0].set_shadow(Some(load("misbehave")));
    let cms: Api<ConfigMap> = t.api();
    let differences = shadow_differences();

    let post = json!({"metadata": {"name": "poster", "labels": {"odh-test/misbehave": "true"}}, "data": {"behaviour": "http-post", "url": url}});
    cms.create(&PostParams::default(), &serde_json::from_value(post)?)
        .await?;
    eventually(
        "the shadow reconciled the poster and decided differently",
        Timing::default(),
        || async {
            anyhow::ensure!(shadow_differences() > differences, "no difference yet");
            Ok(())
        },
    )
    .await?;
    consistently(
        "no POST reaches the server",
        Timing::within(Duration::from_secs(1)),
        || async {
            anyhow::ensure!(received.posts.load(Ordering::SeqCst) == 0, "a POST arrived");
            Ok(())
        },
    )
    .await?;

    let get = json!({"metadata": {"name": "getter", "labels": {"odh-test/misbehave": "true"}}, "data": {"behaviour": "http-get", "url": url}});
    cms.create(&PostParams::default(), &serde_json::from_value(get)?)
        .await?;
    eventually(
        "the shadow's GET reaches the server",
        Timing::default(),
        || async {
            anyhow::ensure!(received.gets.load(Ordering::SeqCst) > 0, "no GET yet");
            Ok(())
        },
    )
    .await?;
    assert_eq!(received.posts.load(Ordering::SeqCst), 0);
    shutdown.cancel();
    Ok(())
}

/// A shadow candidate's `writes` (WIT 0.1.5) are dry runs: the API server answers them (the
/// candidate sees a stored object with a uid), nothing is stored. Only the candidate writes now
/// (`settings.writeNow`), so a `<name>-ok` ConfigMap appearing could only be the shadow's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shadow_candidates_writes_are_dry_runs() -> anyhow::Result<()> {
    let t = TestContext::new("shadow-writes").await?;
    // Neither version sends HTTP: the other test's POST check sees these controllers too.
    let no_http = || Grants {
        http_hosts: Some(Default::default()),
        ..Default::default()
    };
    let active = load_with("misbehave", |r| r.grants(no_http()));
    let shutdown = CancellationToken::new();
    let started = start_controllers(t.client.clone(), vec![active], 1, shutdown.clone()).await?;
    started.slots[0].set_shadow(Some(load_with("misbehave", |r| {
        r.grants(no_http()).settings(json!({"writeNow": true}))
    })));
    let cms: Api<ConfigMap> = t.api();
    let differences = shadow_differences();
    let writer = json!({"metadata": {"name": "writer", "labels": {"odh-test/misbehave": "true"}},
                        "data": {"behaviour": "write-now", "write": "apply"}});
    cms.create(&PostParams::default(), &serde_json::from_value(writer)?)
        .await?;
    eventually(
        "the shadow wrote (a dry run) and decided differently",
        Timing::default(),
        || async {
            anyhow::ensure!(shadow_differences() > differences, "no difference yet");
            Ok(())
        },
    )
    .await?;
    consistently(
        "the shadow's apply stored nothing",
        Timing::within(Duration::from_secs(2)),
        || async {
            anyhow::ensure!(
                cms.get_opt("writer-ok").await?.is_none(),
                "writer-ok exists"
            );
            Ok(())
        },
    )
    .await?;
    shutdown.cancel();
    Ok(())
}
