//! What the tests share: certificates from a test CA, the server under test (in this process
//! or in a child process), TLS clients with chosen parameters, and admission requests.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use odh_model_controller::plugin::{LoadedPlugin, NoCluster};
use odh_model_controller::side_effects::NoSideEffects;
use odh_model_controller::tls::{ServerTuning, TlsPolicy, TlsServer, TlsServerConfig};
use odh_model_controller::webhook::{WebhookTable, webhook_router};
use odh_test_support::{Timing, eventually};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// The webhook path every test posts to (the `hello` plugin's mutating webhook).
pub const PATH: &str = "/mutate-hello-configmap";

/// Tests that load the machine (hundreds of connections, a load loop) take this lock so they
/// do not run at the same time: their latency bounds and memory figures stay their own.
pub static HEAVY: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn hello() -> &'static LoadedPlugin {
    static HELLO: OnceLock<LoadedPlugin> = OnceLock::new();
    HELLO.get_or_init(|| odh_test_support::host::load("hello"))
}

// ---------------------------------------------------------------------------------------------
// Certificates.

/// A CA issuing ECDSA P-256 serving certificates for 127.0.0.1.
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

pub struct ServingCert {
    pub cert_pem: String,
    pub key_pem: String,
    pub der: CertificateDer<'static>,
}

impl TestCa {
    pub fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        Self { issuer }
    }

    pub fn der(&self) -> CertificateDer<'static> {
        self.issuer.der().clone()
    }

    pub fn serving_cert(&self) -> ServingCert {
        let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, "127.0.0.1");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        ServingCert {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            der: cert.der().clone(),
        }
    }
}

/// Rewrites `tls.crt` and then `tls.key` in place, as a careless operator (or `cp`) would: a
/// reader in between sees a certificate without its key.
pub fn write_in_place(dir: &Path, cert: &ServingCert) {
    std::fs::write(dir.join("tls.crt"), &cert.cert_pem).unwrap();
    std::fs::write(dir.join("tls.key"), &cert.key_pem).unwrap();
}

/// Replaces both files by renames (each file changes atomically, the pair still does not).
pub fn write_by_rename(dir: &Path, cert: &ServingCert) {
    for (name, text) in [("tls.crt", &cert.cert_pem), ("tls.key", &cert.key_pem)] {
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, dir.join(name)).unwrap();
    }
}

pub fn temp_dir(prefix: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(odh_test_support::namespace::unique_name(prefix));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// ---------------------------------------------------------------------------------------------
// The server under test.

/// What the server is started with.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub http2: bool,
    pub policy: TlsPolicy,
    pub header_read_timeout: Duration,
    pub body_read_timeout: Duration,
    /// Go's `IdleTimeout` (the model-serving-api's); the in-process server only.
    pub idle_timeout: Option<Duration>,
}

impl Default for Settings {
    /// The webhook server's own defaults.
    fn default() -> Self {
        let tuning = ServerTuning::default();
        Self {
            http2: false,
            policy: tuning.tls_policy,
            header_read_timeout: tuning.header_read_timeout,
            body_read_timeout: tuning.body_read_timeout,
            idle_timeout: tuning.idle_timeout,
        }
    }
}

/// Serves the `hello` plugin's webhooks on `listener` with the certificate in `cert_dir`.
fn spawn_server(
    listener: TcpListener,
    cert_dir: &Path,
    settings: Settings,
) -> (oneshot::Sender<()>, JoinHandle<anyhow::Result<()>>) {
    let table = WebhookTable::new([hello()]).expect("webhook table");
    let router = webhook_router(&table, Arc::new(NoCluster), Arc::new(NoSideEffects));
    let config = TlsServerConfig {
        bind: listener.local_addr().unwrap(),
        cert_dir: cert_dir.to_path_buf(),
        enable_http2: settings.http2,
        ..Default::default()
    };
    let tuning = ServerTuning {
        tls_policy: settings.policy,
        header_read_timeout: settings.header_read_timeout,
        body_read_timeout: settings.body_read_timeout,
        idle_timeout: settings.idle_timeout,
        ..ServerTuning::default()
    };
    let (stop, stopped) = oneshot::channel::<()>();
    let server = TlsServer::on(listener, config).tuned(tuning);
    let task = tokio::spawn(server.serve(router, async move {
        let _ = stopped.await;
    }));
    (stop, task)
}

