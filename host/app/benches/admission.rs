//! `make bench`: the admission webhook server end to end on loopback. For each scenario, starts
//! the HTTPS server with one built-in plugin on 127.0.0.1 and drives one AdmissionReview
//! through a fixed number of keep-alive TLS connections: `hello` mutating a small ConfigMap,
//! the InferenceService validating and mutating webhooks, and the Pod mutating webhook (the hottest path in
//! a cluster: every Pod of an InferenceService is created through it), once for a plain
//! predictor Pod (allowed unchanged) and once for a Ray TLS Pod (mutated); and `hello`
//! validating the UPDATE of a ConfigMap holding 1 MiB of data (a 2 MiB review, at most 400
//! requests), where the host's handling of a large body shows. First of all the `floor`: the
//! same TLS server and admission gate answering a fixed review without parsing it or calling a
//! plugin (common::floor); every webhook's figures are also given against it. Writes
//! target/bench/admission.json and prints a summary. A benchmark, not a test.
//!
//! Environment: `ADMISSION_BENCH_REQUESTS` (default 20000), `ADMISSION_BENCH_CONCURRENCY`
//! (connections, default 16), `ADMISSION_BENCH_MAX_SECONDS` (stop early after this long,
//! default 120), `ADMISSION_BENCH_ONLY` (comma-separated scenario names: only those, e.g. to
//! profile one; the recording scenarios need their base).

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::load::review;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use odh_model_controller::builtins;
use odh_model_controller::plugin::record::{RecordConfig, Recorder};
use odh_model_controller::plugin::{
    ClusterView, EngineOptions, LoadRequest, LoadedPlugin, MemoryCluster, NoCluster, PluginEngine,
    PluginSlot, Source,
};
use odh_model_controller::side_effects::NoSideEffects;
use odh_model_controller::tls::{TlsServerConfig, serve_on};
use odh_model_controller::webhook::{WebhookTable, webhook_router};
use odh_test_fixtures as fixtures;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsConnector;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(default)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A CA and a serving certificate for 127.0.0.1 written to `dir`; returns the CA certificate.
fn write_certs(dir: &std::path::Path) -> CertificateDer<'static> {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "admission-bench-ca");
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca).unwrap();
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("tls.crt"), cert.pem()).unwrap();
    std::fs::write(dir.join("tls.key"), key.serialize_pem()).unwrap();
    ca.der().clone()
}

/// What a scenario's answers must say.
#[derive(Clone, Copy)]
enum Expect {
    /// Allowed with a JSON patch.
    Patch,
    /// Allowed without a patch.
    Allowed,
}

struct Scenario {
    name: &'static str,
    /// None: the floor (common::floor), the same server answering a fixed review.
    plugin: Option<LoadedPlugin>,
    path: &'static str,
    body: Bytes,
    cluster: Arc<dyn ClusterView>,
    expect: Expect,
    /// At most this many requests, whatever `ADMISSION_BENCH_REQUESTS` says (large bodies).
    max_requests: Option<usize>,
    /// Recording on (an entry's `record`), with files in a temporary directory; and the
    /// scenario it is compared with (the same without recording, in the same run).
    record: Option<(RecordConfig, &'static str)>,
}

fn plugin(name: &str) -> LoadedPlugin {
    let engine = PluginEngine::new(EngineOptions::default()).unwrap();
    let settings = builtins::find(name)
        .map(|b| b.starting_settings(|k| (k == "POD_NAMESPACE").then(|| "odh-system".into())))
        .unwrap_or_else(|| json!({}));
    // The built-ins of the binary; `hello`, a test plugin, from target/plugins.
    let (source, bytes) = match builtins::component(name) {
        Some(bytes) => (Source::Builtin(name.into()), bytes.to_vec()),
        None => odh_test_support::host::component(name),
    };
    LoadedPlugin::load(
        &engine,
        LoadRequest::new(source, &bytes)
            .settings(settings)
            .grants(builtins::default_grants(name))
            .limits(builtins::default_limits(name)),
    )
    .unwrap_or_else(|e| panic!("load {name}: {e}"))
}

fn pod(name: &str, ray_tls: bool) -> Value {
    let env = if ray_tls {
        json!([{"name": "RAY_USE_TLS", "value": "1"}])
    } else {
        json!([{"name": "STORAGE_URI", "value": "s3://models/demo"}])
    };
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "bench",
                     "labels": {"serving.kserve.io/inferenceservice": "demo",
                                "component": "predictor", "app": "demo-predictor"}},
        "spec": {"containers": [{"name": "kserve-container", "image": "quay.io/modh/vllm:latest",
                                 "args": ["--port=8080", "--model=/mnt/models"], "env": env,
                                 "resources": {"limits": {"cpu": "2", "memory": "8Gi"}}}]},
    })
}

