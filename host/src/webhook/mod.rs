//! The admission webhook HTTPS server.
//!
//! Every webhook a plugin's manifest declares becomes a `POST` route at exactly its path
//! ([`WebhookTable`], [`webhook_router`]); the server ([`serve`]) speaks TLS 1.2/1.3 with the
//! certificate in `tls.crt`/`tls.key` of the cert dir, reloaded when the files change, and
//! HTTP/1.1 only unless HTTP/2 is enabled, as upstream's controller-runtime server does.

mod body_deadline;
pub mod config_sync;
mod invalid;
pub mod registration;
mod review;
mod router;
mod server;
mod serving_cert;
mod side_effects;
mod table;
pub mod verdict;

pub use review::{ADMISSION_API_VERSION, ReviewError, parse_review, review_response};
pub use router::{live_webhook_router, webhook_router, with_body_limit};
pub use server::{
    BODY_READ_TIMEOUT, DEFAULT_BODY_LIMIT, DEFAULT_CERT_DIR, DEFAULT_PORT, SHUTDOWN_GRACE,
    ServerTuning, TlsPolicy, TlsServer, TlsServerConfig, crypto_provider, serve, serve_on,
    tls_server_config, tls_server_config_with,
};
pub use serving_cert::{CERT_FILE, DEBOUNCE_INTERVAL, KEY_FILE, ReloadingCert};
pub use side_effects::{NoSideEffects, SideEffectError, SideEffectFuture, SideEffectSink};
pub use table::{
    LiveWebhookTable, WebhookRoute, WebhookTable, WebhookTableError, routable, selector_admits,
};
pub use verdict::Verdict;
