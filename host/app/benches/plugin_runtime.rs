//! `make bench`: the plugin runtime's costs. Writes target/bench/plugin_runtime.json and prints
//! a summary. A benchmark, not a test: nothing here passes or fails.

mod common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::load::review;
use odh_model_controller::plugin::wire::{RequestKey, WebhookType};
use odh_model_controller::plugin::{
    CallEnv, ClusterView, EngineOptions, Export, LoadRequest, LoadedPlugin, MemoryCluster,
    PluginEngine, ReconcileInput, Source,
};
use odh_model_controller::webhook::parse_review;
use odh_test_fixtures as fixtures;
use serde_json::json;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn plugin_path(name: &str) -> PathBuf {
    odh_test_support::plugin_wasm(name).expect("make plugins")
}

fn load(engine: &PluginEngine, path: &std::path::Path, bytes: &[u8]) -> LoadedPlugin {
    LoadedPlugin::load(
        engine,
        LoadRequest::new(Source::File(path.to_path_buf()), bytes),
    )
    .expect("load")
}

/// A ConfigMap of about 2 KiB.
fn object_2k() -> String {
    let filler = "x".repeat(1900);
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "demo", "namespace": "bench", "uid": "1234", "labels": {"hello.opendatahub.io/enabled": "true"}},
           "data": {"payload": filler}})
    .to_string()
}

/// An exposed InferenceService with auth on the OVMS runtime, holding our finalizer.
fn isvc_object() -> String {
    fixtures::isvc("demo")
        .namespace("bench")
        .exposed()
        .with_auth(None)
        .finalizers(&["odh.inferenceservice.finalizers"])
        .build()
        .to_string()
}

/// What that reconcile reads: its runtime, its predictor Service, itself.
fn isvc_cluster() -> MemoryCluster {
    let mut cluster = MemoryCluster::default();
    for object in [
        serde_json::from_str(&isvc_object()).unwrap(),
        fixtures::ovms_runtime().namespace("bench").build(),
        fixtures::predictor_service("demo")
            .namespace("bench")
            .build(),
    ] {
        cluster.insert(object).unwrap();
    }
    cluster
}

/// A run of timed calls on one thread: their wall times and the thread's CPU time since start.
struct Calls {
    samples: Vec<Duration>,
    cpu: Duration,
}

impl Calls {
    fn start(n: usize) -> Self {
        Calls {
            samples: Vec::with_capacity(n),
            cpu: thread_cpu(),
        }
    }

    fn figures(mut self, plugin: &str) -> serde_json::Value {
        let n = self.samples.len().max(1);
        let cpu = (thread_cpu() - self.cpu) / n as u32;
        self.samples.sort();
        json!({"plugin": plugin, "iterations": n,
               "p50_us": micros(percentile(&self.samples, 0.50)),
               "p99_us": micros(percentile(&self.samples, 0.99)),
               "cpu_per_call_us": micros(cpu)})
    }
}

