//! The reconcile storm (the `isvc_converge` bench's harness, shared with the peer bench): a
//! controller process against an apiserver of the run's own, a burst of InferenceServices, and
//! the clock stopped when every one has its finalizer, its dashboard ConfigMap, its metrics
//! Service and its ServiceMonitor, as seen by metadata watches of the four kinds.

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use kube::api::{Api, ApiResource, DynamicObject, PartialObjectMeta, PostParams};
use kube::core::GroupVersionKind;
use odh_test_fixtures as fixtures;
use odh_test_support::TestContext;
use serde_json::json;

pub const DEFAULT_COUNT: usize = 200;

fn resource(gvk: (&str, &str, &str), plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(gvk.0, gvk.1, gvk.2), plural)
}

fn dynamic(t: &TestContext, gvk: (&str, &str, &str), plural: &str) -> Api<DynamicObject> {
    Api::namespaced_with(t.client.clone(), &t.namespace, &resource(gvk, plural))
}

/// Metadata-only requests for a custom kind of the test namespace.
fn dynamic_metadata(
    t: &TestContext,
    gvk: (&str, &str, &str),
    plural: &str,
) -> Api<PartialObjectMeta<DynamicObject>> {
    Api::namespaced_with(t.client.clone(), &t.namespace, &resource(gvk, plural))
}

/// What one InferenceService has of what convergence asks for, one bit each.
const FINALIZER: u8 = 1;
const DASHBOARD: u8 = 2;
const METRICS_SERVICE: u8 = 4;
const SERVICE_MONITOR: u8 = 8;
const CONVERGED: u8 = FINALIZER | DASHBOARD | METRICS_SERVICE | SERVICE_MONITOR;

/// The InferenceService an object is named for (`<isvc><suffix>`); it counts once it exists.
fn named_for(meta: &kube::api::ObjectMeta, suffix: &str) -> Option<(String, bool)> {
    let name = meta.name.as_deref()?.strip_suffix(suffix)?;
    Some((name.to_string(), true))
}

/// A metadata watch of one kind in the test namespace, as (InferenceService, `bit`, whether it
/// holds): `holds` names the InferenceService of an object and says whether the object counts;
/// a deleted one does not.
fn watch_bits<K>(
    api: Api<PartialObjectMeta<K>>,
    bit: u8,
    holds: impl Fn(&kube::api::ObjectMeta) -> Option<(String, bool)> + Send + 'static,
) -> futures::stream::BoxStream<'static, (String, u8, bool)>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    use kube::runtime::watcher::{self, Event};
    watcher::watcher(api, watcher::Config::default())
        .filter_map(move |event| {
            let update = match event {
                Ok(Event::Apply(o) | Event::InitApply(o)) => {
                    holds(&o.metadata).map(|(n, held)| (n, bit, held))
                }
                Ok(Event::Delete(o)) => holds(&o.metadata).map(|(n, _)| (n, bit, false)),
                // The watcher retries by itself; a relist re-applies what exists.
                _ => None,
            };
            futures::future::ready(update)
        })
        .boxed()
}

/// How many InferenceServices are converged, kept up to date from watches of the four kinds.
/// Watches, not polled lists: a list of thousands of objects every few hundred milliseconds
/// costs the apiserver (on the same two cores) more as the storm grows, and would be measured
/// as the host's slowness.
fn track_converged(t: &TestContext) -> tokio::sync::watch::Receiver<usize> {
    let finalizer = |m: &kube::api::ObjectMeta| {
        let has = m
            .finalizers
            .as_ref()
            .is_some_and(|f| f.iter().any(|x| x == "odh.inferenceservice.finalizers"));
        Some((m.name.clone()?, has))
    };
    let updates = futures::stream::select_all([
        watch_bits(
            dynamic_metadata(
                t,
                ("serving.kserve.io", "v1beta1", "InferenceService"),
                "inferenceservices",
            ),
            FINALIZER,
            finalizer,
        ),
        watch_bits(
            Api::<PartialObjectMeta<ConfigMap>>::namespaced(t.client.clone(), &t.namespace),
            DASHBOARD,
            |m| named_for(m, "-metrics-dashboard"),
        ),
        watch_bits(
            Api::<PartialObjectMeta<Service>>::namespaced(t.client.clone(), &t.namespace),
            METRICS_SERVICE,
            |m| named_for(m, "-metrics"),
        ),
        watch_bits(
            dynamic_metadata(
                t,
                ("monitoring.coreos.com", "v1", "ServiceMonitor"),
                "servicemonitors",
            ),
            SERVICE_MONITOR,
            |m| named_for(m, "-metrics"),
        ),
    ]);
    let (tx, rx) = tokio::sync::watch::channel(0);
    tokio::spawn(async move {
        let mut bits: HashMap<String, u8> = HashMap::new();
        let mut converged = 0usize;
        let mut updates = updates;
        while let Some((name, bit, holds)) = updates.next().await {
            let entry = bits.entry(name).or_default();
            let before = *entry == CONVERGED;
            if holds {
                *entry |= bit;
            } else {
                *entry &= !bit;
            }
            match (before, *entry == CONVERGED) {
                (false, true) => converged += 1,
                (true, false) => converged -= 1,
                _ => continue,
            }
            if tx.send(converged).is_err() {
                return;
            }
        }
    });
    rx
}

