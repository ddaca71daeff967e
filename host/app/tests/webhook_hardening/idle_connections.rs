//! Hundreds of connections that send nothing: half never start TLS (cut at the 10 s handshake
//! timeout), half finish the handshake and never send a request (cut at the header read
//! timeout, which also bounds keep-alive idleness). While they are open the server answers
//! others at normal latency, its memory grows by a bounded amount, and a second wave after
//! the first was cut off does not grow it further.

use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio::task::JoinSet;

use crate::harness::{ChildServer, HEAVY, Settings, connect_with, default_client, served_within};

const IDLE: usize = 500;
/// The child server's header read timeout: long enough that every connection of a wave is
/// open together, short enough to keep the test short.
const HEADER_TIMEOUT: Duration = Duration::from_secs(8);
/// Served requests while the idle connections hang: each within this, on a loaded machine.
const SERVED_WITHIN: Duration = Duration::from_secs(2);

/// One wave: opens the idle connections and returns a set that completes, per connection,
/// when the server has closed it.
async fn open_wave(server: &ChildServer) -> JoinSet<()> {
    let mut closed = JoinSet::new();
    let config = default_client(&server.ca.der());
    for i in 0..IDLE {
        let addr = server.addr;
        if i % 2 == 0 {
            // TCP only: no ClientHello ever comes.
            let mut tcp = TcpStream::connect(addr).await.expect("TCP connect");
            closed.spawn(async move {
                let mut buf = [0u8; 64];
                while !matches!(tcp.read(&mut buf).await, Ok(0) | Err(_)) {}
            });
        } else {
            // TLS done, then silence.
            let mut tls = connect_with(addr, config.clone())
                .await
                .expect("TLS handshake");
            closed.spawn(async move {
                let mut buf = [0u8; 64];
                while !matches!(tls.read(&mut buf).await, Ok(0) | Err(_)) {}
            });
        }
    }
    closed
}

/// Waits until the server closed every connection of the wave (the handshake timeout is
/// 10 s, the header timeout 8 s; 40 s is slack for a loaded machine).
async fn all_closed(mut closed: JoinSet<()>) -> Duration {
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(40), async {
        while let Some(r) = closed.join_next().await {
            r.unwrap();
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{} idle connections still open after 40 s", closed.len()));
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_idle_connections_neither_stop_service_nor_hold_memory() {
    let _heavy = HEAVY.lock().await;
    let server = ChildServer::spawn(Settings {
        header_read_timeout: HEADER_TIMEOUT,
        ..Settings::default()
    })
    .await;
    let ca = server.ca.der();
    // Warm up: the first requests allocate the plugin's instance pool and TLS state.
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

    let opened = Instant::now();
    let wave = open_wave(&server).await;
    let open_took = opened.elapsed();
    let mut slowest = Duration::ZERO;
    for i in 0..20 {
        slowest =
            slowest.max(served_within(server.addr, &ca, &format!("a-{i}"), SERVED_WITHIN).await);
    }
    let rss_open = server.rss_kib();
    let first_closed_in = all_closed(wave).await;
    let rss_closed = server.rss_kib();

    // A second wave: connections freed by the first are reused, not added to.
    let wave = open_wave(&server).await;
    for i in 0..20 {
        slowest =
            slowest.max(served_within(server.addr, &ca, &format!("b-{i}"), SERVED_WITHIN).await);
    }
    let rss_second = server.rss_kib();
    all_closed(wave).await;
    served_within(server.addr, &ca, "after", SERVED_WITHIN).await;

    let mib = |kib: u64| kib as f64 / 1024.0;
    println!(
        "idle connections: {IDLE} opened in {open_took:?}; server VmRSS {:.1} MiB before, \
         {:.1} MiB with them open, {:.1} MiB after they were cut ({first_closed_in:?} after \
         opening), {:.1} MiB with a second wave open; slowest served request {slowest:?}",
        mib(rss_before),
        mib(rss_open),
        mib(rss_closed),
        mib(rss_second)
    );
    // 500 connections in 64 MiB: 128 KiB each at most, TLS buffers and hyper's included.
    let grown = rss_open.saturating_sub(rss_before);
    assert!(
        grown < 64 * 1024,
        "{IDLE} idle connections grew the server by {} MiB",
        mib(grown)
    );
    let again = rss_second.saturating_sub(rss_open);
    assert!(
        again < 16 * 1024,
        "a second wave grew the server by another {} MiB",
        mib(again)
    );
    server.stop().await;
}
