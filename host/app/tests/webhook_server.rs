//! The admission webhook HTTPS server, end to end: real Wasm plugins behind a real TLS server,
//! called by a real kube-apiserver through webhook configurations, and directly over TLS for
//! the protocol details (status codes, ALPN, certificate reload).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use base64::Engine as _;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::{TokioExecutor, TokioIo};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, PostParams};
use odh_model_controller::plugin::{LoadedPlugin, NoCluster};
use odh_model_controller::side_effects::NoSideEffects;
use odh_model_controller::tls::{TlsServerConfig, serve_on};
use odh_model_controller::webhook::{
    LiveWebhookTable, WebhookTable, WebhookTableError, live_webhook_router, webhook_router,
};
use odh_test_support::{TestContext, Timing, consistently, eventually};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_rustls::TlsConnector;

// ---------------------------------------------------------------------------------------------
// Plugins: one engine per test process, shared by every test (plugins are not bound to a
// runtime; each call runs on the calling test's blocking pool).

struct Plugins {
    hello: LoadedPlugin,
    misbehave: LoadedPlugin,
}

fn plugins() -> &'static Plugins {
    static PLUGINS: OnceLock<Plugins> = OnceLock::new();
    PLUGINS.get_or_init(|| Plugins {
        hello: odh_test_support::host::load("hello"),
        misbehave: odh_test_support::host::load("misbehave"),
    })
}

// ---------------------------------------------------------------------------------------------
// Certificates.

/// A CA that issues serving certificates for 127.0.0.1.
struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// One serving certificate and its key, PEM-encoded.
struct ServingCert {
    cert_pem: String,
    key_pem: String,
    der: CertificateDer<'static>,
}

impl TestCa {
    fn new(name: &str) -> Self {
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

    fn pem(&self) -> String {
        self.issuer.pem()
    }

    fn der(&self) -> CertificateDer<'static> {
        self.issuer.der().clone()
    }

    fn serving_cert(&self) -> ServingCert {
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

fn write_serving_cert(dir: &Path, cert: &ServingCert) {
    std::fs::write(dir.join("tls.crt"), &cert.cert_pem).unwrap();
    std::fs::write(dir.join("tls.key"), &cert.key_pem).unwrap();
}

fn temp_dir(prefix: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(odh_test_support::namespace::unique_name(prefix));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// ---------------------------------------------------------------------------------------------
// The server under test.

struct Server {
    addr: SocketAddr,
    dir: PathBuf,
    ca: TestCa,
    cert: ServingCert,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<anyhow::Result<()>>,
}

#[derive(Clone, Copy)]
struct Options {
    http2: bool,
    body_limit: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            http2: false,
            body_limit: TlsServerConfig::default().body_limit,
        }
    }
}

/// Server logs on the test's output when `RUST_LOG` is set.
fn init_logging() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
    }
}

impl Server {
    async fn start(plugins: &[&LoadedPlugin], options: Options) -> Self {
        let table = WebhookTable::new(plugins.iter().copied()).expect("webhook table");
        Self::start_router(
            webhook_router(&table, Arc::new(NoCluster), Arc::new(NoSideEffects)),
            options,
        )
        .await
    }

    /// [`Server::start`] with `plugin` alone and the default options.
    async fn serving(plugin: &LoadedPlugin) -> Self {
        Self::start(&[plugin], Options::default()).await
    }

    async fn start_router(router: axum::Router, options: Options) -> Self {
        init_logging();
        let ca = TestCa::new("webhook-test-ca");
        let cert = ca.serving_cert();
        let dir = temp_dir("webhook-certs");
        write_serving_cert(&dir, &cert);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let config = TlsServerConfig {
            bind: addr,
            cert_dir: dir.clone(),
            enable_http2: options.http2,
            body_limit: options.body_limit,
            ..Default::default()
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(serve_on(listener, config, router, async move {
            let _ = stopped.await;
        }));
        let server = Self {
            addr,
            dir,
            ca,
            cert,
            stop: Some(stop),
            task,
        };
        // The server reads its certificate when the task first runs: wait for that before a
        // test changes the files.
        eventually("the server answers TLS", Timing::default(), || async {
            server.connect(&server.ca.der(), &["http/1.1"]).await
        })
        .await
        .expect("the webhook server starts");
        server
    }

    fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    /// A fresh TLS connection trusting `ca`, offering `alpn`.
    async fn connect(&self, ca: &CertificateDer<'static>, alpn: &[&str]) -> anyhow::Result<Tls> {
        connect(self.addr, ca, alpn).await
    }

    /// POSTs `body` to `path` over a fresh HTTP/1.1 connection trusting the server's CA.
    async fn post(&self, path: &str, body: impl Into<Bytes>) -> anyhow::Result<(u16, Bytes)> {
        let mut sender = self.http1().await?;
        post_on(&mut sender, &self.addr, path, body.into()).await
    }

    /// A fresh HTTP/1.1 connection trusting the server's CA.
    async fn http1(&self) -> anyhow::Result<Http1> {
        self.connect(&self.ca.der(), &["http/1.1"])
            .await?
            .http1()
            .await
    }

    /// GETs `path` (the webhook server takes POST only).
    async fn get(&self, path: &str) -> anyhow::Result<u16> {
        let mut sender = self.http1().await?;
        let request = http::Request::get(path)
            .header(http::header::HOST, self.addr.to_string())
            .body(Full::new(Bytes::new()))?;
        Ok(sender.send_request(request).await?.status().as_u16())
    }

    /// POSTs an AdmissionReview and returns its `response`, checking the uid is echoed.
    async fn review(&self, path: &str, review: Value) -> anyhow::Result<Value> {
        let uid = review["request"]["uid"].clone();
        let (status, body) = self.post(path, serde_json::to_vec(&review)?).await?;
        anyhow::ensure!(
            status == 200,
            "HTTP {status}: {}",
            String::from_utf8_lossy(&body)
        );
        let answer: Value = serde_json::from_slice(&body)?;
        anyhow::ensure!(
            answer["apiVersion"] == "admission.k8s.io/v1" && answer["kind"] == "AdmissionReview",
            "not an AdmissionReview v1: {answer}"
        );
        anyhow::ensure!(answer["response"]["uid"] == uid, "uid not echoed: {answer}");
        Ok(answer["response"].clone())
    }

    /// Stops the server and checks it shut down cleanly and promptly.
    async fn stop(mut self) {
        let _ = self.stop.take().expect("running").send(());
        let result = tokio::time::timeout(Duration::from_secs(15), &mut self.task)
            .await
            .expect("the server stops within 15 s")
            .expect("the server task did not panic");
        result.expect("serve returned an error");
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

struct Tls {
    stream: tokio_rustls::client::TlsStream<TcpStream>,
}

/// The sending half of an HTTP/1.1 connection whose driver runs on its own task.
type Http1 = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

impl Tls {
    /// HTTP/1.1 on this connection.
    async fn http1(self) -> anyhow::Result<Http1> {
        let (sender, conn) =
            hyper::client::conn::http1::handshake(TokioIo::new(self.stream)).await?;
        tokio::spawn(conn);
        Ok(sender)
    }

    fn alpn(&self) -> Option<String> {
        self.stream
            .get_ref()
            .1
            .alpn_protocol()
            .map(|p| String::from_utf8_lossy(p).into_owned())
    }

    fn peer_certificate(&self) -> Option<CertificateDer<'static>> {
        self.stream
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|c| c.first())
            .map(|c| c.clone().into_owned())
    }
}

async fn connect(
    addr: SocketAddr,
    ca: &CertificateDer<'static>,
    alpn: &[&str],
) -> anyhow::Result<Tls> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone())?;
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.as_bytes().to_vec()).collect();
    let tcp = TcpStream::connect(addr).await?;
    let stream = TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("127.0.0.1")?, tcp)
        .await?;
    Ok(Tls { stream })
}

