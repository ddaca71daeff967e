//! Admission side by side with upstream's Go controller (`ODH_BENCH_UPSTREAM_BIN`; without it
//! this bench says so and does nothing). Each contender runs as its own process against one
//! test apiserver, serving its webhooks over TLS on loopback: ours (`odh-model-controller run`,
//! the host binary `ODH_BENCH_HOST_BIN` or this build's), Go with its Deployment's flags, Go at
//! info level. Each round starts them in turn (ours, Go production, Go info) and drives the same
//! AdmissionReview bytes through the same client loop (16 keep-alive TLS connections, 20,000
//! requests) for the InferenceService validating webhook, the InferenceService mutating webhook
//! and the Pod mutating webhook, once the server is idle after its start-up (its caches listed,
//! its first reconciles done: [`common::settled`]), so the first scenario is not billed for
//! them; `ODH_BENCH_PEER_ROUNDS` (3) rounds. Each round ends with the
//! `floor`: this bench binary run again as a server of its own, the webhook server's TLS server
//! and admission gate answering a fixed review without parsing it or calling a plugin
//! (common::floor), driven through the same loop: what the transport alone costs, so ours'
//! distance from it is what the review handling and the plugin call cost. Figures: req/s,
//! p50/p99 latency, CPU per request (user + system time of the server process over the run, from
//! /proc/<pid>/stat, divided by the requests answered). Writes target/bench/peer_admission.json
//! (every run, the medians, the ratios ours/Go, ours' distance from the floor) and prints a
//! summary. A benchmark, not a test.
//!
//! Environment: `ADMISSION_BENCH_REQUESTS` (20000), `ADMISSION_BENCH_CONCURRENCY` (16),
//! `ADMISSION_BENCH_MAX_SECONDS` (120), as the `admission` bench; `ODH_BENCH_PEER_ONLY`
//! (comma-separated: `ours`, `go_production`, `go_info`, `floor`) runs only those.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::load::{Load, drive, has_patch, percentile, review, wait_serving, write_certs};
use common::peer::{Contender, load_average, median, upstream_binary};
use hyper::body::Bytes;
use odh_test_fixtures as fixtures;
use odh_test_support::TestContext;
use serde_json::{Value, json};

/// controller-runtime's webhook server port, which upstream's manager does not let a flag change.
const GO_WEBHOOK_PORT: u16 = 9443;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(default)
}

/// A predictor Pod as KServe creates it (a plain one: no Ray TLS, so no key is generated).
fn predictor_pod(namespace: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "demo-predictor-1", "namespace": namespace,
                     "labels": {"serving.kserve.io/inferenceservice": "demo",
                                "component": "predictor", "app": "demo-predictor"}},
        "spec": {"containers": [{"name": "kserve-container", "image": "quay.io/modh/vllm:latest",
                                 "args": ["--port=8080", "--model=/mnt/models"],
                                 "env": [{"name": "STORAGE_URI", "value": "s3://models/demo"}],
                                 "resources": {"limits": {"cpu": "2", "memory": "8Gi"}}}]},
    })
}

struct Scenario {
    name: &'static str,
    path: &'static str,
    body: Bytes,
}

fn scenarios(namespace: &str) -> Vec<Scenario> {
    const ISVC: (&str, &str, &str, &str) = (
        "serving.kserve.io",
        "v1beta1",
        "InferenceService",
        "inferenceservices",
    );
    let isvc = fixtures::isvc("demo").namespace(namespace).build();
    vec![
        Scenario {
            name: "isvc_validate",
            path: "/validate-serving-kserve-io-v1beta1-inferenceservice",
            body: review(namespace, ISVC, isvc.clone()),
        },
        Scenario {
            name: "isvc_mutate",
            path: "/mutate-serving-kserve-io-v1beta1-inferenceservice",
            body: review(namespace, ISVC, isvc),
        },
        Scenario {
            name: "pod_mutate",
            path: "/mutate--v1-pod",
            body: review(
                namespace,
                ("", "v1", "Pod", "pods"),
                predictor_pod(namespace),
            ),
        },
    ]
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// What every round shares.
struct Bench {
    /// POD_NAMESPACE: not the reviews' namespace (upstream refuses InferenceServices in its own).
    controller_namespace: String,
    kubeconfig: std::path::PathBuf,
    scenarios: Vec<Scenario>,
    load: Load,
    cert_dir: std::path::PathBuf,
    ca: rustls::pki_types::CertificateDer<'static>,
}

/// What serves a round: a controller, or the floor.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Server {
    Peer(Contender),
    Floor,
}

