//! A load loop for an admission webhook server in another process: AdmissionReviews posted
//! through keep-alive TLS connections on loopback, with the latency of each and the server
//! process's CPU over the run (the peer bench drives ours and upstream's Go controller with it).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// An AdmissionReview v1 as the apiserver sends one: a CREATE of `object` in `namespace`, of
/// the kind `(group, version, kind, resource)`.
pub fn review(
    namespace: &str,
    (group, version, kind, resource): (&str, &str, &str, &str),
    object: serde_json::Value,
) -> Bytes {
    let review = serde_json::json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "00000000-0000-0000-0000-000000000000",
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": resource},
            "operation": "CREATE", "namespace": namespace,
            "name": object["metadata"]["name"].clone(),
            "object": object, "dryRun": false,
            "userInfo": {"username": "bench", "groups": ["system:authenticated"]},
        }
    });
    Bytes::from(serde_json::to_vec(&review).unwrap())
}

/// A CA and a serving certificate for 127.0.0.1 written to `dir` (tls.crt, tls.key, the names
/// both controller-runtime and the host read); returns the CA certificate.
pub fn write_certs(dir: &std::path::Path) -> CertificateDer<'static> {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "peer-bench-ca");
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let mut params =
        CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca).unwrap();
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("tls.crt"), cert.pem()).unwrap();
    std::fs::write(dir.join("tls.key"), key.serialize_pem()).unwrap();
    ca.der().clone()
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

pub struct Connection {
    sender: Sender,
    pub tls_version: String,
}

pub async fn connect(addr: SocketAddr, ca: &CertificateDer<'static>) -> anyhow::Result<Connection> {
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

/// One round trip: the answer's body, when it is a 200 that allows the request.
pub async fn round_trip(
    conn: &mut Connection,
    addr: SocketAddr,
    path: &str,
    body: &Bytes,
) -> anyhow::Result<Bytes> {
    conn.sender.ready().await?;
    let request = http::Request::post(path)
        .header(http::header::HOST, addr.to_string())
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(body.clone()))?;
    let response = conn.sender.send_request(request).await?;
    anyhow::ensure!(response.status() == 200, "HTTP {}", response.status());
    let bytes = response.into_body().collect().await?.to_bytes();
    let allowed = bytes
        .windows(br#""allowed":true"#.len())
        .any(|w| w == br#""allowed":true"#);
    anyhow::ensure!(allowed, "not allowed: {}", String::from_utf8_lossy(&bytes));
    Ok(bytes)
}

/// Whether an AdmissionReview answer carries a patch.
pub fn has_patch(answer: &[u8]) -> bool {
    answer
        .windows(br#""patch":"#.len())
        .any(|w| w == br#""patch":"#)
}

/// Connects until the server answers `path` with an allowed review, or `within` passes.
pub async fn wait_serving(
    addr: SocketAddr,
    ca: &CertificateDer<'static>,
    path: &str,
    body: &Bytes,
    within: Duration,
    alive: impl Fn() -> bool,
) -> anyhow::Result<Bytes> {
    let deadline = Instant::now() + within;
    let mut last = anyhow::anyhow!("not tried");
    while Instant::now() < deadline {
        anyhow::ensure!(alive(), "the server exited");
        match connect(addr, ca).await {
            Ok(mut c) => match round_trip(&mut c, addr, path, body).await {
                Ok(answer) => return Ok(answer),
                Err(e) => last = e,
            },
            Err(e) => last = e,
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(last.context(format!(
        "no allowed answer from https://{addr}{path} in {within:?}"
    )))
}

pub struct Load {
    pub requests: usize,
    pub concurrency: usize,
    pub max_seconds: u64,
    pub warm_up: usize,
}

pub struct Outcome {
    /// Latencies of the requests answered, sorted.
    pub samples: Vec<Duration>,
    pub errors: usize,
    pub elapsed: Duration,
    pub tls_version: String,
    /// User + system CPU seconds of the server process over the measured requests.
    pub server_cpu_s: f64,
}

/// Posts `load.requests` copies of `body` through `load.concurrency` keep-alive connections,
/// measuring the server process `pid`'s CPU over them, after `load.warm_up` requests through the
/// same connections at the same concurrency: what a server does the first time it runs that many
/// requests at once (first use of pooled instance slots and stacks, allocator growth) is not in
/// the figures, for any contender.
pub async fn drive(
    addr: SocketAddr,
    ca: &CertificateDer<'static>,
    path: &str,
    body: &Bytes,
    load: &Load,
    pid: u32,
) -> anyhow::Result<Outcome> {
    let mut connections = Vec::with_capacity(load.concurrency);
    for _ in 0..load.concurrency {
        connections.push(connect(addr, ca).await?);
    }
    let tls_version = connections
        .first()
        .map(|c| c.tls_version.clone())
        .unwrap_or_default();
    let each = load.warm_up.div_ceil(load.concurrency.max(1));
    let warming: Vec<_> = connections
        .into_iter()
        .map(|mut c| {
            let (body, path) = (body.clone(), path.to_string());
            tokio::spawn(async move {
                for _ in 0..each {
                    round_trip(&mut c, addr, &path, &body).await?;
                }
                anyhow::Ok(c)
            })
        })
        .collect();
    let mut connections = Vec::with_capacity(load.concurrency);
    for w in warming {
        connections.push(w.await??);
    }
    let requests = load.requests;
    let next = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(load.max_seconds);
    let (cpu_before, _) = super::usage(pid);
    let started = Instant::now();
    let per_connection = requests / load.concurrency + 1;
    let workers: Vec<_> = connections
        .into_iter()
        .map(|mut c| {
            let (next, body, path) = (next.clone(), body.clone(), path.to_string());
            tokio::spawn(async move {
                let mut samples = Vec::with_capacity(per_connection);
                let mut errors = 0usize;
                while next.fetch_add(1, Ordering::Relaxed) < requests && Instant::now() < deadline {
                    let t = Instant::now();
                    match round_trip(&mut c, addr, &path, &body).await {
                        Ok(_) => samples.push(t.elapsed()),
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
        let (s, e) = w.await?;
        samples.extend(s);
        errors += e;
    }
    let elapsed = started.elapsed();
    let (cpu_after, _) = super::usage(pid);
    samples.sort();
    Ok(Outcome {
        samples,
        errors,
        elapsed,
        tls_version,
        server_cpu_s: cpu_after - cpu_before,
    })
}

pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}
