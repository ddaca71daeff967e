//! A local HTTPS server standing in for external hosts (NVIDIA's APIs, say): a test CA, a
//! server certificate for the real host names, and a handler deciding each answer. The host
//! reaches it through its test-only address override (`ODH_TEST_HTTP_RESOLVE`) and trusts the
//! CA through `ODH_TEST_HTTP_CA_FILE`, so plugins keep their real URLs.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::response::Response;
use odh_model_controller::tls::{TlsServerConfig, serve_on};
use tokio_util::sync::CancellationToken;

/// One request as the stand-in received it.
#[derive(Clone, Debug)]
pub struct Received {
    pub method: String,
    /// `https://<Host header><path and query>`.
    pub url: String,
    /// Lower-case names.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Received {
    /// The first value of a header (name case-insensitive).
    pub fn header(&self, name: &str) -> Option<String> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.clone())
    }
}

/// What the stand-in does with a request.
pub enum Reply {
    Answer(u16, String),
    /// Never answers (the connection stays open).
    Hang,
}

type Handler = dyn Fn(&Received) -> Reply + Send + Sync;
type Shared = (Arc<Handler>, Arc<Mutex<Vec<Received>>>);

/// A running stand-in; stops when dropped.
pub struct HttpsStandIn {
    pub address: SocketAddr,
    /// The test CA (PEM file).
    pub ca_file: PathBuf,
    /// Every request so far.
    pub received: Arc<Mutex<Vec<Received>>>,
    stop: CancellationToken,
    _dir: TempDir,
}

impl Drop for HttpsStandIn {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl HttpsStandIn {
    /// `ODH_TEST_HTTP_RESOLVE`'s value sending `host:443` of every host to this server.
    pub fn resolve_table(&self, hosts: &[&str]) -> String {
        hosts
            .iter()
            .map(|h| format!("{h}:443={}", self.address))
            .collect::<Vec<_>>()
            .join(",")
    }
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Starts a stand-in serving `hosts` (certificate names) on a loopback port.
pub async fn start(
    hosts: &[&str],
    handler: impl Fn(&Received) -> Reply + Send + Sync + 'static,
) -> anyhow::Result<HttpsStandIn> {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "odh-https-stand-in-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir)?;
    let dir = TempDir(dir);

    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "odh test stand-in CA");
    let ca_key = KeyPair::generate()?;
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);
    let names: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
    let leaf_key = KeyPair::generate()?;
    let leaf = CertificateParams::new(names)?.signed_by(&leaf_key, &issuer)?;
    std::fs::write(dir.0.join("tls.crt"), leaf.pem())?;
    std::fs::write(dir.0.join("tls.key"), leaf_key.serialize_pem())?;
    let ca_file = dir.0.join("ca.crt");
    std::fs::write(&ca_file, ca_cert.pem())?;

    let received = Arc::new(Mutex::new(Vec::new()));
    let state: Shared = (Arc::new(handler), received.clone());
    let router = axum::Router::new().fallback(answer).with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let config = TlsServerConfig {
        name: "https-stand-in",
        bind: address,
        cert_dir: dir.0.clone(),
        enable_http2: false,
        body_limit: 1 << 20,
    };
    let stop = CancellationToken::new();
    let stopped = stop.clone();
    tokio::spawn(async move {
        let _ = serve_on(listener, config, router, stopped.cancelled_owned()).await;
    });
    Ok(HttpsStandIn {
        address,
        ca_file,
        received,
        stop,
        _dir: dir,
    })
}

async fn answer(State((handler, received)): State<Shared>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = to_bytes(body, 1 << 20).await.unwrap_or_default().to_vec();
    let host = parts
        .headers
        .get("host")
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let call = Received {
        method: parts.method.to_string(),
        url: format!("https://{host}{path}"),
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    v.to_str().unwrap_or_default().to_string(),
                )
            })
            .collect(),
        body,
    };
    received.lock().unwrap().push(call.clone());
    match handler(&call) {
        Reply::Answer(status, body) => Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap(),
        Reply::Hang => std::future::pending().await,
    }
}
