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

/// An address no host name may lead to: loopback, unspecified, "this network", link-local (the
/// cloud metadata service is 169.254.169.254), shared address space (100.64.0.0/10, where some
/// clouds put their metadata service), multicast and broadcast, AWS's IPv6 metadata address
/// (`fd00:ec2::254`), and any of these written inside an IPv6 address (IPv4-mapped and
/// -compatible, NAT64 `64:ff9b::/96` and `64:ff9b:1::/48`, 6to4 `2002::/16`, Teredo
/// `2001::/32`). Private ranges stay reachable: in-cluster Services live there. The host's own
/// addresses are refused besides ([`is_own_address`]).
pub fn is_reserved(ip: IpAddr) -> bool {
    match ip.to_canonical() {
        IpAddr::V4(v4) => is_reserved_v4(v4),
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || v6.is_unicast_link_local()
                || v6 == AWS_METADATA_V6
                || embedded_v4(v6).is_some_and(is_reserved_v4)
        }
    }
}

/// AWS's instance metadata service over IPv6.
const AWS_METADATA_V6: std::net::Ipv6Addr =
    std::net::Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254);

fn is_reserved_v4(v4: std::net::Ipv4Addr) -> bool {
    let [a, b, ..] = v4.octets();
    v4.is_loopback()
        || v4.is_unspecified()
        || a == 0
        || v4.is_link_local()
        || (a == 100 && (b & 0xc0) == 64)
        || v4.is_multicast()
        || v4.is_broadcast()
}

/// The IPv4 address an IPv6 address carries by a translation or tunnelling convention.
fn embedded_v4(v6: std::net::Ipv6Addr) -> Option<std::net::Ipv4Addr> {
    let s = v6.segments();
    let low = |hi: u16, lo: u16| std::net::Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    match s {
        // IPv4-compatible (deprecated) ::a.b.c.d; `::` and `::1` are handled as IPv6.
        [0, 0, 0, 0, 0, 0, hi, lo] if hi != 0 => Some(low(hi, lo)),
        // NAT64, well-known and local-use prefixes.
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] | [0x64, 0xff9b, 1, _, _, _, hi, lo] => {
            Some(low(hi, lo))
        }
        // 6to4: 2002:aabb:ccdd::/48.
        [0x2002, hi, lo, ..] => Some(low(hi, lo)),
        // Teredo: the client's address, inverted, in the last 32 bits.
        [0x2001, 0, _, _, _, _, hi, lo] => Some(low(!hi, !lo)),
        _ => None,
    }
}

/// Whether `ip` is one of the host's own addresses (the pod's IP, any interface's): an address
/// a socket can be bound to here. A granted name leading there would reach the controller's own
/// ports past the loopback check.
pub fn is_own_address(ip: IpAddr) -> bool {
    std::net::UdpSocket::bind(SocketAddr::new(ip, 0)).is_ok()
}

/// Whether a name may lead to `ip` (see [`is_reserved`] and [`is_own_address`]).
fn is_forbidden(ip: IpAddr) -> bool {
    is_reserved(ip) || is_own_address(ip)
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
        if is_forbidden(ip) && !caps.grants_exactly(bare) {
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
    match addresses.iter().find(|a| !is_forbidden(a.ip())) {
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
    // Release builds (the image's binary) never read the test's CA.
    let test_ca = test_ca && cfg!(debug_assertions);
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
            // Shared address space (Alibaba's metadata is 100.100.100.200), "this network".
            "100.64.0.1",
            "100.100.100.200",
            "100.127.255.254",
            "0.1.2.3",
            // AWS's IPv6 metadata, and the IPv4 metadata written in IPv6 forms.
            "fd00:ec2::254",
            "::ffff:169.254.169.254",
            "::169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::a9fe:a9fe",
            "2002:a9fe:a9fe::1",
            "2002:7f00:1::",
            // Teredo, client 169.254.169.254 inverted.
            "2001:0:4136:e378:8000:63bf:5601:5601",
        ] {
            assert!(is_reserved(reserved.parse().unwrap()), "{reserved}");
        }
        for open in [
            "10.96.0.1",
            "192.168.1.10",
            "172.16.0.5",
            "8.8.8.8",
            "fd00::1",
            "fd00:ec2::253",
            "2001:db8::1",
            "100.63.255.255",
            "100.128.0.1",
            "64:ff9b::808:808",
            "2002:808:808::1",
            "2607:f8b0::1",
        ] {
            assert!(!is_reserved(open.parse().unwrap()), "{open}");
        }
    }

    /// Under a wildcard grant, a literal address in any disguise, and the host's own address,
    /// are refused before a connection; the same address granted literally is reached.
    #[tokio::test]
    async fn a_wildcard_grant_reaches_no_reserved_or_own_address_in_any_form() {
        let wildcard = Capabilities {
            http_hosts: ["*".to_string()].into(),
            ..Default::default()
        };
        let own = outward_address().map_or("127.0.0.1".into(), |ip| ip.to_string());
        for url in [
            "http://[::ffff:127.0.0.1]:8080/x".to_string(),
            "http://[64:ff9b::7f00:1]:8080/x".to_string(),
            "http://[2002:7f00:1::]:8080/x".to_string(),
            format!("http://{own}:8080/x"),
            "http://100.100.100.200/latest/meta-data".to_string(),
            "http://[fd00:ec2::254]/latest/meta-data".to_string(),
            "http://[::169.254.169.254]/latest/meta-data".to_string(),
        ] {
            let uri: http::Uri = url.parse().unwrap();
            let routed = route(&uri, &wildcard, Duration::from_secs(1)).await;
            assert!(matches!(routed, Err(Refusal::Reserved { .. })), "{url}");
        }
        let literal = Capabilities {
            http_hosts: ["100.100.100.200".to_string()].into(),
            ..Default::default()
        };
        let uri: http::Uri = "http://100.100.100.200/x".parse().unwrap();
        let routed = route(&uri, &literal, Duration::from_secs(1)).await;
        assert!(matches!(routed, Ok(Route { tls: false, .. })));
        let open: http::Uri = "http://10.96.0.1/x".parse().unwrap();
        assert!(
            route(&open, &wildcard, Duration::from_secs(1))
                .await
                .is_ok()
        );
    }

    #[test]
    fn the_hosts_own_addresses_are_recognised() {
        assert!(is_own_address("127.0.0.1".parse().unwrap()));
        // TEST-NET-3: documentation only, never an interface's.
        assert!(!is_own_address("203.0.113.7".parse().unwrap()));
        if let Some(ip) = outward_address() {
            assert!(is_own_address(ip), "{ip}");
        }
    }

    /// The address a packet to the outside would leave from (one of the host's own), when
    /// there is a route: connecting a UDP socket sends nothing.
    fn outward_address() -> Option<IpAddr> {
        let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
        socket.connect("203.0.113.7:9").ok()?;
        Some(socket.local_addr().ok()?.ip())
    }
}
