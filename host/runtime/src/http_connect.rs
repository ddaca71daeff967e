//! Where a plugin's granted request connects. A grant names hosts, but a name's addresses are
//! whatever its DNS server says: a granted `*.example.com` name could resolve to the host's own
//! loopback (its metrics and health ports, the apiserver proxy of `make run`) or to a cloud
//! metadata address. So the name is resolved here, every address checked, and the connection
//! made to a checked address: no second lookup that a rebinding DNS server could answer
//! differently. Only a grant that names an address literally reaches such an address.
//!
//! The address checks ([`reserved`], [`is_own_address`], [`resolve_checked`]) are shared with
//! the plugin-source fetcher (`odh-plugin-sources`' `http`), which applies them to every hop
//! of a download.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
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
    reserved(ip).is_some()
}

/// Which reserved range `ip` is in ([`is_reserved`]), for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reserved {
    /// The range, in words.
    pub range: &'static str,
    /// The IPv4 address an IPv6 address carries, when that is what is reserved.
    pub inside_ipv6: Option<std::net::Ipv4Addr>,
}

impl std::fmt::Display for Reserved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.inside_ipv6 {
            None => f.write_str(self.range),
            Some(v4) => write!(f, "{} ({v4}) written inside an IPv6 address", self.range),
        }
    }
}

/// The reserved range `ip` is in, if any (see [`is_reserved`]).
pub fn reserved(ip: IpAddr) -> Option<Reserved> {
    let plain = |range| {
        Some(Reserved {
            range,
            inside_ipv6: None,
        })
    };
    match ip.to_canonical() {
        IpAddr::V4(v4) => reserved_v4(v4).and_then(plain),
        IpAddr::V6(v6) => {
            if v6.is_loopback() {
                plain("loopback")
            } else if v6.is_unspecified() {
                plain("the unspecified address")
            } else if v6.is_multicast() {
                plain("multicast")
            } else if v6.is_unicast_link_local() {
                plain("link-local")
            } else if v6 == AWS_METADATA_V6 {
                plain("the cloud metadata service (fd00:ec2::254)")
            } else {
                let v4 = embedded_v4(v6)?;
                Some(Reserved {
                    range: reserved_v4(v4)?,
                    inside_ipv6: Some(v4),
                })
            }
        }
    }
}

/// AWS's instance metadata service over IPv6.
const AWS_METADATA_V6: std::net::Ipv6Addr =
    std::net::Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254);

fn reserved_v4(v4: std::net::Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = v4.octets();
    Some(if v4.is_loopback() {
        "loopback"
    } else if v4.is_unspecified() || a == 0 {
        "\"this network\" (0.0.0.0/8)"
    } else if v4.is_link_local() {
        "link-local (169.254.0.0/16, where cloud metadata services answer)"
    } else if a == 100 && (b & 0xc0) == 64 {
        "shared address space (100.64.0.0/10, where some clouds put their metadata service)"
    } else if v4.is_multicast() {
        "multicast"
    } else if v4.is_broadcast() {
        "broadcast"
    } else {
        return None;
    })
}

/// The IPv4 address an IPv6 address carries by a translation or tunnelling convention.
pub fn embedded_v4(v6: std::net::Ipv6Addr) -> Option<std::net::Ipv4Addr> {
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
pub fn is_forbidden(ip: IpAddr) -> bool {
    is_reserved(ip) || is_own_address(ip)
}

/// Why [`resolve_checked`] found no address to connect to.
#[derive(Debug)]
pub enum Unroutable<R> {
    /// Every address the host has was refused; the first, and why.
    Refused {
        address: IpAddr,
        why: R,
    },
    LookupTimeout,
    Lookup(std::io::Error),
    NoAddress,
}

/// Resolves `host` (a name, or an address literal, brackets allowed) once and picks the first
/// address `refuse` has nothing against. The caller connects to exactly that address, so a DNS
/// server cannot answer a second lookup differently (rebinding).
pub async fn resolve_checked<R>(
    host: &str,
    port: u16,
    lookup_timeout: Duration,
    refuse: impl Fn(IpAddr) -> Option<R>,
) -> Result<SocketAddr, Unroutable<R>> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addresses = match bare.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::time::timeout(lookup_timeout, tokio::net::lookup_host((bare, port)))
            .await
            .map_err(|_| Unroutable::LookupTimeout)?
            .map_err(Unroutable::Lookup)?
            .collect(),
    };
    let mut first_refusal = None;
    for address in addresses {
        match refuse(address.ip()) {
            None => return Ok(address),
            Some(why) => {
                first_refusal.get_or_insert(Unroutable::Refused {
                    address: address.ip(),
                    why,
                });
            }
        }
    }
    Err(first_refusal.unwrap_or(Unroutable::NoAddress))
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
    // Only a grant naming the address itself reaches a reserved one; a name never does.
    let literal_granted = bare.parse::<IpAddr>().is_ok() && caps.grants_exactly(bare);
    let checked = resolve_checked(bare, port, lookup_timeout, |ip| {
        (!literal_granted && is_forbidden(ip)).then_some(())
    })
    .await;
    match checked {
        Ok(address) => Ok(Route {
            address,
            host: bare.to_string(),
            tls,
        }),
        Err(Unroutable::Refused { address, .. }) => Err(Refusal::Reserved {
            host: bare.to_string(),
            address,
        }),
        Err(Unroutable::LookupTimeout) => Err(Refusal::Failed(Error::DnsTimeout)),
        Err(Unroutable::Lookup(e)) => Err(Refusal::Failed(Error::DnsError {
            rcode: Some(e.to_string()),
            info_code: None,
        })),
        Err(Unroutable::NoAddress) => Err(Refusal::Failed(Error::DestinationNotFound)),
    }
}