impl Server {
    const ALL: [Server; 4] = [
        Server::Peer(Contender::Ours),
        Server::Peer(Contender::GoProduction),
        Server::Peer(Contender::GoInfo),
        Server::Floor,
    ];

    fn label(self) -> &'static str {
        match self {
            Server::Peer(c) => c.label(),
            Server::Floor => "floor",
        }
    }
}

/// One server's round: started, each scenario driven, stopped.
async fn round(
    b: &Bench,
    server: Server,
    log: &std::path::Path,
) -> anyhow::Result<serde_json::Map<String, Value>> {
    let Bench {
        controller_namespace,
        kubeconfig,
        scenarios,
        load,
        cert_dir,
        ca,
    } = b;
    let addr: SocketAddr = match server {
        Server::Peer(Contender::Ours) | Server::Floor => common::free_addr().parse()?,
        Server::Peer(_) => {
            let addr: SocketAddr = ([127, 0, 0, 1], GO_WEBHOOK_PORT).into();
            anyhow::ensure!(
                std::net::TcpStream::connect(addr).is_err(),
                "port {GO_WEBHOOK_PORT} is taken: upstream's webhook server cannot listen"
            );
            addr
        }
    };
    let bind = addr.to_string();
    let mut child = match server {
        Server::Peer(contender) => {
            let log_file = std::fs::File::create(log)?;
            contender
                .command(
                    kubeconfig,
                    controller_namespace,
                    &common::free_addr(),
                    &common::free_addr(),
                    Some((bind.as_str(), cert_dir.as_path())),
                )
                .stdin(std::process::Stdio::null())
                .stdout(log_file.try_clone()?)
                .stderr(log_file)
                .spawn()?
        }
        Server::Floor => common::floor::spawn(addr, cert_dir, log)?,
    };
    let pid = child.id();
    let result = async {
        let mut answers = serde_json::Map::new();
        for sc in scenarios {
            let started = Instant::now();
            let first = wait_serving(addr, ca, sc.path, &sc.body, Duration::from_secs(180), || {
                common::peer::running(pid)
            })
            .await
            .map_err(|e| e.context(format!("{} {} (log: {})", server.label(), sc.name, log.display())))?;
            if answers.is_empty() {
                let serving = started.elapsed();
                let (idle, settled) = common::settled(pid, Duration::from_secs(60)).await;
                println!(
                    "  {} serving after {:.1} s, idle {:.1} s later{}",
                    server.label(),
                    serving.as_secs_f64(),
                    idle.as_secs_f64(),
                    if settled { "" } else { " (still busy: measured anyway)" }
                );
            }
            let outcome = drive(addr, ca, sc.path, &sc.body, load, pid).await?;
            let completed = outcome.samples.len();
            anyhow::ensure!(completed > 0, "{}: no request completed", sc.name);
            let rps = completed as f64 / outcome.elapsed.as_secs_f64();
            let cpu_us = outcome.server_cpu_s * 1e6 / completed as f64;
            let (p50, p99) = (
                percentile(&outcome.samples, 0.50),
                percentile(&outcome.samples, 0.99),
            );
            println!(
                "  {:<14} {:<14} {rps:>8.0} req/s   p50 {:>6.2} ms   p99 {:>6.2} ms   CPU {cpu_us:>6.1} µs/request   ({completed} requests, {} errors, {:.2} s, {})",
                server.label(),
                sc.name,
                millis(p50),
                millis(p99),
                outcome.errors,
                outcome.elapsed.as_secs_f64(),
                outcome.tls_version,
            );
            answers.insert(
                sc.name.into(),
                json!({
                    "requests_per_s": rps,
                    "p50_ms": millis(p50),
                    "p99_ms": millis(p99),
                    "cpu_us_per_request": cpu_us,
                    "server_cpu_s": outcome.server_cpu_s,
                    "completed": completed,
                    "errors": outcome.errors,
                    "duration_s": outcome.elapsed.as_secs_f64(),
                    "tls": outcome.tls_version,
                    "patched": has_patch(&first),
                    "answer_bytes": first.len(),
                }),
            );
        }
        anyhow::Ok(answers)
    }
    .await;
    common::peer::stop(&mut child);
    result
}

