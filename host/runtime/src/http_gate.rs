//! Outgoing HTTP from a plugin: only to granted hosts, only safe methods when the call may not
//! change anything, and never longer than the plugin's HTTP timeouts or the call's budget.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http_body::{Body, Frame, SizeHint};
use hyper::body::Bytes;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use crate::call_env::Effects;
use crate::capabilities::Capabilities;
use crate::http_connect::{self, IoFuture, Refusal};
use crate::identity::{self, Identity};
use crate::limits::Limits;

pub(super) struct HttpGate {
    plugin: Arc<str>,
    caps: Arc<Capabilities>,
    effects: Effects,
    connect_timeout: Duration,
    total_timeout: Duration,
    /// The call's wall-clock end: no request outlives it.
    budget_end: Instant,
    /// The controller's identity, added by the host where the plugin asks and may have it.
    identity: Identity,
    trust: crate::HttpTrust,
}

type SendFuture =
    Box<dyn Future<Output = Result<(http::Response<WasiBody>, IoFuture), Error>> + Send>;

impl HttpGate {
    pub(super) fn new(
        plugin: Arc<str>,
        caps: Arc<Capabilities>,
        effects: Effects,
        limits: &Limits,
        budget_end: Instant,
        identity: Identity,
        trust: crate::HttpTrust,
    ) -> Self {
        Self {
            plugin,
            caps,
            effects,
            connect_timeout: limits.http_connect_timeout(),
            total_timeout: limits.http_timeout(),
            budget_end,
            identity,
            trust,
        }
    }

    /// Where the plugin asks for the controller's identity (`Odh-Authorization:
    /// service-account`), the header it asked with replaced by the token, or why not. The
    /// plugin never sees the token: only the request on its way out carries it.
    fn authenticate(
        &self,
        request: &mut http::Request<WasiBody>,
        authority: &str,
    ) -> Result<(), String> {
        let Some(asked) = request.headers_mut().remove(identity::REQUEST_HEADER) else {
            return Ok(());
        };
        if asked != identity::SERVICE_ACCOUNT {
            return Err(format!(
                "{}: {asked:?} is not an identity the host sends (only {:?})",
                identity::REQUEST_HEADER,
                identity::SERVICE_ACCOUNT
            ));
        }
        self.caps.may_send_identity_to(authority)?;
        let token = self.identity.token().ok_or_else(|| {
            "the controller's identity was not sent: this host has no ServiceAccount token"
                .to_string()
        })?;
        let value = http::HeaderValue::try_from(format!("Bearer {token}"))
            .map_err(|_| "the controller's token is not a valid header value".to_string())?;
        request
            .headers_mut()
            .insert(http::header::AUTHORIZATION, value);
        Ok(())
    }

    fn refuse(error: Error) -> SendFuture {
        Box::new(async move { Err(error) })
    }
}

/// Safe methods (RFC 9110 §9.2.1) that a plugin sends even when the call may not change
/// anything. `OPTIONS` and `TRACE` are safe too, but no plugin needs them.
fn is_safe(method: &http::Method) -> bool {
    method == http::Method::GET || method == http::Method::HEAD
}

impl WasiHttpHooks for HttpGate {
    fn send_request(
        &mut self,
        mut request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: IoFuture,
    ) -> SendFuture {
        let authority = request
            .uri()
            .authority()
            .map(|a| a.as_str().to_string())
            .unwrap_or_default();
        if !self.caps.may_connect(&authority) {
            tracing::warn!(plugin = %self.plugin, host = %authority, "denied outgoing HTTP to a host the plugin was not granted");
            return Self::refuse(Error::HttpRequestDenied);
        }
        if self.effects == Effects::ReadOnly && !is_safe(request.method()) {
            let message = format!(
                "{} {} was not sent: a shadow or offline call of plugin {:?} may only send GET and HEAD",
                request.method(),
                request.uri(),
                &*self.plugin
            );
            tracing::info!(plugin = %self.plugin, "{message}");
            return Self::refuse(Error::InternalError(Some(message)));
        }
        if let Err(message) = self.authenticate(&mut request, &authority) {
            tracing::warn!(plugin = %self.plugin, host = %authority, "{message}");
            return Self::refuse(Error::InternalError(Some(message)));
        }
        let left = self.budget_end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Self::refuse(Error::ConnectionTimeout);
        }
        let total = self.total_timeout.min(left);
        let cap =
            |asked: Option<Duration>, ours: Duration| Some(asked.map_or(ours, |a| a.min(ours)));
        let options = RequestOptions {
            connect_timeout: cap(
                options.and_then(|o| o.connect_timeout),
                self.connect_timeout.min(total),
            ),
            first_byte_timeout: cap(options.and_then(|o| o.first_byte_timeout), total),
            between_bytes_timeout: cap(options.and_then(|o| o.between_bytes_timeout), total),
        };
        let until = Instant::now() + total;
        let test_route = match test_only::route(&request) {
            Ok(route) => route,
            Err(e) => {
                tracing::warn!(plugin = %self.plugin, "{e}");
                return Self::refuse(Error::InternalError(Some(e)));
            }
        };
        let caps = self.caps.clone();
        let plugin = self.plugin.clone();
        let trust = self.trust.for_authority(&self.caps, &authority);
        let lookup_timeout = self.connect_timeout.min(total);
        Box::new(async move {
            use http_body_util::BodyExt;
            let sent = async {
                match test_route {
                    Some(route) => http_connect::send(request, route, options, &trust, true).await,
                    None => {
                        let route = match http_connect::route(request.uri(), &caps, lookup_timeout)
                            .await
                        {
                            Ok(route) => route,
                            Err(Refusal::Reserved { host, address }) => {
                                tracing::warn!(plugin = %plugin, host, %address, "denied outgoing HTTP to a granted name that resolves to a loopback, link-local or other reserved address; grant the address itself to allow it");
                                return Err(Error::DestinationIpProhibited);
                            }
                            Err(Refusal::Failed(e)) => return Err(e),
                        };
                        http_connect::send(request, route, options, &trust, false).await
                    }
                }
            };
            let (response, io) = tokio::time::timeout_at(until.into(), sent)
                .await
                .map_err(|_| Error::HttpResponseTimeout)??;
            let response = response.map(|body| DeadlineBody::new(body, until).boxed_unsync());
            Ok((response, io))
        })
    }
}

