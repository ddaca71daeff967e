//! The process's Kubernetes client: kube's, with every request counted in
//! `rest_client_requests_total` as client-go counts it (what upstream's dashboards read, and how
//! `make bench` measures API requests per reconciled object).

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
    let host = config
        .cluster_url
        .authority()
        .map(|a| a.to_string())
        .unwrap_or_default();
    Ok(ClientBuilder::try_from(config)?
        .with_layer(&CountRequestsLayer { host })
        .build())
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
