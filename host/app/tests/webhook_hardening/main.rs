//! The webhook HTTPS server against hostile and careless clients, and its TLS parameters
//! (issue #18): slow headers and bodies, hundreds of idle connections, wrong AdmissionReview
//! versions, HTTP/2 where it is off, old TLS versions, cipher suites and groups outside the
//! policy, and certificate rotation while requests are in flight.
//!
//! Real parts throughout: the host's TLS server with the `hello` plugin behind it (built by
//! `make plugins`), clients speaking TLS with rustls or raw bytes. The memory tests run the
//! server in a child process (this test binary started again, see `harness::child_server`) so
//! its VmRSS is the server's alone. Figures are printed (`--nocapture`) and recorded in
//! docs/reliability.md.

mod harness;
mod idle_connections;
mod keep_alive;
mod protocol;
mod rotation;
mod slow_clients;
mod tls_policy;
