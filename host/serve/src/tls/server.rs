//! The HTTPS server: TLS 1.2/1.3 with a reloading serving certificate, HTTP/1.1 only unless
//! HTTP/2 is enabled, graceful shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tracing::{debug, info, warn};

use super::body_deadline;
use super::conn_clock::{Clocked, ConnClock, ConnLimits, TimedIo};
use super::serving_cert::ReloadingCert;

pub const DEFAULT_PORT: u16 = 9443;
pub const DEFAULT_CERT_DIR: &str = "/tmp/k8s-webhook-server/serving-certs";
pub const DEFAULT_BODY_LIMIT: usize = 8 * 1024 * 1024;

/// Limits request bodies to `limit` bytes; a larger body is answered with 413.
pub fn with_body_limit(router: Router, limit: usize) -> Router {
    router.layer(axum::extract::DefaultBodyLimit::max(limit))
}

/// How long a client may take to complete the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may take to send a request's headers. hyper's timer also runs while a
/// keep-alive connection waits for its next request, so this is the idle timeout as well.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a client may take to send a request's body once its headers arrived: the API
/// server waits at most 30 s (`timeoutSeconds`) for a webhook's answer.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How long open connections may take to finish once shutdown begins.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// How often an HTTP/2 connection is pinged, and how long the answer may take.
const HTTP2_KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(30);
const HTTP2_KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(20);
/// How long an HTTP/2 connection is served before it is asked to go away.
pub const MAX_HTTP2_CONNECTION_AGE: Duration = Duration::from_secs(600);

/// Where and how the webhook server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsServerConfig {
    /// What the server is called in logs.
    pub name: &'static str,
    pub bind: SocketAddr,
    /// Holds `tls.crt` and `tls.key`; changes are picked up without a restart.
    pub cert_dir: PathBuf,
    /// Offer `h2` besides `http/1.1` (ALPN) and serve HTTP/2.
    pub enable_http2: bool,
    /// Largest request body, in bytes; a larger one is answered with 413.
    pub body_limit: usize,
}

impl Default for TlsServerConfig {
    /// Upstream's defaults: port 9443 on all (IPv4) interfaces, controller-runtime's cert dir,
    /// HTTP/1.1 only, 8 MiB bodies.
    fn default() -> Self {
        Self {
            name: "webhook",
            bind: SocketAddr::from(([0, 0, 0, 0], DEFAULT_PORT)),
            cert_dir: PathBuf::from(DEFAULT_CERT_DIR),
            enable_http2: false,
            body_limit: DEFAULT_BODY_LIMIT,
        }
    }
}

/// Which protocol parameters a TLS server offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TlsPolicy {
    /// rustls' defaults (TLS 1.3 and 1.2, its cipher suites and groups).
    #[default]
    Default,
    /// The model-serving-api's (docs/plugins/llm-gateway.md, "Server behaviour"): TLS 1.2 at least, for TLS 1.2 only the four
    /// ECDHE suites with AES-GCM, key exchange on P-256 and P-384 only. TLS 1.3 keeps its
    /// three suites (Go does not let them be chosen either).
    ModelServingApi,
}

impl TlsPolicy {
    fn provider(self) -> Arc<rustls::crypto::CryptoProvider> {
        use rustls::{CipherSuite as Cs, NamedGroup};
        match self {
            TlsPolicy::Default => crypto_provider(),
            // The FIPS build drops ChaCha20 from this list (odh_crypto::tls::cipher_suites).
            TlsPolicy::ModelServingApi => Arc::new(rustls::crypto::CryptoProvider {
                cipher_suites: odh_crypto::tls::cipher_suites(&[
                    Cs::TLS13_AES_128_GCM_SHA256,
                    Cs::TLS13_AES_256_GCM_SHA384,
                    Cs::TLS13_CHACHA20_POLY1305_SHA256,
                    Cs::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
                    Cs::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
                    Cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
                    Cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
                ]),
                kx_groups: odh_crypto::tls::kx_groups(&[
                    NamedGroup::secp256r1,
                    NamedGroup::secp384r1,
                ]),
                ..(*crypto_provider()).clone()
            }),
        }
    }
}

/// How a TLS server treats connections beyond [`TlsServerConfig`]; the defaults are the
/// webhook server's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerTuning {
    pub tls_policy: TlsPolicy,
    /// How long a client may take to send a request's headers (and, without `idle_timeout`,
    /// hyper's timer running while a keep-alive connection waits, how long such a connection
    /// may stay idle).
    pub header_read_timeout: Duration,
    /// How long an HTTP/1 keep-alive connection may wait for its next request (Go's
    /// `IdleTimeout`); the head timeout then runs from a request's first byte only.
    pub idle_timeout: Option<Duration>,
    /// How long a client may take to send a request's body once its headers arrived; a body
    /// still arriving then is answered with 408 and its connection closed.
    pub body_read_timeout: Duration,
    /// The largest request head, in bytes (hyper's read buffer; at least 8 KiB).
    pub max_header_bytes: Option<usize>,
    /// How long open connections may take to finish once shutdown begins.
    pub shutdown_grace: Duration,
    /// How long an HTTP/2 connection is served before it is asked to go away.
    pub max_http2_connection_age: Duration,
}

