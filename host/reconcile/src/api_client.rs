//! The process's Kubernetes client: kube's, with every request counted in
//! `rest_client_requests_total` as client-go counts it (what upstream's dashboards read, and how
//! `make bench` measures API requests per reconciled object), rate limited per resource as
//! controller-runtime's client is ([`RateLimit`]).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::{Request, Response};
use kube::client::ClientBuilder;
use kube::{Client, Config};
use tower::{Layer, Service};

use odh_host_metrics::Metrics;

/// A client for `config` whose requests are counted in the process metrics.
pub fn counted_client(config: Config) -> kube::Result<Client> {
    limited_client(config, None)
}

#[derive(Clone)]
struct CountRequestsLayer {
    host: String,
}

impl<S> Layer<S> for CountRequestsLayer {
    type Service = CountRequests<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CountRequests {
            inner,
            host: self.host.clone(),
        }
    }
}

#[derive(Clone)]
struct CountRequests<S> {
    inner: S,
    host: String,
}

impl<S, B, R> Service<Request<B>> for CountRequests<S>
where
    S: Service<Request<B>, Response = Response<R>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let method = request.method().clone();
        let host = self.host.clone();
        let response = self.inner.call(request);
        Box::pin(async move {
            let result = response.await;
            let code = result.as_ref().ok().map(|r| r.status().as_u16());
            Metrics::global().rest_client_request(&host, method.as_str(), code);
            result
        })
    }
}

/// client-go's client-side rate limit, as controller-runtime applies it: a token bucket of
/// `qps` per second holding at most `burst`, one per API resource (controller-runtime's client
/// makes a REST client, with its own limiter, per resource). Requests past it wait; none fails.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    pub qps: f64,
    pub burst: u32,
}

impl RateLimit {
    /// controller-runtime's defaults (`GetConfig`: 20 QPS, burst 30).
    pub const UPSTREAM: RateLimit = RateLimit {
        qps: 20.0,
        burst: 30,
    };
}

/// The token buckets, one per resource, as GCRA: each bucket is the time its next request
/// would be due if requests came evenly; a request may go `burst` intervals before that.
#[derive(Debug)]
struct Buckets {
    limit: RateLimit,
    due: std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>,
}

impl Buckets {
    /// How long a request to `resource` made at `now` waits (its slot is taken).
    fn reserve(&self, resource: &str, now: std::time::Instant) -> std::time::Duration {
        let interval = std::time::Duration::from_secs_f64(1.0 / self.limit.qps);
        let mut due = self.due.lock().expect("rate limit lock");
        let next = due.entry(resource.to_string()).or_insert(now);
        let at = (*next).max(now) + interval;
        *next = at;
        let allowed_from = at
            .checked_sub(interval * self.limit.burst.max(1))
            .unwrap_or(now);
        allowed_from.saturating_duration_since(now)
    }
}

/// The resource a request path is about: `/api/v1/namespaces/ns/configmaps/x` is
/// `v1/configmaps`, `/apis/g/v/namespaces/ns/r/x/status` is `g/v/r`; anything else its path.
fn resource_of(path: &str) -> String {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (prefix, rest) = match parts.as_slice() {
        ["api", version, rest @ ..] => (version.to_string(), rest),
        ["apis", group, version, rest @ ..] => (format!("{group}/{version}"), rest),
        _ => return path.to_string(),
    };
    let rest = match rest {
        ["namespaces", _, more @ ..] if !more.is_empty() => more,
        other => other,
    };
    match rest.first() {
        Some(resource) => format!("{prefix}/{resource}"),
        None => prefix,
    }
}

/// A client for `config`, its requests counted and, with `limit`, rate limited per resource.
pub fn limited_client(config: Config, limit: Option<RateLimit>) -> kube::Result<Client> {
    let host = config
        .cluster_url
        .authority()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let builder = ClientBuilder::try_from(config)?.with_layer(&CountRequestsLayer { host });
    Ok(match limit.filter(|l| l.qps > 0.0) {
        Some(limit) => builder
            .with_layer(&RateLimitLayer {
                buckets: std::sync::Arc::new(Buckets {
                    limit,
                    due: Default::default(),
                }),
            })
            .build(),
        None => builder.build(),
    })
}

