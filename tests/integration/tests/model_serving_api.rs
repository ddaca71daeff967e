//! The model-serving-api end to end (docs/plugins/llm-gateway.md, "model-serving-api"; scenarios
//! SM-01..SM-05 and E2E-01..E2E-26): the real binary's `model-serving-api` subcommand, and the same
//! server inside the controller (`run --model-serving-api-bind-address`), over real HTTPS against
//! the test apiserver with the Gateway CRD, labelled namespaces, ServiceAccounts with TokenRequest
//! tokens and Roles granting `create llminferenceservices`.
//!
//! The acceptance points of issue #14: a caller who may create LLMInferenceServices in a
//! namespace sees exactly the gateways whose listeners allow it; one who may not gets `[]`; a
//! missing token gets 401 with upstream's body; a certificate replaced on disk is served
//! within 1 s without a restart.

use std::net::SocketAddr;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::Api;
use kube::api::{DynamicObject, PostParams};
use odh_test_support::{TestContext, Timing, eventually};
use rcgen::{CertificateParams, KeyPair, SerialNumber};
use rustls::pki_types::{CertificateDer, ServerName};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use odh_test_support::net::{self, free_port};
use odh_test_support::process::HostProcess;

const GATEWAYS: &str = "/api/v1/gateways";
const SAMPLES: &str = "/api/v1/samples/llm-d";
const UNAUTHORIZED: &str = r#"{"error":"missing or invalid authorization header"}"#;

// ---------------------------------------------------------------------------------------------
// Certificates: a Kubernetes Secret volume layout whose `..data` symlink is swapped.

/// A self-signed serving certificate for 127.0.0.1 with `serial`: (cert PEM, key PEM, DER).
fn serving_cert(serial: u64) -> (String, String, CertificateDer<'static>) {
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    params.serial_number = Some(SerialNumber::from(serial));
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), key.serialize_pem(), cert.der().clone())
}

struct SecretVolume {
    dir: PathBuf,
    generation: u32,
}

impl SecretVolume {
    fn new(name: &str, cert: &(String, String, CertificateDer<'static>)) -> Self {
        let dir = std::env::temp_dir().join(odh_test_support::namespace::unique_name(name));
        std::fs::create_dir_all(&dir).unwrap();
        let mut volume = Self { dir, generation: 0 };
        volume.swap_to(cert);
        symlink("..data/tls.crt", volume.dir.join("tls.crt")).unwrap();
        symlink("..data/tls.key", volume.dir.join("tls.key")).unwrap();
        volume
    }

    /// The kubelet's atomic update: a new timestamped directory, `..data` renamed onto it.
    fn swap_to(&mut self, (cert, key, _): &(String, String, CertificateDer<'static>)) {
        let old = format!("..2026_gen_{}", self.generation);
        self.generation += 1;
        let new = format!("..2026_gen_{}", self.generation);
        std::fs::create_dir_all(self.dir.join(&new)).unwrap();
        std::fs::write(self.dir.join(&new).join("tls.crt"), cert).unwrap();
        std::fs::write(self.dir.join(&new).join("tls.key"), key).unwrap();
        symlink(&new, self.dir.join("..data_tmp")).unwrap();
        std::fs::rename(self.dir.join("..data_tmp"), self.dir.join("..data")).unwrap();
        let _ = std::fs::remove_dir_all(self.dir.join(old));
    }
}

impl Drop for SecretVolume {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One DER element: (tag, contents, rest).
fn der(input: &[u8]) -> (u8, &[u8], &[u8]) {
    let (tag, first) = (input[0], input[1]);
    let (len, header) = if first < 0x80 {
        (first as usize, 2)
    } else {
        let n = (first & 0x7f) as usize;
        let len = input[2..2 + n]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | *b as usize);
        (len, 2 + n)
    };
    (tag, &input[header..header + len], &input[header + len..])
}

/// The serial number of a certificate (DER), as an integer.
fn serial_of(cert: &CertificateDer<'_>) -> u64 {
    let (_, certificate, _) = der(cert.as_ref());
    let (_, tbs, _) = der(certificate);
    let (tag, _, after_version) = der(tbs);
    let rest = if tag == 0xa0 { after_version } else { tbs };
    let (tag, serial, _) = der(rest);
    assert_eq!(tag, 0x02);
    serial
        .iter()
        .fold(0u64, |acc, b| (acc << 8) | u64::from(*b))
}

// ---------------------------------------------------------------------------------------------
// An HTTPS client that trusts any certificate (the test looks at which one it got).

use odh_test_support::net::Unverified as AnyCert;

fn client_config(provider: rustls::crypto::CryptoProvider) -> rustls::ClientConfig {
    let provider = Arc::new(provider);
    let mut config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCert(provider)))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config
}

/// A TLS handshake with `addr` under `config`; the certificate the server presented.
async fn handshake(
    addr: SocketAddr,
    config: rustls::ClientConfig,
) -> anyhow::Result<CertificateDer<'static>> {
    let tcp = TcpStream::connect(addr).await?;
    let tls = TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("127.0.0.1")?, tcp)
        .await?;
    let (_, session) = tls.get_ref();
    session
        .peer_certificates()
        .and_then(|c| c.first())
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("no certificate"))
}

