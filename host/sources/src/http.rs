//! One HTTP/1.1 exchange with a plugin source (a web server, an OCI registry, its token server):
//! HTTPS against the public web PKI plus the admin's extra roots, plain `http://` to loopback
//! hosts only (a registry on the same machine, as container tools allow), GET redirects
//! followed (registries send blob downloads to a CDN) without carrying credentials to another
//! host, bodies bounded, every exchange within [`TIMEOUT`].
//!
//! **Where it connects.** Every hop — the URL the plugins ConfigMap names, each redirect, the
//! token realm a registry's challenge names ([`send_named_by`]) — is resolved once, each address
//! checked, and the connection made to the checked address (the plugin HTTP gate's discipline,
//! `odh_plugin_runtime::http_connect`, whose checks these are). Never reached: link-local and
//! the cloud metadata services (169.254.0.0/16, `fd00:ec2::254`), shared address space
//! (100.64.0.0/10), "this network", multicast, broadcast, the controller's own addresses, and
//! any of these written inside an IPv6 address (IPv4-mapped, NAT64, 6to4, Teredo). Private
//! ranges stay reachable: the admin names the host, and in-cluster registries (OpenShift's
//! `image-registry.openshift-image-registry.svc:5000`) live on a ClusterIP there. Loopback is
//! reached only by a URL that names it literally (`localhost`, `127.0.0.0/8`, `::1`) and only
//! when the entry's own source is on loopback too: a registry on the same machine may send the
//! controller to its token server and blob store beside it, a registry anywhere else cannot
//! send it to the controller's own ports, and no DNS name leads there.

use std::net::IpAddr;

use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use hyper::body::Bytes;
use odh_plugin_runtime::http_connect::{self, Unroutable};

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

/// Why the fetcher does not connect to `ip`, or `None` when it may. `loopback` says whether
/// this hop may reach loopback at all ([`loopback_allowed`]); private addresses are allowed.
pub fn refusal(ip: IpAddr, loopback: bool) -> Option<String> {
    if ip.to_canonical().is_loopback() {
        return (!loopback).then(|| {
            "loopback, reached only from a plugin source on loopback and only through a \
             loopback address or `localhost` written as such"
                .to_string()
        });
    }
    if let Some(reserved) = http_connect::reserved(ip) {
        return Some(reserved.to_string());
    }
    http_connect::is_own_address(ip).then(|| "one of the controller's own addresses".to_string())
}

/// Whether a hop to `host` may reach loopback: it names loopback literally and the entry's own
/// source (`origin_host`, the admin's choice) is on loopback too. A registry elsewhere cannot
/// send the controller there by a redirect or a token realm, and no DNS name leads there.
pub fn loopback_allowed(host: &str, origin_host: &str) -> bool {
    is_loopback(host) && is_loopback(origin_host)
}

/// Sends one request to `url`, the source the admin named (its own origin); a GET or HEAD
/// follows redirects. The body read is at most `limit` bytes.
pub async fn send(
    method: Method,
    url: &str,
    headers: HeaderMap,
    body: Bytes,
    roots: Roots<'_>,
    limit: usize,
) -> Result<Response, String> {
    send_named_by(url, method, url, headers, body, roots, limit).await
}

/// [`send`] for a URL that the source at `origin` named rather than the admin (a registry's
/// token realm or upload location, or the registry's own URLs, `origin` being its base):
/// judged by where `origin` is ([`loopback_allowed`]).
pub async fn send_named_by(
    origin: &str,
    method: Method,
    url: &str,
    headers: HeaderMap,
    body: Bytes,
    roots: Roots<'_>,
    limit: usize,
) -> Result<Response, String> {
    let origin_host = origin
        .parse::<http::Uri>()
        .ok()
        .and_then(|u| u.host().map(str::to_string))
        .unwrap_or_default();
    tokio::time::timeout(
        TIMEOUT,
        follow(
            &origin_host,
            method.clone(),
            url,
            headers,
            body,
            roots,
            limit,
        ),
    )
    .await
    .map_err(|_| format!("{method} {url}: no answer within {TIMEOUT:?}"))?
}

