//! Sends finished spans to an OTLP collector over gRPC (what upstream's `otlptracegrpc` exporter
//! speaks): batches of up to 512 spans, at most a second after the first of them closed, on a
//! thread of its own so a slow or absent collector never holds a request or a reconcile.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use rustls::pki_types::{CertificateDer, ServerName, pem::PemObject};

use super::proto::{SpanRecord, export_request};

const BATCH: usize = 512;
const WINDOW: Duration = Duration::from_secs(1);
const TIMEOUT: Duration = Duration::from_secs(10);
const EXPORT_PATH: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

/// Where spans go: `host:port` (TLS unless `OTEL_EXPORTER_OTLP_INSECURE=true`, as upstream),
/// or a URL whose scheme says it (`http://` plaintext, `https://` TLS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    pub tls: bool,
}

impl Endpoint {
    pub fn parse(value: &str, insecure: bool) -> anyhow::Result<Endpoint> {
        let (rest, tls) = match value.trim() {
            v if v.starts_with("http://") => (&v[7..], false),
            v if v.starts_with("https://") => (&v[8..], true),
            v => (v, !insecure),
        };
        let authority = rest.split('/').next().unwrap_or_default();
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !host.ends_with(']') || host.starts_with('[') => (
                host,
                port.parse()
                    .with_context(|| format!("OTLP endpoint {value:?}: port {port:?}"))?,
            ),
            _ => (authority, 4317),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            bail!("OTLP endpoint {value:?}: no host");
        }
        Ok(Endpoint {
            host: host.to_string(),
            port,
            tls,
        })
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.tls { "https" } else { "http" };
        write!(f, "{scheme}://{}:{}", self.host, self.port)
    }
}

/// The exporter's side: what it needs to send.
pub struct Exporter {
    pub endpoint: Endpoint,
    pub service: String,
    /// CA files beyond the public roots (`OTEL_EXPORTER_OTLP_CERTIFICATE`, the service CA).
    pub ca_files: Vec<std::path::PathBuf>,
    pub dropped: Arc<AtomicU64>,
}

impl Exporter {
    /// Runs until every sender is gone (the process ends), exporting what arrives.
    pub fn spawn(
        self,
        spans: Receiver<SpanRecord>,
    ) -> std::io::Result<std::thread::JoinHandle<()>> {
        std::thread::Builder::new()
            .name("otlp-export".into())
            .spawn(move || self.run(spans))
    }

    fn run(self, spans: Receiver<SpanRecord>) {
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(r) => r,
            Err(e) => {
                tracing::error!("OTLP export disabled: {e}");
                return;
            }
        };
        let tls = match self.tls_config() {
            Ok(c) => c,
            Err(e) => {
                tracing::error!("OTLP export disabled: {e:#}");
                return;
            }
        };
        let mut last_warning: Option<Instant> = None;
        let mut reported_drops = 0;
        while let Ok(first) = spans.recv() {
            let mut batch = vec![first];
            let deadline = Instant::now() + WINDOW;
            let mut closed = false;
            while batch.len() < BATCH {
                match spans.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                    Ok(span) => batch.push(span),
                    Err(RecvTimeoutError::Timeout) => break,
                    Err(RecvTimeoutError::Disconnected) => {
                        closed = true;
                        break;
                    }
                }
            }
            let body = export_request(&self.service, "odh-model-controller", &batch);
            let sent = runtime.block_on(async {
                tokio::time::timeout(TIMEOUT, send(&self.endpoint, tls.clone(), body))
                    .await
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("no answer in {TIMEOUT:?}")))
            });
            let dropped = self.dropped.load(Ordering::Relaxed);
            let quiet = last_warning.is_some_and(|at| at.elapsed() < Duration::from_secs(60));
            if let Err(e) = sent {
                self.dropped
                    .fetch_add(batch.len() as u64, Ordering::Relaxed);
                if !quiet {
                    tracing::warn!(endpoint = %self.endpoint, spans = batch.len(), "exporting traces failed: {e:#}");
                    last_warning = Some(Instant::now());
                }
            } else if dropped > reported_drops && !quiet {
                tracing::warn!(endpoint = %self.endpoint, dropped, "spans dropped: the exporter's queue was full");
                reported_drops = dropped;
                last_warning = Some(Instant::now());
            }
            if closed {
                return;
            }
        }
    }

    fn tls_config(&self) -> anyhow::Result<Arc<rustls::ClientConfig>> {
        let mut roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.into(),
        };
        for path in &self.ca_files {
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                .and_then(|certs| certs.collect::<Result<_, _>>())
                .with_context(|| format!("reading CA certificates {}", path.display()))?;
            for cert in certs {
                roots
                    .add(cert)
                    .with_context(|| format!("a CA certificate in {}", path.display()))?;
            }
        }
        let mut config = rustls::ClientConfig::builder_with_provider(odh_crypto::tls::provider())
            .with_safe_default_protocol_versions()
            .context("configuring TLS versions")?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok(Arc::new(config))
    }
}