async fn post_on(
    sender: &mut Http1,
    addr: &SocketAddr,
    path: &str,
    body: Bytes,
) -> anyhow::Result<(u16, Bytes)> {
    let request = http::Request::post(path)
        .header(http::header::HOST, addr.to_string())
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(body))?;
    let response = sender.send_request(request).await?;
    let status = response.status().as_u16();
    Ok((status, response.into_body().collect().await?.to_bytes()))
}

/// An AdmissionReview v1 request for a ConfigMap in namespace `ns`.
fn config_map_review(uid: &str, operation: &str, object: Value) -> Value {
    let name = object["metadata"]["name"].clone();
    json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "requestKind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "operation": operation,
            "namespace": "ns", "name": name,
            "object": if operation == "DELETE" { Value::Null } else { object.clone() },
            "oldObject": if operation == "CREATE" { Value::Null } else { object },
            "dryRun": false,
            "userInfo": {"username": "tester", "groups": ["system:authenticated"]},
        }
    })
}

fn config_map(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "ns", "labels": {"app": "x"}},
           "data": data})
}

// ---------------------------------------------------------------------------------------------
// Webhook configurations in the real apiserver.

const WEBHOOK_NAME: &str = "hook.webhook-test.opendatahub.io";

/// A webhook configuration in the apiserver with one entry, [`WEBHOOK_NAME`], pointing at a
/// path of the server under test: for ConfigMaps created or updated in the test's own namespace
/// only, unless [`Registration::rules`] says otherwise.
struct Registration {
    mutating: bool,
    name: String,
    entry: Value,
}

impl Registration {
    /// The MutatingWebhookConfiguration `webhook-test-<namespace>` for `path`.
    fn mutating(t: &TestContext, server: &Server, path: &str) -> Self {
        Self::new(true, t, server, path)
    }

    /// The ValidatingWebhookConfiguration `webhook-test-<namespace>` for `path`.
    fn validating(t: &TestContext, server: &Server, path: &str) -> Self {
        Self::new(false, t, server, path)
    }

    fn new(mutating: bool, t: &TestContext, server: &Server, path: &str) -> Self {
        let entry = json!({
            "name": WEBHOOK_NAME,
            "clientConfig": {
                "url": server.url(path),
                "caBundle": base64::engine::general_purpose::STANDARD.encode(server.ca.pem()),
            },
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"],
                       "operations": ["CREATE", "UPDATE"]}],
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": t.namespace}},
            "timeoutSeconds": 10,
        });
        Self {
            mutating,
            name: format!("webhook-test-{}", t.namespace),
            entry,
        }
    }

    /// Another name for the configuration.
    fn named(mut self, name: String) -> Self {
        self.name = name;
        self
    }

    /// Other rules for the entry.
    fn rules(mut self, rules: Value) -> Self {
        self.entry["rules"] = rules;
        self
    }

    /// Creates the configuration.
    async fn create(self, t: &TestContext) -> anyhow::Result<Registered> {
        let kind = if self.mutating {
            "MutatingWebhookConfiguration"
        } else {
            "ValidatingWebhookConfiguration"
        };
        let config = json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": self.name}, "webhooks": [self.entry],
        });
        let params = PostParams::default();
        if self.mutating {
            Api::<MutatingWebhookConfiguration>::all(t.client.clone())
                .create(&params, &serde_json::from_value(config)?)
                .await?;
        } else {
            Api::<ValidatingWebhookConfiguration>::all(t.client.clone())
                .create(&params, &serde_json::from_value(config)?)
                .await?;
        }
        Ok(Registered {
            client: t.client.clone(),
            mutating: self.mutating,
            name: self.name,
        })
    }
}

/// A webhook configuration [`Registration::create`] made.
struct Registered {
    client: kube::Client,
    mutating: bool,
    name: String,
}