pub fn env_usize(name: &str, default: usize) -> usize {
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
    let (code, body) = super::http_get(metrics_addr, "/metrics").ok()?;
    (code == 200 && body.contains(name)).then(|| super::metric_sum(&body, name))
}

/// The host's API requests by method and code (`rest_client_requests_total` series).
fn requests_by_method(metrics_addr: &str) -> serde_json::Map<String, serde_json::Value> {
    let body = super::http_get(metrics_addr, "/metrics")
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

/// The apiserver's `/metrics`.
async fn apiserver_metrics(t: &TestContext) -> anyhow::Result<String> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    Ok(t.client.request_text(request).await?)
}

/// The value of `label` in a Prometheus series' label set.
fn label_value<'a>(labels: &'a str, label: &str) -> Option<&'a str> {
    labels.split(',').find_map(|kv| {
        kv.strip_prefix(label)?
            .strip_prefix("=\"")?
            .strip_suffix('"')
    })
}

/// (seconds, count) of a histogram's series between two scrapes, summed by the values of `keys`.
fn histogram_delta(
    before: &str,
    after: &str,
    name: &str,
    keys: &[&str],
) -> std::collections::BTreeMap<String, (f64, f64)> {
    let totals = |text: &str| {
        let mut by: std::collections::BTreeMap<String, (f64, f64)> = Default::default();
        for line in text.lines() {
            let (field, rest) = if let Some(r) = line.strip_prefix(&format!("{name}_sum{{")) {
                (0, r)
            } else if let Some(r) = line.strip_prefix(&format!("{name}_count{{")) {
                (1, r)
            } else {
                continue;
            };
            let Some((labels, value)) = rest.rsplit_once("} ") else {
                continue;
            };
            let Ok(value) = value.trim().parse::<f64>() else {
                continue;
            };
            let key = keys
                .iter()
                .map(|k| label_value(labels, k).unwrap_or(""))
                .collect::<Vec<_>>()
                .join(" ");
            let entry = by.entry(key).or_default();
            if field == 0 {
                entry.0 += value;
            } else {
                entry.1 += value;
            }
        }
        by
    };
    let before = totals(before);
    totals(after)
        .into_iter()
        .map(|(k, (sum, count))| {
            let (s0, c0) = before.get(&k).copied().unwrap_or_default();
            (k, (sum - s0, count - c0))
        })
        .filter(|(_, (_, count))| *count > 0.0)
        .collect()
}

/// Mean latency in ms and count of each series of a histogram between two scrapes.
fn latencies(
    before: &str,
    after: &str,
    name: &str,
    keys: &[&str],
) -> serde_json::Map<String, serde_json::Value> {
    histogram_delta(before, after, name, keys)
        .into_iter()
        .map(|(k, (sum, count))| (k, json!({"count": count, "mean_ms": sum * 1e3 / count})))
        .collect()
}

/// Reconciles so far per controller (`controller_runtime_reconcile_total` summed over results).
fn reconciles_by_controller(metrics_addr: &str) -> std::collections::BTreeMap<String, f64> {
    let body = super::http_get(metrics_addr, "/metrics")
        .map(|(_, b)| b)
        .unwrap_or_default();
    let mut by = std::collections::BTreeMap::new();
    for line in body.lines() {
        let Some(rest) = line.strip_prefix("controller_runtime_reconcile_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.split_once("} ") else {
            continue;
        };
        let controller = labels
            .split(',')
            .find_map(|kv| kv.strip_prefix("controller=\""))
            .map(|v| v.trim_end_matches('"').to_string());
        if let (Some(c), Ok(v)) = (controller, value.parse::<f64>()) {
            *by.entry(c).or_insert(0.0) += v;
        }
    }
    by
}