/// One gRPC unary call `TraceService/Export` on a new HTTP/2 connection.
async fn send(
    endpoint: &Endpoint,
    tls: Arc<rustls::ClientConfig>,
    message: Vec<u8>,
) -> anyhow::Result<()> {
    let tcp = tokio::net::TcpStream::connect((endpoint.host.as_str(), endpoint.port))
        .await
        .with_context(|| format!("connecting {endpoint}"))?;
    let _ = tcp.set_nodelay(true);
    let mut frame = Vec::with_capacity(message.len() + 5);
    frame.push(0);
    frame.extend_from_slice(&u32::try_from(message.len())?.to_be_bytes());
    frame.extend_from_slice(&message);
    let request = http::Request::post(format!(
        "{}{EXPORT_PATH}",
        endpoint.to_string().trim_end_matches('/')
    ))
    .header("content-type", "application/grpc")
    .header("te", "trailers")
    .body(Full::new(Bytes::from(frame)))?;
    if endpoint.tls {
        let name = ServerName::try_from(endpoint.host.clone())?;
        let stream = tokio_rustls::TlsConnector::from(tls)
            .connect(name, tcp)
            .await
            .with_context(|| format!("TLS with {endpoint}"))?;
        call(stream, request).await
    } else {
        call(tcp, request).await
    }
}

async fn call<IO>(io: IO, request: http::Request<Full<Bytes>>) -> anyhow::Result<()>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(io),
    )
    .await?;
    let driver = tokio::spawn(connection);
    let response = sender.send_request(request).await?;
    let status = response.status();
    let header_status = response
        .headers()
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let collected = response.into_body().collect().await?;
    let trailer_status = collected
        .trailers()
        .and_then(|t| t.get("grpc-status"))
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    driver.abort();
    if !status.is_success() {
        bail!("HTTP {status}");
    }
    match trailer_status.or(header_status).as_deref() {
        Some("0") => Ok(()),
        Some(code) => bail!("gRPC status {code}"),
        None => bail!("no gRPC status in the answer"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse_as_upstream_and_otel_write_them() {
        let e = |v: &str, insecure| Endpoint::parse(v, insecure).unwrap();
        assert_eq!(
            e("collector.observability:4317", false),
            Endpoint {
                host: "collector.observability".into(),
                port: 4317,
                tls: true
            }
        );
        assert!(
            !e("collector:4317", true).tls,
            "OTEL_EXPORTER_OTLP_INSECURE"
        );
        assert_eq!(
            e("http://127.0.0.1:4318/", false).to_string(),
            "http://127.0.0.1:4318"
        );
        assert!(e("https://c:443", true).tls, "the scheme wins");
        assert_eq!(e("collector", false).port, 4317);
        assert_eq!(e("[::1]:4317", true).host, "::1");
        assert!(Endpoint::parse("c:http", false).is_err());
        assert!(Endpoint::parse("http://", false).is_err());
    }
}