#[derive(Debug)]
struct Reply {
    status: u16,
    headers: http::HeaderMap,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

/// One request on a fresh HTTPS connection.
async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> anyhow::Result<Reply> {
    let tcp = TcpStream::connect(addr).await?;
    let tls = TlsConnector::from(Arc::new(client_config(
        rustls::crypto::ring::default_provider(),
    )))
    .connect(ServerName::try_from("127.0.0.1")?, tcp)
    .await?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls)).await?;
    tokio::spawn(conn);
    let mut request = http::Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::HOST, addr.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = sender
        .send_request(request.body(Full::new(Bytes::new()))?)
        .await?;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await?.to_bytes();
    Ok(Reply {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

async fn get(addr: SocketAddr, path: &str) -> anyhow::Result<Reply> {
    send(addr, "GET", path, &[]).await
}

async fn get_as(addr: SocketAddr, path: &str, token: &str) -> anyhow::Result<Reply> {
    Req::get(path).bearer(token).send(addr).await
}

/// One request of a scenario, sent on a fresh HTTPS connection: a method, a path and headers.
struct Req {
    method: &'static str,
    path: String,
    headers: Vec<(&'static str, String)>,
}

impl Req {
    fn get(path: impl Into<String>) -> Self {
        Self {
            method: "GET",
            path: path.into(),
            headers: Vec::new(),
        }
    }

    fn post(path: impl Into<String>) -> Self {
        Self {
            method: "POST",
            ..Self::get(path)
        }
    }

    fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// `Authorization: Bearer <token>`.
    fn bearer(self, token: &str) -> Self {
        self.header("authorization", format!("Bearer {token}"))
    }

    async fn send(&self, addr: SocketAddr) -> anyhow::Result<Reply> {
        let headers: Vec<(&str, &str)> =
            self.headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        send(addr, self.method, &self.path, &headers).await
    }
}

/// The certificate `addr` serves.
async fn served_cert(addr: SocketAddr) -> anyhow::Result<CertificateDer<'static>> {
    handshake(
        addr,
        client_config(rustls::crypto::ring::default_provider()),
    )
    .await
}

/// The serial number of the certificate `addr` serves.
async fn served_serial(addr: SocketAddr) -> anyhow::Result<u64> {
    Ok(serial_of(&served_cert(addr).await?))
}

fn assert_secured(r: &Reply) {
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(r.header("x-frame-options"), Some("DENY"));
    assert_eq!(r.header("cache-control"), Some("no-store"));
    assert_eq!(
        r.header("strict-transport-security"),
        Some("max-age=63072000; includeSubDomains")
    );
}

fn assert_error(r: &Reply, status: u16, body: &str) {
    assert_eq!((r.status, r.body.as_str()), (status, body), "{r:?}");
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_secured(r);
}

// ---------------------------------------------------------------------------------------------
// The server processes.

/// A cache of compiled plugins shared by the test's processes (compiling the component is the
/// slow part of a start).
fn plugin_cache() -> PathBuf {
    odh_test_support::workspace_root().join("target/test-plugin-cache")
}

/// The server's configuration variables: a test sets those it means, never inherits them.
const SERVER_ENV: [&str; 14] = [
    "LISTEN_ADDR",
    "METRICS_ADDR",
    "TLS_CERT_DIR",
    "LOG_LEVEL",
    "READ_TIMEOUT",
    "WRITE_TIMEOUT",
    "IDLE_TIMEOUT",
    "KUBE_QPS",
    "KUBE_BURST",
    "GATEWAY_LABEL_SELECTOR",
    "RUST_LOG",
    "ODH_PLATFORM_TYPE",
    "ENABLE_WEBHOOKS",
    "POD_NAMESPACE",
];

/// An `odh-model-controller` child process, killed when dropped.
struct Process(HostProcess);

impl std::ops::Deref for Process {
    type Target = HostProcess;
    fn deref(&self) -> &HostProcess {
        &self.0
    }
}

impl std::ops::DerefMut for Process {
    fn deref_mut(&mut self) -> &mut HostProcess {
        &mut self.0
    }
}

impl Process {
    fn start(name: &str, args: &[String], env: &[(&str, &str)]) -> anyhow::Result<Self> {
        Ok(Self(HostProcess::spawn(name, args, &SERVER_ENV, env)?))
    }

    /// `odh-model-controller model-serving-api` against the test cluster.
    fn standalone(name: &str, env: &[(&str, &str)]) -> anyhow::Result<Self> {
        let kubeconfig = odh_test_support::cluster()?.kubeconfig.clone();
        Self::standalone_as(name, &kubeconfig, env)
    }

    /// `odh-model-controller model-serving-api` as the user of `kubeconfig`.
    fn standalone_as(name: &str, kubeconfig: &Path, env: &[(&str, &str)]) -> anyhow::Result<Self> {
        Self::start(
            name,
            &[
                "model-serving-api".into(),
                format!("--kubeconfig={}", kubeconfig.display()),
                format!("--plugin-cache-dir={}", plugin_cache().display()),
            ],
            env,
        )
    }

    fn with_log(&self, e: anyhow::Error) -> anyhow::Error {
        anyhow::anyhow!("{e:#}; log:\n{}", self.output())
    }

    /// Waits until `addr` answers `/healthz`.
    async fn ready(&self, addr: SocketAddr) -> anyhow::Result<()> {
        eventually(
            "the server answers /healthz",
            Timing::within(Duration::from_secs(120)),
            || async {
                let r = get(addr, "/healthz").await?;
                anyhow::ensure!(r.status == 200, "{r:?}");
                Ok(())
            },
        )
        .await
        .map_err(|e| self.with_log(e))
    }
}

/// A ready standalone server on fresh loopback ports (the API's and the metrics'), its
/// certificate (serial 1) in a Secret volume, logging at debug.
struct Standalone {
    process: Process,
    addr: SocketAddr,
    metrics_addr: SocketAddr,
    volume: SecretVolume,
}

impl Standalone {
    /// As the admin of the test cluster, with `env` added.
    async fn start(name: &str, env: &[(&str, &str)]) -> anyhow::Result<Self> {
        let kubeconfig = odh_test_support::cluster()?.kubeconfig.clone();
        Self::start_as(name, &kubeconfig, env).await
    }

    /// As the user of `kubeconfig`, with `env` added.
    async fn start_as(name: &str, kubeconfig: &Path, env: &[(&str, &str)]) -> anyhow::Result<Self> {
        let volume = SecretVolume::new(&format!("{name}-tls"), &serving_cert(1));
        let addr: SocketAddr = ([127, 0, 0, 1], free_port()).into();
        let metrics_addr: SocketAddr = ([127, 0, 0, 1], free_port()).into();
        let (listen, metrics) = (addr.to_string(), metrics_addr.to_string());
        let mut all = secret_env(&volume, &listen, &metrics);
        all.extend_from_slice(env);
        let process = Process::standalone_as(name, kubeconfig, &all)?;
        process.ready(addr).await?;
        Ok(Self {
            process,
            addr,
            metrics_addr,
            volume,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Cluster fixtures.

/// A namespace with `labels`, deleted with the test context's namespace by the harness's GC.
async fn namespace(t: &TestContext, suffix: &str, labels: Value) -> anyhow::Result<String> {
    let name = odh_test_support::namespace::unique_name(&format!("msa-{suffix}"));
    Api::<Namespace>::all(t.client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}}))?,
        )
        .await?;
    Ok(name)
}

async fn gateway(t: &TestContext, ns: &str, object: Value) -> anyhow::Result<()> {
    let resource = kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("gateway.networking.k8s.io", "v1", "Gateway"),
        "gateways",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(t.client.clone(), ns, &resource);
    api.create(&PostParams::default(), &serde_json::from_value(object)?)
        .await?;
    Ok(())
}

fn gw(name: &str, listeners: Value) -> Value {
    json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
           "metadata": {"name": name},
           "spec": {"gatewayClassName": "istio", "listeners": listeners}})
}