impl Registered {
    async fn delete(self) -> anyhow::Result<()> {
        let params = DeleteParams::default();
        if self.mutating {
            Api::<MutatingWebhookConfiguration>::all(self.client)
                .delete(&self.name, &params)
                .await?;
        } else {
            Api::<ValidatingWebhookConfiguration>::all(self.client)
                .delete(&self.name, &params)
                .await?;
        }
        Ok(())
    }
}

/// Every ConfigMap create in the test gets a fresh name (a probe that got through before the
/// webhook was active must not make the next attempt fail with AlreadyExists).
fn numbered(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!("{prefix}-{}", N.fetch_add(1, Ordering::Relaxed))
}

fn typed_config_map(name: &str, data: Value) -> anyhow::Result<ConfigMap> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data,
    }))?)
}

/// Creates ConfigMaps with `data` until the apiserver refuses one, and returns the refusal.
/// (The apiserver picks up new webhook configurations after a short delay.)
async fn first_refusal(api: &Api<ConfigMap>, data: Value) -> anyhow::Result<kube::core::Status> {
    eventually(
        "the apiserver calls the validating webhook",
        Timing::default(),
        || async {
            let cm = typed_config_map(&numbered("probe"), data.clone())?;
            match api.create(&PostParams::default(), &cm).await {
                Ok(_) => anyhow::bail!("the ConfigMap was admitted"),
                Err(kube::Error::Api(status)) => Ok(*status),
                Err(e) => Err(e.into()),
            }
        },
    )
    .await
}

// ---------------------------------------------------------------------------------------------
// Through the apiserver.

#[tokio::test]
async fn apiserver_applies_the_hello_mutation_and_keeps_other_fields() -> anyhow::Result<()> {
    let t = TestContext::new("webhook-mutate").await?;
    let server = Server::serving(&plugins().hello).await;
    let configs = Registration::mutating(&t, &server, "/mutate-hello-configmap")
        .create(&t)
        .await?;
    let api: Api<ConfigMap> = t.api();

    eventually(
        "the apiserver calls the mutating webhook",
        Timing::default(),
        || async {
            let probe = api
                .create(
                    &PostParams::default(),
                    &typed_config_map(&numbered("probe"), json!({}))?,
                )
                .await?;
            anyhow::ensure!(
                probe
                    .metadata
                    .labels
                    .unwrap_or_default()
                    .contains_key("hello.opendatahub.io/greeted"),
                "not labelled yet"
            );
            Ok(())
        },
    )
    .await?;

    let cm: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "greet-me", "labels": {"app": "demo"},
                     "annotations": {"note": "kept"}},
        "data": {"a": "1", "nested.key": "{\"x\": [1, 2]}"},
        "binaryData": {"blob": "AAEC"},
    }))?;
    let created = api.create(&PostParams::default(), &cm).await?;
    let stored = api.get("greet-me").await?;
    for got in [&created, &stored] {
        let labels = got.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels
                .get("hello.opendatahub.io/greeted")
                .map(String::as_str),
            Some("true")
        );
        assert_eq!(labels.get("app").map(String::as_str), Some("demo"));
        assert_eq!(
            got.metadata
                .annotations
                .clone()
                .unwrap_or_default()
                .get("note")
                .map(String::as_str),
            Some("kept")
        );
        assert_eq!(got.data, cm.data);
        assert_eq!(got.binary_data, cm.binary_data);
    }

    configs.delete().await?;
    server.stop().await;
    Ok(())
}

#[tokio::test]
async fn apiserver_pod_creation_in_a_matching_namespace_is_mutated() -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::Pod;
    let t = TestContext::new("webhook-pod").await?;
    let server = Server::serving(&plugins().misbehave).await;
    let configs = Registration::mutating(&t, &server, "/mutate-misbehave-pod")
        .named(format!("webhook-pod-{}", t.namespace))
        .rules(json!([{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE"]}]))
        .create(&t)
        .await?;
    let pods: Api<Pod> = t.api();
    let pod = |name: String| -> anyhow::Result<Pod> {
        Ok(serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"component": "predictor"}},
            "spec": {"containers": [{"name": "c", "image": "registry.invalid/model:1"}]},
        }))?)
    };
    let created = eventually(
        "the apiserver calls the Pod webhook",
        Timing::default(),
        || async {
            let p = pods
                .create(&PostParams::default(), &pod(numbered("pod"))?)
                .await?;
            anyhow::ensure!(
                p.metadata
                    .labels
                    .clone()
                    .unwrap_or_default()
                    .contains_key("misbehave/ok"),
                "not mutated yet"
            );
            Ok(p)
        },
    )
    .await?;
    let labels = created.metadata.labels.unwrap_or_default();
    assert_eq!(labels.get("misbehave/ok").map(String::as_str), Some("true"));
    assert_eq!(
        labels.get("component").map(String::as_str),
        Some("predictor")
    );
    assert_eq!(
        created.spec.unwrap().containers[0].image.as_deref(),
        Some("registry.invalid/model:1")
    );
    configs.delete().await?;
    server.stop().await;
    Ok(())
}

/// A validating webhook served by a plugin, through the apiserver: the first ConfigMap the
/// apiserver refuses, and one it then admits.
struct Refusal {
    prefix: &'static str,
    plugin: &'static LoadedPlugin,
    path: &'static str,
    /// The data of the ConfigMaps that are refused.
    refused: Value,
    /// The refusal's code, and what its message contains.
    code: u16,
    message: &'static [&'static str],
    /// What the message must not contain.
    not: &'static [&'static str],
    /// A ConfigMap (name, data) the same webhook then admits.
    admitted: (&'static str, Value),
}

