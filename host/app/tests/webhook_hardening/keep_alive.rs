//! Go's `IdleTimeout` on the HTTPS server (the model-serving-api's `IDLE_TIMEOUT`): a keep-alive
//! connection waits that long for its next request, while a request's head still has only the
//! head timeout from its first byte. Without it, hyper's head timer also runs while a connection
//! idles, and the connection is gone before the next request.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::harness::{
    PATH, Server, Settings, connect_with, default_client, http1, post_on, review,
};

const HEAD: Duration = Duration::from_secs(1);

/// Until the server closes `tls` (EOF or an error), at most `within`; false if still open.
async fn closed_within(
    tls: &mut tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
    within: Duration,
) -> bool {
    let mut buf = [0u8; 256];
    tokio::time::timeout(within, async {
        while !matches!(tls.read(&mut buf).await, Ok(0) | Err(_)) {}
    })
    .await
    .is_ok()
}

/// A server with the head timeout and `idle`, and a connection to it that has had one request
/// answered.
async fn kept_connection(
    idle: Duration,
) -> (
    Server,
    hyper::client::conn::http1::SendRequest<http_body_util::Full<hyper::body::Bytes>>,
) {
    let server = Server::start(Settings {
        header_read_timeout: HEAD,
        idle_timeout: Some(idle),
        ..Settings::default()
    })
    .await;
    let tls = connect_with(server.addr, default_client(&server.ca.der()))
        .await
        .unwrap();
    let mut sender = http1(tls).await.unwrap();
    let body = serde_json::to_vec(&review("first")).unwrap();
    let (status, _) = post_on(&mut sender, server.addr, PATH, body.into())
        .await
        .unwrap();
    assert_eq!(status, 200);
    (server, sender)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keep_alive_connection_waits_the_idle_timeout_not_the_head_timeout() {
    let (server, mut sender) = kept_connection(Duration::from_secs(30)).await;
    let ca = server.ca.der();
    // Idle for three head timeouts: the idle timeout holds the connection open.
    tokio::time::sleep(3 * HEAD).await;
    assert!(!sender.is_closed(), "the idle connection was closed");
    let body = serde_json::to_vec(&review("second")).unwrap();
    let (status, _) = post_on(&mut sender, server.addr, PATH, body.into())
        .await
        .expect("the second request on the kept connection");
    assert_eq!(status, 200);

    // A request whose head stops after its first line: the head timeout, not the idle one.
    let mut tls = connect_with(server.addr, default_client(&ca))
        .await
        .unwrap();
    tls.write_all(format!("POST {PATH} HTTP/1.1\r\n").as_bytes())
        .await
        .unwrap();
    tls.flush().await.unwrap();
    assert!(
        closed_within(&mut tls, Duration::from_secs(15)).await,
        "a half-sent head was not cut at the head timeout"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_is_closed_at_the_idle_timeout() {
    let (server, sender) = kept_connection(2 * HEAD).await;
    let closed = tokio::time::timeout(Duration::from_secs(15), async {
        while !sender.is_closed() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(closed.is_ok(), "the idle connection was never closed");
    server.stop().await;
}