fn listener(name: &str, namespaces: Value) -> Value {
    json!({"name": name, "port": 80, "protocol": "HTTP", "allowedRoutes": {"namespaces": namespaces}})
}

/// A ServiceAccount in the test namespace and a token for it.
async fn service_account_token(t: &TestContext, name: &str) -> anyhow::Result<String> {
    t.api::<ServiceAccount>()
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": name}}))?,
        )
        .await?;
    let request: TokenRequest =
        serde_json::from_value(json!({"spec": {"audiences": [], "expirationSeconds": 3600}}))?;
    let issued = t
        .api::<ServiceAccount>()
        .create_token_request(name, &PostParams::default(), &request)
        .await?;
    Ok(issued.status.expect("a token").token)
}

/// Grants the test namespace's ServiceAccount `sa` `create llminferenceservices` in `ns`.
async fn grant_create(t: &TestContext, ns: &str, sa: &str) -> anyhow::Result<()> {
    let roles: Api<Role> = Api::namespaced(t.client.clone(), ns);
    roles
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "create-llmisvc"}, "rules": [
                {"apiGroups": ["serving.kserve.io"], "resources": ["llminferenceservices"],
                 "verbs": ["create"]}]}))?,
        )
        .await?;
    let bindings: Api<RoleBinding> = Api::namespaced(t.client.clone(), ns);
    bindings
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": format!("create-llmisvc-{sa}")},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "create-llmisvc"},
                "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": t.namespace}]}))?,
        )
        .await?;
    Ok(())
}

/// The (gateway namespace, gateway, listener) entries of an answer whose gateway is in one of
/// `ours` (other tests share the cluster).
fn entries(r: &Reply, ours: &[&str]) -> Vec<(String, String, String)> {
    r.json()["gateways"]
        .as_array()
        .unwrap_or_else(|| panic!("no gateways array: {r:?}"))
        .iter()
        .filter(|g| ours.contains(&g["namespace"].as_str().unwrap_or_default()))
        .map(|g| {
            let s = |k: &str| g[k].as_str().unwrap_or_default().to_string();
            (s("namespace"), s("name"), s("listener"))
        })
        .collect()
}

fn triple(ns: &str, name: &str, listener: &str) -> (String, String, String) {
    (ns.into(), name.into(), listener.into())
}

/// The cluster every end-to-end test here uses.
struct Fixture {
    t: TestContext,
    /// E2E-06: `test-gw` (All) lives here; E2E-08: `same-gw` (Same) too.
    gw_ns: String,
    other_ns: String,
    match_ns: String,
    no_match_ns: String,
    granted: String,
    nobody: String,
}

impl Fixture {
    async fn new(prefix: &str) -> anyhow::Result<Self> {
        let t = TestContext::new(prefix).await?;
        let gw_ns = t.namespace.clone();
        let other_ns = namespace(&t, "other", json!({})).await?;
        let match_ns = namespace(&t, "match", json!({"e2e-test": "match"})).await?;
        let no_match_ns = namespace(&t, "nomatch", json!({"e2e-test": "other"})).await?;
        gateway(
            &t,
            &gw_ns,
            gw("test-gw", json!([listener("http", json!({"from": "All"}))])),
        )
        .await?;
        gateway(
            &t,
            &gw_ns,
            gw(
                "same-gw",
                json!([listener("http", json!({"from": "Same"}))]),
            ),
        )
        .await?;
        gateway(
            &t,
            &gw_ns,
            gw(
                "sel-gw",
                json!([listener(
                    "http",
                    json!({"from": "Selector",
                    "selector": {"matchLabels": {"e2e-test": "match"}}})
                )]),
            ),
        )
        .await?;
        let mut meta = gw(
            "meta-gw",
            json!([
                listener("web", json!({"from": "All"})),
                listener("internal", json!({"from": "Same"}))
            ]),
        );
        meta["metadata"]["annotations"] = json!({
            "openshift.io/display-name": "My Gateway",
            "openshift.io/description": "A test gateway for e2e",
        });
        gateway(&t, &gw_ns, meta).await?;
        let granted = service_account_token(&t, "granted").await?;
        let nobody = service_account_token(&t, "nobody").await?;
        for ns in [&gw_ns, &other_ns, &match_ns, &no_match_ns] {
            grant_create(&t, ns, "granted").await?;
        }
        Ok(Self {
            t,
            gw_ns,
            other_ns,
            match_ns,
            no_match_ns,
            granted,
            nobody,
        })
    }