/// (API requests, reconciles) of the host so far.
fn host_counts(metrics_addr: &str) -> (Option<f64>, Option<f64>) {
    (
        host_counter(metrics_addr, "rest_client_requests_total"),
        host_counter(metrics_addr, "controller_runtime_reconcile_total"),
    )
}

/// Where the controller under test is to talk and listen, for [`Storm::command`].
pub struct Endpoints {
    pub kubeconfig: std::path::PathBuf,
    pub metrics_addr: String,
    pub health_addr: String,
    /// A namespace of its own (POD_NAMESPACE), not the one the InferenceServices go to.
    pub controller_namespace: String,
}

/// When the controller under test is ready for the burst.
pub enum Readiness {
    /// `/readyz` on the health address answers 200 (the host: caches synced), then 1 s.
    Readyz,
    /// Its log says every controller it started has started its workers (controller-runtime's
    /// `Starting workers`; its `/readyz` is a ping that answers before any cache syncs), then
    /// 1 s and until its CPU is quiet (at most 30 s).
    WorkersStarted,
}

/// One storm: what to start and how to tell it is ready.
pub struct Storm<'a> {
    /// Names the log, the profile and the results (`target/bench/<name>.*`).
    pub name: &'a str,
    /// Names the controller in the results.
    pub label: &'a str,
    pub workers: &'a str,
    pub count: usize,
    pub command: Box<dyn FnOnce(&Endpoints) -> Command + 'a>,
    pub readiness: Readiness,
}

/// How many of `needle` lines the file at `path` holds.
fn lines_with(path: &std::path::Path, needle: &str) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(needle))
        .count()
}