fn scenarios() -> Vec<Scenario> {
    let hello_object = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "demo", "namespace": "bench", "uid": "1234",
                     "labels": {"app": "demo"}},
        "data": {"greeting": "hello", "size": "small"},
    });
    let isvc = fixtures::isvc("demo").namespace("bench").build();
    let mut parameters = MemoryCluster::default();
    parameters
        .insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "odh-model-controller-parameters", "namespace": "odh-system"},
                       "data": {"ray-tls-generator-image": "registry.access.redhat.com/ubi9/ubi-minimal:latest"}}))
        .unwrap();
    let parameters: Arc<dyn ClusterView> = Arc::new(parameters);
    let none: Arc<dyn ClusterView> = Arc::new(NoCluster);
    let recording = |rate: f64,
                     name: &'static str,
                     base: &'static str,
                     plugin: &str,
                     path,
                     body: Bytes,
                     cluster: &Arc<dyn ClusterView>,
                     expect| Scenario {
        name,
        plugin: Some(self::plugin(plugin)),
        path,
        body,
        cluster: cluster.clone(),
        expect,
        max_requests: None,
        record: Some((
            RecordConfig {
                sample_rate: rate,
                ..RecordConfig::default()
            },
            base,
        )),
    };
    let recorded = vec![
        recording(
            0.01,
            "pod_mutate_plain_recording_1pct",
            "pod_mutate_plain",
            "pod-mutator",
            "/mutate--v1-pod",
            review(
                "bench",
                ("", "v1", "Pod", "pods"),
                pod("demo-predictor-1", false),
            ),
            &parameters,
            Expect::Allowed,
        ),
        recording(
            1.0,
            "pod_mutate_plain_recording_all",
            "pod_mutate_plain",
            "pod-mutator",
            "/mutate--v1-pod",
            review(
                "bench",
                ("", "v1", "Pod", "pods"),
                pod("demo-predictor-1", false),
            ),
            &parameters,
            Expect::Allowed,
        ),
        recording(
            0.01,
            "hello_mutate_configmap_recording_1pct",
            "hello_mutate_configmap",
            "hello",
            "/mutate-hello-configmap",
            review(
                "bench",
                ("", "v1", "ConfigMap", "configmaps"),
                hello_object.clone(),
            ),
            &none,
            Expect::Patch,
        ),
    ];
    let isvc_review = review(
        "bench",
        (
            "serving.kserve.io",
            "v1beta1",
            "InferenceService",
            "inferenceservices",
        ),
        isvc,
    );
    let mut all = vec![
        // First, so the webhooks' figures can be read against it: the same TLS server and
        // gate answering a fixed review, with the InferenceService review's bytes posted.
        Scenario {
            name: "floor",
            plugin: None,
            path: "/validate-serving-kserve-io-v1beta1-inferenceservice",
            body: isvc_review.clone(),
            cluster: none.clone(),
            expect: Expect::Allowed,
            max_requests: None,
            record: None,
        },
        Scenario {
            name: "hello_mutate_configmap",
            plugin: Some(plugin("hello")),
            path: "/mutate-hello-configmap",
            body: review(
                "bench",
                ("", "v1", "ConfigMap", "configmaps"),
                hello_object.clone(),
            ),
            cluster: none.clone(),
            expect: Expect::Patch,
            max_requests: None,
            record: None,
        },
        Scenario {
            name: "isvc_validate",
            plugin: Some(plugin("isvc")),
            path: "/validate-serving-kserve-io-v1beta1-inferenceservice",
            body: isvc_review.clone(),
            cluster: none.clone(),
            expect: Expect::Allowed,
            max_requests: None,
            record: None,
        },
        Scenario {
            name: "isvc_mutate",
            plugin: Some(plugin("isvc")),
            path: "/mutate-serving-kserve-io-v1beta1-inferenceservice",
            body: isvc_review.clone(),
            cluster: none.clone(),
            expect: Expect::Allowed,
            max_requests: None,
            record: None,
        },
        Scenario {
            name: "pod_mutate_plain",
            plugin: Some(plugin("pod-mutator")),
            path: "/mutate--v1-pod",
            body: review(
                "bench",
                ("", "v1", "Pod", "pods"),
                pod("demo-predictor-1", false),
            ),
            cluster: parameters.clone(),
            expect: Expect::Allowed,
            max_requests: None,
            record: None,
        },
        Scenario {
            name: "pod_mutate_ray_tls",
            plugin: Some(plugin("pod-mutator")),
            path: "/mutate--v1-pod",
            body: review(
                "bench",
                ("", "v1", "Pod", "pods"),
                pod("demo-predictor-2", true),
            ),
            cluster: parameters.clone(),
            expect: Expect::Patch,
            max_requests: None,
            record: None,
        },
        Scenario {
            name: "hello_validate_configmap_update_1mib",
            plugin: Some(plugin("hello")),
            path: "/validate-hello-configmap",
            body: large_update_review(),
            cluster: none,
            expect: Expect::Allowed,
            max_requests: Some(400),
            record: None,
        },
    ];
    all.extend(recorded);
    all
}