    fn ours(&self) -> Vec<&str> {
        vec![
            &self.gw_ns,
            &self.other_ns,
            &self.match_ns,
            &self.no_match_ns,
        ]
    }

    /// The (namespace, gateway, listener) entries of `listeners`, all in the gateways' namespace.
    fn in_gw_ns(&self, listeners: &[(&str, &str)]) -> Vec<(String, String, String)> {
        listeners
            .iter()
            .map(|(name, listener)| triple(&self.gw_ns, name, listener))
            .collect()
    }

    /// The granted caller's entries for `ns`, once the RBAC grant is in effect.
    async fn discover(&self, addr: SocketAddr, ns: &str) -> anyhow::Result<Reply> {
        let path = format!("{GATEWAYS}?namespace={ns}");
        eventually("the grant is in effect", Timing::default(), || async {
            let r = get_as(addr, &path, &self.granted).await?;
            anyhow::ensure!(r.status == 200, "{r:?}");
            anyhow::ensure!(!entries(&r, &self.ours()).is_empty(), "nothing yet: {r:?}");
            Ok(r)
        })
        .await
    }
}

fn secret_env<'a>(
    volume: &'a SecretVolume,
    listen: &'a str,
    metrics: &'a str,
) -> Vec<(&'a str, &'a str)> {
    vec![
        ("TLS_CERT_DIR", volume.dir.to_str().unwrap()),
        ("LISTEN_ADDR", listen),
        ("METRICS_ADDR", metrics),
        ("LOG_LEVEL", "debug"),
    ]
}