impl Default for ServerTuning {
    fn default() -> Self {
        Self {
            tls_policy: TlsPolicy::Default,
            header_read_timeout: HEADER_READ_TIMEOUT,
            idle_timeout: None,
            body_read_timeout: BODY_READ_TIMEOUT,
            max_header_bytes: None,
            shutdown_grace: SHUTDOWN_GRACE,
            max_http2_connection_age: MAX_HTTP2_CONNECTION_AGE,
        }
    }
}

/// The rustls configuration: [`crypto_provider`], TLS 1.3 and 1.2, no client authentication, ALPN
/// `http/1.1` (or `h2`, `http/1.1`), certificates from `cert`.
pub fn tls_server_config(
    cert: Arc<ReloadingCert>,
    enable_http2: bool,
) -> anyhow::Result<rustls::ServerConfig> {
    tls_server_config_with(cert, enable_http2, TlsPolicy::Default)
}

/// [`tls_server_config`] with the protocol parameters of `policy`.
pub fn tls_server_config_with(
    cert: Arc<ReloadingCert>,
    enable_http2: bool,
    policy: TlsPolicy,
) -> anyhow::Result<rustls::ServerConfig> {
    let mut config = rustls::ServerConfig::builder_with_provider(policy.provider())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .context("configuring TLS versions")?
        .with_no_client_auth()
        .with_cert_resolver(cert);
    config.alpn_protocols = if enable_http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(config)
}

/// The crypto provider every TLS object of the server uses: ring, or AWS-LC's FIPS module in
/// the FIPS build (odh-crypto).
pub fn crypto_provider() -> Arc<rustls::crypto::CryptoProvider> {
    odh_crypto::tls::provider()
}

/// A TLS server bound to its address with its certificate source, not yet serving. Binding
/// first lets start-up fail on an address in use (as controller-runtime does) and lets
/// readiness watch the certificate before the first request.
pub struct TlsServer {
    listener: TcpListener,
    config: TlsServerConfig,
    cert: Arc<ReloadingCert>,
    tuning: ServerTuning,
}