/// The server in this process.
pub struct Server {
    pub addr: SocketAddr,
    pub dir: PathBuf,
    pub ca: TestCa,
    pub cert: ServingCert,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<anyhow::Result<()>>,
}

impl Server {
    pub async fn start(settings: Settings) -> Self {
        let ca = TestCa::new("hardening-test-ca");
        let cert = ca.serving_cert();
        let dir = temp_dir("hardening-certs");
        write_in_place(&dir, &cert);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, task) = spawn_server(listener, &dir, settings);
        let server = Self {
            addr,
            dir,
            ca,
            cert,
            stop: Some(stop),
            task,
        };
        wait_until_serving(addr, &server.ca.der()).await;
        server
    }

    /// Stops the server; it must shut down cleanly.
    pub async fn stop(mut self) {
        let _ = self.stop.take().expect("running").send(());
        tokio::time::timeout(Duration::from_secs(15), &mut self.task)
            .await
            .expect("the server stops within 15 s")
            .expect("the server task did not panic")
            .expect("serve returned an error");
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn wait_until_serving(addr: SocketAddr, ca: &CertificateDer<'static>) {
    eventually("the server answers", Timing::default(), || async {
        let (status, _) = post_review(addr, ca, "warm-up").await?;
        anyhow::ensure!(status == 200, "HTTP {status}");
        Ok(())
    })
    .await
    .expect("the webhook server starts");
}

/// The server in a child process (this test binary, running [`child_server`]), so that its
/// memory can be read apart from the clients'.
pub struct ChildServer {
    pub addr: SocketAddr,
    pub ca: TestCa,
    dir: PathBuf,
    child: tokio::process::Child,
}

const CHILD_ENV: &str = "ODH_HARDENING_CHILD_SERVER";

impl ChildServer {
    pub async fn spawn(settings: Settings) -> Self {
        let ca = TestCa::new("hardening-child-ca");
        let dir = temp_dir("hardening-child-certs");
        write_in_place(&dir, &ca.serving_cert());
        let spec = format!(
            "{}|{}|{}",
            dir.display(),
            settings.header_read_timeout.as_millis(),
            settings.body_read_timeout.as_millis()
        );
        let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "harness::child_server",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, spec)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("starting the server process");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let addr = tokio::time::timeout(Duration::from_secs(120), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                // libtest's "test … " may precede it on the same line.
                if let Some((_, addr)) = line.split_once("LISTENING ") {
                    return addr.parse::<SocketAddr>().unwrap();
                }
            }
            panic!("the server process ended before listening");
        })
        .await
        .expect("the server process listens within 120 s");
        // The rest of its output (libtest's) is not needed, but must not block the child.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        wait_until_serving(addr, &ca.der()).await;
        Self {
            addr,
            ca,
            dir,
            child,
        }
    }

    /// The server's resident memory, in KiB.
    pub fn rss_kib(&self) -> u64 {
        let pid = self.child.id().expect("running");
        rss_kib_of(&format!("/proc/{pid}/status"))
    }

    pub async fn stop(mut self) {
        // Closing its stdin stops it; kill if it does not go.
        drop(self.child.stdin.take());
        if tokio::time::timeout(Duration::from_secs(15), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
            panic!("the server process did not stop within 15 s of its stdin closing");
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn rss_kib_of(status_file: &str) -> u64 {
    let status = std::fs::read_to_string(status_file).expect("reading /proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("a VmRSS line")
}

/// The server process of the memory tests: started by [`ChildServer::spawn`] with its
/// settings in the environment, serves until its stdin closes. Run directly, it does nothing.
#[test]
#[ignore = "the server process of the memory tests; they start it"]
fn child_server() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let mut parts = spec.split('|');
    let dir = PathBuf::from(parts.next().unwrap());
    let millis = |p: Option<&str>| Duration::from_millis(p.unwrap().parse().unwrap());
    let settings = Settings {
        header_read_timeout: millis(parts.next()),
        body_read_timeout: millis(parts.next()),
        ..Settings::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, task) = spawn_server(listener, &dir, settings);
        println!("LISTENING {addr}");
        // Stdin reaching its end (the parent dropped it, or died) is the stop signal.
        let mut stdin = tokio::io::stdin();
        let _ = tokio::io::copy(&mut stdin, &mut tokio::io::sink()).await;
        let _ = stop.send(());
        task.await.unwrap().unwrap();
    });
}

