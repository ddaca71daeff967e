//! The sandbox holds: purpose-built bad plugins fail cleanly, each on the same engine that
//! afterwards still serves good plugins correctly.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use odh_model_controller::plugin::wire::{Operation, RequestKey, WebhookType};
use odh_model_controller::plugin::{
    CallEnv, CallError, ClusterView, EngineOptions, Export, Grants, GuestError, Limits,
    LoadRequest, LoadedPlugin, MemoryBudget, MemoryCluster, PluginEngine, ReconcileInput, Source,
};
use odh_test_support::host::component;
use serde_json::{Value, json};

struct Fixture {
    engine: PluginEngine,
    misbehave: LoadedPlugin,
    hello: LoadedPlugin,
}

/// Both test plugins on an engine of their own (a failure must not harm the engine).
fn fixture_with(grants: Grants) -> Fixture {
    fixture_on(EngineOptions::default(), grants)
}

fn fixture_on(options: EngineOptions, grants: Grants) -> Fixture {
    let engine = PluginEngine::new(options).expect("engine");
    let (source, bytes) = component("misbehave");
    let misbehave = LoadedPlugin::load(&engine, LoadRequest::new(source, &bytes).grants(grants))
        .expect("load misbehave");
    let (source, bytes) = component("hello");
    let hello = LoadedPlugin::load(&engine, LoadRequest::new(source, &bytes)).expect("load hello");
    Fixture {
        engine,
        misbehave,
        hello,
    }
}

fn fixture() -> Fixture {
    fixture_with(Grants::default())
}

fn config_map(name: &str, data: Value) -> String {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "ns", "uid": "u-1"}, "data": data})
    .to_string()
}

fn reconcile(
    plugin: &LoadedPlugin,
    controller: &str,
    object: String,
    cluster: Arc<dyn ClusterView>,
) -> Result<Value, CallError> {
    let name = serde_json::from_str::<Value>(&object).unwrap()["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let input = ReconcileInput {
        controller: controller.into(),
        key: RequestKey {
            namespace: Some("ns".into()),
            name,
        },
        object: Some(object),
    };
    plugin
        .reconcile_blocking(&input, &CallEnv::live(cluster))
        .map(|o| serde_json::to_value(o).unwrap())
}

fn misbehave(f: &Fixture, behaviour: &str, extra: Value) -> Result<Value, CallError> {
    let mut data = json!({"behaviour": behaviour});
    data.as_object_mut()
        .unwrap()
        .extend(extra.as_object().cloned().unwrap_or_default());
    reconcile(
        &f.misbehave,
        "misbehave",
        config_map("victim", data),
        Arc::new(MemoryCluster::default()),
    )
}

/// A cluster holding ConfigMap `ns/target`, what the reading behaviours read.
fn with_target_config_map() -> Arc<dyn ClusterView> {
    let mut cluster = MemoryCluster::default();
    cluster
        .insert(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "target", "namespace": "ns"}}))
        .unwrap();
    Arc::new(cluster)
}

/// After every failure the same engine still serves both plugins correctly.
fn assert_still_healthy(f: &Fixture) {
    let out = reconcile(
        &f.hello,
        "hello",
        config_map("demo", json!({})),
        Arc::new(MemoryCluster::default()),
    )
    .expect("hello still reconciles");
    assert_eq!(
        out["apply"][0]["object"]["data"]["greeting"],
        "Hello, demo!"
    );
    let ok = misbehave(f, "ok", json!({})).expect("misbehave in ok mode still works");
    assert_eq!(ok["apply"][0]["object"]["metadata"]["name"], "victim-ok");
}

#[test]
fn endless_loop_fails_within_its_deadline() {
    let f = fixture();
    let deadline = f.misbehave.limits().reconcile_timeout();
    let start = Instant::now();
    let err = misbehave(&f, "loop", json!({})).unwrap_err();
    let elapsed = start.elapsed();
    println!("endless loop stopped after {elapsed:?} (deadline {deadline:?}): {err}");
    assert!(matches!(err, CallError::Timeout { .. }), "{err}");
    assert!(
        err.to_string().contains("misbehave") && err.to_string().contains("deadline"),
        "{err}"
    );
    assert!(elapsed >= deadline, "stopped early: {elapsed:?}");
    assert!(
        elapsed <= deadline + Duration::from_millis(100),
        "took {elapsed:?} for a {deadline:?} deadline"
    );
    assert_still_healthy(&f);
}

