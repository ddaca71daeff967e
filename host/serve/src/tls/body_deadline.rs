//! A deadline for receiving a request's body.
//!
//! hyper bounds how long a client may take to send a request's headers
//! (`header_read_timeout`) but not its body: a client that sends the headers and then trickles
//! the body a byte at a time holds a connection and a handler for as long as it likes, and a
//! few hundred such clients hold a server's memory and tasks indefinitely. The API server gives
//! a webhook at most 30 s (`timeoutSeconds`), so a body still arriving after the deadline has
//! no caller left to answer; it is cut off with 408 and the connection closed.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, Version, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body::{Frame, SizeHint};
use tokio::time::Sleep;
use tracing::debug;

/// Runs the request with its body cut off `limit` after the headers arrived; a request whose
/// body was cut off is answered with 408, whatever the handler made of the truncated body.
pub(super) async fn enforce(limit: Duration, req: Request, next: Next) -> Response {
    let tripped = Arc::new(AtomicBool::new(false));
    let version = req.version();
    let req = req.map(|inner| {
        Body::new(Deadline {
            inner,
            sleep: Box::pin(tokio::time::sleep(limit)),
            limit,
            tripped: tripped.clone(),
        })
    });
    let response = next.run(req).await;
    if !tripped.load(Ordering::Acquire) {
        return response;
    }
    debug!("request body not received within {limit:?}");
    let mut response = (
        StatusCode::REQUEST_TIMEOUT,
        format!("request body not received within {limit:?}\n"),
    )
        .into_response();
    // The rest of the body may still be on its way: the connection cannot carry another
    // request. (HTTP/2 has no such header; its stream is reset instead.)
    if version <= Version::HTTP_11 {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// The error a body reports once its deadline passed.
#[derive(Debug, thiserror::Error)]
#[error("request body not received within {0:?}")]
struct TimedOut(Duration);

/// A request body that fails once `sleep` completes before its end.
struct Deadline {
    inner: Body,
    sleep: Pin<Box<Sleep>>,
    limit: Duration,
    tripped: Arc<AtomicBool>,
}

impl http_body::Body for Deadline {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        // Data already here is taken first: only a body still pending at the deadline fails.
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame);
        }
        if this.sleep.as_mut().poll(cx).is_ready() {
            this.tripped.store(true, Ordering::Release);
            return Poll::Ready(Some(Err(axum::Error::new(TimedOut(this.limit)))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        // Passed through: the body limit and the request metrics read it.
        self.inner.size_hint()
    }
}