// ---------------------------------------------------------------------------------------------
// Clients.

/// A client configuration trusting `ca` with the given protocol versions and provider.
pub fn client_config(
    ca: &CertificateDer<'static>,
    provider: rustls::crypto::CryptoProvider,
    versions: &[&'static rustls::SupportedProtocolVersion],
    alpn: &[&str],
) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone()).unwrap();
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(versions)
        .expect("a consistent client configuration")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.as_bytes().to_vec()).collect();
    Arc::new(config)
}

/// rustls' defaults, offering `http/1.1`.
pub fn default_client(ca: &CertificateDer<'static>) -> Arc<rustls::ClientConfig> {
    client_config(
        ca,
        rustls::crypto::ring::default_provider(),
        rustls::DEFAULT_VERSIONS,
        &["http/1.1"],
    )
}

pub async fn connect_with(
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
) -> anyhow::Result<TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(addr).await?;
    Ok(TlsConnector::from(config)
        .connect(ServerName::try_from("127.0.0.1")?, tcp)
        .await?)
}

/// An AdmissionReview v1 for a ConfigMap CREATE.
pub fn review(uid: &str) -> Value {
    json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "operation": "CREATE", "namespace": "ns", "name": "cm",
            "object": {"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "cm", "namespace": "ns"}, "data": {"k": "v"}},
            "userInfo": {"username": "tester"},
        }
    })
}

/// POSTs `body` to `path` on an HTTP/1.1 connection.
pub async fn post_on(
    sender: &mut hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    addr: SocketAddr,
    path: &str,
    body: Bytes,
) -> anyhow::Result<(u16, Bytes)> {
    let request = http::Request::post(path)
        .header(http::header::HOST, addr.to_string())
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(body))?;
    sender.ready().await?;
    let response = sender.send_request(request).await?;
    let status = response.status().as_u16();
    Ok((status, response.into_body().collect().await?.to_bytes()))
}

/// An HTTP/1.1 connection over `tls`.
pub async fn http1(
    tls: TlsStream<TcpStream>,
) -> anyhow::Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>> {
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
    tokio::spawn(conn);
    Ok(sender)
}

/// A review POSTed on a fresh connection; returns the status and the answer.
pub async fn post_review(
    addr: SocketAddr,
    ca: &CertificateDer<'static>,
    uid: &str,
) -> anyhow::Result<(u16, Value)> {
    let tls = connect_with(addr, default_client(ca)).await?;
    let mut sender = http1(tls).await?;
    let body = serde_json::to_vec(&review(uid))?;
    let (status, answer) = post_on(&mut sender, addr, PATH, body.into()).await?;
    Ok((
        status,
        serde_json::from_slice(&answer).unwrap_or(Value::Null),
    ))
}

/// A review answered 200 with `allowed: true` and the uid echoed, within `within`; returns how
/// long it took.
pub async fn served_within(
    addr: SocketAddr,
    ca: &CertificateDer<'static>,
    uid: &str,
    within: Duration,
) -> Duration {
    let started = std::time::Instant::now();
    let (status, answer) = tokio::time::timeout(within, post_review(addr, ca, uid))
        .await
        .unwrap_or_else(|_| panic!("request {uid} not answered within {within:?}"))
        .unwrap_or_else(|e| panic!("request {uid} failed: {e:#}"));
    assert_eq!(status, 200, "{uid}: {answer}");
    assert_eq!(answer["response"]["uid"], uid, "{answer}");
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    started.elapsed()
}

/// The peer's leaf certificate.
pub fn peer_certificate(tls: &TlsStream<TcpStream>) -> Option<CertificateDer<'static>> {
    tls.get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .map(|c| c.clone().into_owned())
}
