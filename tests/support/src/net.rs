//! Loopback networking for tests: free ports, a self-signed serving certificate, an HTTPS
//! client speaking HTTP/1.1 (keep-alive) and a plain HTTP/1.1 one-shot request.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
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

pub(crate) fn rand_suffix() -> u128 {
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

    /// [`Client::connect`] to a server whose self-signed certificate the test cannot know in
    /// advance (the secure metrics server makes its own at start): the certificate is not
    /// checked. For tests of what the server does with requests, never of its TLS.
    pub async fn connect_unverified(addr: SocketAddr) -> anyhow::Result<Self> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Unverified(provider)))
            .with_no_client_auth();
        let tcp = TcpStream::connect(addr).await?;
        let tls = TlsConnector::from(Arc::new(config))
            .connect(ServerName::try_from("localhost")?, tcp)
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
        self.post_with(path, &[], body).await
    }

    /// [`Client::post`] with extra headers.
    pub async fn post_with(
        &mut self,
        path: &str,
        headers: &[(&str, &str)],
        body: &serde_json::Value,
    ) -> anyhow::Result<(u16, serde_json::Value)> {
        let mut request = http::Request::post(path)
            .header(http::header::HOST, self.addr.to_string())
            .header(http::header::CONTENT_TYPE, "application/json");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request.body(Full::new(Bytes::from(body.to_string())))?;
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

/// A loopback port nothing listens on right now (for a child process to bind).
/// A port nothing listens on now, for a server a test starts next (as another process, so it
/// cannot be handed a bound socket). Chosen below the kernel's ephemeral range: a port bound to
/// 0 comes from that range, where any outgoing connection of any test (thousands, to the
/// apiserver) may take it before the server binds it ("Address already in use"). Spread over
/// the range by process and call, so concurrent tests seldom pick the same one.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static CALLS: AtomicU32 = AtomicU32::new(0);
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32768);
    let (low, high) = (10_000u32, ephemeral_low.clamp(10_001, 32_768));
    let span = high - low;
    let seed = std::process::id().wrapping_mul(2_654_435_761);
    for _ in 0..span {
        let n = CALLS.fetch_add(1, Ordering::Relaxed);
        let port = low + (seed.wrapping_add(n.wrapping_mul(7_919)) % span);
        if std::net::TcpListener::bind(("127.0.0.1", port as u16)).is_ok() {
            return port as u16;
        }
    }
    // Every port below the ephemeral range is taken: fall back to one the kernel chooses.
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

/// Accepts any server certificate; signatures are still checked with the provider's
/// algorithms (the handshake itself stays sound). For tests that look at which certificate a
/// server presents, or cannot know it in advance.
#[derive(Debug)]
pub struct Unverified(pub Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
