//! `odh-model-controller run` starting, becoming ready and stopping as controller-runtime's
//! users expect: a listener that cannot bind stops the process at once; readiness waits for the
//! webhook server's certificate; logs off a terminal carry no colour codes; SIGTERM lets the
//! admissions and reconciles in flight finish, releases the lease when asked to, and exits 0.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use odh_test_support::{TestContext, Timing, consistently, eventually, exists};
use serde_json::{Value, json};

mod common;
use odh_test_support::net::{Client, free_port, get, remove_dir, serving_cert};
use odh_test_support::process::HostProcess;

fn addr(port: u16) -> String {
    format!("127.0.0.1:{port}")
}

fn plugin(name: &str) -> String {
    format!(
        "--plugin={}",
        odh_test_support::plugin_wasm(name).unwrap().display()
    )
}

/// Every listener, bound to a port someone else holds, stops the process at start-up with a
/// non-zero status and a message naming the server and the address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_that_cannot_bind_stops_the_process() -> anyhow::Result<()> {
    let (cert_dir, _) = serving_cert("bind-fail");
    let taken = TcpListener::bind("127.0.0.1:0")?;
    let port = taken.local_addr()?.port();
    for (flag, server) in [
        ("--webhook-bind-address", "webhook server"),
        ("--metrics-bind-address", "metrics server"),
        ("--health-probe-bind-address", "health-probe server"),
        (
            "--model-serving-api-bind-address",
            "model-serving-api server",
        ),
    ] {
        let mut args = vec![
            format!("--webhook-cert-dir={}", cert_dir.display()),
            format!("--model-serving-api-cert-dir={}", cert_dir.display()),
            format!("--webhook-bind-address={}", addr(free_port())),
            format!("--health-probe-bind-address={}", addr(free_port())),
            "--metrics-bind-address=0".to_string(),
        ];
        args.retain(|a| !a.starts_with(flag));
        args.push(format!("{flag}={}", addr(port)));
        let mut host = HostProcess::start("bind-fail", &args, &[])?;
        let status = host
            .wait(Duration::from_secs(60))
            .unwrap_or_else(|| panic!("{flag}: the process kept running:\n{}", host.output()));
        let output = host.output();
        assert!(!status.success(), "{flag}: exited {status}");
        assert!(
            output.contains(&format!("{server}: listening on 127.0.0.1:{port}")),
            "{flag}: {output}"
        );
    }
    drop(taken);
    remove_dir(&cert_dir);
    Ok(())
}

/// Without its certificate the webhook server cannot answer, so the process is not ready;
/// once the certificate appears it is, and admissions are answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_waits_for_the_webhook_certificate() -> anyhow::Result<()> {
    let _alone = CONTROLLER_HOSTS.lock().await;
    let cert_dir = std::env::temp_dir().join(format!("no-cert-yet-{}", std::process::id()));
    std::fs::create_dir_all(&cert_dir)?;
    let (health, webhook) = (free_port(), free_port());
    let _host = HostProcess::start(
        "readiness",
        &[
            plugin("misbehave"),
            "--no-default-plugins".into(),
            format!("--webhook-cert-dir={}", cert_dir.display()),
            format!("--webhook-bind-address={}", addr(webhook)),
            format!("--health-probe-bind-address={}", addr(health)),
            "--metrics-bind-address=0".into(),
        ],
        &[],
    )?;
    let health: SocketAddr = ([127, 0, 0, 1], health).into();
    eventually("the health server answers", Timing::default(), || async {
        get(health, "/healthz").await.map(|_| ())
    })
    .await?;
    consistently(
        "not ready without a certificate",
        Timing::within(Duration::from_secs(2)),
        || async {
            let reply = get(health, "/readyz/readyz").await?;
            anyhow::ensure!(reply.status == 500, "{}: {}", reply.status, reply.body);
            anyhow::ensure!(reply.body.contains("webhook-certificate"), "{}", reply.body);
            Ok(())
        },
    )
    .await?;

    let (issued, ca) = serving_cert("cert-arrives");
    for file in ["tls.crt", "tls.key"] {
        std::fs::copy(issued.join(file), cert_dir.join(file))?;
    }
    eventually(
        "ready once the certificate loads",
        Timing::default(),
        || async {
            let reply = get(health, "/readyz").await?;
            anyhow::ensure!(reply.status == 200, "{}: {}", reply.status, reply.body);
            Ok(())
        },
    )
    .await?;
    let mut client = Client::connect(([127, 0, 0, 1], webhook).into(), &ca).await?;
    let (status, body) = client
        .post("/validate-misbehave", &review("ready", json!({})))
        .await?;
    assert_eq!((status, &body["response"]["allowed"]), (200, &json!(true)));
    remove_dir(&cert_dir);
    remove_dir(&issued);
    Ok(())
}