impl Refusal {
    async fn check(self) -> anyhow::Result<()> {
        let t = TestContext::new(self.prefix).await?;
        let server = Server::serving(self.plugin).await;
        let configs = Registration::validating(&t, &server, self.path)
            .create(&t)
            .await?;
        let api: Api<ConfigMap> = t.api();

        let refusal = first_refusal(&api, self.refused).await?;
        for part in self.message {
            assert!(refusal.message.contains(part), "{refusal:?}");
        }
        for part in self.not {
            assert!(!refusal.message.contains(part), "{refusal:?}");
        }
        assert_eq!(refusal.code, self.code, "{refusal:?}");
        let (name, data) = self.admitted;
        api.create(&PostParams::default(), &typed_config_map(name, data)?)
            .await?;

        configs.delete().await?;
        server.stop().await;
        Ok(())
    }
}

#[tokio::test]
async fn apiserver_reports_the_validating_denial_message_to_the_client() -> anyhow::Result<()> {
    Refusal {
        prefix: "webhook-deny",
        plugin: &plugins().hello,
        path: "/validate-hello-configmap",
        refused: json!({"forbidden": "x"}),
        code: 403,
        message: &[r#"hello: the key "forbidden" is not allowed"#],
        not: &[],
        // The same webhook admits a ConfigMap without the key.
        admitted: ("fine", json!({"ok": "1"})),
    }
    .check()
    .await
}

#[tokio::test]
async fn panicking_plugin_under_failure_policy_fail_is_a_denial_naming_the_plugin()
-> anyhow::Result<()> {
    Refusal {
        prefix: "webhook-panic",
        plugin: &plugins().misbehave,
        path: "/validate-misbehave",
        refused: json!({"behaviour": "panic"}),
        code: 500,
        message: &[r#"plugin "misbehave" validate trapped"#],
        // The panic's message (it may quote what the plugin handled) stays in the log.
        not: &["misbehave: deliberate panic"],
        // The plugin still serves the next request.
        admitted: ("calm", json!({"behaviour": "ok"})),
    }
    .check()
    .await
}

// ---------------------------------------------------------------------------------------------
// Certificate reload.

#[tokio::test]
async fn rewritten_certificate_files_are_served_without_a_restart() -> anyhow::Result<()> {
    let server = Server::serving(&plugins().hello).await;
    let first = server.connect(&server.ca.der(), &["http/1.1"]).await?;
    assert_eq!(first.peer_certificate(), Some(server.cert.der.clone()));

    // A certificate from another CA: only a connection that sees the new certificate can
    // verify against the new CA.
    let new_ca = TestCa::new("webhook-test-ca-2");
    let new_cert = new_ca.serving_cert();
    write_serving_cert(&server.dir, &new_cert);
    let tls = eventually(
        "the new certificate is served",
        Timing::default(),
        || async { server.connect(&new_ca.der(), &["http/1.1"]).await },
    )
    .await?;
    assert_eq!(tls.peer_certificate(), Some(new_cert.der.clone()));
    assert!(!server.task.is_finished(), "the server kept running");
    // The connection opened before the change still works, and requests still get answers.
    let mut sender = first.http1().await?;
    let (status, _) = post_on(&mut sender, &server.addr, "/nowhere", Bytes::new()).await?;
    assert_eq!(status, 404);

    server.stop().await;
    Ok(())
}

#[tokio::test]
async fn unusable_certificate_files_keep_the_last_good_certificate() -> anyhow::Result<()> {
    let server = Server::serving(&plugins().hello).await;
    let ca = server.ca.der();

    // A certificate whose key does not match, then a file that is not PEM at all.
    let other = server.ca.serving_cert();
    std::fs::write(server.dir.join("tls.crt"), &other.cert_pem)?;
    for garbage in [None, Some("not a certificate")] {
        if let Some(g) = garbage {
            std::fs::write(server.dir.join("tls.crt"), g)?;
        }
        consistently(
            "the last good certificate is served",
            Timing {
                timeout: Duration::from_millis(2500),
                interval: Duration::from_millis(250),
            },
            || async {
                let tls = server.connect(&ca, &["http/1.1"]).await?;
                anyhow::ensure!(tls.peer_certificate() == Some(server.cert.der.clone()));
                Ok(())
            },
        )
        .await?;
    }

    // Good files again are picked up.
    let fixed = server.ca.serving_cert();
    write_serving_cert(&server.dir, &fixed);
    eventually(
        "the fixed certificate is served",
        Timing::default(),
        || async {
            let tls = server.connect(&ca, &["http/1.1"]).await?;
            anyhow::ensure!(
                tls.peer_certificate() == Some(fixed.der.clone()),
                "still the old one"
            );
            Ok(())
        },
    )
    .await?;

    server.stop().await;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Directly over TLS.

#[tokio::test]
async fn malformed_admission_reviews_are_answered_with_400() -> anyhow::Result<()> {
    let server = Server::serving(&plugins().hello).await;
    let path = "/mutate-hello-configmap";
    let cases = [
        ("{not json".to_string(), "not JSON"),
        (
            json!({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview",
                   "request": {"uid": "u"}})
            .to_string(),
            "expected apiVersion \"admission.k8s.io/v1\"",
        ),
        (
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "ConfigMap"}).to_string(),
            "kind \"AdmissionReview\"",
        ),
        (
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).to_string(),
            "has no request",
        ),
    ];
    // controller-runtime's webhook metrics count them by path and HTTP code (process-wide:
    // other tests post to the same path, so only growth is checked).
    let series =
        format!(r#"controller_runtime_webhook_requests_total{{webhook="{path}",code="400"}}"#);
    let count = |series: &str| {
        odh_model_controller::metrics::Metrics::global()
            .render()
            .lines()
            .find_map(|l| {
                l.strip_prefix(series)?
                    .strip_prefix(' ')?
                    .parse::<f64>()
                    .ok()
            })
            .unwrap_or(0.0)
    };
    let before = count(&series);
    for (body, expected) in cases {
        let (status, answer) = server.post(path, body.clone()).await?;
        let answer = String::from_utf8_lossy(&answer);
        assert_eq!(status, 400, "{body}: {answer}");
        assert!(
            answer.contains(expected),
            "{body}: {answer:?} lacks {expected:?}"
        );
    }
    assert!(count(&series) >= before + 4.0, "{series}");
    let latency =
        format!(r#"controller_runtime_webhook_latency_seconds_count{{webhook="{path}"}}"#);
    assert!(count(&latency) >= 4.0, "{latency}");
    server.stop().await;
    Ok(())
}

#[tokio::test]
async fn unknown_paths_are_answered_with_404() -> anyhow::Result<()> {
    let server = Server::serving(&plugins().hello).await;
    let review = config_map_review("u-404", "CREATE", config_map("a", json!({})));
    for path in ["/mutate--v1-pod", "/mutate-hello-configmap/extra", "/"] {
        let (status, body) = server.post(path, serde_json::to_vec(&review)?).await?;
        assert_eq!(status, 404, "{path}: {}", String::from_utf8_lossy(&body));
    }
    server.stop().await;
    Ok(())
}

/// Plugins come and go at run time: the server answers from whatever the live table holds; a
/// path just removed admits requests unchanged (the apiserver may call it until it sees the
/// webhook configuration change) while a path never served stays a 404.
#[tokio::test]
async fn routes_follow_the_live_table_and_a_removed_path_admits_for_a_while() -> anyhow::Result<()>
{
    let live = LiveWebhookTable::default();
    let router = live_webhook_router(live.clone(), Arc::new(NoCluster), Arc::new(NoSideEffects));
    let server = Server::start_router(router, Options::default()).await;
    let path = "/validate-hello-configmap";
    let review = config_map_review(
        "u-live",
        "CREATE",
        config_map("a", json!({"forbidden": "x"})),
    );
    let (status, _) = server.post(path, serde_json::to_vec(&review)?).await?;
    assert_eq!(status, 404, "not served yet");

    live.set(WebhookTable::new([&plugins().hello])?);
    let response = server.review(path, review.clone()).await?;
    assert_eq!(response["allowed"], false, "hello decides: {response}");
    let status = server.get(path).await?;
    assert_eq!(status, 405, "a served path takes POST only");

    live.set(WebhookTable::default());
    let response = server.review(path, review.clone()).await?;
    assert_eq!(
        response["allowed"], true,
        "removed: admitted unchanged: {response}"
    );
    assert!(response.get("patch").is_none());
    let (status, _) = server
        .post("/mutate-never-served", serde_json::to_vec(&review)?)
        .await?;
    assert_eq!(status, 404);
    server.stop().await;
    Ok(())
}

#[tokio::test]
async fn bodies_over_the_limit_are_answered_with_413() -> anyhow::Result<()> {
    let limit = 16 * 1024;
    let server = Server::start(
        &[&plugins().hello],
        Options {
            body_limit: limit,
            ..Options::default()
        },
    )
    .await;
    let big = config_map_review(
        "u-big",
        "CREATE",
        config_map("big", json!({"payload": "x".repeat(3 * limit)})),
    );
    let (status, _) = server
        .post("/mutate-hello-configmap", serde_json::to_vec(&big)?)
        .await?;
    assert_eq!(status, 413);
    // Just under the limit is served.
    let small = config_map_review("u-small", "CREATE", config_map("small", json!({"k": "v"})));
    let response = server.review("/mutate-hello-configmap", small).await?;
    assert_eq!(response["allowed"], true);
    server.stop().await;
    Ok(())
}

#[tokio::test]
async fn alpn_offers_only_http1_unless_http2_is_enabled() -> anyhow::Result<()> {
    let server = Server::serving(&plugins().hello).await;
    let tls = server
        .connect(&server.ca.der(), &["h2", "http/1.1"])
        .await?;
    assert_eq!(tls.alpn().as_deref(), Some("http/1.1"));
    assert!(
        server.connect(&server.ca.der(), &["h2"]).await.is_err(),
        "a client that only speaks h2 is refused"
    );
    server.stop().await;

    let h2 = Server::start(
        &[&plugins().hello],
        Options {
            http2: true,
            ..Options::default()
        },
    )
    .await;
    let tls = h2.connect(&h2.ca.der(), &["h2", "http/1.1"]).await?;
    assert_eq!(tls.alpn().as_deref(), Some("h2"));
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls.stream))
            .await?;
    tokio::spawn(conn);
    let review = config_map_review("u-h2", "CREATE", config_map("a", json!({})));
    let request = http::Request::post(h2.url("/validate-hello-configmap"))
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(serde_json::to_vec(&review)?)))?;
    let response = sender.send_request(request).await?;
    assert_eq!(response.version(), http::Version::HTTP_2);
    assert_eq!(response.status(), 200);
    let body: Value = serde_json::from_slice(&response.into_body().collect().await?.to_bytes())?;
    assert_eq!(body["response"]["allowed"], true);
    h2.stop().await;
    Ok(())
}