#[test]
fn allocating_past_the_memory_limit_fails_cleanly() {
    let f = fixture();
    let err = misbehave(&f, "alloc", json!({})).unwrap_err();
    assert!(
        matches!(err, CallError::MemoryLimit { limit_mib: 128, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("memory limit of 128 MiB"), "{err}");
    assert_still_healthy(&f);
}

/// The host's budget bounds the memory of all calls in flight together, whatever each plugin's
/// own limit: a call growing past what is left fails cleanly, naming the budget, and what it
/// held comes back when it ends.
#[test]
fn the_hosts_memory_budget_bounds_calls_whatever_their_own_limits() {
    let budget = MemoryBudget::with_limit(64 * 1024 * 1024);
    let f = fixture_on(
        EngineOptions {
            memory_budget: budget.clone(),
            ..EngineOptions::default()
        },
        Grants::default(),
    );
    let err = misbehave(&f, "alloc", json!({})).unwrap_err();
    assert!(
        matches!(err, CallError::MemoryBudget { budget_mib: 64, .. }),
        "the 64 MiB budget ends the call before its own 128 MiB limit: {err}"
    );
    assert!(err.to_string().contains("budget of 64 MiB"), "{err}");
    assert_eq!(budget.in_use(), 0, "the call's memory is given back");
    assert_still_healthy(&f);
    assert_eq!(budget.in_use(), 0);
}

#[test]
fn a_panic_fails_with_the_plugins_message() {
    let f = fixture();
    let err = misbehave(&f, "panic", json!({})).unwrap_err();
    assert!(matches!(err, CallError::Trap { .. }), "{err}");
    assert!(
        err.to_string().contains("misbehave: deliberate panic"),
        "{err}"
    );
    assert_still_healthy(&f);
}

#[test]
fn a_trap_fails_with_its_cause() {
    let f = fixture();
    let err = misbehave(&f, "trap", json!({})).unwrap_err();
    assert!(matches!(err, CallError::Trap { .. }), "{err}");
    assert!(err.to_string().contains("unreachable"), "{err}");
    assert_still_healthy(&f);
}

#[test]
fn an_oversized_output_is_refused() {
    let f = fixture();
    let err = misbehave(&f, "oversize", json!({})).unwrap_err();
    match &err {
        CallError::OutputTooLarge { size, limit, .. } => assert!(size > limit, "{err}"),
        other => panic!("expected OutputTooLarge, got {other}"),
    }
    assert_still_healthy(&f);
}

/// Misbehave's reconcile writing as `data.write` says (`write` behaviour).
fn misbehave_writes(f: &Fixture, write: &str, extra: Value) -> Result<Value, CallError> {
    let mut data = json!({"write": write});
    data.as_object_mut()
        .unwrap()
        .extend(extra.as_object().cloned().unwrap_or_default());
    misbehave(f, "write", data)
}

/// Every way an outcome can write outside the plugin's grants refuses the whole outcome, so
/// nothing of it is applied: a kind not granted (applied or deleted), an owner reference to an
/// object other than its primary, primary metadata beyond labels, annotations and finalizers.
#[test]
fn writes_outside_the_grants_refuse_the_whole_outcome() {
    let f = fixture();
    for write in ["apply-secret", "delete-secret"] {
        let err = misbehave_writes(&f, write, json!({})).unwrap_err();
        assert!(
            matches!(err, CallError::WriteRefused { .. }),
            "{write}: {err}"
        );
        let refused = err
            .refused_write()
            .map(|(p, k)| (p.to_string(), k.kind.clone()));
        assert_eq!(
            refused,
            Some(("misbehave".into(), "Secret".into())),
            "{write}"
        );
        assert!(err.to_string().contains("may not write"), "{err}");
    }

    let err = misbehave_writes(
        &f,
        "foreign-owner",
        json!({"owner": "bystander", "ownerUid": "u-2"}),
    )
    .unwrap_err();
    assert!(matches!(err, CallError::ForeignOwner { .. }), "{err}");
    assert_eq!(err.metric_label(), "write_refused");
    let message = err.to_string();
    assert!(
        message.contains("ConfigMap ns/victim-adopted owned by ConfigMap bystander (uid \"u-2\")"),
        "{message}"
    );
    // Even one that names the primary's name but not its uid.
    let err = misbehave_writes(
        &f,
        "foreign-owner",
        json!({"owner": "victim", "ownerUid": "u-forged"}),
    )
    .unwrap_err();
    assert!(matches!(err, CallError::ForeignOwner { .. }), "{err}");
    // Its own primary as the owner is what ownership does anyway: allowed.
    let out = misbehave_writes(&f, "primary-owner", json!({})).expect("owned by its primary");
    assert_eq!(
        out["apply"][0]["object"]["metadata"]["ownerReferences"][0]["uid"],
        "u-1"
    );

    let err = misbehave_writes(&f, "primary-spec", json!({})).unwrap_err();
    assert!(matches!(err, CallError::MalformedOutput { .. }), "{err}");
    assert!(
        err.to_string().contains(
            "may only change labels, annotations and finalizers, not \"ownerReferences\""
        ),
        "{err}"
    );
    assert_still_healthy(&f);
}

/// An admission decision's side effects are held to the same grants as an outcome's writes.
#[test]
fn an_admission_side_effect_outside_the_grants_is_refused() {
    let f = fixture();
    let input = odh_test_support::host::admission(
        "/mutate-misbehave",
        Operation::Create,
        serde_json::from_str(&config_map("admitted", json!({"behaviour": "write"}))).unwrap(),
    );
    let err = f
        .misbehave
        .admit_blocking(
            WebhookType::Mutating,
            &input,
            &CallEnv::live(Arc::new(MemoryCluster::default())),
        )
        .unwrap_err();
    assert!(matches!(err, CallError::WriteRefused { .. }), "{err}");
    assert_eq!(
        err.refused_write().map(|(_, k)| k.kind.as_str()),
        Some("Secret")
    );
    assert_still_healthy(&f);
}

/// An outcome of 100,000 objects (or deletions) is refused by count before the host writes
/// any (the deletions alone are small enough to pass the byte limit).
#[test]
fn an_outcome_of_a_hundred_thousand_entries_is_refused() {
    // Building 100,000 entries takes the guest a while on a loaded machine: the deadline is
    // not what this test is about.
    let f = fixture();
    let (source, bytes) = component("misbehave");
    let f = Fixture {
        misbehave: LoadedPlugin::load(
            &f.engine,
            LoadRequest::new(source, &bytes).limits(Limits {
                reconcile_timeout_ms: 60_000,
                reconcile_budget_ms: 120_000,
                ..Limits::default()
            }),
        )
        .expect("load misbehave"),
        ..f
    };
    let err = misbehave_writes(&f, "delete-flood", json!({})).unwrap_err();
    match &err {
        CallError::TooManyEntries { count, limit, .. } => {
            assert_eq!(
                (*count, *limit),
                (
                    100_000,
                    odh_model_controller::plugin::wire::MAX_OUTCOME_ENTRIES
                )
            );
        }
        other => panic!("expected TooManyEntries, got {other}"),
    }
    let err = misbehave_writes(&f, "apply-flood", json!({})).unwrap_err();
    assert!(
        matches!(err, CallError::TooManyEntries { count: 100_000, .. }),
        "{err}"
    );
    // At the limit, an outcome is still taken.
    let limit = odh_model_controller::plugin::wire::MAX_OUTCOME_ENTRIES;
    let out = misbehave_writes(&f, "delete-flood", json!({"count": limit.to_string()}))
        .expect("an outcome at the limit");
    assert_eq!(out["delete"].as_array().map(Vec::len), Some(limit));
    assert_still_healthy(&f);
}

/// A plugin that logs in a loop (here 10,000 lines of 64 KiB: 640 MiB) costs the node's log
/// its per-call budget, not what it wrote; the rest is counted as dropped.
#[test]
fn a_log_flood_is_bounded_per_call_and_counted() {
    let f = fixture();
    let dropped = || {
        let metrics = odh_model_controller::metrics::Metrics::global().render();
        metrics
            .lines()
            .find(|l| l.starts_with("odh_plugin_log_lines_dropped_total{plugin=\"misbehave\"}"))
            .and_then(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let before = dropped();
    let out = misbehave(&f, "log-flood", json!({})).expect("a log flood still completes");
    assert_eq!(out["status"]["logged"], 10_000, "{out}");
    let admitted = odh_model_controller::plugin::log_budget::MAX_BYTES_PER_CALL
        .div_ceil(odh_model_controller::plugin::log_budget::MAX_LINE_BYTES);
    let dropped = dropped() - before;
    assert!(
        dropped >= 10_000 - admitted as u64 && dropped < 10_000,
        "dropped {dropped} of 10,000 lines"
    );
    assert_still_healthy(&f);
}

/// A plugin reading in a loop (a million reads asked) gets its first 10,000 and then a refusal
/// it sees; the call still returns, the engine still serves.
#[test]
fn a_flood_of_host_calls_is_cut_off_per_call() {
    let f = fixture();
    let out = reconcile(
        &f.misbehave,
        "misbehave",
        config_map(
            "flood",
            json!({"behaviour": "read-flood", "target": "target"}),
        ),
        with_target_config_map(),
    )
    .expect("the call itself completes");
    let limit = odh_model_controller::plugin::MAX_HOST_CALLS_PER_CALL;
    assert_eq!(out["status"]["reads"], limit, "{out}");
    assert!(
        out["status"]["error"]
            .as_str()
            .is_some_and(|e| e.contains(&format!("more than {limit} host calls in one call"))),
        "{out}"
    );
    assert_still_healthy(&f);
}

#[test]
fn a_read_of_an_ungranted_kind_is_denied() {
    let f = fixture();
    let err = misbehave(&f, "read-ungranted", json!({})).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("may not read Secret/v1"), "{msg}");
    assert_still_healthy(&f);
}

#[test]
fn a_read_of_a_granted_kind_sees_the_cluster_and_a_narrowed_grant_denies_it() {
    let f = fixture();
    let cluster = with_target_config_map();
    let obj = config_map(
        "reader",
        json!({"behaviour": "read-granted", "target": "target"}),
    );
    let out =
        reconcile(&f.misbehave, "misbehave", obj.clone(), cluster.clone()).expect("granted read");
    assert_eq!(out["status"]["found"], true);

    let narrowed = fixture_with(Grants {
        reads: Some(Default::default()),
        ..Default::default()
    });
    let err = reconcile(&narrowed.misbehave, "misbehave", obj, cluster).unwrap_err();
    assert!(
        err.to_string().contains("may not read ConfigMap/v1"),
        "{err}"
    );
}

/// A one-shot HTTP server on loopback standing in for an external API.
fn serve_once(body: &'static str) -> (String, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut buf = [0u8; 4096];
        let _ = conn.read(&mut buf);
        let resp = format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        conn.write_all(resp.as_bytes()).unwrap();
    });
    (format!("http://{addr}/catalog"), handle)
}

/// A plugin's HTTPS believes the public web PKI and the CAs the Deployment gives the host (the
/// cluster's service CA): a server whose certificate a cluster CA signed is refused by default
/// and reached once that CA is trusted.
#[test]
fn https_trusts_the_cluster_cas_the_host_is_given() {
    use odh_model_controller::plugin::HttpTrust;
    use odh_test_support::https_stand_in::{self, Reply};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime
        .block_on(https_stand_in::start(&["127.0.0.1"], |_| {
            Reply::Answer(200, r#"{"ok": true}"#.into())
        }))
        .unwrap();
    let url = format!("https://{}/service", server.address);

    let public_only = fixture();
    let err = misbehave(&public_only, "http", json!({"url": url})).unwrap_err();
    assert!(
        err.to_string().to_ascii_lowercase().contains("tls")
            || err.to_string().to_ascii_lowercase().contains("certificate"),
        "{err}"
    );

    let trusting = fixture_on(
        EngineOptions {
            http_trust: HttpTrust::with_pem_files(&[&server.ca_file]).unwrap(),
            ..EngineOptions::default()
        },
        Grants::default(),
    );
    let out = misbehave(&trusting, "http", json!({"url": url})).expect("the cluster CA is trusted");
    assert_eq!(out["status"]["httpStatus"], 200, "{out}");
    drop(server);
}

/// Under `MR_SKIP_TLS_VERIFY` an identity Service's HTTPS believes any certificate: a server
/// whose CA the host does not trust is reached (the handshake itself still completes, its
/// signatures checked). Which hosts get this trust: `http_trust.rs`'s unit test.
#[test]
fn an_unverified_trust_reaches_a_server_of_an_unknown_ca() {
    use odh_model_controller::plugin::HttpTrust;
    use odh_test_support::https_stand_in::{self, Reply};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime
        .block_on(https_stand_in::start(&["127.0.0.1"], |_| {
            Reply::Answer(200, r#"{"ok": true}"#.into())
        }))
        .unwrap();
    let url = format!("https://{}/service", server.address);
    let unverified = fixture_on(
        EngineOptions {
            http_trust: HttpTrust::accepting_any_certificate(),
            ..EngineOptions::default()
        },
        Grants::default(),
    );
    let out = misbehave(&unverified, "http", json!({"url": url})).expect("not verified");
    assert_eq!(out["status"]["httpStatus"], 200, "{out}");
    drop(server);
}

/// A request with a body goes out with its `Content-Length`, not chunked, as Go's client sends
/// it (servers and gateways that require a length answer 411 to a chunked one).
#[test]
fn a_request_body_goes_out_with_its_length() {
    let f = fixture();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/post", listener.local_addr().unwrap());
    let server = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut head = Vec::new();
        let mut buf = [0u8; 4096];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = conn.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        conn.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
            .unwrap();
        String::from_utf8_lossy(&head).to_ascii_lowercase()
    });
    let obj = config_map("poster", json!({"behaviour": "http-post", "url": url}));
    reconcile(
        &f.misbehave,
        "misbehave",
        obj,
        Arc::new(MemoryCluster::default()),
    )
    .expect("the POST is made");
    let head = server.join().unwrap();
    let body = json!({"misbehave": "poster"}).to_string();
    assert!(
        head.contains(&format!("content-length: {}\r\n", body.len())),
        "{head}"
    );
    assert!(!head.contains("transfer-encoding"), "{head}");
}

#[test]
fn http_reaches_granted_hosts_only() {
    let f = fixture();
    let (url, server) = serve_once("hello from loopback");
    let out = misbehave(&f, "http", json!({"url": url})).expect("granted host");
    server.join().unwrap();
    assert_eq!(out["status"]["httpStatus"], 200);
    assert_eq!(out["status"]["body"], "hello from loopback");

    let err = misbehave(&f, "http", json!({"url": "http://denied.invalid/x"})).unwrap_err();
    assert!(
        matches!(err.guest_error(), Some(GuestError::Denied(_))),
        "{err}"
    );
    assert!(err.to_string().contains("denied.invalid"), "{err}");
    assert_still_healthy(&f);

    // The admin can narrow what the manifest declares: no hosts granted, loopback is denied too.
    let narrowed = fixture_with(Grants {
        http_hosts: Some(Default::default()),
        ..Default::default()
    });
    let err = misbehave(&narrowed, "http", json!({"url": "http://127.0.0.1:9/x"})).unwrap_err();
    assert!(
        matches!(err.guest_error(), Some(GuestError::Denied(_))),
        "{err}"
    );
}

/// A grant reaches what it names, no further: a granted name that resolves to loopback is not
/// connected (a wildcard grant could otherwise reach the host's own ports or the cloud metadata
/// service), the address of a granted name is not granted with it, and a redirect is the
/// plugin's to follow, through the same gate.
#[test]
fn http_reaches_no_further_than_its_grant_by_name_address_or_redirect() {
    let f = fixture();
    let (url, connections) = slow_server(Some(Duration::ZERO));
    let port = url
        .rsplit_once(':')
        .unwrap()
        .1
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let err = misbehave(
        &f,
        "http",
        json!({"url": format!("http://localhost:{port}/x")}),
    )
    .unwrap_err();
    let denied = err
        .guest_error()
        .map(GuestError::message)
        .unwrap_or_default();
    assert!(
        matches!(err.guest_error(), Some(GuestError::Denied(_)))
            && denied.contains("\"localhost\" resolves to a loopback"),
        "{err}"
    );
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 0);

    // The admin grants the name only: its address is not granted with it.
    let by_name = fixture_with(Grants {
        http_hosts: Some(["localhost".to_string()].into_iter().collect()),
        ..Default::default()
    });
    let err = misbehave(&by_name, "http", json!({"url": url})).unwrap_err();
    assert!(
        matches!(err.guest_error(), Some(GuestError::Denied(m)) if m.contains("not among this plugin's granted http hosts")),
        "{err}"
    );

    // A redirect to an ungranted host comes back to the plugin as it is, not followed.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let redirector = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut buf = [0u8; 4096];
        let _ = conn.read(&mut buf);
        let answer = "HTTP/1.1 302 Found\r\nLocation: http://denied.invalid/secret\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        conn.write_all(answer.as_bytes()).unwrap();
    });
    let out = misbehave(
        &f,
        "http",
        json!({"url": format!("http://{address}/moved")}),
    )
    .expect("a redirect is an answer");
    redirector.join().unwrap();
    assert_eq!(out["status"]["httpStatus"], 302, "{out}");
    assert_still_healthy(&f);
}

