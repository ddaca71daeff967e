//! `make bench`: what a key costs (docs/performance.md, "Keys"). The host's `keys` import
//! (aws-lc-rs) per algorithm, the pure-Rust `rsa` crate natively for comparison (what the plugin
//! ran in Wasm before), and the servingruntime plugin's reconcile that makes the Ray CA through
//! the host (one RSA-4096 key and one signature, as a Ray TLS Pod's certificate). CPU is the
//! process's (`/proc/self/stat`, 10 ms ticks), summed over the runs and divided. Writes
//! target/bench/keys.json. A benchmark, not a test: nothing here passes or fails.

mod common;

use std::time::{Duration, Instant};

use odh_model_controller::plugin::keys::{self, Algorithm};
use odh_model_controller::plugin::wire::RequestKey;
use odh_model_controller::plugin::{CallEnv, Grants, MemoryCluster, ReconcileInput};
use serde_json::{Value, json};

fn cpu_seconds() -> f64 {
    common::usage(std::process::id()).0
}

/// `runs` timings of `f`: CPU per run, and the wall-clock median and maximum.
fn measure(runs: usize, mut f: impl FnMut()) -> Value {
    let mut walls = Vec::with_capacity(runs);
    let cpu_before = cpu_seconds();
    for _ in 0..runs {
        let t = Instant::now();
        f();
        walls.push(t.elapsed());
    }
    let cpu = (cpu_seconds() - cpu_before) / runs as f64;
    walls.sort();
    let ms = |d: Duration| (d.as_secs_f64() * 1e4).round() / 10.0;
    json!({
        "runs": runs,
        "cpu_ms_per_run": (cpu * 1e4).round() / 10.0,
        "wall_ms_median": ms(walls[runs / 2]),
        "wall_ms_max": ms(walls[runs - 1]),
    })
}

fn runs() -> usize {
    std::env::var("KEYS_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20)
}

fn main() {
    let runs = runs();
    let mut out = serde_json::Map::new();
    out.insert("binary".into(), json!(common::bench_binary_kind()));
    for (name, algorithm) in [
        ("host_rsa4096", Algorithm::Rsa4096),
        ("host_rsa2048", Algorithm::Rsa2048),
        ("host_ecdsa_p256", Algorithm::EcdsaP256),
    ] {
        let figure = measure(runs, || {
            std::hint::black_box(keys::generate(algorithm).expect("a key"));
        });
        println!("{name}: {figure}");
        out.insert(name.into(), figure);
    }
    let key = keys::generate(Algorithm::Rsa4096).unwrap();
    let figure = measure(runs * 5, || {
        std::hint::black_box(keys::sign(&key.private_key_pem, b"tbsCertificate").unwrap());
    });
    println!("host_rsa4096_sign: {figure}");
    out.insert("host_rsa4096_sign".into(), figure);

    // The pure-Rust crate the plugin used in Wasm, here natively: the other candidate.
    let figure = measure(runs.div_ceil(4), || {
        let key = rsa::PrivateKey::new(&mut getrandom::SysRng, 4096).expect("a key");
        std::hint::black_box(key);
    });
    println!("rsa_crate_native_rsa4096: {figure}");
    out.insert("rsa_crate_native_rsa4096".into(), figure);

    // The plugin's reconcile that makes `ray-ca-tls`, through the host's Wasm runtime.
    let plugin = odh_test_support::host::load_with("servingruntime", |r| {
        r.settings(json!({"podNamespace": "odh"})).grants(Grants {
            secure_random: true,
            ..Grants::default()
        })
    });
    let mut cluster = MemoryCluster::default();
    cluster
        .insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "odh"}}))
        .unwrap();
    let env = CallEnv::live(std::sync::Arc::new(cluster));
    let input = ReconcileInput {
        controller: "servingruntime".into(),
        key: RequestKey {
            namespace: Some("odh".into()),
            name: "ray-ca-tls".into(),
        },
        object: None,
    };
    let figure = measure(runs, || {
        let outcome = plugin.reconcile_blocking(&input, &env).expect("an outcome");
        assert!(outcome.error.is_none(), "{:?}", outcome.error);
    });
    println!("plugin_ray_ca_reconcile: {figure}");
    out.insert("plugin_ray_ca_reconcile".into(), figure);
    out.insert(
        "go_published".into(),
        json!("one-off Ray CA key (RSA-4096): ~0.5-1 s CPU (issue #35)"),
    );
    common::write_json("keys", &Value::Object(out));
}