/// HTTP/2 has no idle timeout of its own: the server asks an HTTP/2 connection to go away
/// (GOAWAY) once it reaches its age limit, so a client cannot hold one for good; the client's
/// connection then ends by itself.
#[tokio::test]
async fn an_http2_connection_is_asked_to_go_away_at_its_age_limit() -> anyhow::Result<()> {
    use odh_model_controller::tls::{ServerTuning, TlsServer};
    init_logging();
    let ca = TestCa::new("webhook-age-ca");
    let dir = temp_dir("webhook-age-certs");
    write_serving_cert(&dir, &ca.serving_cert());
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let config = TlsServerConfig {
        bind: addr,
        cert_dir: dir.clone(),
        enable_http2: true,
        ..Default::default()
    };
    let table = WebhookTable::new([&plugins().hello]).expect("webhook table");
    let router = webhook_router(&table, Arc::new(NoCluster), Arc::new(NoSideEffects));
    let (stop, stopped) = oneshot::channel::<()>();
    let server = TlsServer::on(listener, config).tuned(ServerTuning {
        max_http2_connection_age: Duration::from_secs(1),
        ..ServerTuning::default()
    });
    let task = tokio::spawn(server.serve(router, async move {
        let _ = stopped.await;
    }));
    let tls = eventually("the server answers TLS", Timing::default(), || async {
        connect(addr, &ca.der(), &["h2"]).await
    })
    .await?;
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls.stream))
            .await?;
    let client = tokio::spawn(conn);
    let review = config_map_review("u-age", "CREATE", config_map("a", json!({})));
    let request = http::Request::post(format!("https://{addr}/validate-hello-configmap"))
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(serde_json::to_vec(&review)?)))?;
    assert_eq!(sender.send_request(request).await?.status(), 200);
    tokio::time::timeout(Duration::from_secs(30), client)
        .await
        .expect("the server ends an HTTP/2 connection past its age")??;
    let _ = stop.send(());
    task.await??;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

