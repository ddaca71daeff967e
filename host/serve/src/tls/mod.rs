//! The HTTPS server every TLS listener of the process uses (admission webhooks, the plugins' API
//! routes, the model-serving-api and its metrics): TLS 1.2/1.3 with a serving certificate
//! reloaded when its files change, HTTP/1.1 only unless HTTP/2 is enabled, deadlines for slow
//! clients, and a graceful stop.

mod body_deadline;
mod conn_clock;
mod server;
mod serving_cert;

pub use server::{
    BODY_READ_TIMEOUT, DEFAULT_BODY_LIMIT, DEFAULT_CERT_DIR, DEFAULT_PORT, SHUTDOWN_GRACE,
    ServerTuning, TlsPolicy, TlsServer, TlsServerConfig, crypto_provider, serve, serve_on,
    tls_server_config, tls_server_config_with, with_body_limit,
};
pub use serving_cert::{CERT_FILE, DEBOUNCE_INTERVAL, KEY_FILE, ReloadingCert};
