//! Helpers shared by integration tests of this crate: a serving certificate and an HTTPS
//! client speaking HTTP/1.1 to the webhook server.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use odh_model_controller::plugin::{PluginEngine, PluginSlot};
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// A self-signed serving certificate for 127.0.0.1 written as `tls.crt`/`tls.key` into a fresh
/// directory; returns the directory and the certificate (the client's trust root).
pub fn serving_cert(prefix: &str) -> (PathBuf, CertificateDer<'static>) {
    let dir =
        std::env::temp_dir().join(format!("{prefix}-{}-{}", std::process::id(), rand_suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
    std::fs::write(dir.join("tls.crt"), cert.cert.pem()).unwrap();
    std::fs::write(dir.join("tls.key"), cert.signing_key.serialize_pem()).unwrap();
    (dir, cert.cert.der().clone())
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// An HTTP/1.1 keep-alive connection over TLS to `addr`.
pub struct Client {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    addr: SocketAddr,
}

impl Client {
    pub async fn connect(addr: SocketAddr, ca: &CertificateDer<'static>) -> anyhow::Result<Self> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca.clone())?;
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
        let tcp = TcpStream::connect(addr).await?;
        let tls = TlsConnector::from(Arc::new(config))
            .connect(ServerName::try_from("127.0.0.1")?, tcp)
            .await?;
        let (sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls)).await?;
        tokio::spawn(conn);
        Ok(Self { sender, addr })
    }

    /// One request with extra headers; returns the status, the headers and the body.
    pub async fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
    ) -> anyhow::Result<Reply> {
        let mut request = http::Request::builder()
            .method(method)
            .uri(path)
            .header(http::header::HOST, self.addr.to_string());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        self.sender.ready().await?;
        let response = self
            .sender
            .send_request(request.body(Full::new(Bytes::new()))?)
            .await?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap_or_default().to_string()))
            .collect();
        let body = response.into_body().collect().await?.to_bytes();
        Ok(Reply {
            status,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        })
    }

    /// POSTs JSON to `path`; returns the status and the body.
    pub async fn post(
        &mut self,
        path: &str,
        body: &serde_json::Value,
    ) -> anyhow::Result<(u16, serde_json::Value)> {
        let request = http::Request::post(path)
            .header(http::header::HOST, self.addr.to_string())
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body.to_string())))?;
        self.sender.ready().await?;
        let response = self.sender.send_request(request).await?;
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await?.to_bytes();
        Ok((
            status,
            serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null),
        ))
    }
}

pub fn remove_dir(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
}

/// The misbehave test plugin in a slot, its component bytes and the engine that loaded it.
pub fn misbehave_slot() -> anyhow::Result<(PluginEngine, PluginSlot, Vec<u8>)> {
    let (_, wasm) = odh_test_support::host::component("misbehave");
    let plugin = odh_test_support::host::load("misbehave");
    Ok((
        odh_test_support::host::engine(),
        PluginSlot::new(plugin),
        wasm,
    ))
}

/// A registry for the test's namespace serving just `slot`.
pub fn registry(
    t: &odh_test_support::TestContext,
    engine: PluginEngine,
    slot: &PluginSlot,
) -> odh_model_controller::registry::Registry {
    odh_model_controller::registry::Registry::new(
        t.client.clone(),
        t.namespace.clone(),
        engine,
        odh_model_controller::plugin::PluginSet::new([slot.clone()]),
        odh_model_controller::builtins::catalog(),
    )
}

/// The lower-case hex sha256 of `bytes` (what a plugins ConfigMap entry pins).
pub fn sha(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// `bytes` gzip-compressed (how a component fits in a ConfigMap's binaryData).
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(bytes).expect("gzip into memory");
    gz.finish().expect("gzip into memory")
}