#[tokio::test]
async fn mutation_patch_adds_the_label_and_leaves_unknown_fields_alone() -> anyhow::Result<()> {
    let server = Server::serving(&plugins().hello).await;
    let mut object = config_map("m", json!({"k": "v"}));
    object["x-unknown"] = json!({"deep": [1, {"kept": true}]});
    object["metadata"]["x-unknown-meta"] = json!("kept");
    let response = server
        .review(
            "/mutate-hello-configmap",
            config_map_review("u-mut", "CREATE", object.clone()),
        )
        .await?;
    assert_eq!(response["allowed"], true);
    assert_eq!(response["patchType"], "JSONPatch");
    assert!(response.get("status").is_none(), "{response}");
    let patch: Value = serde_json::from_slice(
        &base64::engine::general_purpose::STANDARD.decode(response["patch"].as_str().unwrap())?,
    )?;
    assert_eq!(
        patch,
        json!([{"op": "add", "path": "/metadata/labels/hello.opendatahub.io~1greeted", "value": "true"}])
    );
    let mut patched = object.clone();
    json_patch::patch(
        &mut patched,
        &serde_json::from_value::<json_patch::Patch>(patch)?,
    )?;
    let mut expected = object;
    expected["metadata"]["labels"]["hello.opendatahub.io/greeted"] = json!("true");
    assert_eq!(patched, expected);

    // The validating path of the same plugin sends no patch.
    let response = server
        .review(
            "/validate-hello-configmap",
            config_map_review("u-val", "CREATE", config_map("v", json!({}))),
        )
        .await?;
    assert_eq!(response, json!({"uid": "u-val", "allowed": true}));
    server.stop().await;
    Ok(())
}

#[tokio::test]
async fn validating_denial_carries_code_403_and_the_plugin_message() -> anyhow::Result<()> {
    let server = Server::serving(&plugins().hello).await;
    let response = server
        .review(
            "/validate-hello-configmap",
            config_map_review(
                "u-deny",
                "UPDATE",
                config_map("d", json!({"forbidden": "1"})),
            ),
        )
        .await?;
    assert_eq!(
        response,
        json!({"uid": "u-deny", "allowed": false,
               "status": {"code": 403, "reason": "Forbidden",
                          "message": "hello: the key \"forbidden\" is not allowed"}})
    );
    server.stop().await;
    Ok(())
}

#[tokio::test]
async fn undeclared_operations_are_allowed_without_calling_the_plugin() -> anyhow::Result<()> {
    let server = Server::serving(&plugins().misbehave).await;
    // DELETE is not among misbehave's operations; were the plugin called, it would panic.
    let panicky = config_map("p", json!({"behaviour": "panic"}));
    let response = server
        .review(
            "/validate-misbehave",
            config_map_review("u-del", "DELETE", panicky.clone()),
        )
        .await?;
    assert_eq!(response, json!({"uid": "u-del", "allowed": true}));
    // The same object under a declared operation does reach it.
    let response = server
        .review(
            "/mutate-misbehave",
            config_map_review("u-create", "CREATE", panicky),
        )
        .await?;
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["code"], 500);
    let message = response["status"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(r#"plugin "misbehave" mutate trapped"#),
        "{message}"
    );
    assert!(response.get("patch").is_none());
    server.stop().await;
    Ok(())
}