/// Held by each test while its host with a controller runs: every such host reconciles the
/// labelled primaries of every namespace, so one test's host would serve another's objects (an
/// unlimited host making the rate-limited test's writes, a resync host's extra reconciles, the
/// readiness test's host taking the SIGTERM test's slow reconcile and dying with it while the
/// SIGTERM test's own host, one worker, was still busy with other namespaces' leftovers).
static CONTROLLER_HOSTS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The host with the owner plugin only, webhooks off, no metrics, and `extra` flags; ready.
async fn owner_host(name: &str, extra: &[&str]) -> anyhow::Result<HostProcess> {
    let health = free_port();
    let mut args = vec![
        plugin("owner"),
        "--no-default-plugins".into(),
        format!("--health-probe-bind-address={}", addr(health)),
        "--metrics-bind-address=0".into(),
    ];
    args.extend(extra.iter().map(|a| a.to_string()));
    let host = HostProcess::start(name, &args, &[("ENABLE_WEBHOOKS", "false")])?;
    eventually("the host is ready", Timing::default(), || async {
        let reply = get(([127, 0, 0, 1], health).into(), "/readyz").await?;
        anyhow::ensure!(reply.status == 200, "{}", reply.status);
        Ok(())
    })
    .await?;
    Ok(host)
}

/// A pod's log is a pipe: no ANSI colour codes, even with the console encoder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_off_a_terminal_carry_no_colour_codes() -> anyhow::Result<()> {
    let _alone = CONTROLLER_HOSTS.lock().await;
    let mut host = owner_host("no-colour", &["--zap-encoder=console"]).await?;
    host.terminate();
    let status = host.wait(Duration::from_secs(40)).expect("it stops");
    let output = host.output();
    assert!(status.success(), "exited {status}: {output}");
    assert!(output.contains("starting manager"), "{output}");
    assert!(!output.contains('\u{1b}'), "colour codes in: {output}");
    Ok(())
}

/// controller-runtime's periodic resync: an object the plugin writes but no watch maps back to
/// its primary (a co-owned ConfigMap, plain owner reference) drifts, and with `--sync-period`
/// the primary is reconciled again without any event of its own and the drift is repaired.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_periodic_resync_repairs_drift_no_watch_sees() -> anyhow::Result<()> {
    let _alone = CONTROLLER_HOSTS.lock().await;
    let t = TestContext::new("resync").await?;
    let _host = owner_host("resync", &["--sync-period=1s"]).await?;
    let cms: Api<ConfigMap> = t.api();
    let primary: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "p", "labels": {"odh-test/primary": "true"}},
        "data": {"value": "v", "shared": "p-shared"},
    }))?;
    cms.create(&PostParams::default(), &primary).await?;
    let shared_is = |value: &'static str| {
        let cms = cms.clone();
        async move {
            let cm = cms.get_opt("p-shared").await?;
            let found = cm.and_then(|c| c.data?.get("shared").cloned());
            anyhow::ensure!(found.as_deref() == Some(value), "shared is {found:?}");
            Ok(())
        }
    };
    eventually("the shared ConfigMap is written", Timing::default(), || {
        shared_is("true")
    })
    .await?;
    cms.patch(
        "p-shared",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"data": {"shared": "drifted"}})),
    )
    .await?;
    eventually(
        "the resync repairs the drift",
        Timing::within(Duration::from_secs(30)),
        || shared_is("true"),
    )
    .await?;
    Ok(())
}