/// A response body that fails once the request's total timeout has passed, however slowly
/// the server trickles it.
struct DeadlineBody {
    inner: WasiBody,
    deadline: Pin<Box<tokio::time::Sleep>>,
}

impl DeadlineBody {
    fn new(inner: WasiBody, until: Instant) -> Self {
        Self {
            inner,
            deadline: Box::pin(tokio::time::sleep_until(until.into())),
        }
    }
}

impl Body for DeadlineBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        if self.deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(Error::HttpResponseTimeout)));
        }
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// TEST ONLY: sends a granted request to a local stand-in instead of the real host, so end-to-end
/// tests keep real host names (`api.ngc.nvidia.com`) with a server on the loopback interface.
///
/// `ODH_TEST_HTTP_RESOLVE` = `host:port=127.0.0.1:port[,host:port=...]` connects requests for
/// `host:port` to that loopback address (a non-loopback target is refused); TLS still checks the
/// certificate for `host`, against the web PKI roots plus the PEM CA in
/// `ODH_TEST_HTTP_CA_FILE`. Unset, nothing changes. The grant check runs first. Release builds
/// (the image's binary) do not read these variables at all.
mod test_only {
    use std::net::SocketAddr;

    use wasmtime_wasi_http::WasiBody;

    use crate::http_connect::Route;

    /// Where the request goes instead, when the test override names its authority.
    pub(super) fn route(request: &http::Request<WasiBody>) -> Result<Option<Route>, String> {
        if !cfg!(debug_assertions) {
            return Ok(None);
        }
        match std::env::var("ODH_TEST_HTTP_RESOLVE") {
            Ok(table) => route_in(&table, request.uri()),
            Err(_) => Ok(None),
        }
    }

    fn route_in(table: &str, uri: &http::Uri) -> Result<Option<Route>, String> {
        let tls = uri.scheme() == Some(&http::uri::Scheme::HTTPS);
        let (Some(host), port) = (uri.host(), uri.port_u16()) else {
            return Ok(None);
        };
        let authority = format!("{host}:{}", port.unwrap_or(if tls { 443 } else { 80 }));
        for entry in table.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let Some((from, to)) = entry.split_once('=') else {
                return Err(format!(
                    "ODH_TEST_HTTP_RESOLVE: {entry:?} is not host:port=address"
                ));
            };
            if from != authority {
                continue;
            }
            let address: SocketAddr = to
                .parse()
                .map_err(|_| format!("ODH_TEST_HTTP_RESOLVE: {to:?} is not an ip:port"))?;
            if !address.ip().is_loopback() {
                return Err(format!(
                    "ODH_TEST_HTTP_RESOLVE: {to} is not a loopback address; refused"
                ));
            }
            return Ok(Some(Route {
                address,
                host: host.to_string(),
                tls,
            }));
        }
        Ok(None)
    }

    #[cfg(test)]
    mod tests {
        use super::route_in;

        fn uri(text: &str) -> http::Uri {
            text.parse().unwrap()
        }

        #[test]
        fn only_named_authorities_go_to_loopback_targets() {
            let table = "api.example.test:443=127.0.0.1:8443, plain.example.test:80=[::1]:9000";
            let route = route_in(table, &uri("https://api.example.test/v1?q=1"))
                .unwrap()
                .unwrap();
            assert_eq!(route.address.to_string(), "127.0.0.1:8443");
            assert_eq!((route.host.as_str(), route.tls), ("api.example.test", true));
            let plain = route_in(table, &uri("http://plain.example.test/"))
                .unwrap()
                .unwrap();
            assert!(!plain.tls && plain.address.ip().is_loopback());
            // Another port or host is not overridden.
            assert!(
                route_in(table, &uri("https://api.example.test:8443/"))
                    .unwrap()
                    .is_none()
            );
            assert!(
                route_in(table, &uri("https://other.example.test/"))
                    .unwrap()
                    .is_none()
            );
        }

        #[test]
        fn non_loopback_targets_and_bad_entries_are_refused() {
            let error = route_in(
                "api.example.test:443=10.0.0.1:443",
                &uri("https://api.example.test/"),
            )
            .err()
            .unwrap();
            assert!(error.contains("not a loopback address"), "{error}");
            assert!(route_in("api.example.test:443", &uri("https://api.example.test/")).is_err());
            assert!(
                route_in(
                    "api.example.test:443=somewhere",
                    &uri("https://api.example.test/")
                )
                .is_err()
            );
        }
    }
}
