//! The reconcile storm side by side with upstream's Go controller (`ODH_BENCH_UPSTREAM_BIN`;
//! without it this bench says so and does nothing): the `isvc_converge` harness, one worker,
//! webhooks off, each run on a fresh apiserver of its own, alternating ours, Go with its
//! Deployment's flags and Go at info level, `ODH_BENCH_PEER_ROUNDS` (2) rounds for each size of
//! `ODH_BENCH_PEER_ISVCS` (whitespace-separated, default `200 1000`). Writes every run's results
//! (target/bench/peer_storm_<n>_<contender>_r<round>.json) and the medians with the ratios
//! ours/Go to target/bench/peer_storm.json. A benchmark, not a test.
//!
//! Each run is a child process of this bench (the bench binary again, told by
//! `ODH_BENCH_PEER_RUN` which run it is): a test apiserver belongs to one process.

mod common;

use common::peer::{Contender, load_average, median, upstream_binary};
use common::storm::{Readiness, Storm};
use serde_json::{Value, json};

const RUN_ENV: &str = "ODH_BENCH_PEER_RUN";

fn main() -> anyhow::Result<()> {
    if let Ok(run) = std::env::var(RUN_ENV) {
        return child(&run);
    }
    let Some(upstream) = upstream_binary() else {
        println!("peer_storm: ODH_BENCH_UPSTREAM_BIN is not set; nothing to compare with");
        return Ok(());
    };
    anyhow::ensure!(
        upstream.is_file(),
        "ODH_BENCH_UPSTREAM_BIN={} is not a file",
        upstream.display()
    );
    let rounds = common::storm::env_usize("ODH_BENCH_PEER_ROUNDS", 2).max(1);
    let sizes: Vec<usize> = std::env::var("ODH_BENCH_PEER_ISVCS")
        .unwrap_or_else(|_| "200 1000".into())
        .split_whitespace()
        .map(|s| s.parse())
        .collect::<Result<_, _>>()?;
    let started = std::time::Instant::now();
    let load_before = load_average();
    let mut by_size = serde_json::Map::new();
    for &count in &sizes {
        let mut runs: Vec<(Contender, Value)> = Vec::new();
        for round in 1..=rounds {
            for contender in Contender::ALL {
                let name = run_name(count, contender, round);
                let status = std::process::Command::new(std::env::current_exe()?)
                    .args(std::env::args_os().skip(1))
                    .env(RUN_ENV, format!("{count} {} {round}", contender.label()))
                    .status()?;
                anyhow::ensure!(status.success(), "{name} failed ({status})");
                let path = common::out_dir().join(format!("{name}.json"));
                runs.push((contender, serde_json::from_slice(&std::fs::read(&path)?)?));
            }
        }
        by_size.insert(count.to_string(), summarise(count, &runs));
    }
    let load_after = load_average();
    let results = json!({
        "command": command(),
        "upstream_binary": upstream.display().to_string(),
        "host_binary": common::host_binary_info(),
        "contenders": common::peer::describe_all(),
        "rounds": rounds,
        "wall_seconds": started.elapsed().as_secs_f64(),
        "load_average_before": load_before,
        "load_average_after": load_after,
        "machine": {"cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)},
        "sizes": by_size,
    });
    common::write_json("peer_storm", &results);
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
    println!("command: {}", command());
    Ok(())
}

fn command() -> String {
    let mut parts: Vec<String> = ["ODH_BENCH_PEER_ROUNDS", "ODH_BENCH_PEER_ISVCS"]
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| format!("{k}='{v}'")))
        .collect();
    parts.push("ODH_BENCH_UPSTREAM_BIN=<upstream manager>".into());
    parts.push("cargo bench -p odh-model-controller --bench peer_storm".into());
    parts.join(" ")
}

fn run_name(count: usize, contender: Contender, round: usize) -> String {
    format!("peer_storm_{count}_{}_r{round}", contender.label())
}

