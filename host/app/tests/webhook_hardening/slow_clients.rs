//! Clients that trickle: headers a line at a time that never end, bodies a byte at a time that
//! never complete (with a Content-Length, and chunked). The header read timeout cuts off the
//! first kind, the body read timeout (408) the second; meanwhile other clients are served at
//! normal latency and the server's memory stays bounded.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinSet;

use crate::harness::{
    ChildServer, HEAVY, PATH, Settings, connect_with, default_client, served_within,
};

const SLOW: usize = 50;
const HEADER_TIMEOUT: Duration = Duration::from_secs(3);
const BODY_TIMEOUT: Duration = Duration::from_secs(3);
/// Every slow client is cut off within its timeout plus this (a loaded 2-core machine).
const SLACK: Duration = Duration::from_secs(10);
const SERVED_WITHIN: Duration = Duration::from_secs(2);
const TRICKLE: Duration = Duration::from_millis(250);

#[derive(Clone, Copy, Debug)]
enum Kind {
    /// Header lines, one per tick, never the blank line.
    Headers,
    /// Complete headers with `Content-Length: 100000`, then one body byte per tick.
    Body,
    /// Complete headers, chunked, then one one-byte chunk per tick.
    Chunked,
}

/// What happened to one slow client: after how long the server ended it, and what it had
/// answered by then.
struct Outcome {
    kind: Kind,
    after: Duration,
    answer: String,
}

async fn slow_client(addr: SocketAddr, config: Arc<rustls::ClientConfig>, kind: Kind) -> Outcome {
    let tls = connect_with(addr, config).await.expect("TLS handshake");
    let started = Instant::now();
    let (mut read, mut write) = tokio::io::split(tls);
    let head =
        format!("POST {PATH} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n");
    let (first, tick): (String, &[u8]) = match kind {
        Kind::Headers => (head, b"X-Slow: y\r\n"),
        Kind::Body => (format!("{head}Content-Length: 100000\r\n\r\n{{"), b" "),
        Kind::Chunked => (
            format!("{head}Transfer-Encoding: chunked\r\n\r\n1\r\n{{\r\n"),
            b"1\r\n \r\n",
        ),
    };
    let writer = tokio::spawn(async move {
        // Write errors mean the server closed the connection: the reader sees that.
        if write.write_all(first.as_bytes()).await.is_err() {
            return;
        }
        loop {
            tokio::time::sleep(TRICKLE).await;
            if write.write_all(tick).await.is_err() || write.flush().await.is_err() {
                return;
            }
        }
    });
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    let limit = SLACK + HEADER_TIMEOUT.max(BODY_TIMEOUT);
    let _ = tokio::time::timeout(limit, async {
        loop {
            match read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    writer.abort();
    Outcome {
        kind,
        after: started.elapsed(),
        answer: String::from_utf8_lossy(&answer).into_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trickling_headers_and_bodies_are_cut_off_while_others_are_served() {
    let _heavy = HEAVY.lock().await;
    let server = ChildServer::spawn(Settings {
        header_read_timeout: HEADER_TIMEOUT,
        body_read_timeout: BODY_TIMEOUT,
        ..Settings::default()
    })
    .await;
    let ca = server.ca.der();
    for i in 0..20 {
        served_within(
            server.addr,
            &ca,
            &format!("warm-{i}"),
            Duration::from_secs(10),
        )
        .await;
    }
    let rss_before = server.rss_kib();

    let config = default_client(&ca);
    let mut slow = JoinSet::new();
    for i in 0..SLOW {
        let kind = [Kind::Headers, Kind::Body, Kind::Headers, Kind::Chunked][i % 4];
        slow.spawn(slow_client(server.addr, config.clone(), kind));
    }
    // Served meanwhile, one after another, while the slow ones hang.
    let mut slowest = Duration::ZERO;
    for i in 0..20 {
        slowest =
            slowest.max(served_within(server.addr, &ca, &format!("ok-{i}"), SERVED_WITHIN).await);
    }
    let rss_during = server.rss_kib();

    let mut outcomes = Vec::new();
    while let Some(o) = slow.join_next().await {
        outcomes.push(o.unwrap());
    }
    for o in &outcomes {
        let timeout = match o.kind {
            Kind::Headers => HEADER_TIMEOUT,
            Kind::Body | Kind::Chunked => BODY_TIMEOUT,
        };
        assert!(
            o.after < timeout + SLACK,
            "a {:?} client was not cut off within {:?}: it ran {:?} and got {:?}",
            o.kind,
            timeout + SLACK,
            o.after,
            o.answer
        );
        // Never cut off before its timeout either: the deadline is the configured one.
        assert!(
            o.after + Duration::from_millis(100) >= timeout,
            "{:?} cut off after {:?}",
            o.kind,
            o.after
        );
        match o.kind {
            // hyper closes the connection without an answer.
            Kind::Headers => assert!(!o.answer.starts_with("HTTP/1.1 2"), "{:?}", o.answer),
            Kind::Body | Kind::Chunked => {
                assert!(
                    o.answer.starts_with("HTTP/1.1 408 "),
                    "{:?}: {:?}",
                    o.kind,
                    o.answer
                );
                assert!(
                    o.answer.contains("request body not received within"),
                    "{:?}",
                    o.answer
                );
            }
        }
    }
    served_within(server.addr, &ca, "after", SERVED_WITHIN).await;
    let longest = outcomes.iter().map(|o| o.after).max().unwrap();
    let mib = |kib: u64| kib as f64 / 1024.0;
    println!(
        "slow clients: {SLOW} trickling (header timeout {HEADER_TIMEOUT:?}, body timeout \
         {BODY_TIMEOUT:?}), all cut off, the last after {longest:?}; server VmRSS {:.1} MiB \
         before, {:.1} MiB while they hung; slowest served request {slowest:?}",
        mib(rss_before),
        mib(rss_during)
    );
    let grown = rss_during.saturating_sub(rss_before);
    assert!(
        grown < 32 * 1024,
        "{SLOW} slow clients grew the server by {} MiB",
        mib(grown)
    );
    server.stop().await;
}