#[derive(Clone)]
struct RateLimitLayer {
    buckets: std::sync::Arc<Buckets>,
}

type ApiRequest = Request<kube::client::Body>;

impl<S> Layer<S> for RateLimitLayer
where
    S: Service<ApiRequest> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<tower::BoxError> + Send + Sync,
    S::Response: Send + 'static,
{
    type Service = RateLimited<S::Future>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimited {
            // kube's stack below is one boxed service: a buffer in front of it lets a call
            // that must wait take its own handle, clone of the buffer.
            inner: tower::buffer::Buffer::new(inner, 1024),
            buckets: self.buckets.clone(),
        }
    }
}

struct RateLimited<F> {
    inner: tower::buffer::Buffer<ApiRequest, F>,
    buckets: std::sync::Arc<Buckets>,
}

impl<F, R, E> Service<ApiRequest> for RateLimited<F>
where
    F: Future<Output = Result<R, E>> + Send + 'static,
    E: Into<tower::BoxError> + Send + Sync,
    R: Send + 'static,
{
    type Response = R;
    type Error = tower::BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<R, tower::BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: ApiRequest) -> Self::Future {
        let wait = self.buckets.reserve(
            &resource_of(request.uri().path()),
            std::time::Instant::now(),
        );
        if wait.is_zero() {
            return Box::pin(self.inner.call(request));
        }
        // The slot `poll_ready` reserved stays with `self`; the waiting call gets a handle of
        // its own and waits for its own slot after the delay.
        let mut inner = self.inner.clone();
        Box::pin(async move {
            tokio::time::sleep(wait).await;
            use tower::ServiceExt;
            inner.ready().await?.call(request).await
        })
    }
}

/// An API server's refusal as a plugin sees it (a failed write's answer, or the status a
/// webhook denial wrapping a failed read passes on).
pub fn api_status(s: kube::core::Status) -> odh_plugin_runtime::writes::ApiStatus {
    odh_plugin_runtime::writes::ApiStatus {
        code: s.code,
        reason: s.reason,
        message: s.message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_limited_per_resource() {
        assert_eq!(
            resource_of("/api/v1/namespaces/ns/configmaps/x"),
            "v1/configmaps"
        );
        assert_eq!(
            resource_of("/apis/serving.kserve.io/v1beta1/namespaces/ns/inferenceservices/a/status"),
            "serving.kserve.io/v1beta1/inferenceservices"
        );
        assert_eq!(resource_of("/api/v1/namespaces/ns"), "v1/namespaces");
        assert_eq!(resource_of("/api/v1/nodes"), "v1/nodes");
        assert_eq!(resource_of("/version"), "/version");
    }

    /// 20 per second with a burst of 30: the first 30 go at once, then one every 50 ms; another
    /// resource has a bucket of its own; an idle bucket fills again.
    #[test]
    fn a_bucket_lets_a_burst_through_then_paces() {
        let buckets = Buckets {
            limit: RateLimit::UPSTREAM,
            due: Default::default(),
        };
        let t0 = std::time::Instant::now();
        let ms = std::time::Duration::from_millis;
        let waits: Vec<std::time::Duration> = (0..32)
            .map(|_| buckets.reserve("v1/configmaps", t0))
            .collect();
        assert!(waits[..30].iter().all(|w| w.is_zero()), "{waits:?}");
        assert_eq!(waits[30], ms(50));
        assert_eq!(waits[31], ms(100));
        assert!(buckets.reserve("v1/services", t0).is_zero());
        let later = t0 + std::time::Duration::from_secs(10);
        assert!(buckets.reserve("v1/configmaps", later).is_zero());
    }
}
