//! Where a plugin's granted request connects. A grant names hosts, but a name's addresses are
//! whatever its DNS server says: a granted `*.example.com` name could resolve to the host's own
//! loopback (its metrics and health ports, the apiserver proxy of `make run`) or to a cloud
//! metadata address. So the name is resolved here, every address checked, and the connection
//! made to a checked address: no second lookup that a rebinding DNS server could answer
//! differently. Only a grant that names an address literally reaches such an address.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use http_body_util::BodyExt;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody};

use crate::capabilities::Capabilities;

/// A checked destination: the address to connect to and the name TLS verifies.
pub(super) struct Route {
    pub(super) address: SocketAddr,
    pub(super) host: String,
    pub(super) tls: bool,
}

/// An address no host name may lead to: loopback, unspecified, link-local (the cloud metadata
/// service is 169.254.169.254), multicast and broadcast. Private ranges stay reachable: in-cluster
/// Services live there.
pub fn is_reserved(ip: IpAddr) -> bool {
    match ip.to_canonical() {
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_unspecified()
                || v4.is_link_local()
                || v4.is_multicast()
                || v4.is_broadcast()
        }
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || v6.is_unicast_link_local()
        }
    }
}

/// Why a granted request was not sent.
pub(super) enum Refusal {
    /// The destination is reserved and the grant does not name it literally.
    Reserved {
        host: String,
        address: IpAddr,
    },
    Failed(Error),
}

/// Resolves the request's host and picks an address it may connect to.
pub(super) async fn route(
    uri: &http::Uri,
    caps: &Capabilities,
    lookup_timeout: Duration,
) -> Result<Route, Refusal> {
    let tls = uri.scheme() == Some(&http::uri::Scheme::HTTPS);
    let host = uri
        .host()
        .ok_or(Refusal::Failed(Error::HttpRequestUriInvalid))?;
    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        if is_reserved(ip) && !caps.grants_exactly(bare) {
            return Err(Refusal::Reserved {
                host: bare.to_string(),
                address: ip,
            });
        }
        return Ok(Route {
            address: SocketAddr::new(ip, port),
            host: bare.to_string(),
            tls,
        });
    }
    let addresses = tokio::time::timeout(lookup_timeout, tokio::net::lookup_host((bare, port)))
        .await
        .map_err(|_| Refusal::Failed(Error::DnsTimeout))?
        .map_err(|e| {
            Refusal::Failed(Error::DnsError {
                rcode: Some(e.to_string()),
                info_code: None,
            })
        })?
        .collect::<Vec<_>>();
    let Some(first) = addresses.first() else {
        return Err(Refusal::Failed(Error::DestinationNotFound));
    };
    match addresses.iter().find(|a| !is_reserved(a.ip())) {
        Some(address) => Ok(Route {
            address: *address,
            host: bare.to_string(),
            tls,
        }),
        None => Err(Refusal::Reserved {
            host: bare.to_string(),
            address: first.ip(),
        }),
    }
}

/// The roots a plugin's HTTPS requests trust: the Mozilla set, as wasi-http's own client; a test
/// may add its own CA (`ODH_TEST_HTTP_CA_FILE`, with `ODH_TEST_HTTP_RESOLVE`).
fn client_config(test_ca: bool) -> Result<Arc<rustls::ClientConfig>, Error> {
    use rustls::pki_types::{CertificateDer, pem::PemObject};
    static PUBLIC: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    let build = |roots| {
        Arc::new(
            rustls::ClientConfig::builder()
                .with_root_certificates(roots)
                .with_no_client_auth(),
        )
    };
    let public = || rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.into(),
    };
    let Some(path) = std::env::var_os("ODH_TEST_HTTP_CA_FILE").filter(|_| test_ca) else {
        return Ok(PUBLIC.get_or_init(|| build(public())).clone());
    };
    let mut roots = public();
    for cert in CertificateDer::pem_file_iter(&path).map_err(|_| Error::TlsCertificateError)? {
        roots
            .add(cert.map_err(|_| Error::TlsCertificateError)?)
            .map_err(|_| Error::TlsCertificateError)?;
    }
    Ok(build(roots))
}

/// The connection's I/O, to be driven while the response body is read.
pub(super) type IoFuture = Box<dyn Future<Output = Result<(), Error>> + Send>;

pub(super) type Sent = (http::Response<WasiBody>, IoFuture);

/// Sends `request` over a new HTTP/1.1 connection to `route` (TLS for `https`).
pub(super) async fn send(
    mut request: http::Request<WasiBody>,
    route: Route,
    options: RequestOptions,
    test_ca: bool,
) -> Result<Sent, Error> {
    let connect_timeout = options.connect_timeout.unwrap_or(Duration::from_secs(5));
    let tcp = tokio::time::timeout(
        connect_timeout,
        tokio::net::TcpStream::connect(route.address),
    )
    .await
    .map_err(|_| Error::ConnectionTimeout)?
    .map_err(Error::Connect)?;
    // The request line carries the path only; the authority is the Host header's.
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    *request.uri_mut() = http::Uri::builder()
        .path_and_query(path)
        .build()
        .map_err(|_| Error::HttpRequestUriInvalid)?;
    let (mut sender, connection) = if route.tls {
        let name = match route.host.parse::<IpAddr>() {
            Ok(ip) => rustls::pki_types::ServerName::from(ip),
            Err(_) => rustls::pki_types::ServerName::try_from(route.host)
                .map_err(|_| Error::TlsCertificateError)?,
        };
        let connector = tokio_rustls::TlsConnector::from(client_config(test_ca)?);
        let stream = tokio::time::timeout(connect_timeout, connector.connect(name, tcp))
            .await
            .map_err(|_| Error::ConnectionTimeout)?
            .map_err(Error::Tls)?;
        handshake(stream).await?
    } else {
        handshake(tcp).await?
    };
    let response = sender.send_request(request).await.map_err(Error::from)?;
    let io: IoFuture =
        Box::new(async move { connection.await.unwrap_or(Err(Error::ConnectionTerminated)) });
    Ok((
        response.map(|body| body.map_err(Error::from).boxed_unsync()),
        io,
    ))
}

type Connection = tokio::task::JoinHandle<Result<(), Error>>;

async fn handshake<S>(
    stream: S,
) -> Result<
    (
        hyper::client::conn::http1::SendRequest<WasiBody>,
        Connection,
    ),
    Error,
>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let (sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(Error::from)?;
    Ok((
        sender,
        tokio::spawn(async move { connection.await.map_err(Error::from) }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_addresses_are_the_hosts_own_and_the_metadata_services() {
        for reserved in [
            "127.0.0.1",
            "127.1.2.3",
            "0.0.0.0",
            "169.254.169.254",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fe80::1",
            "::ffff:127.0.0.1",
            "ff02::1",
        ] {
            assert!(is_reserved(reserved.parse().unwrap()), "{reserved}");
        }
        for open in [
            "10.96.0.1",
            "192.168.1.10",
            "172.16.0.5",
            "8.8.8.8",
            "fd00::1",
            "2001:db8::1",
        ] {
            assert!(!is_reserved(open.parse().unwrap()), "{open}");
        }
    }
}
