//! The plugin-source fetcher's address checks end to end (docs/security.md T17), on the real
//! apiserver: a registry the plugins ConfigMap names (a stand-in on loopback, plain HTTP as a
//! registry on the same machine) answers with a token realm or a redirect that points at the
//! cloud metadata service, at one of the controller's own addresses, or at loopback from a
//! registry that is not on loopback. The candidate is refused with a status and an Event naming
//! the host and why, and nothing connects there: a listener on the controller's own address
//! is still without a connection afterwards.

mod common;

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use odh_model_controller::registry::{STATUS_CONFIGMAP_NAME, SwapResult};
use odh_test_support::TestContext;
use serde_json::Value;

/// The address a packet to the outside would leave from: one of this host's own, not loopback.
/// Connecting a UDP socket sends nothing.
fn own_address() -> Option<IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("203.0.113.7:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// A listener nobody should connect to. A connection the fetcher made would be complete (the
/// kernel accepts it into the backlog) before the fetcher could fail on it, so checking the
/// backlog after the fetch failed tells whether one was made.
struct Untouched(std::net::TcpListener);

impl Untouched {
    fn bind(ip: IpAddr) -> anyhow::Result<Self> {
        let listener = std::net::TcpListener::bind(SocketAddr::new(ip, 0))?;
        listener.set_nonblocking(true)?;
        Ok(Self(listener))
    }

    fn addr(&self) -> SocketAddr {
        self.0.local_addr().expect("a bound listener")
    }

    /// `host:port` as a URL writes it.
    fn authority(&self) -> String {
        match self.addr() {
            SocketAddr::V4(a) => a.to_string(),
            SocketAddr::V6(a) => format!("[{}]:{}", a.ip(), a.port()),
        }
    }

    fn assert_no_connection(&self, case: &str) {
        match self.0.accept() {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Ok((_, peer)) => panic!(
                "{case}: the fetcher connected to {} from {peer}",
                self.addr()
            ),
            Err(e) => panic!("{case}: accept: {e}"),
        }
    }
}

/// What the stand-in registry answers every request with.
#[derive(Clone)]
enum Answer {
    /// A `401` whose challenge sends the client to this realm for a token.
    Challenge(String),
    /// A `307` to this location (as registries send blob downloads to storage elsewhere).
    Redirect(String),
    /// `200` with this body.
    Ok(&'static str),
}

impl IntoResponse for Answer {
    fn into_response(self) -> Response {
        match self {
            Answer::Challenge(realm) => {
                let value = format!("Bearer realm=\"{realm}\",service=\"odh-test\"");
                (
                    StatusCode::UNAUTHORIZED,
                    [(
                        header::WWW_AUTHENTICATE,
                        HeaderValue::from_str(&value).unwrap(),
                    )],
                    r#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}"#,
                )
                    .into_response()
            }
            Answer::Redirect(location) => (
                StatusCode::TEMPORARY_REDIRECT,
                [(header::LOCATION, HeaderValue::from_str(&location).unwrap())],
            )
                .into_response(),
            Answer::Ok(body) => body.into_response(),
        }
    }
}

/// A stand-in registry on loopback answering every request with `answer`; returns its address
/// and how many requests it got.
async fn registry(
    answer: Answer,
) -> anyhow::Result<(SocketAddr, Arc<AtomicUsize>, tokio::task::JoinHandle<()>)> {
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    let app = axum::Router::new().fallback(move || {
        counted.fetch_add(1, Ordering::SeqCst);
        let answer = answer.clone();
        async move { answer }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((addr, hits, task))
}

/// Writes the plugins ConfigMap with an `oci://` entry for misbehave and applies it.
async fn configure(
    t: &TestContext,
    registry: &odh_model_controller::registry::Registry,
    reference: &str,
) -> anyhow::Result<SwapResult> {
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("odh-model-controller-plugins".into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "plugins.yaml".to_string(),
            format!(
                "plugins:\n  misbehave:\n    source: oci://{reference}\n    sha256: {}\n",
                "0".repeat(64)
            ),
        )])),
        ..Default::default()
    };
    let cm = Api::<ConfigMap>::namespaced(t.client.clone(), &t.namespace)
        .patch(
            "odh-model-controller-plugins",
            &PatchParams::apply("test").force(),
            &Patch::Apply(&cm),
        )
        .await?;
    let mut results = registry
        .apply_configmap(Some(&cm))
        .await
        .map_err(anyhow::Error::msg)?;
    Ok(results.remove("misbehave").unwrap_or(SwapResult::Unchanged))
}

async fn last_error(t: &TestContext) -> anyhow::Result<String> {
    let cm = Api::<ConfigMap>::namespaced(t.client.clone(), &t.namespace)
        .get(STATUS_CONFIGMAP_NAME)
        .await?;
    let status: Value = serde_json::from_str(&cm.data.unwrap_or_default()["misbehave"])?;
    Ok(status["lastError"].as_str().unwrap_or_default().to_string())
}