/// One run, in a process of its own: `<count> <contender> <round>`.
fn child(run: &str) -> anyhow::Result<()> {
    let fields: Vec<&str> = run.split_whitespace().collect();
    let [count, label, round] = fields[..] else {
        anyhow::bail!("{RUN_ENV}={run:?}: expected `<count> <contender> <round>`");
    };
    let count: usize = count.parse()?;
    let round: usize = round.parse()?;
    let contender = Contender::ALL
        .into_iter()
        .find(|c| c.label() == label)
        .ok_or_else(|| anyhow::anyhow!("{RUN_ENV}: unknown contender {label}"))?;
    let name = run_name(count, contender, round);
    let cluster = common::own_apiserver(&name);
    let command = move |e: &common::storm::Endpoints| {
        let mut cmd = contender.command(
            &e.kubeconfig,
            &e.controller_namespace,
            &e.metrics_addr,
            &e.health_addr,
            None,
        );
        if contender == Contender::Ours {
            cmd.arg("--max-concurrent-reconciles=1");
        }
        cmd
    };
    let result = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(common::storm::storm(
            &cluster,
            Storm {
                name: &name,
                label: contender.label(),
                workers: "1",
                count,
                command: Box::new(command),
                readiness: match contender {
                    Contender::Ours => Readiness::Readyz,
                    _ => Readiness::WorkersStarted,
                },
            },
        ));
    common::stop_apiserver(&cluster);
    let mut results = result?;
    results["program"] = contender.program().display().to_string().into();
    results["round"] = round.into();
    common::write_json(&name, &results);
    Ok(())
}

/// Medians of each contender's runs and the ratios ours/Go.
fn summarise(count: usize, runs: &[(Contender, Value)]) -> Value {
    let figures = [
        ("converge_seconds", "/converge_seconds"),
        ("cpu_seconds", "/host_cpu_seconds"),
        ("peak_rss_mib", "/host_peak_rss_mib"),
        (
            "api_requests_per_isvc",
            "/per_inference_service/api_requests",
        ),
        ("reconciles_per_isvc", "/per_inference_service/reconciles"),
        ("apiserver_cpu_seconds", "/apiserver_cpu_seconds"),
    ];
    let of = |c: Contender, pointer: &str| -> Vec<f64> {
        runs.iter()
            .filter(|(k, _)| *k == c)
            .filter_map(|(_, v)| v.pointer(pointer).and_then(Value::as_f64))
            .collect()
    };
    let mut medians = serde_json::Map::new();
    let mut each = serde_json::Map::new();
    for c in Contender::ALL {
        let mut m = serde_json::Map::new();
        let mut e = serde_json::Map::new();
        for (name, pointer) in figures {
            m.insert(name.into(), json!(median(&of(c, pointer))));
            e.insert(name.into(), json!(of(c, pointer)));
        }
        medians.insert(c.label().into(), m.into());
        each.insert(c.label().into(), e.into());
    }
    let mut ratios = serde_json::Map::new();
    for go in [Contender::GoProduction, Contender::GoInfo] {
        let r: serde_json::Map<String, Value> = figures
            .iter()
            .map(|(name, _)| {
                let ours = medians[Contender::Ours.label()][name]
                    .as_f64()
                    .unwrap_or(f64::NAN);
                let theirs = medians[go.label()][name].as_f64().unwrap_or(f64::NAN);
                ((*name).to_string(), json!(ours / theirs))
            })
            .collect();
        ratios.insert(format!("ours_over_{}", go.label()), r.into());
    }
    println!("storm, {count} InferenceServices, medians (ratio ours/Go production, ours/Go info):");
    for (name, _) in figures {
        let get = |c: Contender| medians[c.label()][name].as_f64().unwrap_or(f64::NAN);
        let ratio = |go: Contender| {
            ratios[&format!("ours_over_{}", go.label())][name]
                .as_f64()
                .unwrap_or(f64::NAN)
        };
        println!(
            "  {name:<24} ours {:>9.3}   Go production {:>9.3}   Go info {:>9.3}   ({:.2}x, {:.2}x)",
            get(Contender::Ours),
            get(Contender::GoProduction),
            get(Contender::GoInfo),
            ratio(Contender::GoProduction),
            ratio(Contender::GoInfo),
        );
    }
    json!({"inference_services": count, "runs": each, "medians": medians, "ratios": ratios})
}
