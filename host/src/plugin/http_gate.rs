//! Outgoing HTTP from a plugin: only to granted hosts, only safe methods when the call may not
//! change anything, and never longer than the plugin's HTTP timeouts or the call's budget.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http_body::{Body, Frame, SizeHint};
use hyper::body::Bytes;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use super::call_env::Effects;
use super::capabilities::Capabilities;
use super::limits::Limits;

pub(super) struct HttpGate {
    plugin: Arc<str>,
    caps: Arc<Capabilities>,
    effects: Effects,
    connect_timeout: Duration,
    total_timeout: Duration,
    /// The call's wall-clock end: no request outlives it.
    budget_end: Instant,
}

type IoFuture = Box<dyn Future<Output = Result<(), Error>> + Send>;
type SendFuture =
    Box<dyn Future<Output = Result<(http::Response<WasiBody>, IoFuture), Error>> + Send>;

impl HttpGate {
    pub(super) fn new(
        plugin: Arc<str>,
        caps: Arc<Capabilities>,
        effects: Effects,
        limits: &Limits,
        budget_end: Instant,
    ) -> Self {
        Self {
            plugin,
            caps,
            effects,
            connect_timeout: limits.http_connect_timeout(),
            total_timeout: limits.http_timeout(),
            budget_end,
        }
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
        request: http::Request<WasiBody>,
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
        Box::new(async move {
            use http_body_util::BodyExt;
            let send = wasmtime_wasi_http::default_send_request(request, Some(options));
            let (response, io) = tokio::time::timeout_at(until.into(), send)
                .await
                .map_err(|_| Error::HttpResponseTimeout)??;
            let response =
                response.map(|body| DeadlineBody::new(body.boxed_unsync(), until).boxed_unsync());
            Ok((response, Box::new(io) as IoFuture))
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