/// An UPDATE of a ConfigMap holding 1 MiB of data (about the most etcd stores), with its old
/// version: a 2 MiB AdmissionReview, where the host's handling of the body shows.
fn large_update_review() -> Bytes {
    let config_map = |revision: &str| {
        let data: serde_json::Map<String, Value> = (0..64)
            .map(|i| {
                (
                    format!("key-{i:02}"),
                    json!(format!("{revision}{}", "x".repeat(16 * 1024))),
                )
            })
            .collect();
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "large", "namespace": "bench", "uid": "1234"},
            "data": data,
        })
    };
    let review = json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "00000000-0000-0000-0000-000000000000",
            "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "operation": "UPDATE", "namespace": "bench", "name": "large",
            "object": config_map("b"), "oldObject": config_map("a"), "dryRun": false,
            "userInfo": {"username": "bench", "groups": ["system:authenticated"]},
        }
    });
    Bytes::from(serde_json::to_vec(&review).unwrap())
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

struct Connection {
    sender: Sender,
    tls_version: String,
}

async fn connect(addr: SocketAddr, ca: &CertificateDer<'static>) -> anyhow::Result<Connection> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone())?;
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let tcp = TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    let tls = TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("127.0.0.1")?, tcp)
        .await?;
    let tls_version = tls
        .get_ref()
        .1
        .protocol_version()
        .map_or_else(|| "unknown".to_string(), |v| format!("{v:?}"));
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
    tokio::spawn(conn);
    Ok(Connection {
        sender,
        tls_version,
    })
}