/// Thread CPU time: what one call costs, without the waits of a preempted thread.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn main() {
    let iterations: usize = std::env::var("BENCH_ITERATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    // `pulley64` runs the calls on wasmtime's interpreter (a build with `--features
    // wasmtime/pulley`): Pulley against Cranelift on one machine (docs/performance.md). Empty
    // is unset, so one command line serves both runs.
    let target = std::env::var("ODH_BENCH_PLUGIN_TARGET")
        .ok()
        .filter(|t| !t.is_empty());
    let engine = PluginEngine::new(EngineOptions {
        target: target.clone(),
        ..Default::default()
    })
    .unwrap();
    let hello_path = plugin_path("hello");
    let hello_bytes = std::fs::read(&hello_path).unwrap();
    let hello = load(&engine, &hello_path, &hello_bytes);
    let object = object_2k();
    let input = ReconcileInput {
        controller: "hello".into(),
        key: RequestKey {
            namespace: Some("bench".into()),
            name: "demo".into(),
        },
        object: Some(object.clone()),
    };
    let cluster: Arc<dyn ClusterView> = Arc::new(MemoryCluster::default());
    let env = CallEnv::live(cluster.clone());

    // Per call: a fresh store + instance from the pre-instantiated component, then reconcile.
    for _ in 0..500 {
        hello.reconcile_blocking(&input, &env).unwrap();
    }
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let t = Instant::now();
        let out = hello.reconcile_blocking(&input, &env).unwrap();
        samples.push(t.elapsed());
        std::hint::black_box(out);
    }
    samples.sort();
    let (p50, p99) = (percentile(&samples, 0.50), percentile(&samples, 0.99));

    // The same through the async API (permit + blocking-pool hand-off), as the host calls it.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let async_samples = rt.block_on(async {
        let mut s = Vec::with_capacity(iterations / 4);
        for _ in 0..iterations / 4 {
            let t = Instant::now();
            let (input, env) = (input.clone(), env.clone());
            hello
                .offload(Export::Reconcile, move |p| {
                    p.reconcile_blocking(&input, &env)
                })
                .await
                .unwrap();
            s.push(t.elapsed());
        }
        s.sort();
        s
    });
    let (ap50, ap99) = (
        percentile(&async_samples, 0.50),
        percentile(&async_samples, 0.99),
    );

    // A whole InferenceService reconcile (six steps, reads from the cluster view): exposed, with
    // its runtime and predictor Service present.
    let isvc_path = plugin_path("isvc");
    let isvc_bytes = std::fs::read(&isvc_path).unwrap();
    let isvc = load(&engine, &isvc_path, &isvc_bytes);
    let isvc_env = CallEnv::live(Arc::new(isvc_cluster()));
    let isvc_input = ReconcileInput {
        controller: "inferenceservice".into(),
        key: RequestKey {
            namespace: Some("bench".into()),
            name: "demo".into(),
        },
        object: Some(isvc_object()),
    };
    for _ in 0..200 {
        isvc.reconcile_blocking(&isvc_input, &isvc_env).unwrap();
    }
    let mut isvc_samples = Vec::with_capacity(iterations / 4);
    for _ in 0..iterations / 4 {
        let t = Instant::now();
        let out = isvc.reconcile_blocking(&isvc_input, &isvc_env).unwrap();
        isvc_samples.push(t.elapsed());
        std::hint::black_box(out);
    }
    isvc_samples.sort();
    let (ip50, ip99) = (
        percentile(&isvc_samples, 0.50),
        percentile(&isvc_samples, 0.99),
    );

    // The InferenceService webhooks' plugin call in process (no TLS, no HTTP): the review the
    // admission benches send, parsed as the webhook server parses it, then the call alone.
    // `blocking` as the CLI and replay call it; `inline` as the webhook server does, on a fiber
    // of the calling task.
    let isvc_review = review(
        "bench",
        (
            "serving.kserve.io",
            "v1beta1",
            "InferenceService",
            "inferenceservices",
        ),
        fixtures::isvc("demo").namespace("bench").build(),
    );
    let mut admission = serde_json::Map::new();
    for (name, kind, path) in [
        (
            "isvc_validate",
            WebhookType::Validating,
            "/validate-serving-kserve-io-v1beta1-inferenceservice",
        ),
        (
            "isvc_mutate",
            WebhookType::Mutating,
            "/mutate-serving-kserve-io-v1beta1-inferenceservice",
        ),
    ] {
        let input = parse_review(&isvc_review, path).expect("the bench's review parses");
        let n = iterations / 2;
        for _ in 0..500 {
            isvc.admit_blocking(kind, &input, &isvc_env).unwrap();
        }
        let mut calls = Calls::start(n);
        for _ in 0..n {
            let t = Instant::now();
            std::hint::black_box(isvc.admit_blocking(kind, &input, &isvc_env).unwrap());
            calls.samples.push(t.elapsed());
        }
        admission.insert(name.into(), calls.figures("isvc"));
        let inline = rt.block_on(async {
            for _ in 0..500 {
                isvc.admit(kind, input.clone(), isvc_env.clone())
                    .await
                    .unwrap();
            }
            let mut calls = Calls::start(n);
            for _ in 0..n {
                let t = Instant::now();
                let call = isvc.admit(kind, input.clone(), isvc_env.clone());
                std::hint::black_box(call.await.unwrap());
                calls.samples.push(t.elapsed());
            }
            calls.figures("isvc")
        });
        admission.insert(format!("{name}_inline"), inline);
    }

    // Compile from scratch (fresh engine, no cache) and load from the on-disk cache.
    let heavy_path = plugin_path("heavy");
    let heavy = std::fs::read(&heavy_path).unwrap();
    let cache_dir = std::env::temp_dir().join(format!("odh-bench-cache-{}", std::process::id()));
    let mut compile = Vec::new();
    let mut cached = Vec::new();
    let compiles = std::env::var("BENCH_COMPILES")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(5);
    for _ in 0..compiles {
        let fresh = PluginEngine::new(EngineOptions::default()).unwrap();
        let t = Instant::now();
        fresh.compile(&heavy).unwrap();
        compile.push(t.elapsed());
        let _ = std::fs::remove_dir_all(&cache_dir);
        let writer = PluginEngine::new(EngineOptions {
            cache_dir: Some(cache_dir.clone()),
            ..Default::default()
        })
        .unwrap();
        writer.compile(&heavy).unwrap();
        let reader = PluginEngine::new(EngineOptions {
            cache_dir: Some(cache_dir.clone()),
            ..Default::default()
        })
        .unwrap();
        let t = Instant::now();
        reader.compile(&heavy).unwrap();
        cached.push(t.elapsed());
    }
    let _ = std::fs::remove_dir_all(&cache_dir);
    compile.sort();
    cached.sort();

    let results = json!({
        "machine": {"cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)},
        "plugin_target": target.as_deref().unwrap_or("native"),
        "reconcile_call": {
            "plugin": "hello", "object_bytes": object.len(), "iterations": iterations, "pooling": true,
            "p50_us": micros(p50), "p99_us": micros(p99),
            "async_p50_us": micros(ap50), "async_p99_us": micros(ap99),
        },
        "isvc_reconcile": {
            "plugin": "isvc", "bytes": isvc_bytes.len(), "iterations": iterations / 4,
            "p50_us": micros(ip50), "p99_us": micros(ip99),
        },
        "admission_call": admission,
        "component": {
            "plugin": "heavy", "bytes": heavy.len(),
            "compile_median_ms": millis(compile[compile.len() / 2]),
            "cached_load_median_ms": millis(cached[cached.len() / 2]),
        }
    });
    common::write_json("plugin_runtime", &results);

    println!(
        "plugin runtime ({} iterations, 2 KiB object, pooling allocator)",
        iterations
    );
    println!(
        "  instantiate + reconcile (hello)     p50 {:>8.1} µs   p99 {:>8.1} µs",
        micros(p50),
        micros(p99)
    );
    println!(
        "  same via async API (blocking pool)  p50 {:>8.1} µs   p99 {:>8.1} µs",
        micros(ap50),
        micros(ap99)
    );
    println!(
        "  InferenceService reconcile (isvc)   p50 {:>8.1} µs   p99 {:>8.1} µs",
        micros(ip50),
        micros(ip99)
    );
    for (name, figures) in &admission {
        println!(
            "  {name:<20} call (isvc)  p50 {:>8.1} µs   p99 {:>8.1} µs   CPU/call {:>6.1} µs",
            figures["p50_us"].as_f64().unwrap_or_default(),
            figures["p99_us"].as_f64().unwrap_or_default(),
            figures["cpu_per_call_us"].as_f64().unwrap_or_default(),
        );
    }
    println!(
        "  compile {} KiB component (heavy)   median {:>7.1} ms; cached load median {:>6.2} ms",
        heavy.len() / 1024,
        millis(compile[compile.len() / 2]),
        millis(cached[cached.len() / 2])
    );
}
