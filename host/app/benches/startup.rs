//! `make bench`: how long `odh-model-controller run` takes to become ready, and the CPU it
//! spends on the way, with every built-in plugin, webhooks on and no objects in the cluster.
//! Four starts: without a compiled-plugin cache (every component compiled), with an empty
//! cache directory (compiled and written), with that directory filled (what a restarted
//! pod with the Deployment's `emptyDir` does; the median of several starts), and with an empty
//! cache directory beside the built-ins `plugin precompile` compiled (a new pod of the image;
//! the median of several starts). Ready means
//! `/readyz` answers 200: plugins loaded, caches synced, the serving certificate loaded.
//! Writes target/bench/startup.json. Needs `make apiserver` and the CRDs, as the tests do.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

/// Starts of the host with a filled cache (`ODH_BENCH_WARM_STARTS`): the median is reported.
const WARM_STARTS: usize = 5;

struct Start {
    ready_seconds: f64,
    cpu_seconds: f64,
    peak_rss_mib: f64,
}

fn start_once(
    kubeconfig: &Path,
    namespace: &str,
    work: &Path,
    cache: Option<&Path>,
    precompiled: Option<&Path>,
) -> anyhow::Result<Start> {
    let health = common::free_addr();
    let webhook = common::free_addr();
    let certs = work.join("certs");
    if !certs.join("tls.crt").exists() {
        common::write_serving_cert(&certs);
    }
    let mut cmd = Command::new(common::host_binary());
    cmd.args(["run", "--zap-devel=false", "--zap-log-level=error"])
        .arg(format!("--kubeconfig={}", kubeconfig.display()))
        .arg(format!("--health-probe-bind-address={health}"))
        .arg("--metrics-bind-address=0")
        .arg(format!("--webhook-bind-address={webhook}"))
        .arg(format!("--webhook-cert-dir={}", certs.display()))
        .env("POD_NAMESPACE", namespace)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(work.join("host.log"))?);
    if let Some(dir) = cache {
        cmd.arg(format!("--plugin-cache-dir={}", dir.display()));
    }
    if let Some(dir) = precompiled {
        cmd.arg(format!("--plugin-precompiled-dir={}", dir.display()));
    }
    let started = Instant::now();
    let mut host = cmd.spawn()?;
    let pid = host.id();
    let deadline = started + Duration::from_secs(120);
    let ready = loop {
        if let Ok((200, _)) = common::http_get(&health, "/readyz") {
            break started.elapsed();
        }
        if let Some(status) = host.try_wait()? {
            anyhow::bail!(
                "the host exited ({status}); see {}",
                work.join("host.log").display()
            );
        }
        anyhow::ensure!(Instant::now() < deadline, "not ready within 120 s");
        std::thread::sleep(Duration::from_millis(2));
    };
    let (cpu, rss) = common::usage(pid);
    let _ = host.kill();
    let _ = host.wait();
    Ok(Start {
        ready_seconds: ready.as_secs_f64(),
        cpu_seconds: cpu,
        peak_rss_mib: rss,
    })
}

fn report(what: &str, s: &Start) -> serde_json::Value {
    println!(
        "startup ({what}): ready in {:.3} s, CPU {:.3} s, peak RSS {:.1} MiB",
        s.ready_seconds, s.cpu_seconds, s.peak_rss_mib
    );
    json!({"ready_seconds": s.ready_seconds, "cpu_seconds": s.cpu_seconds, "peak_rss_mib": s.peak_rss_mib})
}

/// The start of median CPU.
fn median(mut starts: Vec<Start>) -> Start {
    starts.sort_by(|a, b| a.cpu_seconds.total_cmp(&b.cpu_seconds));
    starts.swap_remove(starts.len() / 2)
}

fn main() -> anyhow::Result<()> {
    let cluster = common::own_apiserver(&format!("startup_{}", common::label()));
    let result = measure();
    common::stop_apiserver(&cluster);
    result
}

fn measure() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    let kubeconfig = odh_test_support::cluster()?.kubeconfig.clone();
    // The CRDs installed and a namespace of its own for the host (POD_NAMESPACE).
    let t = runtime.block_on(odh_test_support::TestContext::new("bench-startup"))?;
    let work = common::out_dir().join("startup");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let cache = work.join("plugin-cache");

    let uncached = start_once(&kubeconfig, &t.namespace, &work, None, None)?;
    let cold = start_once(&kubeconfig, &t.namespace, &work, Some(&cache), None)?;
    let starts = std::env::var("ODH_BENCH_WARM_STARTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(WARM_STARTS);
    let mut warm = Vec::new();
    for _ in 0..starts {
        warm.push(start_once(
            &kubeconfig,
            &t.namespace,
            &work,
            Some(&cache),
            None,
        )?);
    }
    let warm = median(warm);
    // As the image's build does; a build without `plugin precompile` (an older one) has no
    // figure for it.
    let precompiled_dir = work.join("precompiled");
    let precompiled = if Command::new(common::host_binary())
        .args(["plugin", "precompile", "--out"])
        .arg(&precompiled_dir)
        .stdout(Stdio::null())
        .status()?
        .success()
    {
        let mut fresh = Vec::new();
        for i in 0..starts {
            let empty = work.join(format!("plugin-cache-new-pod-{i}"));
            fresh.push(start_once(
                &kubeconfig,
                &t.namespace,
                &work,
                Some(&empty),
                Some(&precompiled_dir),
            )?);
        }
        Some(median(fresh))
    } else {
        None
    };
    let name = match common::label().as_str() {
        "current" => "startup".to_string(),
        other => format!("startup_{other}"),
    };
    common::write_json(
        &name,
        &json!({
            "binary": common::label(),
            "host_binary": common::host_binary_info(),
            "no_cache": report("no cache", &uncached),
            "cold_cache": report("empty cache", &cold),
            "warm_cache": report("filled cache, median", &warm),
            "precompiled": precompiled.as_ref().map(|s| report("precompiled built-ins, empty cache, median", s)),
        }),
    );
    Ok(())
}
