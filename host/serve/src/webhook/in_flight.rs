//! A bound on the admission requests the webhook server holds at once (issue #31).
//!
//! Every request weighs what it will hold in memory: its body's declared length (the apiserver
//! always sends `Content-Length`), at least [`MIN_WEIGHT`] for what any request costs besides
//! its body, never more than the body limit. The server holds at most `requests × body limit`
//! of weight: `requests` reviews of the largest size, or many more of the usual few KiB (at
//! most `requests × 128`). Room is taken before the body is read, all of it at once (so two
//! large requests never each hold half the room waiting for the rest), and given back once the
//! answer is made: the bodies, parsed requests and plugin inputs of a flood stay within it. A
//! body of undeclared length (chunked) takes [`MIN_WEIGHT`] first and more as its bytes
//! arrive, its reading waiting for room. Weighing by length rather than counting requests keeps
//! a client that trickles a small body from taking a whole request's room; one that declares a
//! large body and trickles it holds its room until the body read timeout cuts it off.
//!
//! Past the bound a request **queues**, first come first served, rather than failing at once:
//! under `failurePolicy: Fail` an error is a denied user write, and a burst clears within the
//! plugin calls' own milliseconds. It waits at most [`MAX_WAIT`], the apiserver's default
//! `timeoutSeconds` (every webhook configuration the controller writes keeps it): by then the
//! apiserver has stopped waiting. It is then answered `503` (its body unread, the connection
//! closed), an error the apiserver treats by the webhook's `failurePolicy`, as it would a
//! timeout: a denial under `Fail`, admitted under `Ignore` (a `200` denial would deny both).

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, Version, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body::{Frame, SizeHint};
use odh_host_metrics::Metrics;
use tokio::sync::{AcquireError, OwnedSemaphorePermit, Semaphore};
use tracing::warn;

use super::table::WebhookTable;

/// The least a request weighs, whatever its body: its task, headers, parsed fields and answer.
pub const MIN_WEIGHT: usize = 64 * 1024;
/// How long a request may wait for room: the apiserver's default webhook `timeoutSeconds`.
pub const MAX_WAIT: Duration = Duration::from_secs(10);
/// Room is counted in these (the semaphore's permits).
const UNIT: usize = 1024;

/// How much the webhook server holds at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InFlightLimit {
    /// Full-size requests held at once (`--webhook-max-requests-in-flight`).
    pub requests: usize,
    /// The largest body the server accepts (a request never weighs more).
    pub body_limit: usize,
    /// How long a request waits for room before it is answered `503`.
    pub max_wait: Duration,
}

impl InFlightLimit {
    /// `requests` full-size requests, the server's default body limit, [`MAX_WAIT`].
    pub fn new(requests: usize) -> Self {
        Self {
            requests: requests.max(1),
            body_limit: crate::tls::DEFAULT_BODY_LIMIT,
            max_wait: MAX_WAIT,
        }
    }

    /// The default bound for `table`: twice the calls its plugins may run at once (the sum of
    /// their `concurrency`), so every plugin slot that frees finds a request whose body is
    /// read already; at least twice one plugin's default concurrency.
    pub fn for_table(table: &WebhookTable) -> Self {
        let mut plugins = std::collections::BTreeMap::new();
        for route in table.routes() {
            let plugin = route.plugin.current();
            plugins.insert(plugin.name().to_string(), plugin.limits().concurrency);
        }
        let concurrency: usize = plugins.values().sum();
        let floor = odh_plugin_runtime::Limits::default().concurrency;
        Self::new(2 * concurrency.max(floor))
    }

    fn capacity_units(&self) -> usize {
        self.requests
            .saturating_mul(units(self.body_limit.max(MIN_WEIGHT)))
    }
}

fn units(bytes: usize) -> usize {
    bytes.div_ceil(UNIT)
}

/// The room one request takes before its body is read, in units: its declared body length (or
/// nothing yet when undeclared: it pays as its bytes arrive), at least [`MIN_WEIGHT`], at most
/// the body limit.
pub fn weight(declared: Option<u64>, limit: &InFlightLimit) -> usize {
    let body_limit = limit.body_limit.max(MIN_WEIGHT);
    let bytes = declared
        .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX))
        .clamp(MIN_WEIGHT, body_limit);
    units(bytes).min(limit.capacity_units())
}

/// The bound in force: a semaphore of room, and what waits for it. Cloning shares it.
#[derive(Clone)]
pub struct AdmissionGate {
    inner: Arc<Inner>,
}