// ---------------------------------------------------------------------------------------------
// The standalone server.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standalone_model_serving_api_end_to_end() -> anyhow::Result<()> {
    let f = Fixture::new("msa-standalone").await?;
    let Standalone {
        process: mut server,
        addr,
        metrics_addr,
        mut volume,
    } = Standalone::start("msa-standalone", &[]).await?;

    // E2E-01: health, with the security headers; any method; the JSON body of
    // docs/plugins/llm-gateway.md, "Endpoints".
    for req in [
        Req::get("/healthz"),
        Req::get("/readyz"),
        Req::post("/healthz"),
    ] {
        let r = req.send(addr).await?;
        assert_eq!((r.status, r.body.as_str()), (200, r#"{"status":"ok"}"#));
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_secured(&r);
    }
    // Anything else is Go's 404, secured; /metrics is on its own port only.
    for path in ["/", "/metrics", "/api/v1/gateways/x", "/api/v1/samples"] {
        let r = get(addr, path).await?;
        assert_eq!(
            (r.status, r.body.as_str()),
            (404, "404 page not found\n"),
            "{path}"
        );
        assert_secured(&r);
    }

    // E2E-02, SM-02..SM-05: the bearer middleware answers before the handler, so a POST
    // without a token is 401, not 405.
    let path = format!("{GATEWAYS}?namespace={}", f.gw_ns);
    for req in [
        Req::get(&path),                                               // E2E-02, SM-02
        Req::get(&path).header("authorization", "Basic dXNlcjpwYXNz"), // SM-03
        Req::get(&path).header("authorization", "Bearer "),            // SM-04
        Req::get(&path).header("authorization", "Bearer    "),
        Req::get(&path).header("authorization", "Bearertoken"), // SM-05
        Req::get(&path).header("authorization", "bearer token"),
        Req::post(&path),
    ] {
        assert_error(&req.send(addr).await?, 401, UNAUTHORIZED);
    }

    // E2E-03..E2E-05 with a token.
    let token = f.granted.clone();
    for (req, status, body) in [
        // E2E-03: no namespace.
        (
            Req::get(GATEWAYS),
            400,
            r#"{"error":"missing required query parameter: namespace"}"#,
        ),
        // E2E-04: not an RFC 1123 label.
        (
            Req::get(format!("{GATEWAYS}?namespace=INVALID_NS")),
            400,
            r#"{"error":"invalid namespace: must match RFC 1123"}"#,
        ),
        // E2E-05: POST with a token.
        (Req::post(&path), 405, r#"{"error":"method not allowed"}"#),
    ] {
        assert_error(&req.bearer(&token).send(addr).await?, status, body);
    }

    // E2E-06, SM-01: the granted caller (token trimmed) sees exactly the listeners that admit
    // the gateways' own namespace: test-gw (All), same-gw (Same), meta-gw's both listeners;
    // not sel-gw (the namespace is not labelled e2e-test=match).
    let r = f.discover(addr, &f.gw_ns).await?;
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_secured(&r);
    let gw_ns = f.gw_ns.as_str();
    assert_eq!(
        entries(&r, &f.ours()),
        f.in_gw_ns(&[
            ("meta-gw", "web"),
            ("meta-gw", "internal"),
            ("same-gw", "http"),
            ("test-gw", "http"),
        ])
    );
    let padded = format!("Bearer   {token}  ");
    let r2 = Req::get(&path)
        .header("authorization", padded)
        .send(addr)
        .await?;
    assert_eq!(r2.status, 200, "SM-01: the token is trimmed");
    assert_eq!(entries(&r2, &f.ours()), entries(&r, &f.ours()));
    // Status is Unknown without conditions; display fields only where annotated (E2E-12).
    for g in r.json()["gateways"].as_array().unwrap() {
        if g["namespace"] != gw_ns {
            continue;
        }
        assert_eq!(g["status"], "Unknown");
        if g["name"] == "meta-gw" {
            assert_eq!(g["displayName"], "My Gateway");
            assert_eq!(g["description"], "A test gateway for e2e");
        } else {
            assert!(g.get("displayName").is_none() && g.get("description").is_none());
        }
    }

    // E2E-07: a caller without the grant gets an empty list (200), here and everywhere; so
    // does a token the apiserver does not accept (the review fails, nothing leaks), and the
    // granted caller in a namespace that does not exist (not granted there: no read made).
    for (path, token) in [
        (format!("{GATEWAYS}?namespace={gw_ns}"), f.nobody.as_str()),
        (
            format!("{GATEWAYS}?namespace={}", f.other_ns),
            f.nobody.as_str(),
        ),
        (path.clone(), "not-a-real-token"),
        (
            format!("{GATEWAYS}?namespace=msa-no-such-ns"),
            token.as_str(),
        ),
    ] {
        let r = get_as(addr, &path, token).await?;
        assert_eq!((r.status, r.body.as_str()), (200, r#"{"gateways":[]}"#));
    }

    // E2E-08/09: same-gw is seen from its own namespace only.
    let r = f.discover(addr, &f.other_ns).await?;
    assert_eq!(
        entries(&r, &f.ours()),
        f.in_gw_ns(&[("meta-gw", "web"), ("test-gw", "http")]),
        "E2E-09: not same-gw"
    );
    // E2E-10/11: sel-gw from the labelled namespace only.
    let r = f.discover(addr, &f.match_ns).await?;
    assert_eq!(
        entries(&r, &f.ours()),
        f.in_gw_ns(&[("meta-gw", "web"), ("sel-gw", "http"), ("test-gw", "http")])
    );
    let r = f.discover(addr, &f.no_match_ns).await?;
    assert!(
        !entries(&r, &f.ours()).contains(&triple(gw_ns, "sel-gw", "http")),
        "E2E-11"
    );

    // E2E-17..E2E-21: each sample type (no authentication).
    for (id, t) in [
        ("E2E-17", "workload-single-node"),
        ("E2E-18", "workload-single-node-pd"),
        ("E2E-19", "workload-multi-node-data-parallel"),
        ("E2E-20", "workload-multi-node-data-parallel-pd"),
        ("E2E-21", "router"),
    ] {
        let r = get(addr, &format!("{SAMPLES}?type={t}")).await?;
        assert_eq!(r.status, 200, "{id}: {t}");
        assert_eq!(r.header("content-type"), Some("application/yaml"));
        assert!(r.body.contains("kind: LLMInferenceServiceConfig"));
        assert!(r.body.contains(&format!("opendatahub.io/config-type: {t}")));
        assert_secured(&r);
    }
    // E2E-22: a -pd topology picks the disaggregated policy.
    let r = get(
        addr,
        &format!("{SAMPLES}?type=router&topology=workload-single-node-pd"),
    )
    .await?;
    assert!(
        r.body.contains("disagg-profile-handler") && !r.body.contains("single-profile-handler")
    );
    // E2E-23: another topology, the default policy.
    let r = get(
        addr,
        &format!("{SAMPLES}?type=router&topology=workload-single-node"),
    )
    .await?;
    assert_eq!(r.status, 200);
    assert!(
        r.body.contains("kind: LLMInferenceServiceConfig")
            && r.body.contains("single-profile-handler")
    );
    for (req, status, body) in [
        // E2E-24: no type.
        (
            Req::get(SAMPLES),
            400,
            r#"{"error":"missing required query parameter: type"}"#,
        ),
        // E2E-25: an unknown type.
        (
            Req::get(format!("{SAMPLES}?type=nonexistent")),
            404,
            r#"{"error":"no sample found for type: nonexistent"}"#,
        ),
        // E2E-26: POST.
        (
            Req::post(format!("{SAMPLES}?type=router")),
            405,
            r#"{"error":"method not allowed"}"#,
        ),
    ] {
        assert_error(&req.send(addr).await?, status, body);
    }

    // E2E-13..E2E-16: HTTPS /metrics on METRICS_ADDR, same certificate.
    let m = get(metrics_addr, "/metrics").await?;
    assert_eq!(m.status, 200);
    assert!(
        m.header("content-type")
            .unwrap_or_default()
            .starts_with("text/plain")
    );
    for needle in [
        // E2E-13: Go's runtime family, `go_` (and the process collector's beside it).
        "\ngo_threads ",
        "process_resident_memory_bytes",
        // E2E-14: the HTTP server histograms (after /healthz and the rest were hit).
        "http_server_request_duration_seconds",
        "http_server_request_body_size_bytes_count",
        "http_server_response_body_size_bytes_count",
        // E2E-15: their attribute labels.
        "http_request_method=\"GET\"",
        "http_response_status_code=\"200\"",
        "http_response_status_code=\"401\"",
        // E2E-16: the service name.
        "service_name=\"model-serving-api\"",
    ] {
        assert!(m.body.contains(needle), "{needle} not in\n{}", m.body);
    }
    assert_eq!(
        get(metrics_addr, "/healthz").await?.status,
        404,
        "only /metrics"
    );
    assert_eq!(served_serial(metrics_addr).await?, 1);

    // TLS 1.2 with the four ECDHE AES-GCM suites only, P-256/P-384 only
    // (docs/plugins/llm-gateway.md, "Server behaviour (both ways)").
    tls_parameters(addr).await?;

    // The request log: one `request completed` record per request, in upstream's slog JSON
    // shape (`time`, `level`, `msg`, then the attributes; the duration in nanoseconds).
    let log = server.output();
    let completed: Vec<Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["msg"] == "request completed")
        .collect();
    let record = completed
        .iter()
        .find(|v| v["path"] == GATEWAYS && v["status"] == 401)
        .unwrap_or_else(|| panic!("no request record: {log}"));
    let keys: Vec<&str> = record
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut expected = vec![
        "duration", "level", "method", "msg", "path", "status", "time",
    ];
    expected.sort();
    let mut found = keys.clone();
    found.sort();
    assert_eq!(found, expected, "{record}");
    assert_eq!(
        (&record["method"], &record["level"]),
        (&json!("GET"), &json!("INFO"))
    );
    assert!(record["duration"].is_u64(), "{record}");
    assert!(
        record["time"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{record}"
    );
    assert!(
        completed
            .iter()
            .any(|v| v["path"] == "/healthz" && v["level"] == "DEBUG"),
        "health at debug: {log}"
    );

    // Acceptance: a certificate replaced on disk (a Secret volume update) is served within
    // 1 s, by both servers, without a restart.
    let second = serving_cert(2);
    volume.swap_to(&second);
    let swapped = Instant::now();
    let deadline = swapped + Duration::from_secs(10);
    let took = loop {
        let cert = served_cert(addr).await?;
        if serial_of(&cert) == 2 {
            assert_eq!(cert, second.2);
            break swapped.elapsed();
        }
        assert!(
            Instant::now() < deadline,
            "the new certificate was never served"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(took < Duration::from_secs(1), "served after {took:?}");
    assert_eq!(served_serial(metrics_addr).await?, 2);
    // A mismatched pair keeps the served certificate (and the server up).
    let (cert3, _, _) = serving_cert(3);
    let (_, key4, _) = serving_cert(4);
    volume.swap_to(&(cert3, key4, second.2.clone()));
    odh_test_support::consistently(
        "the last good certificate is served",
        Timing {
            timeout: Duration::from_millis(1500),
            interval: Duration::from_millis(100),
        },
        || async {
            anyhow::ensure!(served_serial(addr).await? == 2);
            Ok(())
        },
    )
    .await?;
    assert!(get(addr, "/healthz").await?.status == 200);

    // SIGTERM: a graceful stop, exit 0.
    server.terminate();
    let status = server.wait(Duration::from_secs(15)).expect("exited");
    assert!(status.success(), "{status:?}: {}", server.output());
    Ok(())
}

/// The TLS parameters of docs/plugins/llm-gateway.md, "Server behaviour (both ways)", from
/// the client side.
async fn tls_parameters(addr: SocketAddr) -> anyhow::Result<()> {
    use rustls::crypto::ring::{cipher_suite as cs, default_provider, kx_group};
    let with = |suites: Vec<rustls::SupportedCipherSuite>,
                groups: Vec<&'static dyn rustls::crypto::SupportedKxGroup>,
                tls12_only: bool| {
        let provider = rustls::crypto::CryptoProvider {
            cipher_suites: suites,
            kx_groups: groups,
            ..default_provider()
        };
        let arc = Arc::new(provider.clone());
        let versions: &[&rustls::SupportedProtocolVersion] = if tls12_only {
            &[&rustls::version::TLS12]
        } else {
            &[&rustls::version::TLS13]
        };
        rustls::ClientConfig::builder_with_provider(arc.clone())
            .with_protocol_versions(versions)
            .unwrap()
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCert(arc)))
            .with_no_client_auth()
    };
    // The certificate is ECDSA P-256: the ECDSA AES-GCM suites over TLS 1.2.
    for suite in [
        cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    ] {
        for group in [kx_group::SECP256R1, kx_group::SECP384R1] {
            handshake(addr, with(vec![suite], vec![group], true))
                .await
                .map_err(|e| anyhow::anyhow!("{suite:?} with {group:?}: {e}"))?;
        }
    }
    // Not offered: ChaCha20 in TLS 1.2, X25519 at all.
    assert!(
        handshake(
            addr,
            with(
                vec![cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256],
                vec![kx_group::SECP256R1],
                true
            )
        )
        .await
        .is_err(),
        "ChaCha20 over TLS 1.2"
    );
    assert!(
        handshake(
            addr,
            with(
                vec![cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256],
                vec![kx_group::X25519],
                true
            )
        )
        .await
        .is_err(),
        "X25519 over TLS 1.2"
    );
    assert!(
        handshake(
            addr,
            with(
                vec![cs::TLS13_AES_128_GCM_SHA256],
                vec![kx_group::X25519],
                false
            )
        )
        .await
        .is_err(),
        "X25519 over TLS 1.3"
    );
    handshake(
        addr,
        with(
            vec![cs::TLS13_AES_128_GCM_SHA256],
            vec![kx_group::SECP384R1],
            false,
        ),
    )
    .await?;
    Ok(())
}

/// The server runs under exactly the ClusterRole of `deploy/server/rbac.yaml` (list Gateways,
/// get Namespaces: no watch, so reads must be uncached), as its ServiceAccount's token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deployed_rbac_is_enough_for_the_standalone_server() -> anyhow::Result<()> {
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
    let f = Fixture::new("msa-rbac").await?;
    // The deployed ClusterRole's rules under a name of this test's own.
    let text = std::fs::read_to_string(
        odh_test_support::workspace_root().join("deploy/server/rbac.yaml"),
    )?;
    let deployed: ClusterRole = serde_yaml::Deserializer::from_str(&text)
        .map(serde_yaml::Value::deserialize)
        .filter_map(Result::ok)
        .find(|v| v["kind"] == "ClusterRole")
        .map(serde_yaml::from_value)
        .expect("a ClusterRole in deploy/server/rbac.yaml")?;
    let role_name = format!("model-serving-api-{}", f.t.namespace);
    let role = ClusterRole {
        metadata: kube::api::ObjectMeta {
            name: Some(role_name.clone()),
            ..Default::default()
        },
        ..deployed
    };
    Api::<ClusterRole>::all(f.t.client.clone())
        .create(&PostParams::default(), &role)
        .await?;
    let sa_token = service_account_token(&f.t, "model-serving-api").await?;
    Api::<ClusterRoleBinding>::all(f.t.client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": role_name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role_name},
                "subjects": [{"kind": "ServiceAccount", "name": "model-serving-api", "namespace": f.t.namespace}]}))?,
        )
        .await?;
    // A kubeconfig of the test cluster with the ServiceAccount's token as its user.
    let admin = odh_test_support::cluster()?.kubeconfig.clone();
    let mut kubeconfig: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(&admin)?)?;
    for user in kubeconfig["users"].as_sequence_mut().expect("users") {
        user["user"] = serde_yaml::from_str(&format!("token: {sa_token}"))?;
    }
    let kubeconfig_path = std::env::temp_dir().join(odh_test_support::namespace::unique_name(
        "msa-sa-kubeconfig",
    ));
    std::fs::write(&kubeconfig_path, serde_yaml::to_string(&kubeconfig)?)?;

    let server = Standalone::start_as("msa-rbac", &kubeconfig_path, &[]).await?;
    // The labelled namespace needs the Namespace read (sel-gw is a Selector listener).
    let r = f.discover(server.addr, &f.match_ns).await?;
    assert_eq!(
        entries(&r, &f.ours()),
        f.in_gw_ns(&[("meta-gw", "web"), ("sel-gw", "http"), ("test-gw", "http")])
    );
    let log = server.process.output();
    assert!(!log.to_lowercase().contains("forbidden"), "{log}");
    let _ = std::fs::remove_file(kubeconfig_path);
    Ok(())
}

