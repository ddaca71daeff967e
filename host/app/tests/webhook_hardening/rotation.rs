//! Serving-certificate rotation under load: clients post reviews without pause, on fresh
//! connections (every request a handshake, so each one meets whatever certificate is current)
//! and on kept-alive ones, while the certificate files are replaced several times, in place
//! and by rename. Not one request may fail, and the clients must have seen every certificate.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use odh_test_support::{Timing, eventually};
use tokio::task::JoinSet;

use crate::harness::{
    HEAVY, PATH, Server, Settings, connect_with, default_client, http1, peer_certificate, post_on,
    review, write_by_rename, write_in_place,
};

const FRESH_CLIENTS: usize = 6;
const KEPT_ALIVE_CLIENTS: usize = 2;
const ROTATIONS: usize = 6;

/// What one client did: requests, failures (with the first few errors) and the serials of the
/// certificates its handshakes saw.
#[derive(Default)]
struct Tally {
    requests: usize,
    failures: Vec<String>,
    certificates: HashSet<Vec<u8>>,
}

async fn one_request(
    server: &Server,
    fresh: bool,
    sender: &mut Option<
        hyper::client::conn::http1::SendRequest<http_body_util::Full<hyper::body::Bytes>>,
    >,
    tally: &mut Tally,
    uid: &str,
) -> anyhow::Result<()> {
    if fresh || sender.is_none() {
        let tls = connect_with(server.addr, default_client(&server.ca.der())).await?;
        if let Some(cert) = peer_certificate(&tls) {
            tally.certificates.insert(cert.as_ref().to_vec());
        }
        *sender = Some(http1(tls).await?);
    }
    let body = serde_json::to_vec(&review(uid))?;
    let (status, answer) =
        post_on(sender.as_mut().unwrap(), server.addr, PATH, body.into()).await?;
    let answer: serde_json::Value = serde_json::from_slice(&answer)?;
    anyhow::ensure!(status == 200, "HTTP {status}: {answer}");
    anyhow::ensure!(
        answer["response"]["uid"] == uid && answer["response"]["allowed"] == true,
        "{answer}"
    );
    Ok(())
}

async fn client(server: Arc<Server>, id: usize, fresh: bool, stop: Arc<AtomicBool>) -> Tally {
    let mut tally = Tally::default();
    let mut sender = None;
    while !stop.load(Ordering::Relaxed) {
        let uid = format!("c{id}-{}", tally.requests);
        tally.requests += 1;
        if let Err(e) = one_request(&server, fresh, &mut sender, &mut tally, &uid).await {
            if tally.failures.len() < 5 {
                tally.failures.push(format!("{uid}: {e:#}"));
            } else {
                tally.failures.push(String::new());
            }
            // A broken kept-alive connection is replaced; the failure is counted all the same.
            sender = None;
        }
    }
    tally
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificate_rotation_under_load_fails_no_request() {
    let _heavy = HEAVY.lock().await;
    let server = Arc::new(Server::start(Settings::default()).await);
    let stop = Arc::new(AtomicBool::new(false));
    let mut clients = JoinSet::new();
    for id in 0..FRESH_CLIENTS + KEPT_ALIVE_CLIENTS {
        clients.spawn(client(server.clone(), id, id < FRESH_CLIENTS, stop.clone()));
    }

    let started = Instant::now();
    let mut served = vec![server.cert.der.as_ref().to_vec()];
    for rotation in 0..ROTATIONS {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let next = server.ca.serving_cert();
        if rotation % 2 == 0 {
            write_in_place(&server.dir, &next);
        } else {
            write_by_rename(&server.dir, &next);
        }
        // Rotated: a new handshake gets the new certificate (the reloader looks every second).
        eventually(
            "the new certificate is served",
            Timing::default(),
            || async {
                let tls = connect_with(server.addr, default_client(&server.ca.der())).await?;
                anyhow::ensure!(
                    peer_certificate(&tls).as_ref() == Some(&next.der),
                    "not yet"
                );
                Ok(())
            },
        )
        .await
        .unwrap();
        served.push(next.der.as_ref().to_vec());
    }
    // Load on the last certificate too, then stop.
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    let took = started.elapsed();

    let (mut requests, mut failures, mut seen) = (0, Vec::new(), HashSet::new());
    while let Some(t) = clients.join_next().await {
        let t = t.unwrap();
        requests += t.requests;
        failures.extend(t.failures);
        seen.extend(t.certificates);
    }
    println!(
        "rotation under load: {ROTATIONS} rotations in {took:?}, {} clients, {requests} requests, \
         {} failed; the load clients saw {} of the {} certificates",
        FRESH_CLIENTS + KEPT_ALIVE_CLIENTS,
        failures.len(),
        seen.len(),
        served.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {requests} requests failed: {:?}",
        failures.len(),
        failures
            .iter()
            .filter(|f| !f.is_empty())
            .collect::<Vec<_>>()
    );
    assert!(
        requests >= 100,
        "only {requests} requests: the load was too light to mean anything"
    );
    // Handshakes under load met every certificate: the rotations happened during the load.
    let every: HashSet<Vec<u8>> = served.into_iter().collect();
    assert_eq!(seen, every, "certificates seen by the load clients");
    Arc::into_inner(server)
        .expect("clients are done")
        .stop()
        .await;
}