/// A loopback HTTP server that accepts connections and answers each request after `delay`, or
/// never (`None`); returns its URL and the number of requests begun.
fn slow_server(delay: Option<Duration>) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = conn.read(&mut buf);
                match delay {
                    Some(d) => {
                        std::thread::sleep(d);
                        let _ = conn.write_all(
                            b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\nconnection: close\r\n\r\nslow",
                        );
                    }
                    // Holds the connection open and says nothing.
                    None => std::thread::sleep(Duration::from_secs(60)),
                }
            });
        }
    });
    (format!("http://{addr}/slow"), seen)
}

fn misbehave_with(limits: Limits) -> LoadedPlugin {
    let (source, bytes) = component("misbehave");
    LoadedPlugin::load(
        &PluginEngine::new(EngineOptions::default()).unwrap(),
        LoadRequest::new(source, &bytes).limits(limits),
    )
    .expect("load misbehave")
}

/// The execution deadline measures the plugin, not the network: a response that takes longer
/// than the whole deadline still arrives, because time blocked in the host is not counted.
#[test]
fn time_spent_in_host_calls_does_not_count_against_the_execution_deadline() {
    let plugin = misbehave_with(Limits {
        reconcile_timeout_ms: 500,
        ..Limits::default()
    });
    let (url, _) = slow_server(Some(Duration::from_millis(1200)));
    let started = Instant::now();
    let out = reconcile(
        &plugin,
        "misbehave",
        config_map("slow", json!({"behaviour": "http", "url": url})),
        Arc::new(MemoryCluster::default()),
    )
    .expect("the slow response is not the plugin's time");
    assert!(started.elapsed() >= Duration::from_millis(1200));
    assert_eq!(out["status"]["body"], "slow");
}