/// A loopback port nothing listens on right now (for a child process to bind).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A response as the tiny client below reads it.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.1 request on a fresh connection (`Connection: close`, so the body runs to EOF).
pub async fn request(addr: SocketAddr, method: &str, path: &str) -> anyhow::Result<Reply> {
    let mut stream = TcpStream::connect(addr).await?;
    let req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(req.as_bytes()).await?;
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut raw)).await??;
    let raw = String::from_utf8(raw)?;
    let (head, body) = raw
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow::anyhow!("no end of headers in {raw:?}"))?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("bad status line {status_line:?}"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    anyhow::ensure!(
        !headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked")),
        "chunked responses are not expected here"
    );
    Ok(Reply {
        status,
        headers,
        body: body.to_string(),
    })
}

/// [`request`] with `GET`.
pub async fn get(addr: SocketAddr, path: &str) -> anyhow::Result<Reply> {
    request(addr, "GET", path).await
}

/// An `odh-model-controller` child process, killed when dropped.
pub struct HostProcess {
    pub child: std::process::Child,
    /// Its stdout and stderr.
    pub log: PathBuf,
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // A failing test shows the log in its error (or panics and keeps the file to read).
        if !std::thread::panicking() {
            let _ = std::fs::remove_file(&self.log);
        }
    }
}

impl HostProcess {
    /// Starts `odh-model-controller run` against the test cluster with `args` (JSON logs,
    /// metrics off unless given) and `env`; output goes to a log file named after `name`.
    pub fn start(name: &str, args: &[String], env: &[(&str, &str)]) -> anyhow::Result<Self> {
        let log = std::env::temp_dir().join(format!(
            "{name}-{}-{}.log",
            std::process::id(),
            rand_suffix()
        ));
        let file = std::fs::File::create(&log)?;
        let kubeconfig = odh_test_support::cluster()?.kubeconfig.clone();
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_odh-model-controller"));
        cmd.args(["run", "--zap-devel=false"])
            .arg(format!("--kubeconfig={}", kubeconfig.display()))
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file)
            // The profile switches come from the test, not from whoever runs it.
            .env_remove("ODH_PLATFORM_TYPE")
            .env_remove("ENABLE_WEBHOOKS");
        for (k, v) in env {
            cmd.env(k, v);
        }
        Ok(Self {
            child: cmd.spawn()?,
            log,
        })
    }

    /// What it printed so far.
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGKILL, and waits for it to die: no shutdown code runs.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends SIGTERM, as the kubelet does on pod deletion.
    pub fn terminate(&self) {
        let status = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success(), "kill -TERM failed");
    }

    /// Waits for the process to exit, at most `within`.
    pub fn wait(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().ok().flatten() {
                return Some(status);
            }
            if std::time::Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// `odh-model-controller run` serving its webhooks on loopback with a fresh certificate, ready.
pub struct ServingHost {
    pub process: HostProcess,
    pub webhook_port: u16,
    /// The CA bundle a webhook configuration needs (the self-signed serving certificate).
    pub ca_pem: String,
    cert_dir: PathBuf,
}

impl ServingHost {
    /// Starts the host with the default plugins, metrics off and `env`, and waits until
    /// `/readyz` answers 200 (the error carries the host's log).
    pub async fn start(name: &str, env: &[(&str, &str)]) -> anyhow::Result<Self> {
        Self::start_with(name, false, env).await
    }

    /// [`ServingHost::start`]; with `sync_webhooks` the host also keeps the cluster's webhook
    /// configurations in step with what it serves, pointing the apiserver at its loopback port.
    pub async fn start_with(
        name: &str,
        sync_webhooks: bool,
        env: &[(&str, &str)],
    ) -> anyhow::Result<Self> {
        let (cert_dir, _) = serving_cert(name);
        let ca_pem = std::fs::read_to_string(cert_dir.join("tls.crt"))?;
        let webhook_port = free_port();
        let health_port = free_port();
        let mut args = vec![
            "--metrics-bind-address=0".to_string(),
            format!("--webhook-cert-dir={}", cert_dir.display()),
            format!("--webhook-bind-address=127.0.0.1:{webhook_port}"),
            format!("--health-probe-bind-address=127.0.0.1:{health_port}"),
        ];
        if sync_webhooks {
            args.push("--sync-webhook-configurations".into());
            args.push(format!("--webhook-url=https://127.0.0.1:{webhook_port}"));
        }
        let host = Self {
            process: HostProcess::start(name, &args, env)?,
            webhook_port,
            ca_pem,
            cert_dir,
        };
        odh_test_support::eventually(
            "the host is ready",
            odh_test_support::Timing::default(),
            || async {
                let reply = get(([127, 0, 0, 1], health_port).into(), "/readyz").await?;
                anyhow::ensure!(reply.status == 200, "{}: {}", reply.status, reply.body);
                Ok(())
            },
        )
        .await
        .map_err(|e| host.with_log(e))?;
        Ok(host)
    }

    /// `e` with the host's output so far.
    pub fn with_log(&self, e: anyhow::Error) -> anyhow::Error {
        anyhow::anyhow!("{e}; log: {}", self.process.output())
    }

    /// The `clientConfig` of a webhook configuration entry for `path` on this host.
    pub fn client_config(&self, path: &str) -> serde_json::Value {
        use base64::Engine as _;
        serde_json::json!({
            "url": format!("https://127.0.0.1:{}{path}", self.webhook_port),
            "caBundle": base64::engine::general_purpose::STANDARD.encode(&self.ca_pem),
        })
    }
}

impl Drop for ServingHost {
    fn drop(&mut self) {
        remove_dir(&self.cert_dir);
    }
}

/// An AdmissionReview v1 request (CREATE) for ConfigMap `ns/name` with `data`, uid `uid`.
pub fn config_map_review(uid: &str, name: &str, data: serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "operation": "CREATE", "namespace": "ns", "name": name,
            "object": {"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": name, "namespace": "ns"}, "data": data},
            "userInfo": {"username": "tester"}, "dryRun": false,
        },
    })
}