/// `GATEWAY_LABEL_SELECTOR` limits the gateways listed (equality on every pair).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_label_selector_limits_the_listed_gateways() -> anyhow::Result<()> {
    let f = Fixture::new("msa-selector").await?;
    let label = odh_test_support::namespace::unique_name("sel");
    let mut labelled = gw(
        "labelled-gw",
        json!([listener("http", json!({"from": "All"}))]),
    );
    labelled["metadata"]["labels"] = json!({"msa-e2e": label, "tier": "edge"});
    gateway(&f.t, &f.gw_ns, labelled).await?;
    let selector = format!(" msa-e2e={label} , tier=edge ,");
    let server =
        Standalone::start("msa-selector", &[("GATEWAY_LABEL_SELECTOR", &selector)]).await?;
    let r = f.discover(server.addr, &f.gw_ns).await?;
    let all: Vec<String> = r.json()["gateways"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        all,
        ["labelled-gw"],
        "only the labelled gateway, cluster-wide"
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Configuration errors: exit 1 with upstream's message (docs/plugins/llm-gateway.md, "Running it").

#[test]
fn configuration_errors_exit_1_with_upstreams_messages() -> anyhow::Result<()> {
    let cases: &[(&[(&str, &str)], &str)] = &[
        (
            &[("READ_TIMEOUT", "0")],
            "invalid READ_TIMEOUT: must be > 0",
        ),
        (
            &[("WRITE_TIMEOUT", "-1s")],
            "invalid WRITE_TIMEOUT: must be > 0",
        ),
        (
            &[("IDLE_TIMEOUT", "soon")],
            "invalid IDLE_TIMEOUT: time: invalid duration \"soon\"",
        ),
        (
            &[("READ_TIMEOUT", "10")],
            "invalid READ_TIMEOUT: time: missing unit in duration \"10\"",
        ),
        (&[("KUBE_QPS", "-1")], "invalid KUBE_QPS: must be >= 0"),
        (
            &[("KUBE_QPS", "fast")],
            "invalid KUBE_QPS: strconv.ParseFloat: parsing \"fast\": invalid syntax",
        ),
        (&[("KUBE_BURST", "-3")], "invalid KUBE_BURST: must be >= 0"),
        (
            &[("KUBE_BURST", "x")],
            "invalid KUBE_BURST: strconv.Atoi: parsing \"x\": invalid syntax",
        ),
        (
            &[("GATEWAY_LABEL_SELECTOR", " , ")],
            "invalid GATEWAY_LABEL_SELECTOR: empty label selector",
        ),
        (
            &[("GATEWAY_LABEL_SELECTOR", "app")],
            "invalid GATEWAY_LABEL_SELECTOR: invalid label \"app\": must be key=value",
        ),
        (
            &[("GATEWAY_LABEL_SELECTOR", "app=-x")],
            "invalid GATEWAY_LABEL_SELECTOR: invalid label value \"-x\" for key \"app\": a valid label must be an empty string or consist of alphanumeric characters",
        ),
        (
            &[("GATEWAY_LABEL_SELECTOR", "bad key=x")],
            "invalid GATEWAY_LABEL_SELECTOR: invalid label key \"bad key\": name part must consist of",
        ),
    ];
    for (env, message) in cases {
        let mut p = Process::start(
            "msa-config",
            &[
                "model-serving-api".into(),
                "--kubeconfig=/nonexistent".into(),
            ],
            env,
        )?;
        let status = p.wait(Duration::from_secs(30)).expect("exits");
        assert_eq!(status.code(), Some(1), "{env:?}: {}", p.output());
        assert!(
            p.output().contains(message),
            "{env:?}: {message:?} not in {}",
            p.output()
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_is_required_and_the_key_pair_must_load() -> anyhow::Result<()> {
    let _t = TestContext::new("msa-tls-required").await?;
    let mut p = Process::standalone("msa-no-tls", &[])?;
    let status = p.wait(Duration::from_secs(120)).expect("exits");
    assert_eq!(status.code(), Some(1), "{}", p.output());
    assert!(
        p.output().contains("TLS is required: set TLS_CERT_DIR"),
        "{}",
        p.output()
    );

    let empty = std::env::temp_dir().join(odh_test_support::namespace::unique_name("msa-empty"));
    std::fs::create_dir_all(&empty)?;
    let mut p = Process::standalone("msa-bad-tls", &[("TLS_CERT_DIR", empty.to_str().unwrap())])?;
    let status = p.wait(Duration::from_secs(120)).expect("exits");
    assert_eq!(status.code(), Some(1), "{}", p.output());
    assert!(
        p.output().contains("failed to load TLS key pair"),
        "{}",
        p.output()
    );
    let _ = std::fs::remove_dir_all(empty);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Inside the controller: `run --model-serving-api-bind-address`.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_server_runs_inside_the_controller() -> anyhow::Result<()> {
    let f = Fixture::new("msa-in-controller").await?;
    let volume = SecretVolume::new("msa-tls-ctl", &serving_cert(7));
    let kubeconfig = odh_test_support::cluster()?.kubeconfig.clone();
    let (port, metrics_port, health_port) = (free_port(), free_port(), free_port());
    let mut controller = Process::start(
        "msa-controller",
        &[
            "run".into(),
            "--zap-devel=false".into(),
            format!("--kubeconfig={}", kubeconfig.display()),
            "--plugin=llm-gateway".into(),
            "--no-default-plugins".into(),
            format!("--plugin-cache-dir={}", plugin_cache().display()),
            "--webhook-bind-address=127.0.0.1:0".into(),
            format!("--webhook-cert-dir={}", volume.dir.display()),
            format!("--model-serving-api-bind-address=127.0.0.1:{port}"),
            format!("--metrics-bind-address=127.0.0.1:{metrics_port}"),
            format!("--health-probe-bind-address=127.0.0.1:{health_port}"),
        ],
        &[("TLS_CERT_DIR", volume.dir.to_str().unwrap())],
    )?;
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    controller.ready(addr).await?;

    let r = get(addr, "/readyz").await?;
    assert_eq!((r.status, r.body.as_str()), (200, r#"{"status":"ok"}"#));
    assert_secured(&r);
    assert_error(
        &get(addr, &format!("{GATEWAYS}?namespace={}", f.gw_ns)).await?,
        401,
        UNAUTHORIZED,
    );
    let r = f.discover(addr, &f.match_ns).await?;
    assert_eq!(
        entries(&r, &f.ours()),
        f.in_gw_ns(&[("meta-gw", "web"), ("sel-gw", "http"), ("test-gw", "http")])
    );
    let r = get_as(
        addr,
        &format!("{GATEWAYS}?namespace={}", f.gw_ns),
        &f.nobody,
    )
    .await?;
    assert_eq!((r.status, r.body.as_str()), (200, r#"{"gateways":[]}"#));
    let r = get(addr, &format!("{SAMPLES}?type=router&topology=x-pd")).await?;
    assert!(r.status == 200 && r.body.contains("name: pd-scheduling-policy"));
    assert_eq!(get(addr, "/metrics").await?.status, 404);
    assert_eq!(served_serial(addr).await?, 7);

    // The server's metrics are on the controller's /metrics (plain HTTP).
    let m = net::get(([127, 0, 0, 1], metrics_port).into(), "/metrics").await?;
    assert!(
        m.body.contains("http_server_request_duration_seconds_count{http_request_method=\"GET\",http_response_status_code=\"401\""),
        "{}",
        m.body
    );
    // Once the controller is up (its signal handler installed), SIGTERM stops it cleanly.
    eventually(
        "the controller is ready",
        Timing::within(Duration::from_secs(120)),
        || async {
            let r = net::get(([127, 0, 0, 1], health_port).into(), "/readyz").await?;
            anyhow::ensure!(r.status == 200, "{r:?}");
            Ok(())
        },
    )
    .await
    .map_err(|e| controller.with_log(e))?;
    controller.terminate();
    let status = controller.wait(Duration::from_secs(20)).expect("exits");
    assert!(status.success(), "{}", controller.output());

    // A bad GATEWAY_LABEL_SELECTOR stops the controller that serves the API.
    let mut bad = Process::start(
        "msa-controller-bad",
        &[
            "run".into(),
            format!("--kubeconfig={}", kubeconfig.display()),
            "--plugin=llm-gateway".into(),
            "--no-default-plugins".into(),
            format!("--model-serving-api-bind-address=127.0.0.1:{}", free_port()),
        ],
        &[("GATEWAY_LABEL_SELECTOR", "app")],
    )?;
    let status = bad.wait(Duration::from_secs(60)).expect("exits");
    assert_eq!(status.code(), Some(1));
    assert!(
        bad.output()
            .contains("invalid GATEWAY_LABEL_SELECTOR: invalid label \"app\": must be key=value"),
        "{}",
        bad.output()
    );
    Ok(())
}
