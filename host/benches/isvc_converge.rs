//! How fast the host converges a burst of InferenceServices: `odh-model-controller run` (the
//! release binary, default plugins, upstream's default of one worker unless
//! `ODH_BENCH_WORKERS` says otherwise) against the test apiserver; `ODH_BENCH_ISVCS` (200)
//! InferenceServices are created at once in one namespace and the clock stops when every one
//! has its finalizer, its dashboard ConfigMap, its metrics Service and its ServiceMonitor.
//! `ODH_BENCH_CACHED_OBJECTS` (0) Secrets and as many ConfigMaps are created in another
//! namespace first, for the memory the host's caches take. Reports wall time, the host
//! process's CPU seconds, its peak RSS and its API requests (`rest_client_requests_total`) to
//! target/bench/isvc_converge_<n>_w<workers>[_<label>].json; `ODH_BENCH_HOST_BIN` and
//! `ODH_BENCH_LABEL` measure another build side by side. A benchmark, not a test (needs
//! `make apiserver` and the CRDs, as the tests do).

mod common;

use std::collections::HashSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use kube::core::GroupVersionKind;
use odh_test_fixtures as fixtures;
use odh_test_support::TestContext;
use serde_json::json;

const DEFAULT_COUNT: usize = 200;

fn dynamic(t: &TestContext, gvk: (&str, &str, &str), plural: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(gvk.0, gvk.1, gvk.2), plural);
    Api::namespaced_with(t.client.clone(), &t.namespace, &ar)
}

/// The names in a metadata-only list.
fn names<K: Clone>(
    list: kube::api::ObjectList<kube::api::PartialObjectMeta<K>>,
) -> HashSet<String> {
    list.items
        .into_iter()
        .filter_map(|o| o.metadata.name)
        .collect()
}

