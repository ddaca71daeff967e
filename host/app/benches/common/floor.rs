//! The floor of an admission figure: the webhook server's own TLS server (`tls::serve_on`: the
//! same rustls configuration, hyper connection handling, body limit and body deadline) behind
//! the same admission gate, answering every POST with one fixed, precomputed AdmissionReview
//! response once the body is read — no review parsed, no route looked up, no plugin called. What
//! a webhook costs above it is the review handling and the plugin call.
//!
//! In process ([`router`], served by the `admission` bench), or as a process of its own for the
//! peer bench: the bench binary runs itself again with `ODH_BENCH_FLOOR_SERVE=<addr>` and
//! `ODH_BENCH_FLOOR_CERT_DIR=<dir>` ([`serve_if_asked`], [`spawn`]), so its CPU is measured as
//! the other contenders' are, from `/proc/<pid>/stat`.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::any;
use odh_model_controller::tls::{TlsServerConfig, serve_on};
use odh_model_controller::webhook::{AdmissionGate, InFlightLimit};

const SERVE_ENV: &str = "ODH_BENCH_FLOOR_SERVE";
const CERT_DIR_ENV: &str = "ODH_BENCH_FLOOR_CERT_DIR";

/// The answer the floor gives every request: an allowed review of the uid the benches send (the
/// answer ours gives a review it allows unchanged).
pub const ANSWER: &[u8] = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"00000000-0000-0000-0000-000000000000","allowed":true}}"#;

/// The floor's router: every path, the body read in full, [`ANSWER`] returned; behind an
/// admission gate as the webhook router is (room for 64 requests, above the 16 the benches keep
/// in flight).
pub fn router() -> Router {
    let handler = |body: Result<Bytes, BytesRejection>| async move {
        match body {
            Ok(_) => (
                [(header::CONTENT_TYPE, "application/json")],
                Bytes::from_static(ANSWER),
            )
                .into_response(),
            Err(rejection) => (rejection.status(), rejection.body_text()).into_response(),
        }
    };
    let gate = AdmissionGate::new(InFlightLimit::new(64));
    Router::new()
        .route("/", any(handler))
        .route("/{*path}", any(handler))
        .layer(axum::middleware::from_fn(move |request, next| {
            gate.clone().admit(request, next)
        }))
}

/// Serves the floor on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    cert_dir: &Path,
    shutdown: impl std::future::Future<Output = ()>,
) -> anyhow::Result<()> {
    let config = TlsServerConfig {
        bind: listener.local_addr()?,
        cert_dir: cert_dir.to_path_buf(),
        ..TlsServerConfig::default()
    };
    serve_on(listener, config, router(), shutdown).await
}

/// When this process was started by [`spawn`]: serves the floor until killed (never returns).
pub fn serve_if_asked() {
    let (Some(addr), Some(cert_dir)) =
        (std::env::var_os(SERVE_ENV), std::env::var_os(CERT_DIR_ENV))
    else {
        return;
    };
    let addr: SocketAddr = addr
        .to_str()
        .and_then(|a| a.parse().ok())
        .expect("ODH_BENCH_FLOOR_SERVE: an address");
    // As the host's runtime: tokio's multi-threaded scheduler, one worker per core.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let result = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        serve(listener, Path::new(&cert_dir), std::future::pending()).await
    });
    if let Err(e) = result {
        eprintln!("floor server: {e:#}");
        std::process::exit(1);
    }
    std::process::exit(0);
}

/// This bench binary again, as the floor's server on `addr` with the certificate in `cert_dir`.
pub fn spawn(addr: SocketAddr, cert_dir: &Path, log: &Path) -> anyhow::Result<Child> {
    let log = std::fs::File::create(log)?;
    Ok(Command::new(std::env::current_exe()?)
        .env(SERVE_ENV, addr.to_string())
        .env(CERT_DIR_ENV, cert_dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()?)
}