/// Client-side rate limiting per API resource, as controller-runtime's client does it: ten
/// primaries need at least twenty ConfigMap requests (a finalizer patch and an apply each),
/// which at 5 per second after a burst of 1 cannot all be sent in less than 3.8 s. (A lower
/// bound: a slower machine only takes longer; without the limit it takes well under a second.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_requests_are_rate_limited_per_resource() -> anyhow::Result<()> {
    let _alone = CONTROLLER_HOSTS.lock().await;
    let t = TestContext::new("rate-limit").await?;
    let _host = owner_host("rate-limit", &["--kube-api-qps=5", "--kube-api-burst=1"]).await?;
    let cms: Api<ConfigMap> = t.api();
    let started = Instant::now();
    for i in 0..10 {
        let primary: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": format!("p{i}"), "labels": {"odh-test/primary": "true"}},
            "data": {"value": "v"},
        }))?;
        cms.create(&PostParams::default(), &primary).await?;
    }
    eventually(
        "every primary has its owned ConfigMap",
        Timing::within(Duration::from_secs(60)),
        || async {
            for i in 0..10 {
                anyhow::ensure!(
                    cms.get_opt(&format!("p{i}-owned")).await?.is_some(),
                    "p{i}-owned not yet"
                );
            }
            Ok(())
        },
    )
    .await?;
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(3800),
        "20 requests at 5/s after a burst of 1 took only {took:?}"
    );
    Ok(())
}

/// A loopback HTTP server answering `/reconcile…` after `slow` and anything else after
/// `delay`; counts the requests of each seen so far.
fn slow_server(slow: Duration, delay: Duration) -> (String, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (reconciles, admissions) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (r, a) = (reconciles.clone(), admissions.clone());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let (r, a) = (r.clone(), a.clone());
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let n = conn.read(&mut buf).unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]);
                if head.contains(" /reconcile") {
                    r.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(slow);
                } else {
                    a.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(delay);
                }
                let _ = conn.write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok",
                );
            });
        }
    });
    (url, reconciles, admissions)
}

/// An AdmissionReview of a ConfigMap named `name` with `data`.
fn review(name: &str, data: Value) -> Value {
    common::config_map_review(&format!("uid-{name}"), name, data)
}

/// What one admission client saw.
#[derive(Debug, Default)]
struct Seen {
    /// Responses received after SIGTERM was sent (requests in flight or sent after it).
    answered_after_term: usize,
    /// Responses that were not a 200 allowing the request.
    failed: Vec<String>,
}

