//! Requests a webhook server must refuse clearly: AdmissionReviews of another apiVersion, and
//! HTTP/2 spoken without ALPN ("prior knowledge") when HTTP/2 is off.

use hyper::body::Bytes;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::harness::{
    PATH, Server, Settings, client_config, connect_with, default_client, http1, post_on, review,
};

#[tokio::test]
async fn reviews_of_another_api_version_get_a_400_naming_the_expected_one() {
    let server = Server::start(Settings::default()).await;
    let cases: [(Value, &str); 6] = [
        (
            json!("admission.k8s.io/v1beta1"),
            r#"got apiVersion "admission.k8s.io/v1beta1""#,
        ),
        (
            json!("admission.k8s.io/v2"),
            r#"got apiVersion "admission.k8s.io/v2""#,
        ),
        (json!("garbage 🙂"), r#"got apiVersion "garbage 🙂""#),
        (json!(""), r#"got apiVersion """#),
        (json!(1), "got apiVersion (none)"),
        (Value::Null, "got apiVersion (none)"),
    ];
    for (version, names_it) in cases {
        // Otherwise a good request, as an API server of that version would send it.
        let mut body = review("u-version");
        body["apiVersion"] = version.clone();
        let tls = connect_with(server.addr, default_client(&server.ca.der()))
            .await
            .unwrap();
        let mut sender = http1(tls).await.unwrap();
        let (status, answer) = post_on(
            &mut sender,
            server.addr,
            PATH,
            serde_json::to_vec(&body).unwrap().into(),
        )
        .await
        .unwrap();
        let answer = String::from_utf8_lossy(&answer);
        assert_eq!(status, 400, "{version}: {answer}");
        assert!(
            answer.contains(r#"expected apiVersion "admission.k8s.io/v1""#)
                && answer.contains(names_it),
            "{version}: {answer:?}"
        );
        // The connection still serves a good request afterwards.
        let (status, _) = post_on(
            &mut sender,
            server.addr,
            PATH,
            serde_json::to_vec(&review("u-next")).unwrap().into(),
        )
        .await
        .unwrap();
        assert_eq!(status, 200);
    }
    server.stop().await;
}

/// The HTTP/2 connection preface followed by an empty SETTINGS frame.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";

/// Speaks HTTP/2 without negotiating it (no ALPN offered) and returns what the server sent back
/// (until it closed the connection or stayed silent for 2 s).
async fn prior_knowledge(server: &Server) -> Vec<u8> {
    let config = client_config(
        &server.ca.der(),
        rustls::crypto::ring::default_provider(),
        rustls::DEFAULT_VERSIONS,
        &[],
    );
    let mut tls = connect_with(server.addr, config).await.unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), None, "no ALPN was offered");
    tls.write_all(H2_PREFACE).await.unwrap();
    tls.flush().await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while let Ok(Ok(n)) =
        tokio::time::timeout(std::time::Duration::from_secs(2), tls.read(&mut buf)).await
    {
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    got
}

/// Whether `bytes` start with an HTTP/2 SETTINGS frame (type 4 on stream 0).
fn starts_with_settings(bytes: &[u8]) -> bool {
    bytes.len() >= 9 && bytes[3] == 0x04 && bytes[5..9] == [0, 0, 0, 0]
}

#[tokio::test]
async fn http2_prior_knowledge_is_refused_unless_http2_is_enabled() {
    let off = Server::start(Settings::default()).await;
    let answer = prior_knowledge(&off).await;
    assert!(
        !starts_with_settings(&answer),
        "HTTP/2 spoken while off: {answer:?}"
    );
    // If anything comes back, it is an HTTP/1.1 refusal, never a success.
    let text = String::from_utf8_lossy(&answer);
    assert!(
        answer.is_empty() || (text.starts_with("HTTP/1.1 4") || text.starts_with("HTTP/1.1 5")),
        "{text:?}"
    );
    println!(
        "HTTP/2 prior knowledge with HTTP/2 off: {:?}",
        text.lines().next().unwrap_or("(connection closed)")
    );
    off.stop().await;

    // The same bytes to a server with HTTP/2 on do get an HTTP/2 answer: the refusal above is
    // the setting's doing, not a malformed preface.
    let on = Server::start(Settings {
        http2: true,
        ..Settings::default()
    })
    .await;
    let answer = prior_knowledge(&on).await;
    assert!(starts_with_settings(&answer), "{answer:?}");
    on.stop().await;
}

#[tokio::test]
async fn an_empty_body_and_a_truncated_body_are_errors_not_hangs() {
    let server = Server::start(Settings::default()).await;
    let tls = connect_with(server.addr, default_client(&server.ca.der()))
        .await
        .unwrap();
    let mut sender = http1(tls).await.unwrap();
    let (status, answer) = post_on(&mut sender, server.addr, PATH, Bytes::new())
        .await
        .unwrap();
    assert_eq!(status, 400, "{}", String::from_utf8_lossy(&answer));
    // A Content-Length larger than what is sent, then the client closes its side: the server
    // gives up on the body at once rather than at the deadline.
    let mut tls = connect_with(server.addr, default_client(&server.ca.der()))
        .await
        .unwrap();
    let head = format!(
        "POST {PATH} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"apiVersion\"",
        server.addr
    );
    tls.write_all(head.as_bytes()).await.unwrap();
    tls.shutdown().await.unwrap();
    let mut got = Vec::new();
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        tls.read_to_end(&mut got),
    )
    .await;
    assert!(
        read.is_ok(),
        "the server held a half-closed connection for 10 s"
    );
    let text = String::from_utf8_lossy(&got);
    assert!(!text.starts_with("HTTP/1.1 2"), "{text:?}");
    server.stop().await;
}