struct Inner {
    limit: InFlightLimit,
    room: Arc<Semaphore>,
    queued: AtomicUsize,
    in_flight: AtomicUsize,
    shed: AtomicU64,
}

impl AdmissionGate {
    pub fn new(limit: InFlightLimit) -> Self {
        let capacity = limit.capacity_units().min(Semaphore::MAX_PERMITS);
        Metrics::global().webhook_room(capacity.saturating_mul(UNIT));
        Self {
            inner: Arc::new(Inner {
                limit,
                room: Arc::new(Semaphore::new(capacity)),
                queued: AtomicUsize::new(0),
                in_flight: AtomicUsize::new(0),
                shed: AtomicU64::new(0),
            }),
        }
    }

    pub fn limit(&self) -> InFlightLimit {
        self.inner.limit
    }

    /// Requests waiting for room now.
    pub fn queued(&self) -> usize {
        self.inner.queued.load(Ordering::SeqCst)
    }

    /// Requests holding room now.
    pub fn in_flight(&self) -> usize {
        self.inner.in_flight.load(Ordering::SeqCst)
    }

    /// Requests answered `503` after waiting [`InFlightLimit::max_wait`], since the start.
    pub fn shed(&self) -> u64 {
        self.inner.shed.load(Ordering::SeqCst)
    }

    /// The middleware: takes the request's room (waiting for it, at most `max_wait`), runs
    /// the request, gives the room back.
    pub async fn admit(self, request: Request, next: Next) -> Response {
        let limit = self.inner.limit;
        let declared = http_body::Body::size_hint(request.body()).exact();
        let weight = weight(declared, &limit);
        let room = self.inner.room.clone();
        let permit = match room.try_acquire_many_owned(units_u32(weight)) {
            Ok(permit) => permit,
            Err(_) => match self.wait(weight).await {
                Some(permit) => permit,
                None => return self.busy(request.version(), weight),
            },
        };
        let held = Held::new(&self, permit, weight);
        let request = match declared {
            Some(_) => request,
            None => {
                let (gate, room) = (self.clone(), held.room.clone());
                request.map(|body| Body::new(Metered::new(body, gate, room)))
            }
        };
        next.run(request).await
    }

    /// Waits in line for `weight` units of room, at most `max_wait`.
    async fn wait(&self, weight: usize) -> Option<OwnedSemaphorePermit> {
        let _queued = Queued::new(self);
        let acquire = self
            .inner
            .room
            .clone()
            .acquire_many_owned(units_u32(weight));
        match tokio::time::timeout(self.inner.limit.max_wait, acquire).await {
            Ok(Ok(permit)) => Some(permit),
            // The semaphore is never closed; a timeout is the only way here.
            Ok(Err(_)) | Err(_) => None,
        }
    }