/// A host call that hangs fails that call after the plugin's HTTP timeout, as an error the
/// plugin sees; the call itself ends long before its deadline or budget.
#[test]
fn a_hanging_request_fails_after_the_http_timeout_not_the_call() {
    let plugin = misbehave_with(Limits {
        http_timeout_ms: 300,
        ..Limits::default()
    });
    let (url, seen) = slow_server(None);
    let started = Instant::now();
    let err = reconcile(
        &plugin,
        "misbehave",
        config_map("hang", json!({"behaviour": "http", "url": url})),
        Arc::new(MemoryCluster::default()),
    )
    .unwrap_err();
    let elapsed = started.elapsed();
    assert!(
        matches!(err.guest_error(), Some(GuestError::Transient(_))),
        "the plugin saw the failure and reported it: {err}"
    );
    assert!(err.to_string().contains("Timeout"), "{err}");
    assert!(
        elapsed >= Duration::from_millis(300) && elapsed < Duration::from_secs(2),
        "{elapsed:?}"
    );
    assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// An admission call is bounded on the wall clock by its budget (within the webhook's
/// `timeoutSeconds`), whatever the HTTP timeout: the host call is cut to what is left.
#[test]
fn an_admission_call_ends_within_its_budget() {
    let plugin = misbehave_with(Limits {
        admission_timeout_ms: 500,
        admission_budget_ms: 700,
        http_timeout_ms: 30_000,
        ..Limits::default()
    });
    let (url, _) = slow_server(None);
    let input = odh_test_support::host::admission(
        "/mutate-misbehave",
        Operation::Create,
        serde_json::from_str(&config_map(
            "hang",
            json!({"behaviour": "http", "url": url}),
        ))
        .unwrap(),
    );
    let started = Instant::now();
    let err = plugin
        .admit_blocking(
            WebhookType::Mutating,
            &input,
            &CallEnv::live(Arc::new(MemoryCluster::default())),
        )
        .unwrap_err();
    let elapsed = started.elapsed();
    assert!(err.to_string().contains("Timeout"), "{err}");
    assert!(
        elapsed >= Duration::from_millis(650) && elapsed < Duration::from_millis(1500),
        "{elapsed:?}"
    );
}

/// A plugin asleep in WASI blocks in host code, where its execution deadline does not run: the
/// call budget ends the wait, the call fails saying so, and its concurrency slot is free again.
#[test]
fn a_plugin_asleep_in_wasi_ends_at_its_budget_and_frees_its_slot() {
    let plugin = misbehave_with(Limits {
        reconcile_timeout_ms: 200,
        reconcile_budget_ms: 1_000,
        concurrency: 1,
        ..Limits::default()
    });
    let started = Instant::now();
    let err = reconcile(
        &plugin,
        "misbehave",
        config_map("sleepy", json!({"behaviour": "sleep"})),
        Arc::new(MemoryCluster::default()),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("waited on the clock past its call budget"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    // The one slot is free: the next call runs.
    reconcile(
        &plugin,
        "misbehave",
        config_map("awake", json!({"behaviour": "ok"})),
        Arc::new(MemoryCluster::default()),
    )
    .expect("the slot is free again");
}

#[test]
fn typed_guest_errors_keep_their_kind() {
    let f = fixture();
    let err = misbehave(&f, "error-invalid", json!({})).unwrap_err();
    assert_eq!(
        err.guest_error(),
        Some(&GuestError::Invalid("misbehave: invalid input".into()))
    );
    let err = misbehave(&f, "error-transient", json!({})).unwrap_err();
    assert_eq!(
        err.guest_error(),
        Some(&GuestError::Transient("misbehave: try later".into()))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_calls_run_off_the_executor() {
    let f = fixture();
    // Two endless loops and one good call at once: the good one is not starved by the bad ones.
    let bad = |p: LoadedPlugin| async move {
        let input = ReconcileInput {
            controller: "misbehave".into(),
            key: RequestKey {
                namespace: Some("ns".into()),
                name: "victim".into(),
            },
            object: Some(config_map("victim", json!({"behaviour": "loop"}))),
        };
        let env = CallEnv::live(Arc::new(MemoryCluster::default()));
        p.offload(Export::Reconcile, move |p| {
            p.reconcile_blocking(&input, &env)
        })
        .await
    };
    let a = tokio::spawn(bad(f.misbehave.clone()));
    let b = tokio::spawn(bad(f.misbehave.clone()));
    tokio::time::sleep(Duration::from_millis(50)).await;
    let input = ReconcileInput {
        controller: "hello".into(),
        key: RequestKey {
            namespace: Some("ns".into()),
            name: "demo".into(),
        },
        object: Some(config_map("demo", json!({}))),
    };
    let env = CallEnv::live(Arc::new(MemoryCluster::default()));
    let good = f
        .hello
        .offload(Export::Reconcile, move |p| {
            p.reconcile_blocking(&input, &env)
        })
        .await
        .expect("good call");
    assert_eq!(good.apply.len(), 1);
    assert!(
        !a.is_finished() && !b.is_finished(),
        "the good call finished while both loops still ran"
    );
    assert!(matches!(a.await.unwrap(), Err(CallError::Timeout { .. })));
    assert!(matches!(b.await.unwrap(), Err(CallError::Timeout { .. })));
    drop(f.engine);
}

#[test]
fn a_non_component_is_rejected_with_a_clear_error() {
    let engine = PluginEngine::new(EngineOptions::default()).unwrap();
    let source = Source::File("/test/garbage.wasm".into());
    let err = LoadedPlugin::load(&engine, LoadRequest::new(source, b"not wasm at all"))
        .err()
        .expect("garbage must not load");
    let msg = err.to_string();
    assert!(
        msg.contains("/test/garbage.wasm") && msg.contains("not a valid WebAssembly component"),
        "{msg}"
    );
}

/// A cluster whose Secret reads leave the process and fail as `failure` says.
struct FailingSecrets(fn(&str) -> anyhow::Error);

impl ClusterView for FailingSecrets {
    fn get(
        &self,
        gvk: &odh_model_controller::gvk::Gvk,
        _: Option<&str>,
        name: &str,
        _: Duration,
    ) -> anyhow::Result<Option<String>> {
        if gvk.kind == "Secret" {
            Err((self.0)(name).context("a live read"))
        } else {
            Ok(None)
        }
    }

    fn list(
        &self,
        _: &odh_model_controller::gvk::Gvk,
        _: Option<&str>,
        _: &odh_label_selector::LabelSelector,
        _: Duration,
    ) -> anyhow::Result<Vec<String>> {
        Ok(Vec::new())
    }
}

/// Spec isvc §4.1, llm §7.1 (issue #33, divergence L24 closed): a webhook error that wraps an API
/// status error (the connection Secret's read refused by RBAC, a server timeout) is answered
/// with that inner status (its code, reason and message), the wrapping text dropped, as Go's
/// webhooks answer it; an error that is not an API status keeps its prefixed 403.
#[test]
fn a_denial_wrapping_an_api_status_is_answered_with_that_status() {
    use odh_model_controller::plugin::writes::ApiStatus;
    let isvc = odh_test_support::host::load("isvc");
    let object = json!({
        "apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
        "metadata": {"name": "m", "namespace": "ns",
                     "annotations": {"opendatahub.io/connections": "conn"}},
        "spec": {"predictor": {"model": {"modelFormat": {"name": "onnx"}}}}
    });
    let admit = |failure: fn(&str) -> anyhow::Error| {
        let env = CallEnv::live(Arc::new(FailingSecrets(failure)));
        isvc.admit_blocking(
            WebhookType::Mutating,
            &odh_test_support::host::admission(
                "/mutate-serving-kserve-io-v1beta1-inferenceservice",
                Operation::Create,
                object.clone(),
            ),
            &env,
        )
        .expect("a decision")
    };
    let forbidden = admit(|name| {
        anyhow::Error::new(ApiStatus {
            code: 403,
            reason: "Forbidden".into(),
            message: format!(
                "secrets \"{name}\" is forbidden: User \"system:serviceaccount:odh:controller\" cannot get resource \"secrets\""
            ),
        })
    });
    assert!(!forbidden.allowed);
    assert_eq!(forbidden.code, Some(403));
    assert_eq!(forbidden.reason.as_deref(), Some("Forbidden"));
    assert_eq!(
        forbidden.message.as_deref(),
        Some(
            "secrets \"conn\" is forbidden: User \"system:serviceaccount:odh:controller\" cannot get resource \"secrets\""
        )
    );
    let timeout = admit(|_| {
        anyhow::Error::new(ApiStatus {
            code: 504,
            reason: "Timeout".into(),
            message: "the server was unable to return a response in the time allotted".into(),
        })
    });
    assert_eq!(
        (timeout.code, timeout.reason.as_deref()),
        (Some(504), Some("Timeout"))
    );
    let other = admit(|_| anyhow::anyhow!("connection refused"));
    assert_eq!(other.code.unwrap_or(403), 403);
    assert_eq!(other.reason, None);
    let message = other.message.unwrap_or_default();
    assert!(
        message.starts_with("failed to validate connection: ")
            && message.ends_with("connection refused"),
        "{message}"
    );
}

/// The `writes` import (WIT 0.1.5) through the sandbox, each write checked alone: a kind the
/// plugin may not write is `denied` naming it; an object it does not manage needs
/// `grants.foreignWrites`; a reconcile without a controller's writer writes nothing and answers
/// as the API server would (a stable made-up uid); an admission call may not write at all.
#[test]
fn writes_now_are_checked_like_an_outcome_and_only_a_reconcile_writes() {
    let now = |f: &Fixture, write: &str| {
        misbehave(f, "write-now", json!({"write": write})).expect("a reconcile")["status"].clone()
    };
    let writing = |grants: Grants| {
        let engine = PluginEngine::new(EngineOptions::default()).expect("engine");
        let (source, bytes) = component("misbehave");
        let request = LoadRequest::new(source, &bytes)
            .grants(grants)
            .settings(json!({"writeNow": true}));
        let misbehave = LoadedPlugin::load(&engine, request).expect("load misbehave");
        let (source, bytes) = component("hello");
        let hello = LoadedPlugin::load(&engine, LoadRequest::new(source, &bytes)).expect("hello");
        Fixture {
            engine,
            misbehave,
            hello,
        }
    };
    let f = writing(Grants::default());
    let applied = now(&f, "apply");
    let uid = applied["uid"].as_str().expect("a uid");
    assert!(uid.starts_with("00000000-0000-4000-8000-"), "{applied}");
    assert_eq!(now(&f, "apply")["uid"], uid, "the simulated uid is stable");

    let secret = now(&f, "apply-secret");
    assert_eq!(secret["kind"], "denied", "{secret}");
    assert!(
        secret["error"]
            .as_str()
            .unwrap()
            .contains("may not write Secret/v1"),
        "{secret}"
    );

    let foreign = now(&f, "delete-unmanaged");
    assert_eq!(foreign["kind"], "denied", "{foreign}");
    assert!(
        foreign["error"]
            .as_str()
            .unwrap()
            .contains("grants.foreignWrites"),
        "{foreign}"
    );
    let patch = now(&f, "patch");
    assert_eq!(patch["kind"], "denied", "{patch}");

    let granted = writing(Grants {
        foreign_writes: [odh_model_controller::gvk::Gvk::new("", "v1", "ConfigMap")].into(),
        ..Grants::default()
    });
    assert_eq!(
        now(&fixture(), "apply")["kind"],
        "skipped",
        "writeNow off: no write"
    );
    assert_eq!(now(&granted, "delete-unmanaged"), json!({"deleted": false}));
    // A patch is sent only with the version it was decided on (the primary here has none).
    let patch = now(&granted, "patch");
    assert_eq!(patch["kind"], "denied", "{patch}");
    assert!(
        patch["error"].as_str().unwrap().contains("resourceVersion"),
        "{patch}"
    );

    let input = odh_test_support::host::admission(
        "/mutate-misbehave",
        Operation::Create,
        serde_json::from_str(&config_map(
            "admitted",
            json!({"behaviour": "write-now", "write": "apply"}),
        ))
        .unwrap(),
    );
    let decision = granted
        .misbehave
        .admit_blocking(
            WebhookType::Mutating,
            &input,
            &CallEnv::live(Arc::new(MemoryCluster::default())),
        )
        .expect("a decision");
    let result: Value = serde_json::from_str(
        decision.mutated.as_ref().unwrap()["metadata"]["annotations"]["misbehave/result"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(result["kind"], "denied", "{result}");
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .contains("only a reconcile may write"),
        "{result}"
    );
}