async fn follow(
    origin_host: &str,
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
        let response = once(
            origin_host,
            &method,
            &url,
            &headers,
            body.clone(),
            roots,
            limit,
        )
        .await?;
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
    origin_host: &str,
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
    let loopback = loopback_allowed(&host, origin_host);
    let address =
        http_connect::resolve_checked(&bare_host, port, TIMEOUT, |ip| refusal(ip, loopback))
            .await
            .map_err(|e| match e {
                Unroutable::Refused { address, why } if address.to_string() == bare_host => {
                    fail(&format!("not connecting to {bare_host}: {why}"))
                }
                Unroutable::Refused { address, why } => fail(&format!(
                    "not connecting to {bare_host}, which resolves to {address}: {why}"
                )),
                Unroutable::LookupTimeout => fail(&format!("resolving {bare_host}: no answer")),
                Unroutable::Lookup(e) => fail(&e),
                Unroutable::NoAddress => fail(&format!("{bare_host} has no address")),
            })?;
    let tcp = tokio::net::TcpStream::connect(address)
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
    let config = rustls::ClientConfig::builder_with_provider(odh_crypto::tls::provider())
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

    /// The decision for one address: private ranges allowed (in-cluster registries), metadata,
    /// reserved ranges and the host's own addresses refused in every written form, loopback
    /// only where the hop may reach it.
    #[test]
    fn addresses_a_source_may_and_may_not_lead_to() {
        let refused = |ip: &str, loopback: bool| refusal(ip.parse().unwrap(), loopback);
        for open in [
            "10.217.4.12",
            "172.30.0.15",
            "192.168.10.2",
            "8.8.8.8",
            "fd00::1",
            "2607:f8b0::1",
        ] {
            assert_eq!(refused(open, false), None, "{open}");
        }
        for (ip, why) in [
            ("169.254.169.254", "link-local"),
            ("169.254.0.1", "link-local"),
            ("fd00:ec2::254", "the cloud metadata service"),
            ("::ffff:169.254.169.254", "link-local"),
            ("64:ff9b::a9fe:a9fe", "link-local"),
            ("2002:a9fe:a9fe::1", "link-local"),
            ("100.64.0.1", "shared address space"),
            ("0.0.0.0", "this network"),
            ("::", "unspecified"),
            ("224.0.0.251", "multicast"),
            ("255.255.255.255", "broadcast"),
            ("fe80::1", "link-local"),
            // Loopback in a translated form is not loopback: a NAT64 gateway's own.
            ("64:ff9b::7f00:1", "loopback"),
        ] {
            for loopback in [false, true] {
                let reason = refused(ip, loopback).unwrap_or_default();
                assert!(reason.contains(why), "{ip}: {reason:?}");
            }
        }
        for ip in ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"] {
            assert_eq!(refused(ip, true), None, "{ip}");
            assert!(refused(ip, false).unwrap().starts_with("loopback"), "{ip}");
        }
        if let Some(own) = outward_address() {
            let reason = refusal(own, true).unwrap_or_default();
            assert_eq!(reason, "one of the controller's own addresses", "{own}");
        }
    }

    /// Loopback is the admin's choice only: named literally, from a source on loopback.
    #[test]
    fn loopback_only_from_a_source_on_loopback_and_only_by_its_literal_names() {
        assert!(loopback_allowed("127.0.0.1", "127.0.0.1"));
        assert!(loopback_allowed("localhost", "127.0.0.1"));
        assert!(loopback_allowed("[::1]", "localhost"));
        // A registry elsewhere naming loopback as its token realm or redirect target.
        assert!(!loopback_allowed("127.0.0.1", "quay.io"));
        assert!(!loopback_allowed("localhost", "10.217.4.12"));
        // A DNS name never leads to loopback, whoever named it.
        assert!(!loopback_allowed("registry.example", "registry.example"));
        assert!(!loopback_allowed("registry.example", "127.0.0.1"));
    }

    /// The address a packet to the outside would leave from (one of the host's own), when
    /// there is a route: connecting a UDP socket sends nothing.
    fn outward_address() -> Option<IpAddr> {
        let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
        socket.connect("203.0.113.7:9").ok()?;
        Some(socket.local_addr().ok()?.ip())
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