/// The notes of the `PluginRejected` Events in the test's namespace.
pub async fn rejection_notes(t: &odh_test_support::TestContext) -> anyhow::Result<Vec<String>> {
    use k8s_openapi::api::events::v1::Event;
    use kube::api::{Api, ListParams};
    let events: Api<Event> = Api::namespaced(t.client.clone(), &t.namespace);
    Ok(events
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("PluginRejected"))
        .filter_map(|e| e.note)
        .collect())
}

#[allow(dead_code)]
/// The kinds with webhooks in `table`, in the order upstream registers them: the order of the
/// registration list, then plugins that are not built in, by name.
pub fn webhook_kinds(table: &odh_model_controller::webhook::WebhookTable) -> Vec<String> {
    let rank = |plugin: &str| {
        odh_model_controller::builtins::BUILTINS
            .iter()
            .position(|b| b.name == plugin)
            .unwrap_or(usize::MAX)
    };
    // Within a plugin, the order its manifest declares its webhooks in.
    let declared = |r: &odh_model_controller::webhook::WebhookRoute| {
        r.plugin
            .current()
            .manifest()
            .webhooks
            .iter()
            .position(|w| w.path == r.path)
            .unwrap_or(usize::MAX)
    };
    let mut routes: Vec<_> = table.routes().collect();
    routes.sort_by_key(|r| {
        (
            rank(r.plugin.name()),
            r.plugin.name().to_string(),
            declared(r),
        )
    });
    let mut kinds: Vec<String> = Vec::new();
    for r in routes {
        // Upstream names the NIM Account's webhook setup `NIMAccount`.
        let kind = if r.gvk.group == "nim.opendatahub.io" && r.gvk.kind == "Account" {
            "NIMAccount".to_string()
        } else {
            r.gvk.kind.clone()
        };
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    kinds
}
