//! One HTTP/1.1 exchange with a plugin source (a web server, an OCI registry, its token server):
//! HTTPS against the public web PKI plus the admin's extra roots, plain `http://` to loopback
//! hosts only (a registry on the same machine, as container tools allow), GET redirects
//! followed (registries send blob downloads to a CDN) without carrying credentials to another
//! host, bodies bounded, every exchange within [`TIMEOUT`].

use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use hyper::body::Bytes;

/// How long one exchange (redirects included) may take.
pub const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
/// How many redirects a GET follows.
const MAX_REDIRECTS: usize = 5;

pub type Roots<'a> = &'a [rustls::pki_types::CertificateDer<'static>];

/// What came back.
#[derive(Debug)]
pub struct Response {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// The URL that answered (after redirects).
    pub url: String,
}

impl Response {
    pub fn header(&self, name: header::HeaderName) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// `<status>` plus what a registry's error body says (`{"errors":[{"code","message"}]}`),
    /// for messages.
    pub fn describe(&self) -> String {
        let errors: Vec<String> = serde_json::from_slice::<serde_json::Value>(&self.body)
            .ok()
            .and_then(|v| v["errors"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .map(|e| {
                format!(
                    "{} {}",
                    e["code"].as_str().unwrap_or_default(),
                    e["message"].as_str().unwrap_or_default()
                )
                .trim()
                .to_string()
            })
            .filter(|e| !e.is_empty())
            .collect();
        if errors.is_empty() {
            self.status.to_string()
        } else {
            format!("{}: {}", self.status, errors.join("; "))
        }
    }
}

pub fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Sends one request; a GET or HEAD follows redirects. The body read is at most `limit` bytes.
pub async fn send(
    method: Method,
    url: &str,
    headers: HeaderMap,
    body: Bytes,
    roots: Roots<'_>,
    limit: usize,
) -> Result<Response, String> {
    tokio::time::timeout(
        TIMEOUT,
        follow(method.clone(), url, headers, body, roots, limit),
    )
    .await
    .map_err(|_| format!("{method} {url}: no answer within {TIMEOUT:?}"))?
}

async fn follow(
    method: Method,
    url: &str,
    mut headers: HeaderMap,
    body: Bytes,
    roots: Roots<'_>,
    limit: usize,
) -> Result<Response, String> {
    let mut url = url.to_string();
    let mut redirects = 0;
    loop {
        let response = once(&method, &url, &headers, body.clone(), roots, limit).await?;
        let redirect = matches!(method, Method::GET | Method::HEAD)
            && response.status.is_redirection()
            && response.status != StatusCode::NOT_MODIFIED;
        if !redirect {
            return Ok(response);
        }
        redirects += 1;
        if redirects > MAX_REDIRECTS {
            return Err(format!(
                "{method} {url}: more than {MAX_REDIRECTS} redirects"
            ));
        }
        let location = response
            .header(header::LOCATION)
            .ok_or_else(|| format!("{method} {url}: {} without a Location", response.status))?;
        let next = resolve(&url, location)?;
        if url.starts_with("https://") && next.starts_with("http://") {
            return Err(format!(
                "{method} {url}: refusing a redirect from HTTPS to plain HTTP ({next})"
            ));
        }
        if authority(&next) != authority(&url) {
            // Credentials are for the registry, never for the host it redirects to.
            headers.remove(header::AUTHORIZATION);
        }
        url = next;
    }
}

fn authority(url: &str) -> Option<String> {
    url.parse::<http::Uri>()
        .ok()
        .and_then(|u| Some(format!("{}://{}", u.scheme_str()?, u.authority()?)))
}

/// `location` relative to `base`: absolute, or a path on the same scheme and authority.
fn resolve(base: &str, location: &str) -> Result<String, String> {
    if location.starts_with("https://") || location.starts_with("http://") {
        return Ok(location.to_string());
    }
    match (location.starts_with('/'), authority(base)) {
        (true, Some(origin)) => Ok(format!("{origin}{location}")),
        _ => Err(format!("{base}: unsupported redirect to {location:?}")),
    }
}

async fn once(
    method: &Method,
    url: &str,
    headers: &HeaderMap,
    body: Bytes,
    roots: Roots<'_>,
    limit: usize,
) -> Result<Response, String> {
    use http_body_util::{BodyExt, Full, Limited};
    let fail = |e: &dyn std::fmt::Display| format!("{method} {url}: {e}");
    let uri: http::Uri = url.parse().map_err(|e| fail(&e))?;
    let host = uri.host().ok_or_else(|| fail(&"no host"))?.to_string();
    let plain = match uri.scheme_str() {
        Some("http") => true,
        Some("https") => false,
        _ => {
            return Err(fail(
                &"only https:// (and http:// to loopback) is supported",
            ));
        }
    };
    if plain && !is_loopback(&host) {
        return Err(fail(&"plain http is only allowed to loopback hosts"));
    }
    let port = uri.port_u16().unwrap_or(if plain { 80 } else { 443 });
    let bare_host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let tcp = tokio::net::TcpStream::connect((bare_host.as_str(), port))
        .await
        .map_err(|e| fail(&e))?;
    let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let mut request = http::Request::builder().method(method.clone()).uri(path);
    let request_headers = request.headers_mut().expect("a fresh builder has headers");
    request_headers.extend(headers.clone());
    let host_header = uri.authority().map(|a| a.as_str()).unwrap_or(&host);
    request_headers.insert(
        header::HOST,
        HeaderValue::from_str(host_header).map_err(|e| fail(&e))?,
    );
    let request = request.body(Full::new(body)).map_err(|e| fail(&e))?;
    let response = if plain {
        exchange(tcp, request).await
    } else {
        let tls = tls_connect(&bare_host, tcp, roots)
            .await
            .map_err(|e| fail(&e))?;
        exchange(tls, request).await
    }
    .map_err(|e| fail(&e))?;
    let (parts, body) = response.into_parts();
    let body = if *method == Method::HEAD {
        Bytes::new()
    } else {
        Limited::new(body, limit)
            .collect()
            .await
            .map_err(|e| fail(&format!("reading the answer (at most {limit} bytes): {e}")))?
            .to_bytes()
    };
    Ok(Response {
        status: parts.status,
        headers: parts.headers,
        body,
        url: url.to_string(),
    })
}

/// One request on a fresh HTTP/1.1 connection over `io` (plain TCP or TLS).
async fn exchange<I>(
    io: I,
    request: http::Request<http_body_util::Full<Bytes>>,
) -> Result<http::Response<hyper::body::Incoming>, hyper::Error>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(io)).await?;
    tokio::spawn(conn);
    sender.send_request(request).await
}

async fn tls_connect(
    host: &str,
    tcp: tokio::net::TcpStream,
    extra_roots: Roots<'_>,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, String> {
    let mut roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    for cert in extra_roots {
        roots.add(cert.clone()).map_err(|e| e.to_string())?;
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let server_name =
        rustls::pki_types::ServerName::try_from(host.to_string()).map_err(|e| e.to_string())?;
    tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
        .connect(server_name, tcp)
        .await
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirects_resolve_against_the_origin() {
        assert_eq!(
            resolve("https://r.example/v2/a/blobs/x", "/b/c").unwrap(),
            "https://r.example/b/c"
        );
        assert_eq!(
            resolve("https://r.example/v2/x", "https://cdn.example/y?sig=1").unwrap(),
            "https://cdn.example/y?sig=1"
        );
        assert!(resolve("https://r.example/v2/x", "y").is_err());
        assert_ne!(
            authority("https://r.example/v2/x"),
            authority("https://cdn.example/y")
        );
        assert_eq!(
            authority("http://127.0.0.1:5000/v2/"),
            authority("http://127.0.0.1:5000/token?x=1")
        );
    }

    #[test]
    fn plain_http_is_for_loopback_only() {
        assert!(is_loopback("127.0.0.1"));
        assert!(is_loopback("[::1]"));
        assert!(is_loopback("localhost"));
        assert!(!is_loopback("quay.io"));
        assert!(!is_loopback("10.0.0.1"));
    }

    #[test]
    fn registry_errors_are_described() {
        let r = Response {
            status: StatusCode::UNAUTHORIZED,
            headers: HeaderMap::new(),
            body: Bytes::from_static(
                br#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}"#,
            ),
            url: String::new(),
        };
        assert_eq!(
            r.describe(),
            "401 Unauthorized: UNAUTHORIZED authentication required"
        );
    }
}