/// The roots a plugin's HTTPS requests trust: `trust`'s (the public web PKI and the cluster's
/// CAs); a test may add its own CA (`ODH_TEST_HTTP_CA_FILE`, with `ODH_TEST_HTTP_RESOLVE`).
fn client_config(
    trust: &crate::HttpTrust,
    test_ca: bool,
) -> Result<Arc<rustls::ClientConfig>, Error> {
    // Release builds (the image's binary) never read the test's CA.
    let test_ca = test_ca && cfg!(debug_assertions) && !trust.accepts_any();
    match std::env::var_os("ODH_TEST_HTTP_CA_FILE").filter(|_| test_ca) {
        None => Ok(trust.client_config()),
        Some(path) => crate::HttpTrust::with_pem_files(&[path])
            .map(|t| t.client_config())
            .map_err(|_| Error::TlsCertificateError),
    }
}

/// The connection's I/O, to be driven while the response body is read.
pub(super) type IoFuture = Box<dyn Future<Output = Result<(), Error>> + Send>;

pub(super) type Sent = (http::Response<WasiBody>, IoFuture);

/// Sends `request` over a new HTTP/1.1 connection to `route` (TLS for `https`).
pub(super) async fn send(
    mut request: http::Request<WasiBody>,
    route: Route,
    options: RequestOptions,
    trust: &crate::HttpTrust,
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
        let connector = tokio_rustls::TlsConnector::from(client_config(trust, test_ca)?);
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
    fn reserved_addresses_say_which_range_they_are_in() {
        let named = |ip: &str| reserved(ip.parse().unwrap()).map(|r| r.to_string());
        assert_eq!(
            named("169.254.169.254").as_deref(),
            Some("link-local (169.254.0.0/16, where cloud metadata services answer)")
        );
        assert_eq!(
            named("64:ff9b::a9fe:a9fe").as_deref(),
            Some(
                "link-local (169.254.0.0/16, where cloud metadata services answer) \
                 (169.254.169.254) written inside an IPv6 address"
            )
        );
        // IPv4-mapped is the IPv4 address itself.
        assert_eq!(named("::ffff:127.0.0.1").as_deref(), Some("loopback"));
        assert_eq!(
            named("fd00:ec2::254").as_deref(),
            Some("the cloud metadata service (fd00:ec2::254)")
        );
        assert!(
            named("100.100.100.200")
                .unwrap()
                .starts_with("shared address space")
        );
        assert_eq!(named("10.0.0.1"), None);
        assert_eq!(named("2002:0a00:0001::1"), None);
    }

    /// A name or literal resolves once; the first address the check lets through is the one
    /// connected to, and when all are refused the first refusal is reported.
    #[tokio::test]
    async fn resolution_checks_every_address_and_reports_the_first_refusal() {
        let refuse_loopback = |ip: IpAddr| ip.is_loopback().then_some("loopback");
        let refused = resolve_checked("[::1]", 80, Duration::from_secs(1), refuse_loopback).await;
        assert!(matches!(
            refused,
            Err(Unroutable::Refused { address, why: "loopback" }) if address == IpAddr::from([0u16, 0, 0, 0, 0, 0, 0, 1])
        ));
        let open = resolve_checked("10.1.2.3", 5000, Duration::from_secs(1), refuse_loopback)
            .await
            .unwrap();
        assert_eq!(open.to_string(), "10.1.2.3:5000");
        // `localhost` resolves to loopback addresses only: all refused, none connected to.
        let by_name =
            resolve_checked("localhost", 80, Duration::from_secs(5), refuse_loopback).await;
        assert!(
            matches!(
                by_name,
                Err(Unroutable::Refused {
                    why: "loopback",
                    ..
                })
            ),
            "{by_name:?}"
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
