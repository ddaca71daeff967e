//! A plain-HTTP proxy in front of the test apiserver that records every request passing
//! through: a client pointed at it behaves as against the apiserver (the proxy forwards with
//! the admin client's credentials), and a test can count what that client asked for.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use kube::Client;

/// One request the proxy forwarded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub method: String,
    /// Path and query.
    pub path: String,
}

impl Seen {
    /// A request that changes something (not GET, HEAD or a watch).
    pub fn is_write(&self) -> bool {
        !matches!(self.method.as_str(), "GET" | "HEAD")
    }

    /// A discovery request: the resource list of an API group version (`/api/v1`,
    /// `/apis/<group>/<version>`) or the group lists.
    pub fn is_discovery(&self) -> bool {
        let path = self.path.split('?').next().unwrap_or_default();
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        self.method == "GET"
            && matches!(
                segments.as_slice(),
                ["api"] | ["apis"] | ["api", _] | ["apis", _] | ["apis", _, _]
            )
    }
}

pub struct CountingProxy {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for CountingProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl CountingProxy {
    /// Listens on 127.0.0.1 and forwards through `upstream`.
    pub async fn start(upstream: Client) -> anyhow::Result<Self> {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let app = axum::Router::new()
            .fallback(forward)
            .with_state((upstream, seen.clone()));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { addr, seen, task })
    }

    /// A kube config whose client talks to the apiserver through the proxy.
    pub fn config(&self) -> kube::Config {
        let url = format!("http://{}", self.addr)
            .parse()
            .expect("a loopback URL");
        kube::Config::new(url)
    }

    /// Every request forwarded so far, in order.
    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().expect("proxy log").clone()
    }
}

type ProxyState = (Client, Arc<Mutex<Vec<Seen>>>);

async fn forward(State((client, seen)): State<ProxyState>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    seen.lock().expect("proxy log").push(Seen {
        method: parts.method.to_string(),
        path: parts
            .uri
            .path_and_query()
            .map(|p| p.to_string())
            .unwrap_or_default(),
    });
    let bytes = match body.collect().await {
        Ok(b) => b.to_bytes().to_vec(),
        Err(e) => return (http::StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    };
    let mut upstream = http::Request::builder().method(parts.method).uri(
        parts
            .uri
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/"),
    );
    for (name, value) in &parts.headers {
        if name != http::header::HOST {
            upstream = upstream.header(name, value);
        }
    }
    let upstream = match upstream.body(kube::client::Body::from(bytes)) {
        Ok(r) => r,
        Err(e) => return (http::StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    };
    match client.send(upstream).await {
        Ok(response) => response.map(Body::new),
        Err(e) => (http::StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::Seen;

    #[test]
    fn discovery_and_writes_are_told_apart() {
        let seen = |m: &str, p: &str| Seen {
            method: m.into(),
            path: p.into(),
        };
        assert!(seen("GET", "/apis/route.openshift.io/v1").is_discovery());
        assert!(seen("GET", "/api/v1").is_discovery());
        assert!(!seen("GET", "/api/v1/namespaces/x/configmaps/y").is_discovery());
        assert!(!seen("GET", "/apis/route.openshift.io/v1/namespaces/x/routes").is_discovery());
        assert!(seen("PATCH", "/api/v1/namespaces/x/configmaps/y").is_write());
        assert!(!seen("GET", "/api/v1/configmaps?watch=true").is_write());
    }
}