#[tokio::test]
async fn objects_outside_the_object_selector_are_allowed_without_calling_the_plugin()
-> anyhow::Result<()> {
    let server = Server::serving(&plugins().misbehave).await;
    // misbehave scopes /validate-misbehave with `!misbehave/unreviewed`; were the plugin
    // called, it would panic.
    let mut outside = config_map("p", json!({"behaviour": "panic"}));
    outside["metadata"]["labels"] = json!({"misbehave/unreviewed": "yes"});
    let inside = config_map("p", json!({"behaviour": "panic"}));
    let trapped = |response: &Value| {
        response["allowed"] == false
            && response["status"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with(r#"plugin "misbehave" validate trapped"#))
    };
    for operation in ["CREATE", "UPDATE"] {
        let response = server
            .review(
                "/validate-misbehave",
                config_map_review("u-out", operation, outside.clone()),
            )
            .await?;
        assert_eq!(
            response,
            json!({"uid": "u-out", "allowed": true}),
            "{operation}"
        );
    }
    // As the API server decides: the object or the old object matching is enough.
    let mut leaving = config_map_review("u-leave", "UPDATE", outside.clone());
    leaving["request"]["oldObject"] = inside.clone();
    let mut entering = config_map_review("u-enter", "UPDATE", inside.clone());
    entering["request"]["oldObject"] = outside;
    for review in [
        leaving,
        entering,
        config_map_review("u-in", "CREATE", inside),
    ] {
        let response = server.review("/validate-misbehave", review).await?;
        assert!(trapped(&response), "{response}");
    }
    server.stop().await;
    Ok(())
}

#[tokio::test]
async fn guest_invalid_error_is_a_400_denial_with_the_guest_message() -> anyhow::Result<()> {
    let server = Server::serving(&plugins().misbehave).await;
    let bad = config_map("i", json!({"behaviour": "error-invalid"}));
    let response = server
        .review(
            "/validate-misbehave",
            config_map_review("u-inv", "CREATE", bad),
        )
        .await?;
    assert_eq!(
        response,
        json!({"uid": "u-inv", "allowed": false,
               "status": {"code": 400, "message": "misbehave: invalid input"}})
    );
    let transient = config_map("t", json!({"behaviour": "error-transient"}));
    let response = server
        .review(
            "/validate-misbehave",
            config_map_review("u-tr", "CREATE", transient),
        )
        .await?;
    assert_eq!(response["status"]["code"], 500);
    assert_eq!(
        response["status"]["message"],
        r#"plugin "misbehave" validate failed (transient): misbehave: try later"#
    );
    server.stop().await;
    Ok(())
}

#[tokio::test]
async fn shutdown_completes_with_an_idle_keep_alive_connection_open() -> anyhow::Result<()> {
    let server = Server::serving(&plugins().hello).await;
    let tls = server.connect(&server.ca.der(), &["http/1.1"]).await?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(TokioIo::new(tls.stream)).await?;
    let conn = tokio::spawn(conn);
    let review = config_map_review("u-ka", "CREATE", config_map("k", json!({})));
    for _ in 0..3 {
        let (status, _) = post_on(
            &mut sender,
            &server.addr,
            "/mutate-hello-configmap",
            serde_json::to_vec(&review)?.into(),
        )
        .await?;
        assert_eq!(status, 200);
    }
    let addr = server.addr;
    // `stop` asserts serve returns Ok within 15 s; an idle connection must not hold it (it is
    // closed at once by the graceful shutdown).
    let started = std::time::Instant::now();
    server.stop().await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    tokio::time::timeout(Duration::from_secs(5), conn)
        .await??
        .ok();
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "the listener is closed"
    );
    Ok(())
}

#[test]
fn duplicate_webhook_paths_are_rejected_naming_both_plugins() {
    let p = plugins();
    let table = WebhookTable::new([&p.hello, &p.misbehave]).expect("distinct paths");
    let paths: Vec<&str> = table.routes().map(|r| r.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/mutate-hello-configmap",
            "/mutate-misbehave",
            "/mutate-misbehave-pod",
            "/validate-hello-configmap",
            "/validate-misbehave"
        ]
    );
    let err = WebhookTable::new([&p.hello, &p.misbehave, &p.hello]).unwrap_err();
    assert_eq!(
        err,
        WebhookTableError::DuplicatePath {
            path: "/mutate-hello-configmap".into(),
            first: "hello".into(),
            second: "hello".into(),
        }
    );
    assert_eq!(
        err.to_string(),
        r#"webhook path "/mutate-hello-configmap" is declared by both plugin "hello" and plugin "hello""#
    );
}

// ---------------------------------------------------------------------------------------------
// Admission under floods (docs/security.md T18).

/// A review whose body is sent only in part: it holds the room it weighs until `finish`.
struct HeldBack {
    stream: tokio_rustls::client::TlsStream<TcpStream>,
    rest: Vec<u8>,
}

impl HeldBack {
    async fn start(server: &Server, path: &str, body: &[u8]) -> anyhow::Result<Self> {
        use tokio::io::AsyncWriteExt;
        let mut stream = server
            .connect(&server.ca.der(), &["http/1.1"])
            .await?
            .stream;
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            server.addr,
            body.len()
        );
        let half = body.len() / 2;
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(&body[..half]).await?;
        stream.flush().await?;
        Ok(Self {
            stream,
            rest: body[half..].to_vec(),
        })
    }

    /// Sends the rest of the body; the answer's status line.
    async fn finish(mut self) -> anyhow::Result<String> {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
        self.stream.write_all(&self.rest).await?;
        self.stream.flush().await?;
        let mut status = String::new();
        tokio::io::BufReader::new(self.stream)
            .read_line(&mut status)
            .await?;
        Ok(status.trim_end().to_string())
    }
}

/// POSTs `body` with chunked transfer encoding (no declared length) to hello's mutating
/// webhook, in one chunk; the answer's status line.
async fn post_chunked(
    addr: SocketAddr,
    ca: CertificateDer<'static>,
    body: Vec<u8>,
) -> anyhow::Result<String> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let mut stream = connect(addr, &ca, &["http/1.1"]).await?.stream;
    let head = format!(
        "POST /mutate-hello-configmap HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(&body).await?;
    stream.write_all(b"\r\n0\r\n\r\n").await?;
    stream.flush().await?;
    let mut status = String::new();
    tokio::io::BufReader::new(stream)
        .read_line(&mut status)
        .await?;
    Ok(status.trim_end().to_string())
}

/// POSTs `review` to hello's mutating webhook over a fresh connection: (status, body).
async fn post_review(
    addr: SocketAddr,
    ca: CertificateDer<'static>,
    review: Value,
) -> anyhow::Result<(u16, Bytes)> {
    let mut sender = connect(addr, &ca, &["http/1.1"]).await?.http1().await?;
    post_on(
        &mut sender,
        &addr,
        "/mutate-hello-configmap",
        serde_json::to_vec(&review)?.into(),
    )
    .await
}