impl TlsServer {
    /// Binds `config.bind`; an address that cannot be bound is an error naming the server.
    pub async fn bind(config: TlsServerConfig) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(config.bind)
            .await
            .with_context(|| format!("{} server: listening on {}", config.name, config.bind))?;
        Ok(Self::on(listener, config))
    }

    /// A server on a listener bound already (`config.bind` is ignored), e.g. to port 0.
    pub fn on(listener: TcpListener, config: TlsServerConfig) -> Self {
        let cert = Arc::new(ReloadingCert::new(&config.cert_dir, crypto_provider()));
        Self {
            listener,
            config,
            cert,
            tuning: ServerTuning::default(),
        }
    }

    /// A server on a listener bound already, serving `cert` (no certificate directory).
    pub fn on_with_certificate(
        listener: TcpListener,
        config: TlsServerConfig,
        cert: Arc<ReloadingCert>,
    ) -> Self {
        Self {
            listener,
            config,
            cert,
            tuning: ServerTuning::default(),
        }
    }

    /// Serves `cert` instead of a reloader of `config.cert_dir` (servers sharing one).
    pub fn with_certificate(mut self, cert: Arc<ReloadingCert>) -> Self {
        self.cert = cert;
        self
    }

    /// Other protocol parameters, timeouts and limits.
    pub fn tuned(mut self, tuning: ServerTuning) -> Self {
        self.tuning = tuning;
        self
    }

    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr().ok()
    }

    /// Its certificate: [`ReloadingCert::is_loaded`] tells whether it can serve.
    pub fn certificate(&self) -> Arc<ReloadingCert> {
        self.cert.clone()
    }

    /// Serves `router` until `shutdown` completes, then lets open connections finish (at most
    /// [`SHUTDOWN_GRACE`]).
    pub async fn serve(
        self,
        router: Router,
        shutdown: impl Future<Output = ()>,
    ) -> anyhow::Result<()> {
        let Self {
            listener,
            config,
            cert,
            tuning,
        } = self;
        let tls = tls_server_config_with(cert.clone(), config.enable_http2, tuning.tls_policy)?;
        let acceptor = TlsAcceptor::from(Arc::new(tls));
        let body_read_timeout = tuning.body_read_timeout;
        let router = with_body_limit(router, config.body_limit).layer(axum::middleware::from_fn(
            move |req, next| body_deadline::enforce(body_read_timeout, req, next),
        ));

        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(TokioTimer::new())
            // With an idle timeout, the connection's clock times heads and idle waits apart.
            .header_read_timeout(
                tuning
                    .idle_timeout
                    .is_none()
                    .then_some(tuning.header_read_timeout),
            );
        if let Some(max) = tuning.max_header_bytes {
            builder.http1().max_buf_size(max.max(8192));
        }
        if config.enable_http2 {
            // Pings find a peer gone without a FIN (a node lost) instead of holding its
            // connection until the age limit.
            builder
                .http2()
                .timer(TokioTimer::new())
                .keep_alive_interval(Some(HTTP2_KEEP_ALIVE_INTERVAL))
                .keep_alive_timeout(HTTP2_KEEP_ALIVE_TIMEOUT);
        } else {
            builder = builder.http1_only();
        }
        let builder = Arc::new(builder);

        let local = listener.local_addr().ok();
        info!(server = config.name, address = ?local, cert_dir = %config.cert_dir.display(), http2 = config.enable_http2, "serving over TLS");

        // The certificate is looked at on handshakes; this also catches the first one (or a
        // rotation) when nobody connects, so readiness follows the files.
        let watcher = {
            let cert = cert.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(cert.interval());
                loop {
                    tick.tick().await;
                    cert.reload_if_changed();
                }
            })
        };

        let (stop, stopped) = watch::channel(false);
        let mut connections = JoinSet::new();
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok((tcp, peer)) => {
                        let limits = tuning.idle_timeout.map(|idle| ConnLimits {
                            head: tuning.header_read_timeout,
                            idle,
                        });
                        connections.spawn(serve_connection(
                            tcp,
                            peer,
                            acceptor.clone(),
                            builder.clone(),
                            router.clone(),
                            stopped.clone(),
                            tuning.max_http2_connection_age,
                            limits,
                        ));
                    }
                    Err(e) => {
                        // Usually out of file descriptors: back off instead of spinning.
                        warn!(server = config.name, "accepting a connection failed: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                },
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
        drop(listener);
        watcher.abort();
        info!(
            server = config.name,
            open_connections = connections.len(),
            "TLS server shutting down"
        );
        let _ = stop.send(true);
        let grace = tuning.shutdown_grace;
        let drained = tokio::time::timeout(grace, async {
            while connections.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            warn!(
                server = config.name,
                open_connections = connections.len(),
                "connections still open after {grace:?}; closing them"
            );
            connections.shutdown().await;
        }
        Ok(())
    }
}

/// Binds `config.bind` and serves `router` until `shutdown` completes.
pub async fn serve(
    config: TlsServerConfig,
    router: Router,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    TlsServer::bind(config).await?.serve(router, shutdown).await
}

/// [`serve`] on a listener bound already (`config.bind` is ignored), e.g. to port 0.
pub async fn serve_on(
    listener: TcpListener,
    config: TlsServerConfig,
    router: Router,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    TlsServer::on(listener, config)
        .serve(router, shutdown)
        .await
}

/// Serves one connection until it ends, the server stops or it reaches its maximum age; then
/// lets the requests in progress finish. (A macro: hyper-util's two connection types share no
/// trait for `graceful_shutdown` without another feature.)
macro_rules! drive {
    ($conn:expr, $peer:expr, $stopped:expr, $max_age:expr) => {{
        let peer = $peer;
        let mut stopped = $stopped;
        let max_age: Option<Duration> = $max_age;
        let mut conn = std::pin::pin!($conn);
        let aged = async {
            match max_age {
                Some(age) => tokio::time::sleep(age).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    debug!(%peer, "webhook connection ended with an error: {e}");
                }
                return;
            }
            _ = stopped.wait_for(|s| *s) => {}
            _ = aged => {}
        }
        conn.as_mut().graceful_shutdown();
        if let Err(e) = conn.await {
            debug!(%peer, "webhook connection ended with an error: {e}");
        }
    }};
}

#[allow(clippy::too_many_arguments)]
async fn serve_connection(
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
    acceptor: TlsAcceptor,
    builder: Arc<auto::Builder<TokioExecutor>>,
    router: Router,
    stopped: watch::Receiver<bool>,
    max_http2_age: Duration,
    limits: Option<ConnLimits>,
) {
    let _ = tcp.set_nodelay(true);
    let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(e)) => {
            debug!(%peer, "webhook TLS handshake failed: {e}");
            return;
        }
        Err(_) => {
            debug!(%peer, "webhook TLS handshake timed out");
            return;
        }
    };
    // HTTP/2 has no idle timeout (hyper's header timer is HTTP/1's): an HTTP/2 connection is
    // told to go away (GOAWAY: the streams in progress finish, the client opens another)
    // after a while ([`MAX_HTTP2_CONNECTION_AGE`] by default), so an idle one is not held for
    // good. HTTP/1 keeps its header timer, or with an idle timeout the connection's clock
    // (conn_clock.rs): closing a keep-alive connection can race a request the client is
    // sending on it, which GOAWAY cannot.
    let http2 = tls.get_ref().1.alpn_protocol() == Some(b"h2".as_slice());
    let service = TowerToHyperService::new(router);
    match limits.filter(|_| !http2) {
        Some(limits) => {
            let clock = ConnClock::new(limits);
            let io = TokioIo::new(TimedIo::new(tls, clock.clone()));
            let service = Clocked {
                inner: service,
                clock,
            };
            drive!(builder.serve_connection(io, service), peer, stopped, None)
        }
        None => {
            let age = http2.then_some(max_http2_age);
            drive!(
                builder.serve_connection(TokioIo::new(tls), service),
                peer,
                stopped,
                age
            )
        }
    }
}