/// How many of the InferenceServices are converged. Metadata-only lists: cheap enough for the
/// apiserver that polling does not slow down what it measures, even at thousands of objects.
async fn converged(t: &TestContext) -> anyhow::Result<usize> {
    let lp = ListParams::default();
    let isvcs = dynamic(
        t,
        ("serving.kserve.io", "v1beta1", "InferenceService"),
        "inferenceservices",
    )
    .list_metadata(&lp)
    .await?;
    let cm_names = names(t.api::<ConfigMap>().list_metadata(&lp).await?);
    let svc_names = names(t.api::<Service>().list_metadata(&lp).await?);
    let sm_names = names(
        dynamic(
            t,
            ("monitoring.coreos.com", "v1", "ServiceMonitor"),
            "servicemonitors",
        )
        .list_metadata(&lp)
        .await?,
    );
    Ok(isvcs
        .items
        .iter()
        .filter(|i| {
            let name = i.metadata.name.clone().unwrap_or_default();
            i.metadata
                .finalizers
                .as_ref()
                .is_some_and(|f| f.iter().any(|x| x == "odh.inferenceservice.finalizers"))
                && cm_names.contains(&format!("{name}-metrics-dashboard"))
                && svc_names.contains(&format!("{name}-metrics"))
                && sm_names.contains(&format!("{name}-metrics"))
        })
        .count())
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `count` Secrets and as many ConfigMaps of about 1 KiB in a namespace of their own.
async fn create_cached_objects(count: usize) -> anyhow::Result<()> {
    if count == 0 {
        return Ok(());
    }
    let t = TestContext::new("bench-cached").await?;
    let payload = "x".repeat(1000);
    futures::stream::iter(0..count * 2)
        .map(|i| {
            let (t, payload) = (&t, &payload);
            async move {
                let name = format!("object-{i:05}");
                let body = json!({"metadata": {"name": name}, "data": {"payload": payload}});
                if i % 2 == 0 {
                    let mut cm: ConfigMap = serde_json::from_value(body)?;
                    cm.metadata.name = Some(format!("cm-{i:05}"));
                    t.api::<ConfigMap>()
                        .create(&PostParams::default(), &cm)
                        .await?;
                } else {
                    let mut secret: Secret = serde_json::from_value(json!({
                        "metadata": {"name": format!("secret-{i:05}")},
                        "stringData": {"payload": payload},
                    }))?;
                    secret.metadata.labels = None;
                    t.api::<Secret>()
                        .create(&PostParams::default(), &secret)
                        .await?;
                }
                anyhow::Ok(())
            }
        })
        .buffer_unordered(32)
        .for_each(|r| async move { r.expect("create a cached object") })
        .await;
    Ok(())
}

/// A counter of the host summed over its series (None: not exposed by this build).
fn host_counter(metrics_addr: &str, name: &str) -> Option<f64> {
    let (code, body) = common::http_get(metrics_addr, "/metrics").ok()?;
    (code == 200 && body.contains(name)).then(|| common::metric_sum(&body, name))
}

/// The host's API requests by method and code (`rest_client_requests_total` series).
fn requests_by_method(metrics_addr: &str) -> serde_json::Map<String, serde_json::Value> {
    let body = common::http_get(metrics_addr, "/metrics")
        .map(|(_, b)| b)
        .unwrap_or_default();
    body.lines()
        .filter_map(|l| l.strip_prefix("rest_client_requests_total{"))
        .filter_map(|l| {
            let (labels, value) = l.split_once("} ")?;
            let label = |k: &str| {
                labels
                    .split(',')
                    .find_map(|kv| kv.strip_prefix(&format!("{k}=\"")))
                    .map(|v| v.trim_end_matches('"').to_string())
            };
            Some((
                format!("{} {}", label("method")?, label("code")?),
                json!(value.parse::<f64>().ok()?),
            ))
        })
        .collect()
}

/// (API requests, reconciles) of the host so far.
fn host_counts(metrics_addr: &str) -> (Option<f64>, Option<f64>) {
    (
        host_counter(metrics_addr, "rest_client_requests_total"),
        host_counter(metrics_addr, "controller_runtime_reconcile_total"),
    )
}

fn main() -> anyhow::Result<()> {
    let workers = std::env::var("ODH_BENCH_WORKERS").unwrap_or_else(|_| "1".into());
    let count = env_usize("ODH_BENCH_ISVCS", DEFAULT_COUNT);
    let label = common::label();
    let name = match label.as_str() {
        "current" => format!("isvc_converge_{count}_w{workers}"),
        other => format!("isvc_converge_{count}_w{workers}_{other}"),
    };
    let cluster = common::own_apiserver(&name);
    let result = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(storm(&name, &label, &workers, count));
    common::stop_apiserver(&cluster);
    result
}

async fn storm(name: &str, label: &str, workers: &str, count: usize) -> anyhow::Result<()> {
    let cached_objects = env_usize("ODH_BENCH_CACHED_OBJECTS", 0);
    let t = TestContext::new("bench-converge").await?;
    create_cached_objects(cached_objects).await?;
    let kubeconfig = odh_test_support::cluster()?.kubeconfig.clone();
    let log = std::fs::File::create(common::out_dir().join(format!("{name}.log")))?;
    let metrics_addr = common::free_addr();
    let health_addr = common::free_addr();
    let mut host = Command::new(common::host_binary())
        .args(["run", "--zap-devel=false"])
        .arg(format!("--health-probe-bind-address={health_addr}"))
        .arg(format!("--metrics-bind-address={metrics_addr}"))
        .arg(format!("--kubeconfig={}", kubeconfig.display()))
        .arg(format!("--max-concurrent-reconciles={workers}"))
        // As the Deployment runs it: compiled plugins from the cache (filled by the first run).
        .arg(format!(
            "--plugin-cache-dir={}",
            common::out_dir().join("plugin-cache").display()
        ))
        .env("ENABLE_WEBHOOKS", "false")
        .arg("--zap-log-level=error")
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()?;
    let pid = host.id();
    // Started, caches synced and settled before the burst.
    let ready_by = Instant::now() + Duration::from_secs(120);
    while !matches!(common::http_get(&health_addr, "/readyz"), Ok((200, _))) {
        anyhow::ensure!(
            Instant::now() < ready_by,
            "the host was not ready within 120 s"
        );
        anyhow::ensure!(host.try_wait()?.is_none(), "the host exited");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (cpu_idle, _) = common::usage(pid);
    // ODH_BENCH_PERF=1: a CPU profile of the host during the burst (perf record, call graphs).
    let mut perf = match std::env::var("ODH_BENCH_PERF").as_deref() {
        Ok("1") => Some(
            Command::new("perf")
                .args(["record", "-F", "999", "-g", "-p", &pid.to_string(), "-o"])
                .arg(common::out_dir().join(format!("{name}.perf.data")))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()?,
        ),
        _ => None,
    };
    let (requests_idle, reconciles_idle) = host_counts(&metrics_addr);

    t.create_serving_runtime(fixtures::ovms_runtime_in(&t.namespace))
        .await?;
    let isvcs = dynamic(
        &t,
        ("serving.kserve.io", "v1beta1", "InferenceService"),
        "inferenceservices",
    );
    let start = Instant::now();
    let namespace = t.namespace.clone();
    futures::stream::iter(0..count)
        .map(|i| {
            let (isvcs, namespace) = (isvcs.clone(), namespace.clone());
            async move {
                let obj: DynamicObject = serde_json::from_value(
                    fixtures::isvc(&format!("model-{i:05}"))
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
    let poll = if count <= 200 {
        Duration::from_millis(100)
    } else {
        Duration::from_millis(250)
    };
    let deadline = Instant::now() + Duration::from_secs(1800);
    let mut done = 0;
    while Instant::now() < deadline {
        done = converged(&t).await?;
        if done == count {
            break;
        }
        tokio::time::sleep(poll).await;
    }
    let elapsed = start.elapsed();
    let (cpu, peak_mib) = common::usage(pid);
    if let Some(perf) = perf.as_mut() {
        // perf writes its file on SIGINT.
        let _ = Command::new("kill")
            .args(["-INT", &perf.id().to_string()])
            .status();
        let _ = perf.wait();
    }
    let (requests_end, reconciles_end) = host_counts(&metrics_addr);
    let by_method = requests_by_method(&metrics_addr);
    let requests = requests_end
        .zip(requests_idle)
        .map(|(end, idle)| end - idle);
    let reconciles = reconciles_end
        .zip(reconciles_idle)
        .map(|(end, idle)| end - idle);
    let _ = host.kill();
    let _ = host.wait();
    anyhow::ensure!(done == count, "only {done} of {count} converged in 1800 s");

    let cpu_burst = cpu - cpu_idle;
    let results = json!({
        "binary": label,
        "inference_services": count,
        "cached_secrets_and_configmaps": cached_objects * 2,
        "workers": workers,
        "create_seconds": created.as_secs_f64(),
        "converge_seconds": elapsed.as_secs_f64(),
        "host_cpu_seconds": cpu_burst,
        "host_cpu_seconds_total": cpu,
        "host_peak_rss_mib": peak_mib,
        "api_requests": requests,
        "api_requests_by_method_and_code_since_start": by_method,
        "reconciles": reconciles,
        "per_inference_service": {
            "reconciles": reconciles.map(|r| r / count as f64),
            "converge_ms": elapsed.as_secs_f64() * 1e3 / count as f64,
            "host_cpu_ms": cpu_burst * 1e3 / count as f64,
            "api_requests": requests.map(|r| r / count as f64),
        },
    });
    println!(
        "isvc converge [{label}]: {count} InferenceServices, {workers} worker(s): {:.2} s (creates took {:.2} s), host CPU {:.2} s, peak RSS {:.1} MiB, API requests {}, reconciles {}",
        elapsed.as_secs_f64(),
        created.as_secs_f64(),
        cpu_burst,
        peak_mib,
        requests.map_or("n/a".into(), |r| format!("{r:.0}")),
        reconciles.map_or("n/a".into(), |r| format!("{r:.0}")),
    );
    common::write_json(name, &results);
    Ok(())
}
