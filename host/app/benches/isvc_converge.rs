//! How fast the host converges a burst of InferenceServices: `odh-model-controller run` (the
//! release binary, default plugins, upstream's default of one worker unless
//! `ODH_BENCH_WORKERS` says otherwise) against the test apiserver; `ODH_BENCH_ISVCS` (200)
//! InferenceServices are created at once in one namespace and the clock stops when every one
//! has its finalizer, its dashboard ConfigMap, its metrics Service and its ServiceMonitor.
//! `ODH_BENCH_CACHED_OBJECTS` (0) Secrets and as many ConfigMaps are created in another
//! namespace first, for the memory the host's caches take. Reports wall time, the host
//! process's CPU seconds, its peak RSS and its API requests (`rest_client_requests_total`) to
//! target/bench/isvc_converge_<n>_w<workers>[_<label>].json; `ODH_BENCH_HOST_BIN` and
//! `ODH_BENCH_LABEL` measure another build side by side, `ODH_BENCH_HOST_ARGS` (flags,
//! whitespace-separated) another setting, e.g. `--kube-api-qps=0` for the storm without the
//! client-side rate limit. A benchmark, not a test (needs
//! `make apiserver` and the CRDs, as the tests do).

mod common;

use std::process::Command;

use common::storm::{DEFAULT_COUNT, Endpoints, Readiness, Storm, env_usize};

fn main() -> anyhow::Result<()> {
    let workers = std::env::var("ODH_BENCH_WORKERS").unwrap_or_else(|_| "1".into());
    let count = env_usize("ODH_BENCH_ISVCS", DEFAULT_COUNT);
    let label = common::label();
    let name = match label.as_str() {
        "current" => format!("isvc_converge_{count}_w{workers}"),
        other => format!("isvc_converge_{count}_w{workers}_{other}"),
    };
    let cluster = common::own_apiserver(&name);
    let command = |e: &Endpoints| {
        let mut host = Command::new(common::host_binary());
        host.args(["run", "--zap-devel=false"])
            .arg(format!("--health-probe-bind-address={}", e.health_addr))
            .arg(format!("--metrics-bind-address={}", e.metrics_addr))
            .arg(format!("--kubeconfig={}", e.kubeconfig.display()))
            .arg(format!("--max-concurrent-reconciles={workers}"))
            // As the Deployment runs it: compiled plugins from the cache (filled by the first run).
            .arg(format!(
                "--plugin-cache-dir={}",
                common::out_dir().join("plugin-cache").display()
            ))
            .env("ENABLE_WEBHOOKS", "false")
            .arg("--zap-log-level=error")
            .args(
                std::env::var("ODH_BENCH_HOST_ARGS")
                    .unwrap_or_default()
                    .split_whitespace(),
            );
        host
    };
    let result = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(common::storm::storm(
            &cluster,
            Storm {
                name: &name,
                label: &label,
                workers: &workers,
                count,
                command: Box::new(command),
                readiness: Readiness::Readyz,
            },
        ));
    common::stop_apiserver(&cluster);
    let mut results = result?;
    results["host_binary"] = common::host_binary_info();
    common::write_json(&name, &results);
    Ok(())
}