/// SIGTERM in the middle of admission traffic and of a reconcile: every admission request the
/// server took is answered (some after the signal), the reconcile in progress is applied,
/// the lease is released as the flag asks, and the process exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_lets_work_in_flight_finish_and_exits_zero() -> anyhow::Result<()> {
    // The only host reconciling misbehave's primaries: the slow server's first reconcile
    // request is then surely this host's.
    let _alone = CONTROLLER_HOSTS.lock().await;
    let t = TestContext::new("sigterm").await?;
    let (cert_dir, ca) = serving_cert("sigterm");
    // The reconcile's request takes long enough to be surely in flight when SIGTERM comes.
    let (url, reconciles, admissions) =
        slow_server(Duration::from_secs(8), Duration::from_millis(1000));
    let (health, webhook) = (free_port(), free_port());
    let mut host = HostProcess::start(
        "sigterm",
        &[
            plugin("misbehave"),
            "--no-default-plugins".into(),
            "--leader-elect".into(),
            "--leader-elect-release-on-cancel".into(),
            format!("--webhook-cert-dir={}", cert_dir.display()),
            format!("--webhook-bind-address={}", addr(webhook)),
            format!("--health-probe-bind-address={}", addr(health)),
            "--metrics-bind-address=0".into(),
        ],
        &[("POD_NAMESPACE", &t.namespace)],
    )?;
    let leases: Api<Lease> = t.api();
    let lease = "odh-model-controller.opendatahub.io";
    eventually("the host leads", Timing::default(), || async {
        let holder = leases
            .get(lease)
            .await?
            .spec
            .and_then(|s| s.holder_identity);
        anyhow::ensure!(holder.is_some_and(|h| !h.is_empty()), "no holder yet");
        Ok(())
    })
    .await?;

    // A reconcile that waits 8 s on its plugin's HTTP call.
    let cms: Api<ConfigMap> = t.api();
    let primary = json!({"metadata": {"name": "slow", "labels": {"odh-test/misbehave": "true"}},
        "data": {"behaviour": "http-get", "url": format!("{url}/reconcile")}});
    cms.create(&PostParams::default(), &serde_json::from_value(primary)?)
        .await?;
    eventually("the reconcile is under way", Timing::default(), || async {
        anyhow::ensure!(reconciles.load(Ordering::SeqCst) > 0, "not yet");
        Ok(())
    })
    .await?;

    // Admission clients, each validating over its own keep-alive connection; every decision
    // waits 1 s on the plugin's HTTP call.
    let terminated: Arc<std::sync::Mutex<Option<Instant>>> = Default::default();
    let mut clients = Vec::new();
    for i in 0..4 {
        let (ca, url, terminated) = (ca.clone(), url.clone(), terminated.clone());
        clients.push(tokio::spawn(async move {
            let mut seen = Seen::default();
            let Ok(mut client) = Client::connect(([127, 0, 0, 1], webhook).into(), &ca).await
            else {
                return seen;
            };
            let body = review(
                &format!("load-{i}"),
                json!({"behaviour": "http", "url": format!("{url}/admission")}),
            );
            // A connection-level error means the server did not take the request (it stopped
            // accepting): the client goes elsewhere, as the apiserver does.
            while let Ok((status, answer)) = client.post("/validate-misbehave", &body).await {
                if terminated.lock().unwrap().is_some() {
                    seen.answered_after_term += 1;
                }
                if status != 200 || answer["response"]["allowed"] != json!(true) {
                    seen.failed.push(format!("{status}: {answer}"));
                }
            }
            seen
        }));
    }
    eventually("admissions are in flight", Timing::default(), || async {
        anyhow::ensure!(admissions.load(Ordering::SeqCst) >= 4, "not yet");
        Ok(())
    })
    .await?;
    assert!(
        cms.get_opt("slow-ok").await?.is_none(),
        "the reconcile has not applied its outcome yet"
    );
    *terminated.lock().unwrap() = Some(Instant::now());
    host.terminate();

    let status = tokio::task::spawn_blocking(move || {
        let status = host.wait(Duration::from_secs(60));
        (status, host)
    })
    .await?;
    let (status, host) = status;
    let status = status.expect("the process stops");
    assert!(status.success(), "exited {status}:\n{}", host.output());

    let mut answered_after_term = 0;
    for client in clients {
        let seen = client.await?;
        assert!(
            seen.failed.is_empty(),
            "failed admissions: {:?}",
            seen.failed
        );
        answered_after_term += seen.answered_after_term;
    }
    assert!(
        answered_after_term >= 1,
        "requests in flight at SIGTERM were answered ({answered_after_term})"
    );
    // The reconcile in progress when the signal came finished and its outcome was applied.
    exists(&cms, "slow-ok").await?;
    let holder = leases
        .get(lease)
        .await?
        .spec
        .and_then(|s| s.holder_identity);
    assert!(
        holder.as_deref().is_none_or(str::is_empty),
        "the lease was released: {holder:?}"
    );
    remove_dir(&cert_dir);
    Ok(())
}