/// One round trip; checks the answer is what the scenario expects.
async fn round_trip(
    sender: &mut Sender,
    addr: SocketAddr,
    path: &str,
    body: &Bytes,
    expect: Expect,
) -> anyhow::Result<()> {
    sender.ready().await?;
    let request = http::Request::post(path)
        .header(http::header::HOST, addr.to_string())
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(body.clone()))?;
    let response = sender.send_request(request).await?;
    anyhow::ensure!(response.status() == 200, "HTTP {}", response.status());
    let bytes = response.into_body().collect().await?.to_bytes();
    let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    let as_expected = has(br#""allowed":true"#)
        && match expect {
            Expect::Patch => has(br#""patchType":"JSONPatch""#),
            Expect::Allowed => !has(br#""patch""#),
        };
    anyhow::ensure!(
        as_expected,
        "unexpected answer: {}",
        String::from_utf8_lossy(&bytes)
    );
    Ok(())
}

struct Load {
    requests: usize,
    concurrency: usize,
    max_seconds: usize,
}

/// Serves `sc` on loopback and drives the load through it: (latencies, errors, duration, TLS
/// version).
async fn drive(
    sc: &Scenario,
    load: &Load,
    cert_dir: &std::path::Path,
    ca: &CertificateDer<'static>,
) -> (Vec<Duration>, usize, Duration, String) {
    let slot = sc.plugin.clone().map(PluginSlot::new);
    let record_dir = std::env::temp_dir().join(format!(
        "odh-admission-bench-records-{}-{}",
        std::process::id(),
        sc.name
    ));
    if let (Some((config, _)), Some(slot)) = (sc.record, &slot) {
        slot.set_recorder(Some(Recorder::new(config, Some(&record_dir)).unwrap()));
    }
    let router = match &slot {
        Some(slot) => {
            let table = WebhookTable::from_slots(std::slice::from_ref(slot)).unwrap();
            webhook_router(&table, sc.cluster.clone(), Arc::new(NoSideEffects))
        }
        None => common::floor::router(),
    };
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config = TlsServerConfig {
        bind: addr,
        cert_dir: cert_dir.to_path_buf(),
        ..TlsServerConfig::default()
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve_on(listener, config, router, async move {
        let _ = stopped.await;
    }));
    let (path, expect) = (sc.path, sc.expect);

    // Ready and warm: one connection, a few hundred requests.
    let mut warm = loop {
        match connect(addr, ca).await {
            Ok(c) => break c,
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    };
    for _ in 0..sc.max_requests.map_or(300, |m| m.min(300) / 10) {
        round_trip(&mut warm.sender, addr, path, &sc.body, expect)
            .await
            .unwrap_or_else(|e| panic!("{}: {e:#}", sc.name));
    }
    let tls_version = warm.tls_version.clone();
    drop(warm);

    let mut connections = Vec::with_capacity(load.concurrency);
    for _ in 0..load.concurrency {
        connections.push(connect(addr, ca).await.unwrap());
    }
    let next = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(load.max_seconds as u64);
    let started = Instant::now();
    let requests = sc
        .max_requests
        .map_or(load.requests, |m| m.min(load.requests));
    let per_connection = requests / load.concurrency + 1;
    let workers: Vec<_> = connections
        .into_iter()
        .map(|mut c| {
            let (next, body) = (next.clone(), sc.body.clone());
            tokio::spawn(async move {
                let mut samples = Vec::with_capacity(per_connection);
                let mut errors = 0usize;
                while next.fetch_add(1, Ordering::Relaxed) < requests && Instant::now() < deadline {
                    let t = Instant::now();
                    match round_trip(&mut c.sender, addr, path, &body, expect).await {
                        Ok(()) => samples.push(t.elapsed()),
                        Err(e) => {
                            errors += 1;
                            if errors == 1 {
                                eprintln!("request failed: {e:#}");
                            }
                            if c.sender.is_closed() {
                                break;
                            }
                        }
                    }
                }
                (samples, errors)
            })
        })
        .collect();
    let mut samples = Vec::with_capacity(requests);
    let mut errors = 0;
    for w in workers {
        let (s, e) = w.await.unwrap();
        samples.extend(s);
        errors += e;
    }
    let elapsed = started.elapsed();
    let _ = stop.send(());
    server.await.unwrap().unwrap();
    if let Some(recorder) = slot.as_ref().and_then(PluginSlot::recorder) {
        let stats = recorder.stats();
        println!(
            "  recorded {} calls ({} dropped before a flush)",
            stats.recorded, stats.dropped
        );
    }
    if let Some(slot) = slot {
        slot.set_recorder(None);
    }
    let _ = std::fs::remove_dir_all(&record_dir);
    (samples, errors, elapsed, tls_version)
}

fn main() {
    let load = Load {
        requests: env_usize("ADMISSION_BENCH_REQUESTS", 20_000),
        concurrency: env_usize("ADMISSION_BENCH_CONCURRENCY", 16),
        max_seconds: env_usize("ADMISSION_BENCH_MAX_SECONDS", 120),
    };
    let command = {
        let overrides: Vec<String> = [
            "ADMISSION_BENCH_REQUESTS",
            "ADMISSION_BENCH_CONCURRENCY",
            "ADMISSION_BENCH_MAX_SECONDS",
            "ADMISSION_BENCH_ONLY",
        ]
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| format!("{k}={v}")))
        .collect();
        let mut parts = overrides;
        parts.push("cargo bench -p odh-model-controller --bench admission".into());
        parts.join(" ")
    };
    let cert_dir = std::env::temp_dir().join(format!("odh-admission-bench-{}", std::process::id()));
    let ca = write_certs(&cert_dir);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();

    let mut results = serde_json::Map::new();
    let only: Option<Vec<String>> = std::env::var("ADMISSION_BENCH_ONLY")
        .ok()
        .map(|s| s.split(',').map(|n| n.trim().to_string()).collect());
    let wanted = |sc: &Scenario| {
        only.as_ref()
            .is_none_or(|names| names.iter().any(|n| n == sc.name))
    };
    for sc in scenarios().into_iter().filter(|sc| wanted(sc)) {
        let (mut samples, errors, elapsed, tls_version) =
            rt.block_on(drive(&sc, &load, &cert_dir, &ca));
        samples.sort();
        let completed = samples.len();
        assert!(completed > 0, "{}: no request completed", sc.name);
        let rps = completed as f64 / elapsed.as_secs_f64();
        let (p50, p90, p99) = (
            percentile(&samples, 0.50),
            percentile(&samples, 0.90),
            percentile(&samples, 0.99),
        );
        let max = *samples.last().unwrap();
        println!(
            "admission {} ({} {}, {} B AdmissionReview, {} keep-alive {tls_version} connections, loopback)",
            sc.name,
            sc.plugin.as_ref().map_or("none", LoadedPlugin::name),
            sc.path,
            sc.body.len(),
            load.concurrency
        );
        println!(
            "  {completed} requests in {:.2} s ({errors} errors): {rps:.0} req/s; latency p50 {:.2} ms   p90 {:.2} ms   p99 {:.2} ms   max {:.2} ms",
            elapsed.as_secs_f64(),
            millis(p50),
            millis(p90),
            millis(p99),
            millis(max)
        );
        let mut recording = Value::Null;
        if let Some((config, base)) = sc.record {
            let base_rps = results
                .get(base)
                .and_then(|b| b["requests_per_s"].as_f64())
                .unwrap_or(f64::NAN);
            let cost = (1.0 - rps / base_rps) * 100.0;
            println!(
                "  recording {:.0}% of calls: {cost:+.1}% throughput cost against {base} ({base_rps:.0} req/s, same run)",
                config.sample_rate * 100.0
            );
            recording = json!({"sample_rate": config.sample_rate, "compared_with": base,
                               "throughput_cost_percent": cost});
        }
        // The distance from the floor (the same server answering a fixed review), same run.
        let mut from_floor = Value::Null;
        if sc.plugin.is_some()
            && let Some(floor) = results.get("floor")
        {
            let floor_rps = floor["requests_per_s"].as_f64().unwrap_or(f64::NAN);
            let floor_p50 = floor["latency_ms"]["p50"].as_f64().unwrap_or(f64::NAN);
            // Time per request the server spends beyond the floor's, at this concurrency.
            let extra_us = (1.0 / rps - 1.0 / floor_rps) * 1e6;
            println!(
                "  against the floor: {:.2}x its req/s ({floor_rps:.0}), p50 {:+.2} ms, {extra_us:+.1} µs of wall time per request",
                rps / floor_rps,
                millis(p50) - floor_p50,
            );
            from_floor = json!({"requests_per_s_ratio": rps / floor_rps,
                                "p50_extra_ms": millis(p50) - floor_p50,
                                "wall_us_per_request_extra": extra_us});
        }
        results.insert(
            sc.name.into(),
            json!({
                "recording": recording,
                "against_floor": from_floor,
                "server": {"address": "127.0.0.1 (loopback)", "protocol": "HTTP/1.1", "tls": tls_version,
                           "plugin": sc.plugin.as_ref().map(LoadedPlugin::name), "path": sc.path,
                           "plugin_concurrency": sc.plugin.as_ref().map(|p| p.limits().concurrency)},
                "requests": load.requests,
                "completed": completed,
                "errors": errors,
                "concurrency": load.concurrency,
                "request_bytes": sc.body.len(),
                "duration_s": elapsed.as_secs_f64(),
                "stopped_early": completed + errors < load.requests,
                "requests_per_s": rps,
                "latency_ms": {"p50": millis(p50), "p90": millis(p90), "p99": millis(p99), "max": millis(max)},
            }),
        );
    }
    let _ = std::fs::remove_dir_all(&cert_dir);
    let results = json!({
        "command": command,
        "machine": {"cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)},
        "scenarios": results,
    });
    common::write_json("admission", &results);
    println!("command: {command}");
}