/// A registry's token realm and its redirects are the registry's choice: one leading to the
/// metadata service (plain or in an IPv6 disguise) or to the controller's own address is
/// refused before any connection, and the plugin's status and a `PluginRejected` Event say
/// which host and why.
#[tokio::test]
async fn a_registry_cannot_send_the_fetch_to_the_metadata_service_or_the_controllers_own_address()
-> anyhow::Result<()> {
    let t = TestContext::new("source-addresses").await?;
    let (engine, slot, _) = common::misbehave_slot()?;
    let plugins = common::registry(&t, engine, &slot);
    let own = own_address();
    let listener = own.map(Untouched::bind).transpose()?;
    let mut cases = vec![
        (
            "a token realm at the metadata service",
            Answer::Challenge("https://169.254.169.254/latest/api/token".into()),
            "not connecting to 169.254.169.254: link-local (169.254.0.0/16, where cloud metadata services answer)",
        ),
        (
            "a redirect to the metadata service written as NAT64",
            Answer::Redirect("https://[64:ff9b::a9fe:a9fe]/latest/meta-data/".into()),
            "not connecting to 64:ff9b::a9fe:a9fe: link-local (169.254.0.0/16, where cloud metadata services answer) (169.254.169.254) written inside an IPv6 address",
        ),
    ];
    let own_cases = listener.as_ref().map(|l| {
        let url = format!("https://{}/token", l.authority());
        let why = format!(
            "not connecting to {}: one of the controller's own addresses",
            l.addr().ip()
        );
        [
            (
                "a token realm at the controller's own address",
                Answer::Challenge(url.clone()),
                why.clone(),
            ),
            (
                "a redirect to the controller's own address",
                Answer::Redirect(url),
                why,
            ),
        ]
    });
    match &own_cases {
        Some(own_cases) => {
            for (case, answer, why) in own_cases {
                cases.push((case, answer.clone(), why.as_str()));
            }
        }
        None => {
            eprintln!("no non-loopback address on this host: the own-address cases are skipped")
        }
    }
    for (i, (case, answer, want)) in cases.into_iter().enumerate() {
        let (addr, hits, task) = registry(answer).await?;
        let result = configure(&t, &plugins, &format!("{addr}/odh/misbehave-{i}:v1")).await?;
        let SwapResult::Rejected(message) = result else {
            panic!("{case}: expected a rejection, got {result:?}");
        };
        assert!(message.contains(want), "{case}: {message}");
        assert!(
            hits.load(Ordering::SeqCst) >= 1,
            "{case}: the registry was asked first"
        );
        let status = last_error(&t).await?;
        assert!(status.contains(want), "{case}: status {status}");
        let events = common::rejection_notes(&t).await?;
        assert!(
            events.iter().any(|n| n.contains(want)),
            "{case}: events {events:?}"
        );
        if let Some(listener) = &listener {
            listener.assert_no_connection(case);
        }
        task.abort();
    }
    assert_eq!(
        own.is_some(),
        own_cases.is_some(),
        "the own-address cases ran wherever the host has such an address"
    );
    Ok(())
}

/// Loopback is reached only from a source on loopback: a token realm or redirect on loopback
/// that a registry elsewhere names is refused before connecting, while the same URL from a
/// registry on loopback (the admin's own machine) is fetched.
#[tokio::test]
async fn only_a_source_on_loopback_may_lead_to_loopback() -> anyhow::Result<()> {
    use odh_model_controller::registry::http as source_http;
    let target = Untouched::bind("127.0.0.1".parse()?)?;
    let url = format!("http://{}/token", target.authority());
    for origin in ["https://quay.io", "https://10.217.4.12:5000"] {
        let err = source_http::send_named_by(
            origin,
            ::http::Method::GET,
            &url,
            ::http::HeaderMap::new(),
            Default::default(),
            &[],
            1024,
        )
        .await
        .expect_err("loopback named by a registry elsewhere");
        assert!(
            err.contains("not connecting to 127.0.0.1: loopback, reached only from a plugin source on loopback"),
            "{origin}: {err}"
        );
        target.assert_no_connection(origin);
    }
    // From a registry on loopback, the same kind of URL is fetched.
    let (addr, hits, task) = registry(Answer::Ok("token")).await?;
    let response = source_http::send_named_by(
        "http://127.0.0.1:5000",
        ::http::Method::GET,
        &format!("http://{addr}/token"),
        ::http::HeaderMap::new(),
        Default::default(),
        &[],
        1024,
    )
    .await
    .map_err(anyhow::Error::msg)?;
    assert_eq!(
        (response.status.as_u16(), &response.body[..]),
        (200, &b"token"[..])
    );
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    task.abort();
    Ok(())
}