/// Past the server's room a review queues, first come first served, instead of failing (under
/// `failurePolicy: Fail` a failure is a denied write) and is answered once room frees; one that
/// finds no room within the wait is answered 503, which the apiserver treats by the webhook's
/// failurePolicy. The room is held from before the body is read: a review whose body is still
/// arriving holds it.
#[tokio::test]
async fn admission_requests_past_the_room_queue_and_past_the_wait_are_answered_503()
-> anyhow::Result<()> {
    use odh_model_controller::webhook::{AdmissionGate, InFlightLimit, gated_webhook_router};
    // Room for one request of 1 MiB: a review of that size takes all of it.
    let room = |max_wait| InFlightLimit {
        requests: 1,
        body_limit: 1024 * 1024,
        max_wait,
    };
    let start = |gate: &AdmissionGate| {
        let table = WebhookTable::new([&plugins().hello]).expect("webhook table");
        Server::start_router(
            gated_webhook_router(
                LiveWebhookTable::new(table),
                Arc::new(NoCluster),
                Arc::new(NoSideEffects),
                gate.clone(),
            ),
            Options::default(),
        )
    };
    let large = serde_json::to_vec(&config_map_review(
        "u-large",
        "CREATE",
        config_map("large", json!({"payload": "x".repeat(1024 * 1024)})),
    ))?;
    let small = config_map_review("u-small", "CREATE", config_map("small", json!({"k": "v"})));
    let holding = |gate: AdmissionGate| {
        eventually(
            "the large review holds the room",
            Timing::default(),
            move || {
                let gate = gate.clone();
                async move {
                    anyhow::ensure!(gate.in_flight() == 1, "{} in flight", gate.in_flight());
                    Ok(())
                }
            },
        )
    };

    // Queued, then served.
    let gate = AdmissionGate::new(room(Duration::from_secs(600)));
    let server = start(&gate).await;
    let held = HeldBack::start(&server, "/mutate-hello-configmap", &large).await?;
    holding(gate.clone()).await?;
    let waiting = tokio::spawn(post_review(server.addr, server.ca.der(), small.clone()));
    let queued = gate.clone();
    eventually("the small review waits for room", Timing::default(), || {
        let gate = queued.clone();
        async move {
            anyhow::ensure!(gate.queued() == 1, "{} queued", gate.queued());
            Ok(())
        }
    })
    .await?;
    assert_eq!(gate.in_flight(), 1, "it waits rather than running beside");
    assert_eq!(held.finish().await?, "HTTP/1.1 200 OK");
    let (status, body) = waiting.await??;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let answer: Value = serde_json::from_slice(&body)?;
    assert_eq!(answer["response"]["uid"], "u-small");
    assert_eq!(answer["response"]["allowed"], true);
    assert_eq!(answer["response"]["patchType"], "JSONPatch");
    assert_eq!((gate.queued(), gate.in_flight(), gate.shed()), (0, 0, 0));
    server.stop().await;

    // Waiting past the bound: 503, the held review still served.
    let gate = AdmissionGate::new(room(Duration::from_millis(200)));
    let server = start(&gate).await;
    let held = HeldBack::start(&server, "/mutate-hello-configmap", &large).await?;
    holding(gate.clone()).await?;
    let (status, body) = post_review(server.addr, server.ca.der(), small).await?;
    let body = String::from_utf8_lossy(&body);
    assert_eq!(status, 503, "{body}");
    assert!(
        body.starts_with("webhook server busy: no room for this request within 200ms"),
        "{body}"
    );
    assert_eq!((gate.queued(), gate.shed()), (0, 1));
    assert_eq!(held.finish().await?, "HTTP/1.1 200 OK");
    server.stop().await;

    // A body of undeclared length pays for its bytes as they arrive: past the room, its
    // reading waits until room frees.
    let gate = AdmissionGate::new(room(Duration::from_secs(600)));
    let server = start(&gate).await;
    let review_of = |uid: &str, kib: usize| {
        serde_json::to_vec(&config_map_review(
            uid,
            "CREATE",
            config_map(uid, json!({"payload": "x".repeat(kib * 1024)})),
        ))
    };
    let held =
        HeldBack::start(&server, "/mutate-hello-configmap", &review_of("half", 512)?).await?;
    holding(gate.clone()).await?;
    let chunked = tokio::spawn(post_chunked(
        server.addr,
        server.ca.der(),
        review_of("chunked", 800)?,
    ));
    let waiting = gate.clone();
    eventually("the chunked body waits for room", Timing::default(), || {
        let gate = waiting.clone();
        async move {
            anyhow::ensure!(
                (gate.in_flight(), gate.queued()) == (2, 1),
                "{} in flight, {} queued",
                gate.in_flight(),
                gate.queued()
            );
            Ok(())
        }
    })
    .await?;
    assert_eq!(held.finish().await?, "HTTP/1.1 200 OK");
    assert_eq!(chunked.await??, "HTTP/1.1 200 OK");
    assert_eq!((gate.queued(), gate.in_flight(), gate.shed()), (0, 0, 0));
    server.stop().await;
    Ok(())
}

/// `--webhook-max-requests-in-flight` by default: twice the calls the serving plugins may run
/// at once, so each slot that frees finds a review whose body is read already.
#[test]
fn the_default_room_is_twice_the_webhook_plugins_concurrency() {
    use odh_model_controller::webhook::InFlightLimit;
    let Plugins { hello, misbehave } = plugins();
    let both = WebhookTable::new([hello, misbehave]).expect("webhook table");
    let concurrency = hello.limits().concurrency + misbehave.limits().concurrency;
    assert_eq!(InFlightLimit::for_table(&both).requests, 2 * concurrency);
    let one = WebhookTable::new([hello]).expect("webhook table");
    assert_eq!(
        InFlightLimit::for_table(&one).requests,
        2 * hello.limits().concurrency
    );
    // No plugin serves a webhook yet (plugins come at run time): one default plugin's worth.
    let none = WebhookTable::new(std::iter::empty::<&LoadedPlugin>()).expect("webhook table");
    assert_eq!(InFlightLimit::for_table(&none).requests, 2 * 4);
}