    fn busy(&self, version: Version, weight: usize) -> Response {
        self.inner.shed.fetch_add(1, Ordering::SeqCst);
        Metrics::global().webhook_request_shed();
        let limit = self.inner.limit;
        warn!(
            max_requests_in_flight = limit.requests,
            queued = self.queued(),
            weight_bytes = weight * UNIT,
            "admission request answered 503: no room within {:?}",
            limit.max_wait
        );
        let mut response = (
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "webhook server busy: no room for this request within {:?} ({} full-size \
                 requests in flight at most, --webhook-max-requests-in-flight)\n",
                limit.max_wait, limit.requests
            ),
        )
            .into_response();
        // The body was never read: the connection cannot carry another request.
        if version <= Version::HTTP_11 {
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}

fn units_u32(weight: usize) -> u32 {
    u32::try_from(weight).unwrap_or(u32::MAX)
}

/// A request waiting for room, counted while it waits (however the wait ends).
struct Queued(AdmissionGate);

impl Queued {
    fn new(gate: &AdmissionGate) -> Self {
        gate.inner.queued.fetch_add(1, Ordering::SeqCst);
        Metrics::global().webhook_requests_queued(1);
        Self(gate.clone())
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        self.0.inner.queued.fetch_sub(1, Ordering::SeqCst);
        Metrics::global().webhook_requests_queued(-1);
    }
}

/// The room one request holds: given back when the last of its holders (the request, its
/// metered body) is gone.
struct Room {
    permit: Mutex<OwnedSemaphorePermit>,
    units: AtomicUsize,
}

impl Room {
    fn grow(&self, permit: OwnedSemaphorePermit) {
        let units = permit.num_permits();
        self.permit.lock().expect("room lock").merge(permit);
        self.units.fetch_add(units, Ordering::SeqCst);
        Metrics::global().webhook_requests_in_flight(0, (units * UNIT) as i64);
    }
}

/// A request holding room, counted until it is answered (or its client went away).
struct Held {
    gate: AdmissionGate,
    room: Arc<Room>,
}

impl Held {
    fn new(gate: &AdmissionGate, permit: OwnedSemaphorePermit, weight: usize) -> Self {
        gate.inner.in_flight.fetch_add(1, Ordering::SeqCst);
        Metrics::global().webhook_requests_in_flight(1, (weight * UNIT) as i64);
        Self {
            gate: gate.clone(),
            room: Arc::new(Room {
                permit: Mutex::new(permit),
                units: AtomicUsize::new(weight),
            }),
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.gate.inner.in_flight.fetch_sub(1, Ordering::SeqCst);
        let bytes = self.room.units.load(Ordering::SeqCst) * UNIT;
        Metrics::global().webhook_requests_in_flight(-1, -(bytes as i64));
    }
}

type Acquiring =
    Pin<Box<dyn Future<Output = Result<OwnedSemaphorePermit, AcquireError>> + Send + 'static>>;

/// A body of undeclared length, paying for its bytes as they arrive: a frame past what the
/// request holds is handed on once room for it is found, its reading waiting meanwhile.
struct Metered {
    inner: Body,
    gate: AdmissionGate,
    room: Arc<Room>,
    received: usize,
    /// A frame waiting for room, and the wait.
    waiting: Option<(Frame<Bytes>, Acquiring, Queued)>,
}

impl Metered {
    fn new(inner: Body, gate: AdmissionGate, room: Arc<Room>) -> Self {
        Self {
            inner,
            gate,
            room,
            received: 0,
            waiting: None,
        }
    }
}

impl http_body::Body for Metered {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        if let Some((_, acquiring, _)) = &mut this.waiting {
            let permit = ready!(acquiring.as_mut().poll(cx)).map_err(axum::Error::new)?;
            this.room.grow(permit);
            let (frame, _, _) = this.waiting.take().expect("a frame waits");
            return Poll::Ready(Some(Ok(frame)));
        }
        let frame = match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
            Some(Ok(frame)) => frame,
            other => return Poll::Ready(other),
        };
        this.received += frame.data_ref().map_or(0, Bytes::len);
        let owed = units(this.received).saturating_sub(this.room.units.load(Ordering::SeqCst));
        if owed == 0 {
            return Poll::Ready(Some(Ok(frame)));
        }
        let owed = units_u32(owed.min(this.gate.inner.limit.capacity_units()));
        match this.gate.inner.room.clone().try_acquire_many_owned(owed) {
            Ok(permit) => {
                this.room.grow(permit);
                Poll::Ready(Some(Ok(frame)))
            }
            Err(_) => {
                let acquiring: Acquiring =
                    Box::pin(this.gate.inner.room.clone().acquire_many_owned(owed));
                let queued = Queued::new(&this.gate);
                this.waiting = Some((frame, acquiring, queued));
                Pin::new(this).poll_frame(cx)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.waiting.is_none() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_weigh_their_declared_body_within_bounds() {
        let limit = InFlightLimit::new(4);
        let kib = |bytes: usize| bytes / UNIT;
        // A usual review weighs the minimum; a large one its length; none more than the limit.
        assert_eq!(weight(Some(3_000), &limit), kib(MIN_WEIGHT));
        assert_eq!(weight(Some(0), &limit), kib(MIN_WEIGHT));
        assert_eq!(weight(Some(2 * 1024 * 1024), &limit), 2048);
        assert_eq!(weight(Some(2 * 1024 * 1024 + 1), &limit), 2049);
        assert_eq!(weight(Some(u64::MAX), &limit), kib(limit.body_limit));
        // An undeclared length (chunked) pays the minimum first, the rest as it arrives.
        assert_eq!(weight(None, &limit), kib(MIN_WEIGHT));
        // The room: four full-size requests, or 128 times as many small ones.
        assert_eq!(limit.capacity_units(), 4 * kib(limit.body_limit));
        assert_eq!(
            limit.capacity_units() / weight(Some(1_000), &limit),
            4 * 128
        );
        // One request of any size always fits in the room.
        let one = InFlightLimit::new(1);
        assert_eq!(weight(Some(u64::MAX), &one), one.capacity_units());
    }
}
