//! How fast the host converges a burst of InferenceServices: `odh-model-controller run` (the
//! release binary, default plugins, upstream's default of one worker unless
//! `ODH_BENCH_WORKERS` says otherwise) against the test apiserver; 200 InferenceServices are
//! created at once in one namespace and the clock stops when every one has its finalizer, its
//! dashboard ConfigMap, its metrics Service and its ServiceMonitor. Reports wall time, the host
//! process's CPU seconds and its peak RSS to target/bench/isvc_converge.json. A benchmark,
//! not a test (needs `make apiserver` and the CRDs, as the tests do).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use kube::core::GroupVersionKind;
use odh_test_fixtures as fixtures;
use odh_test_support::TestContext;
use serde_json::json;

const COUNT: usize = 200;

fn dynamic(t: &TestContext, gvk: (&str, &str, &str), plural: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(gvk.0, gvk.1, gvk.2), plural);
    Api::namespaced_with(t.client.clone(), &t.namespace, &ar)
}

/// (utime + stime in seconds, VmHWM in MiB) of a process.
fn usage(pid: u32) -> (f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let hz = 100.0; // USER_HZ on Linux
    let cpu = (ticks(11) + ticks(12)) / hz;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let hwm_kib = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0);
    (cpu, hwm_kib / 1024.0)
}

async fn converged(t: &TestContext) -> anyhow::Result<usize> {
    let lp = ListParams::default();
    let isvcs = dynamic(
        t,
        ("serving.kserve.io", "v1beta1", "InferenceService"),
        "inferenceservices",
    )
    .list(&lp)
    .await?;
    let cms = t.api::<ConfigMap>().list(&lp).await?;
    let services = t.api::<Service>().list(&lp).await?;
    let monitors = dynamic(
        t,
        ("monitoring.coreos.com", "v1", "ServiceMonitor"),
        "servicemonitors",
    )
    .list(&lp)
    .await?;
    let has = |names: &[String], n: &str| names.iter().any(|x| x == n);
    let cm_names: Vec<String> = cms
        .items
        .iter()
        .filter_map(|o| o.metadata.name.clone())
        .collect();
    let svc_names: Vec<String> = services
        .items
        .iter()
        .filter_map(|o| o.metadata.name.clone())
        .collect();
    let sm_names: Vec<String> = monitors
        .items
        .iter()
        .filter_map(|o| o.metadata.name.clone())
        .collect();
    Ok(isvcs
        .items
        .iter()
        .filter(|i| {
            let name = i.metadata.name.clone().unwrap_or_default();
            i.metadata
                .finalizers
                .as_ref()
                .is_some_and(|f| f.iter().any(|x| x == "odh.inferenceservice.finalizers"))
                && has(&cm_names, &format!("{name}-metrics-dashboard"))
                && has(&svc_names, &format!("{name}-metrics"))
                && has(&sm_names, &format!("{name}-metrics"))
        })
        .count())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let workers = std::env::var("ODH_BENCH_WORKERS").unwrap_or_else(|_| "1".into());
    let t = TestContext::new("bench-converge").await?;
    let kubeconfig = odh_test_support::cluster()?.kubeconfig.clone();
    let out_dir = odh_test_support::workspace_root().join("target/bench");
    std::fs::create_dir_all(&out_dir)?;
    let log = std::fs::File::create(out_dir.join(format!("isvc_converge_w{workers}.log")))?;
    let mut host = Command::new(env!("CARGO_BIN_EXE_odh-model-controller"))
        .args([
            "run",
            "--zap-devel=false",
            "--metrics-bind-address=0",
            "--health-probe-bind-address=0",
        ])
        .arg(format!("--kubeconfig={}", kubeconfig.display()))
        .arg(format!("--max-concurrent-reconciles={workers}"))
        .env("ENABLE_WEBHOOKS", "false")
        .arg("--zap-log-level=error")
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()?;
    let pid = host.id();
    // Let it start and sync its caches before the burst.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (cpu_idle, _) = usage(pid);

    dynamic(
        &t,
        ("serving.kserve.io", "v1alpha1", "ServingRuntime"),
        "servingruntimes",
    )
    .create(
        &PostParams::default(),
        &serde_json::from_value(
            fixtures::ovms_runtime()
                .namespace(&t.namespace)
                .remove("/metadata/creationTimestamp")
                .build(),
        )?,
    )
    .await?;
    let isvcs = dynamic(
        &t,
        ("serving.kserve.io", "v1beta1", "InferenceService"),
        "inferenceservices",
    );
    let start = Instant::now();
    let namespace = t.namespace.clone();
    futures::stream::iter(0..COUNT)
        .map(|i| {
            let (isvcs, namespace) = (isvcs.clone(), namespace.clone());
            async move {
                let obj: DynamicObject = serde_json::from_value(
                    fixtures::isvc(&format!("model-{i:03}"))
                        .namespace(&namespace)
                        .remove("/metadata/uid")
                        .build(),
                )
                .unwrap();
                isvcs.create(&PostParams::default(), &obj).await
            }
        })
        .buffer_unordered(32)
        .for_each(|r| async move {
            r.expect("create InferenceService");
        })
        .await;
    let created = start.elapsed();
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut done = 0;
    while Instant::now() < deadline {
        done = converged(&t).await?;
        if done == COUNT {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let elapsed = start.elapsed();
    let (cpu, peak_mib) = usage(pid);
    let _ = host.kill();
    let _ = host.wait();
    anyhow::ensure!(done == COUNT, "only {done} of {COUNT} converged in 600 s");

    let results = json!({
        "inference_services": COUNT,
        "workers": workers,
        "create_seconds": created.as_secs_f64(),
        "converge_seconds": elapsed.as_secs_f64(),
        "host_cpu_seconds": cpu - cpu_idle,
        "host_cpu_seconds_total": cpu,
        "host_peak_rss_mib": peak_mib,
    });
    println!(
        "isvc converge: {COUNT} InferenceServices, {workers} worker(s): {:.2} s (creates took {:.2} s), host CPU {:.2} s, peak RSS {:.1} MiB",
        elapsed.as_secs_f64(),
        created.as_secs_f64(),
        cpu - cpu_idle,
        peak_mib
    );
    std::fs::write(
        out_dir.join(format!("isvc_converge_w{workers}.json")),
        serde_json::to_string_pretty(&results)?,
    )?;
    Ok(())
}