fn main() -> anyhow::Result<()> {
    // Run again by itself as the floor's server (common::floor::spawn)?
    common::floor::serve_if_asked();
    let Some(upstream) = upstream_binary() else {
        println!("peer_admission: ODH_BENCH_UPSTREAM_BIN is not set; nothing to compare with");
        return Ok(());
    };
    anyhow::ensure!(
        upstream.is_file(),
        "ODH_BENCH_UPSTREAM_BIN={} is not a file",
        upstream.display()
    );
    let cluster = common::own_apiserver("peer_admission");
    let load = Load {
        requests: env_usize("ADMISSION_BENCH_REQUESTS", 20_000),
        concurrency: env_usize("ADMISSION_BENCH_CONCURRENCY", 16),
        max_seconds: env_usize("ADMISSION_BENCH_MAX_SECONDS", 120) as u64,
        warm_up: 1_600,
    };
    let rounds = env_usize("ODH_BENCH_PEER_ROUNDS", 3);
    // ODH_BENCH_PEER_ONLY=ours,floor: only those servers (a quick look at our own changes; the
    // ratios then say NaN).
    let only: Option<Vec<String>> = std::env::var("ODH_BENCH_PEER_ONLY")
        .ok()
        .map(|s| s.split(',').map(|n| n.trim().to_string()).collect());
    let wanted = |s: Server| {
        only.as_ref()
            .is_none_or(|names| names.iter().any(|n| n == s.label()))
    };
    // <tmp>/k8s-webhook-server/serving-certs: where controller-runtime looks under $TMPDIR.
    let tmp = common::out_dir().join("peer-admission-tmp");
    let cert_dir = tmp.join("k8s-webhook-server/serving-certs");
    let ca = write_certs(&cert_dir);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let started = Instant::now();
    let load_before = load_average();
    let result = rt.block_on(async {
        let t = TestContext::new("bench-peer").await?;
        let b = Bench {
            controller_namespace: TestContext::new("bench-controller").await?.namespace,
            kubeconfig: odh_test_support::cluster()?.kubeconfig.clone(),
            scenarios: scenarios(&t.namespace),
            load,
            cert_dir,
            ca,
        };
        let mut runs: Vec<(Server, usize, serde_json::Map<String, Value>)> = Vec::new();
        for r in 1..=rounds {
            println!("round {r} of {rounds}");
            for server in Server::ALL.into_iter().filter(|s| wanted(*s)) {
                let log =
                    common::out_dir().join(format!("peer_admission_{}_r{r}.log", server.label()));
                runs.push((server, r, round(&b, server, &log).await?));
            }
        }
        anyhow::Ok((runs, b))
    });
    common::stop_apiserver(&cluster);
    let _ = std::fs::remove_dir_all(&tmp);
    let (runs, b) = result?;
    let (scenarios, load) = (&b.scenarios, &b.load);
    let load_after = load_average();

    let figures = ["requests_per_s", "p50_ms", "p99_ms", "cpu_us_per_request"];
    let mut summary = serde_json::Map::new();
    println!(
        "admission side by side, medians of {rounds} rounds (ratio ours/Go production, ours/Go info; the floor: the same TLS server answering a fixed review):"
    );
    const OURS: Server = Server::Peer(Contender::Ours);
    for sc in scenarios {
        let of = |c: Server, figure: &str| -> Vec<f64> {
            runs.iter()
                .filter(|(k, _, _)| *k == c)
                .filter_map(|(_, _, a)| a.get(sc.name)?.get(figure)?.as_f64())
                .collect()
        };
        let mut medians = serde_json::Map::new();
        let mut each = serde_json::Map::new();
        for c in Server::ALL {
            let m: serde_json::Map<String, Value> = figures
                .iter()
                .map(|f| ((*f).to_string(), json!(median(&of(c, f)))))
                .collect();
            let e: serde_json::Map<String, Value> = figures
                .iter()
                .map(|f| ((*f).to_string(), json!(of(c, f))))
                .collect();
            medians.insert(c.label().into(), m.into());
            each.insert(c.label().into(), e.into());
        }
        let get = |c: Server, f: &str| medians[c.label()][f].as_f64().unwrap_or(f64::NAN);
        let mut ratios = serde_json::Map::new();
        for go in [Contender::GoProduction, Contender::GoInfo] {
            let r: serde_json::Map<String, Value> = figures
                .iter()
                .map(|f| {
                    (
                        (*f).to_string(),
                        json!(get(OURS, f) / get(Server::Peer(go), f)),
                    )
                })
                .collect();
            ratios.insert(format!("ours_over_{}", go.label()), r.into());
        }
        // Ours' distance from the floor: what the review handling and the plugin call add.
        let from_floor: serde_json::Map<String, Value> = figures
            .iter()
            .map(|f| {
                let (ours, floor) = (get(OURS, f), get(Server::Floor, f));
                (
                    (*f).to_string(),
                    json!({"ours_minus_floor": ours - floor, "ours_over_floor": ours / floor}),
                )
            })
            .collect();
        let patched: serde_json::Map<String, Value> = Server::ALL
            .iter()
            .map(|c| {
                let p = runs
                    .iter()
                    .find(|(k, _, _)| k == c)
                    .and_then(|(_, _, a)| a.get(sc.name)?.get("patched").cloned())
                    .unwrap_or(Value::Null);
                (c.label().to_string(), p)
            })
            .collect();
        println!("  {} ({}, {} B review)", sc.name, sc.path, sc.body.len());
        for f in figures {
            let ratio = |go: Contender| get(OURS, f) / get(Server::Peer(go), f);
            println!(
                "    {f:<20} ours {:>9.2}   Go production {:>9.2}   Go info {:>9.2}   ({:.2}x, {:.2}x)   floor {:>9.2} (ours {:+.2})",
                get(OURS, f),
                get(Server::Peer(Contender::GoProduction), f),
                get(Server::Peer(Contender::GoInfo), f),
                ratio(Contender::GoProduction),
                ratio(Contender::GoInfo),
                get(Server::Floor, f),
                get(OURS, f) - get(Server::Floor, f),
            );
        }
        summary.insert(
            sc.name.into(),
            json!({"path": sc.path, "request_bytes": sc.body.len(), "patched": patched,
                   "runs": each, "medians": medians, "ratios": ratios,
                   "ours_against_floor": from_floor}),
        );
    }
    let command = {
        let mut parts: Vec<String> = [
            "ADMISSION_BENCH_REQUESTS",
            "ADMISSION_BENCH_CONCURRENCY",
            "ODH_BENCH_PEER_ROUNDS",
            "ODH_BENCH_PEER_ONLY",
        ]
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| format!("{k}={v}")))
        .collect();
        parts.push("ODH_BENCH_UPSTREAM_BIN=<upstream manager>".into());
        parts.push("cargo bench -p odh-model-controller --bench peer_admission".into());
        parts.join(" ")
    };
    let results = json!({
        "command": command,
        "upstream_binary": upstream.display().to_string(),
        "host_binary": common::host_binary_info(),
        "contenders": common::peer::describe_all(),
        "floor": "this bench binary serving the webhook server's TLS server and admission gate, answering a fixed review without parsing it or calling a plugin (host/app/benches/common/floor.rs)",
        "rounds": rounds,
        "requests": load.requests,
        "concurrency": load.concurrency,
        "wall_seconds": started.elapsed().as_secs_f64(),
        "load_average_before": load_before,
        "load_average_after": load_after,
        "machine": {"cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)},
        "scenarios": summary,
    });
    common::write_json("peer_admission", &results);
    println!(
        "load average before {:.1} {:.1} {:.1}, after {:.1} {:.1} {:.1}; {:.0} s",
        load_before[0],
        load_before[1],
        load_before[2],
        load_after[0],
        load_after[1],
        load_after[2],
        started.elapsed().as_secs_f64()
    );
    println!("command: {command}");
    Ok(())
}
