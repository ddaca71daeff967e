//! Go's `http.Server` read and idle deadlines for an HTTP/1 connection.
//!
//! hyper has one timer for a request's head, and it also runs while a keep-alive connection
//! waits for its next request, so an idle connection would be closed after the head timeout
//! (5 s for the model-serving-api) instead of upstream's `IDLE_TIMEOUT`. Here the connection's
//! reads carry the deadline Go's server sets for the phase it is in:
//!
//! * waiting for a request: the head timeout from the accept for the first one, `IDLE_TIMEOUT`
//!   from the last response for the next ones;
//! * a request's first bytes arrived: its head must be complete within the head timeout;
//! * the handler runs: no read deadline here (the body has its own, `body_deadline`).
//!
//! A read past its deadline fails, and hyper closes the connection as Go's server does.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::FutureExt;
use hyper::body::Incoming;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// The deadlines of a connection's phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnLimits {
    /// How long a request's head may take from its first byte (and the first request from the
    /// accept).
    pub head: Duration,
    /// How long a keep-alive connection may wait for its next request.
    pub idle: Duration,
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Waiting for a request since `since`, for at most `limit`.
    Waiting { since: Instant, limit: Duration },
    /// A request's head is arriving (its first bytes came at `since`).
    Head { since: Instant },
    /// The handler runs.
    Handling,
}

/// Which phase one connection is in, shared by its reads and its service.
#[derive(Debug)]
pub struct ConnClock {
    limits: ConnLimits,
    phase: Mutex<Phase>,
}

impl ConnClock {
    /// A connection accepted now.
    pub fn new(limits: ConnLimits) -> Arc<Self> {
        Arc::new(Self {
            limits,
            phase: Mutex::new(Phase::Waiting {
                since: Instant::now(),
                limit: limits.head,
            }),
        })
    }

    fn phase(&self) -> std::sync::MutexGuard<'_, Phase> {
        self.phase.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// When the read in progress must have completed, if it has a deadline.
    fn read_deadline(&self) -> Option<Instant> {
        match *self.phase() {
            Phase::Waiting { since, limit } => Some(since + limit),
            Phase::Head { since } => Some(since + self.limits.head),
            Phase::Handling => None,
        }
    }

    fn bytes_arrived(&self) {
        let mut phase = self.phase();
        if let Phase::Waiting { .. } = *phase {
            *phase = Phase::Head {
                since: Instant::now(),
            };
        }
    }

    fn request_started(&self) {
        *self.phase() = Phase::Handling;
    }

    fn response_ready(&self) {
        *self.phase() = Phase::Waiting {
            since: Instant::now(),
            limit: self.limits.idle,
        };
    }
}

/// A connection's I/O whose reads fail past the phase's deadline.
pub struct TimedIo<T> {
    inner: T,
    clock: Arc<ConnClock>,
    sleep: Pin<Box<Sleep>>,
    armed_for: Option<Instant>,
}

impl<T> TimedIo<T> {
    pub fn new(inner: T, clock: Arc<ConnClock>) -> Self {
        Self {
            inner,
            clock,
            sleep: Box::pin(tokio::time::sleep(Duration::ZERO)),
            armed_for: None,
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for TimedIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let filled_before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() != filled_before {
                    this.clock.bytes_arrived();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => {
                let Some(deadline) = this.clock.read_deadline() else {
                    return Poll::Pending;
                };
                if this.armed_for != Some(deadline) {
                    this.sleep.as_mut().reset(deadline);
                    this.armed_for = Some(deadline);
                }
                match this.sleep.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "read deadline passed",
                    ))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for TimedIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
}

/// A connection's service that tells its clock when a request is handled and answered.
pub struct Clocked<S> {
    pub inner: S,
    pub clock: Arc<ConnClock>,
}

impl<S> hyper::service::Service<hyper::Request<Incoming>> for Clocked<S>
where
    S: hyper::service::Service<hyper::Request<Incoming>>,
{
    type Response = S::Response;
    type Error = S::Error;
    #[allow(clippy::type_complexity)]
    type Future =
        futures::future::Inspect<S::Future, Box<dyn FnOnce(&Result<S::Response, S::Error>) + Send>>;

    fn call(&self, req: hyper::Request<Incoming>) -> Self::Future {
        self.clock.request_started();
        let clock = self.clock.clone();
        self.inner
            .call(req)
            .inspect(Box::new(move |_| clock.response_ready()))
    }
}
