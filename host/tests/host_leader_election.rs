//! Two `odh-model-controller run --leader-elect` processes on the real apiserver: only the
//! leader reconciles; when it dies the other takes over within the lease duration.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use odh_test_support::{TestContext, Timing, consistently, eventually};
use serde_json::json;

mod common;
use common::{free_port, get};

const LEASE: Duration = Duration::from_secs(4);
const RETRY: Duration = Duration::from_millis(500);

struct Host {
    child: Child,
    metrics_port: u16,
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_host(
    kubeconfig: &std::path::Path,
    namespace: &str,
    plugin: &std::path::Path,
    log: &str,
) -> Host {
    let metrics_port = free_port();
    let log = std::fs::File::create(std::env::temp_dir().join(log)).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_odh-model-controller"))
        .args(["run", "--leader-elect", "--zap-devel=false"])
        .arg(format!("--plugin={}", plugin.display()))
        .arg("--no-default-plugins")
        .arg(format!("--kubeconfig={}", kubeconfig.display()))
        .arg(format!("--metrics-bind-address=127.0.0.1:{metrics_port}"))
        .arg("--health-probe-bind-address=127.0.0.1:0")
        .arg(format!(
            "--leader-elect-lease-duration={}ms",
            LEASE.as_millis()
        ))
        .arg("--leader-elect-renew-deadline=3s")
        .arg(format!(
            "--leader-elect-retry-period={}ms",
            RETRY.as_millis()
        ))
        .env("POD_NAMESPACE", namespace)
        .env("ENABLE_WEBHOOKS", "false")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("start odh-model-controller");
    Host {
        child,
        metrics_port,
    }
}

/// `controller_runtime_reconcile_total` summed over results, from the host's /metrics.
async fn reconciles(host: &Host) -> anyhow::Result<u64> {
    let body = get(([127, 0, 0, 1], host.metrics_port).into(), "/metrics")
        .await?
        .body;
    Ok(body
        .lines()
        .filter(|l| {
            l.starts_with("controller_runtime_reconcile_total{")
                && l.contains("controller=\"owner\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64)
}

fn primary(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": {"odh-test/primary": "true"}}, "data": {"value": name}}))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_reconciles_and_a_standby_takes_over() -> anyhow::Result<()> {
    let t = TestContext::new("host-leader").await?;
    let cluster = odh_test_support::cluster()?;
    let plugin = odh_test_support::plugin_wasm("owner")?;
    let mut a = Some(start_host(
        &cluster.kubeconfig,
        &t.namespace,
        &plugin,
        "host-leader-a.log",
    ));
    let b = start_host(
        &cluster.kubeconfig,
        &t.namespace,
        &plugin,
        "host-leader-b.log",
    );

    let cms: Api<ConfigMap> = t.api();
    cms.create(&PostParams::default(), &primary("first"))
        .await?;
    eventually("first-owned exists", Timing::default(), || async {
        cms.get_opt("first-owned")
            .await?
            .ok_or_else(|| anyhow::anyhow!("not yet"))
    })
    .await?;

    // Exactly one of the two reconciled, and the other stays idle.
    let counts = (
        reconciles(a.as_ref().unwrap()).await?,
        reconciles(&b).await?,
    );
    assert!(
        (counts.0 > 0) != (counts.1 > 0),
        "exactly one host reconciles: {counts:?}"
    );
    let (leader_is_a, standby_count) = if counts.0 > 0 {
        (true, counts.1)
    } else {
        (false, counts.0)
    };
    let (leader, standby) = if leader_is_a {
        (a.take().unwrap(), b)
    } else {
        (b, a.take().unwrap())
    };
    consistently(
        "the standby does not reconcile",
        Timing::within(Duration::from_secs(1)),
        || async {
            anyhow::ensure!(
                reconciles(&standby).await? == standby_count,
                "the standby reconciled"
            );
            Ok(())
        },
    )
    .await?;

    // Kill the leader (no lease release) and measure how long until the standby reconciles.
    let killed = Instant::now();
    drop(leader);
    cms.create(&PostParams::default(), &primary("second"))
        .await?;
    eventually(
        "the standby takes over and reconciles",
        Timing::within(Duration::from_secs(30)),
        || async {
            cms.get_opt("second-owned")
                .await?
                .ok_or_else(|| anyhow::anyhow!("not yet"))
        },
    )
    .await?;
    let takeover = killed.elapsed();
    println!(
        "takeover after the leader was killed: {takeover:?} (lease {LEASE:?}, retry {RETRY:?})"
    );
    assert!(reconciles(&standby).await? > standby_count);
    assert!(
        takeover <= LEASE + RETRY * 3 + Duration::from_secs(2),
        "takeover took {takeover:?}"
    );
    Ok(())
}
