//! `make bench`: the admission webhook server end to end on loopback. Starts the HTTPS server
//! with the built-in `hello` plugin on 127.0.0.1, then drives a small ConfigMap mutate
//! AdmissionReview through a fixed number of keep-alive TLS connections. Writes
//! target/bench/admission.json and prints a summary. A benchmark, not a test.
//!
//! Environment: `ADMISSION_BENCH_REQUESTS` (default 20000), `ADMISSION_BENCH_CONCURRENCY`
//! (connections, default 16), `ADMISSION_BENCH_MAX_SECONDS` (stop early after this long,
//! default 120).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use odh_model_controller::plugin::{
    EngineOptions, Limits, LoadRequest, LoadedPlugin, NoCluster, PluginEngine,
};
use odh_model_controller::webhook::{
    NoSideEffects, TlsServerConfig, WebhookTable, serve_on, webhook_router,
};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsConnector;

const PATH: &str = "/mutate-hello-configmap";

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

fn review_body() -> Bytes {
    let object = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "demo", "namespace": "bench", "uid": "1234",
                     "labels": {"app": "demo"}},
        "data": {"greeting": "hello", "size": "small"},
    });
    let review = json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "00000000-0000-0000-0000-000000000000",
            "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "operation": "CREATE", "namespace": "bench", "name": "demo",
            "object": object, "dryRun": false,
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

/// One mutate round trip; checks the answer is an allowed JSON patch.
async fn round_trip(sender: &mut Sender, addr: SocketAddr, body: &Bytes) -> anyhow::Result<()> {
    sender.ready().await?;
    let request = http::Request::post(PATH)
        .header(http::header::HOST, addr.to_string())
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(body.clone()))?;
    let response = sender.send_request(request).await?;
    anyhow::ensure!(response.status() == 200, "HTTP {}", response.status());
    let bytes = response.into_body().collect().await?.to_bytes();
    let needle = br#""patchType":"JSONPatch""#;
    anyhow::ensure!(
        bytes.windows(needle.len()).any(|w| w == needle),
        "unexpected answer: {}",
        String::from_utf8_lossy(&bytes)
    );
    Ok(())
}

fn main() {
    let requests = env_usize("ADMISSION_BENCH_REQUESTS", 20_000);
    let concurrency = env_usize("ADMISSION_BENCH_CONCURRENCY", 16);
    let max_seconds = env_usize("ADMISSION_BENCH_MAX_SECONDS", 120);
    let command = {
        let overrides: Vec<String> = [
            "ADMISSION_BENCH_REQUESTS",
            "ADMISSION_BENCH_CONCURRENCY",
            "ADMISSION_BENCH_MAX_SECONDS",
        ]
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| format!("{k}={v}")))
        .collect();
        let mut parts = overrides;
        parts.push("cargo bench -p odh-model-controller --bench admission".into());
        parts.join(" ")
    };

    let engine = PluginEngine::new(EngineOptions::default()).unwrap();
    let limits = Limits::default();
    let (source, bytes) = odh_test_support::host::component("hello");
    let hello = LoadedPlugin::load(
        &engine,
        LoadRequest::new(source, &bytes).limits(limits.clone()),
    )
    .expect("load hello");
    let cert_dir = std::env::temp_dir().join(format!("odh-admission-bench-{}", std::process::id()));
    let ca = write_certs(&cert_dir);
    let body = review_body();

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let result = rt.block_on(async {
        let table = WebhookTable::new([&hello]).unwrap();
        let router = webhook_router(&table, Arc::new(NoCluster), Arc::new(NoSideEffects));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let config = TlsServerConfig {
            bind: addr,
            cert_dir: cert_dir.clone(),
            ..TlsServerConfig::default()
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve_on(listener, config, router, async move {
            let _ = stopped.await;
        }));

        // Ready and warm: one connection, a few hundred requests.
        let mut warm = loop {
            match connect(addr, &ca).await {
                Ok(c) => break c,
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        };
        for _ in 0..300 {
            round_trip(&mut warm.sender, addr, &body).await.unwrap();
        }
        let tls_version = warm.tls_version.clone();
        drop(warm);

        let mut connections = Vec::with_capacity(concurrency);
        for _ in 0..concurrency {
            connections.push(connect(addr, &ca).await.unwrap());
        }
        let next = Arc::new(AtomicUsize::new(0));
        let deadline = Instant::now() + Duration::from_secs(max_seconds as u64);
        let started = Instant::now();
        let workers: Vec<_> = connections
            .into_iter()
            .map(|mut c| {
                let (next, body) = (next.clone(), body.clone());
                tokio::spawn(async move {
                    let mut samples = Vec::with_capacity(requests / concurrency + 1);
                    let mut errors = 0usize;
                    while next.fetch_add(1, Ordering::Relaxed) < requests
                        && Instant::now() < deadline
                    {
                        let t = Instant::now();
                        match round_trip(&mut c.sender, addr, &body).await {
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
        (samples, errors, elapsed, tls_version)
    });
    let _ = std::fs::remove_dir_all(&cert_dir);

    let (mut samples, errors, elapsed, tls_version) = result;
    samples.sort();
    let completed = samples.len();
    assert!(completed > 0, "no request completed");
    let rps = completed as f64 / elapsed.as_secs_f64();
    let (p50, p90, p99) = (
        percentile(&samples, 0.50),
        percentile(&samples, 0.90),
        percentile(&samples, 0.99),
    );
    let max = *samples.last().unwrap();
    let results = json!({
        "command": command,
        "machine": {"cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)},
        "server": {"address": "127.0.0.1 (loopback)", "protocol": "HTTP/1.1", "tls": tls_version,
                   "plugin": "hello (built-in)", "path": PATH,
                   "plugin_concurrency": limits.concurrency},
        "requests": requests,
        "completed": completed,
        "errors": errors,
        "concurrency": concurrency,
        "request_bytes": body.len(),
        "duration_s": elapsed.as_secs_f64(),
        "stopped_early": completed + errors < requests,
        "requests_per_s": rps,
        "latency_ms": {"p50": millis(p50), "p90": millis(p90), "p99": millis(p99), "max": millis(max)},
    });
    let out_dir = odh_test_support::workspace_root().join("target/bench");
    std::fs::create_dir_all(&out_dir).unwrap();
    let out = out_dir.join("admission.json");
    std::fs::write(&out, serde_json::to_string_pretty(&results).unwrap()).unwrap();

    println!(
        "admission webhook (hello mutate, {} B AdmissionReview, {concurrency} keep-alive {tls_version} connections, loopback)",
        body.len()
    );
    println!(
        "  {completed} requests in {:.2} s ({errors} errors): {rps:.0} req/s",
        elapsed.as_secs_f64()
    );
    println!(
        "  latency p50 {:.2} ms   p90 {:.2} ms   p99 {:.2} ms   max {:.2} ms",
        millis(p50),
        millis(p90),
        millis(p99),
        millis(max)
    );
    println!("command: {command}");
    println!("results: {}", out.display());
}