/// Runs one storm; prints its summary and returns its results (without `host_binary`).
pub async fn storm(
    cluster: &std::path::Path,
    storm: Storm<'_>,
) -> anyhow::Result<serde_json::Value> {
    let Storm {
        name,
        label,
        workers,
        count,
        command,
        readiness,
    } = storm;
    let cached_objects = env_usize("ODH_BENCH_CACHED_OBJECTS", 0);
    let t = TestContext::new("bench-converge").await?;
    let controller_namespace = TestContext::new("bench-controller").await?.namespace;
    let apiserver_pid = super::apiserver_pid(cluster)?;
    create_cached_objects(cached_objects).await?;
    let kubeconfig = odh_test_support::cluster()?.kubeconfig.clone();
    let log_path = super::out_dir().join(format!("{name}.log"));
    let log = std::fs::File::create(&log_path)?;
    let endpoints = Endpoints {
        kubeconfig,
        metrics_addr: super::free_addr(),
        health_addr: super::free_addr(),
        controller_namespace,
    };
    let (metrics_addr, health_addr) = (
        endpoints.metrics_addr.clone(),
        endpoints.health_addr.clone(),
    );
    let mut host = command(&endpoints)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()?;
    let pid = host.id();
    // Started, caches synced and settled before the burst.
    let ready_by = Instant::now() + Duration::from_secs(120);
    let is_ready = || match readiness {
        Readiness::Readyz => matches!(super::http_get(&health_addr, "/readyz"), Ok((200, _))),
        Readiness::WorkersStarted => {
            let started = lines_with(&log_path, "Starting workers");
            started > 0 && started == lines_with(&log_path, "Starting Controller")
        }
    };
    while !is_ready() {
        anyhow::ensure!(
            Instant::now() < ready_by,
            "the controller was not ready within 120 s (log: {})",
            log_path.display()
        );
        anyhow::ensure!(
            host.try_wait()?.is_none(),
            "the controller exited (log: {})",
            log_path.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut converged = track_converged(&t);
    tokio::time::sleep(Duration::from_secs(1)).await;
    if matches!(readiness, Readiness::WorkersStarted) {
        // The first reconciles of what exists (and a start that only now syncs) done: less
        // than 10 ms of CPU in half a second.
        let quiet_by = Instant::now() + Duration::from_secs(30);
        loop {
            let (before, _) = super::usage(pid);
            tokio::time::sleep(Duration::from_millis(500)).await;
            let (after, _) = super::usage(pid);
            if after - before <= 0.01 || Instant::now() > quiet_by {
                break;
            }
        }
    }
    let (cpu_idle, startup_peak_mib) = super::usage(pid);
    // The burst's own peak: reset the peak RSS (VmHWM) the start-up reached (compiling the
    // plugins, when the cache is empty).
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5")?;
    let (apiserver_cpu_idle, _) = super::usage(apiserver_pid);
    // ODH_BENCH_PERF=1: a CPU profile of the host during the burst (perf record, call graphs).
    let mut perf = match std::env::var("ODH_BENCH_PERF").as_deref() {
        Ok("1") => Some(
            Command::new("perf")
                .args(["record", "-F", "999", "-g", "-p", &pid.to_string(), "-o"])
                .arg(super::out_dir().join(format!("{name}.perf.data")))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()?,
        ),
        _ => None,
    };
    let (requests_idle, reconciles_idle) = host_counts(&metrics_addr);
    let by_controller_idle = reconciles_by_controller(&metrics_addr);
    let apiserver_before = apiserver_metrics(&t).await?;

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
    let deadline = tokio::time::Instant::now() + Duration::from_secs(1800);
    let reached = tokio::time::timeout_at(deadline, converged.wait_for(|&n| n >= count))
        .await
        .map(|r| r.map(|n| *n));
    anyhow::ensure!(
        !matches!(reached, Ok(Err(_))),
        "the convergence watches ended"
    );
    let done = *converged.borrow();
    let elapsed = start.elapsed();
    let (cpu, peak_mib) = super::usage(pid);
    let (apiserver_cpu, _) = super::usage(apiserver_pid);
    let apiserver_after = apiserver_metrics(&t).await?;
    if let Some(perf) = perf.as_mut() {
        // perf writes its file on SIGINT.
        let _ = Command::new("kill")
            .args(["-INT", &perf.id().to_string()])
            .status();
        let _ = perf.wait();
    }
    let (requests_end, reconciles_end) = host_counts(&metrics_addr);
    let by_method = requests_by_method(&metrics_addr);
    // What each controller reconciled during the burst (the storage plugin's `core-configmap`
    // sees every ConfigMap the InferenceServices bring, unless its event filter drops them).
    let by_controller: serde_json::Map<String, serde_json::Value> =
        reconciles_by_controller(&metrics_addr)
            .into_iter()
            .map(|(c, end)| {
                let idle = by_controller_idle.get(&c).copied().unwrap_or(0.0);
                (c, json!(end - idle))
            })
            .filter(|(_, v)| v.as_f64().is_some_and(|v| v > 0.0))
            .collect();
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
    // The apiserver and its etcd, for the cost the storm puts on them (the creates included).
    let apiserver_cpu_burst = apiserver_cpu - apiserver_cpu_idle;
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
        "host_peak_rss_mib_startup": startup_peak_mib,
        "apiserver_cpu_seconds": apiserver_cpu_burst,
        // Where the apiserver's time per request goes as its store grows.
        "apiserver_request_latency": latencies(
            &apiserver_before,
            &apiserver_after,
            "apiserver_request_duration_seconds",
            &["verb", "resource"],
        ),
        "clusterip_allocation_latency": latencies(
            &apiserver_before,
            &apiserver_after,
            "kube_apiserver_clusterip_allocator_allocation_duration_seconds",
            &["scope"],
        ),
        "etcd_request_latency": latencies(
            &apiserver_before,
            &apiserver_after,
            "etcd_request_duration_seconds",
            &["operation", "type"],
        ),
        "api_requests": requests,
        "api_requests_by_method_and_code_since_start": by_method,
        "reconciles": reconciles,
        "reconciles_by_controller": by_controller,
        "per_inference_service": {
            "reconciles": reconciles.map(|r| r / count as f64),
            "converge_ms": elapsed.as_secs_f64() * 1e3 / count as f64,
            "host_cpu_ms": cpu_burst * 1e3 / count as f64,
            "apiserver_cpu_ms": apiserver_cpu_burst * 1e3 / count as f64,
            "api_requests": requests.map(|r| r / count as f64),
        },
    });
    println!(
        "isvc converge [{label}]: {count} InferenceServices, {workers} worker(s): {:.2} s (creates took {:.2} s), host CPU {:.2} s, apiserver CPU {:.2} s, peak RSS {:.1} MiB, API requests {}, reconciles {}",
        elapsed.as_secs_f64(),
        created.as_secs_f64(),
        cpu_burst,
        apiserver_cpu_burst,
        peak_mib,
        requests.map_or("n/a".into(), |r| format!("{r:.0}")),
        reconciles.map_or("n/a".into(), |r| format!("{r:.0}")),
    );
    Ok(results)
}
