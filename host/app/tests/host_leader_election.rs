//! Two `odh-model-controller run --leader-elect` processes on the real apiserver: only the
//! leader reconciles; when it dies the other takes over within the lease duration. Under load
//! (both serving the InferenceService webhooks behind one address, a storm of creates through
//! the apiserver), stopping the leader fails no admission and the storm converges.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use odh_test_support::{TestContext, Timing, consistently, eventually};
use serde_json::json;

use odh_test_support::net::{free_port, get, remove_dir, serving_cert};
use odh_test_support::process::HostProcess;

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

async fn metrics(host: &Host) -> anyhow::Result<String> {
    Ok(get(([127, 0, 0, 1], host.metrics_port).into(), "/metrics")
        .await?
        .body)
}

/// The value of the sample `series` (name and labels) in `body`.
fn sample(body: &str, series: &str) -> Option<f64> {
    body.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// `controller_runtime_reconcile_total` summed over results, from the host's /metrics.
async fn reconciles(host: &Host) -> anyhow::Result<u64> {
    let body = metrics(host).await?;
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

    // Exactly one of the two reconciled, and the other stays idle (a slow start may still be
    // binding its metrics port).
    let counts = eventually("both hosts serve metrics", Timing::default(), || async {
        Ok((
            reconciles(a.as_ref().unwrap()).await?,
            reconciles(&b).await?,
        ))
    })
    .await?;
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

    // What an SRE's dashboards read, with controller-runtime's and client-go's names: the
    // election by Lease, the owner controller's queue timings, the process.
    let (leading, standing_by) = (metrics(&leader).await?, metrics(&standby).await?);
    let election = r#"leader_election_master_status{name="odh-model-controller.opendatahub.io"}"#;
    assert_eq!(sample(&leading, election), Some(1.0), "{leading}");
    assert_eq!(sample(&standing_by, election), Some(0.0), "{standing_by}");
    let queue = r#"{name="owner",controller="owner"}"#;
    for family in [
        "workqueue_queue_duration_seconds_count",
        "workqueue_work_duration_seconds_count",
    ] {
        assert!(
            sample(&leading, &format!("{family}{queue}")).is_some_and(|n| n >= 1.0),
            "{family} in {leading}"
        );
    }
    for family in [
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
        "workqueue_depth",
    ] {
        assert!(
            sample(&leading, &format!("{family}{queue}")).is_some(),
            "{family} in {leading}"
        );
    }
    assert!(
        leading.contains(
            r#"workqueue_queue_duration_seconds_bucket{name="owner",controller="owner",le="1e-08"}"#
        ),
        "client-go's buckets start at 10 ns: {leading}"
    );
    for family in [
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_open_fds",
        "process_start_time_seconds",
    ] {
        assert!(
            sample(&leading, family).is_some_and(|v| v > 0.0),
            "{family} in {leading}"
        );
    }

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

/// `odh_leader` of a host (1 while it leads); `None` while its metrics do not answer.
async fn leads(metrics_port: u16) -> Option<bool> {
    let body = get(([127, 0, 0, 1], metrics_port).into(), "/metrics")
        .await
        .ok()?
        .body;
    body.lines()
        .find(|l| l.starts_with("odh_leader "))
        .map(|l| l.ends_with(" 1"))
}

/// The time between the last renewal of the Lease in `namespace` by its holder at the call and
/// the next holder's acquisition, both as written to the Lease by the replicas (one clock).
fn lease_renewals(
    client: kube::Client,
    namespace: String,
) -> tokio::task::JoinHandle<anyhow::Result<Duration>> {
    use k8s_openapi::api::coordination::v1::Lease;
    tokio::spawn(async move {
        let leases = Api::<Lease>::namespaced(client, &namespace);
        let mut old: Option<(String, k8s_openapi::jiff::Timestamp)> = None;
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline {
            for lease in leases.list(&Default::default()).await?.items {
                let Some(spec) = lease.spec else { continue };
                let (Some(holder), Some(renewed)) = (spec.holder_identity, spec.renew_time) else {
                    continue;
                };
                match &old {
                    None => old = Some((holder, renewed.0)),
                    Some((was, _)) if *was == holder => old = Some((holder, renewed.0)),
                    Some((_, last)) => {
                        let acquired = spec.acquire_time.map_or(renewed.0, |a| a.0);
                        return Ok(Duration::try_from(acquired.duration_since(*last))?);
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        anyhow::bail!("the lease in {namespace} did not change hands")
    })
}

/// A TCP front for both replicas, as a Service is: each connection goes to the next replica in
/// turn, or to the other one when a replica refuses connections (its endpoint removed).
async fn front(backends: [u16; 2]) -> anyhow::Result<u16> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        let mut next = 0usize;
        loop {
            let Ok((mut inbound, _)) = listener.accept().await else {
                return;
            };
            next += 1;
            let order = [backends[next % 2], backends[(next + 1) % 2]];
            tokio::spawn(async move {
                for backend in order {
                    if let Ok(mut outbound) =
                        tokio::net::TcpStream::connect(("127.0.0.1", backend)).await
                    {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        return;
                    }
                }
            });
        }
    });
    Ok(port)
}

/// One InferenceService webhook entry (`path` on the front) for the test's namespace.
fn isvc_webhook(
    name: &str,
    path: &str,
    port: u16,
    ca_pem: &str,
    namespace: &str,
) -> serde_json::Value {
    use base64::Engine as _;
    json!({
        "name": name,
        "clientConfig": {
            "url": format!("https://127.0.0.1:{port}{path}"),
            "caBundle": base64::engine::general_purpose::STANDARD.encode(ca_pem),
        },
        "rules": [{"apiGroups": ["serving.kserve.io"], "apiVersions": ["v1beta1"],
                   "resources": ["inferenceservices"], "operations": ["CREATE", "UPDATE"]}],
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "namespaceSelector": {"matchExpressions": [{
            "key": "kubernetes.io/metadata.name", "operator": "In", "values": [namespace],
        }]},
        "timeoutSeconds": 10,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_stopped_under_load_fails_no_admission_and_the_storm_converges()
-> anyhow::Result<()> {
    use k8s_openapi::api::admissionregistration::v1::{
        MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
    };
    use kube::api::{DynamicObject, ListParams};

    const STORM: usize = 100;
    const KILL_AFTER: usize = 30;
    let t = TestContext::new("failover").await?;
    // The application namespace (POD_NAMESPACE, where the lease lives) is one the
    // InferenceService webhook protects: the storm goes to the test's namespace.
    let app = odh_test_support::namespace::unique_name("failover-app");
    Api::<k8s_openapi::api::core::v1::Namespace>::all(t.client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": app}}))?,
        )
        .await?;
    let (cert_dir, _) = serving_cert("failover");
    let ca_pem = std::fs::read_to_string(cert_dir.join("tls.crt"))?;
    let start = |name: &str| {
        let (webhook, health, metrics) = (free_port(), free_port(), free_port());
        let args = vec![
            "--leader-elect".to_string(),
            format!("--leader-elect-lease-duration={}ms", LEASE.as_millis()),
            "--leader-elect-renew-deadline=3s".to_string(),
            format!("--leader-elect-retry-period={}ms", RETRY.as_millis()),
            format!("--metrics-bind-address=127.0.0.1:{metrics}"),
            format!("--health-probe-bind-address=127.0.0.1:{health}"),
            format!("--webhook-cert-dir={}", cert_dir.display()),
            format!("--webhook-bind-address=127.0.0.1:{webhook}"),
        ];
        HostProcess::start(name, &args, &[("POD_NAMESPACE", app.as_str())])
            .map(|process| (process, webhook, health, metrics))
    };
    let mut replicas = vec![start("failover-a")?, start("failover-b")?];
    for (process, _, health, _) in &replicas {
        eventually("both replicas are ready", Timing::default(), || async {
            let reply = get(([127, 0, 0, 1], *health).into(), "/readyz").await?;
            anyhow::ensure!(reply.status == 200, "{}", reply.status);
            Ok(())
        })
        .await
        .map_err(|e| anyhow::anyhow!("{e}; log: {}", process.output()))?;
    }
    let port = front([replicas[0].1, replicas[1].1]).await?;
    let name = format!("failover-{}", t.namespace);
    let validating: ValidatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": name},
        "webhooks": [isvc_webhook("validating.isvc.odh-model-controller.opendatahub.io",
            "/validate-serving-kserve-io-v1beta1-inferenceservice", port, &ca_pem, &t.namespace)],
    }))?;
    let mutating: MutatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": name},
        "webhooks": [isvc_webhook("minferenceservice-v1beta1.odh-model-controller.opendatahub.io",
            "/mutate-serving-kserve-io-v1beta1-inferenceservice", port, &ca_pem, &t.namespace)],
    }))?;
    let vwcs = Api::<ValidatingWebhookConfiguration>::all(t.client.clone());
    let mwcs = Api::<MutatingWebhookConfiguration>::all(t.client.clone());
    vwcs.create(&PostParams::default(), &validating).await?;
    mwcs.create(&PostParams::default(), &mutating).await?;

    t.create_serving_runtime(odh_test_fixtures::ovms_runtime_in(&t.namespace))
        .await?;
    let isvcs = t.inference_services();

    // The storm: every create goes through both webhooks, on whichever replica the front
    // picks; the leader is killed once KILL_AFTER have been admitted.
    let created = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let storm = {
        let (isvcs, namespace, created) = (isvcs.clone(), t.namespace.clone(), created.clone());
        tokio::spawn(async move {
            use futures::StreamExt;
            futures::stream::iter(0..STORM)
                .map(|i| {
                    let (isvcs, namespace, created) =
                        (isvcs.clone(), namespace.clone(), created.clone());
                    async move {
                        let object: DynamicObject = serde_json::from_value(
                            odh_test_fixtures::isvc(&format!("storm-{i:03}"))
                                .namespace(&namespace)
                                .remove("/metadata/uid")
                                .build(),
                        )
                        .unwrap();
                        let result = isvcs.create(&PostParams::default(), &object).await;
                        created.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        result.err().map(|e| format!("storm-{i:03}: {e}"))
                    }
                })
                .buffer_unordered(8)
                .filter_map(|failed| async move { failed })
                .collect::<Vec<String>>()
                .await
        })
    };
    eventually(
        "the storm is under way",
        Timing::within(Duration::from_secs(120)),
        || async {
            let n = created.load(std::sync::atomic::Ordering::SeqCst);
            anyhow::ensure!(n >= KILL_AFTER, "{n} created");
            Ok(())
        },
    )
    .await?;
    let leader = eventually("one replica leads", Timing::default(), || async {
        for (i, (_, _, _, metrics)) in replicas.iter().enumerate() {
            if leads(*metrics).await == Some(true) {
                return Ok(i);
            }
        }
        anyhow::bail!("no leader yet")
    })
    .await?;
    let standby_metrics = replicas[1 - leader].3;
    // SIGTERM, as the kubelet stops a pod (deletion, eviction, rollout): the replica stops
    // taking connections and finishes the admissions in flight; its lease is not released, so
    // the standby takes over when it expires. (SIGKILL fails the admissions in flight on the
    // killed replica: the apiserver does not retry a webhook call cut mid-request, see
    // docs/reliability.md.) A stop that lands between winning the lease and starting the
    // controllers must not be lost either.
    let (mut killed, ..) = replicas.remove(leader);
    let renewals = lease_renewals(t.client.clone(), app.clone());
    let kill = Instant::now();
    killed.terminate();
    let at_kill = created.load(std::sync::atomic::Ordering::SeqCst);
    eventually(
        "the standby takes over",
        Timing::within(Duration::from_secs(90)),
        || async {
            anyhow::ensure!(
                leads(standby_metrics).await == Some(true),
                "not leading yet"
            );
            Ok(())
        },
    )
    .await
    .map_err(|e| {
        anyhow::anyhow!(
            "{e}; the old leader exited: {:?}; the old leader's log: {}\n\nthe standby's log: {}",
            killed.wait(Duration::ZERO),
            killed.output(),
            replicas[0].0.output()
        )
    })?;
    let takeover = kill.elapsed();
    // The stopping leader keeps renewing while its reconciles in progress finish (two leaders
    // must never reconcile at once); from its last renewal the standby waits out one lease.
    let handover = renewals.await??;

    let failed = storm.await?;
    let cms: Api<ConfigMap> = t.api();
    let converged = eventually(
        "the storm converges on the new leader",
        Timing::within(Duration::from_secs(300)),
        || async {
            let dashboards: std::collections::BTreeSet<String> = cms
                .list(&ListParams::default())
                .await?
                .items
                .into_iter()
                .filter_map(|c| c.metadata.name)
                .collect();
            let listed = isvcs.list(&ListParams::default()).await?.items;
            let pending: Vec<String> = listed
                .iter()
                .filter(|i| {
                    let name = i.metadata.name.clone().unwrap_or_default();
                    !(i.metadata
                        .finalizers
                        .iter()
                        .flatten()
                        .any(|f| f == "odh.inferenceservice.finalizers")
                        && dashboards.contains(&format!("{name}-metrics-dashboard")))
                })
                .map(|i| serde_json::to_string(&i.metadata).unwrap_or_default())
                .collect();
            let done = listed.len() - pending.len();
            anyhow::ensure!(
                done == STORM,
                "{done} of {STORM} converged; not: {pending:?}"
            );
            Ok(kill.elapsed())
        },
    )
    .await;
    let _ = vwcs.delete(&name, &Default::default()).await;
    let _ = mwcs.delete(&name, &Default::default()).await;
    let converged = converged.map_err(|e| {
        anyhow::anyhow!(
            "{e}; failed admissions: {failed:?}; the old leader's log: {}\n\nthe new leader's log: {}",
            killed.output(),
            replicas[0].0.output()
        )
    })?;
    println!(
        "failover under load: leader stopped (SIGTERM) with {at_kill} of {STORM} InferenceServices \
         admitted; the standby led {takeover:?} later, {handover:?} after the old leader's last \
         renewal (lease {LEASE:?}, retry {RETRY:?}); \
         {} admissions failed; all {STORM} converged {converged:?} after the kill",
        failed.len()
    );
    assert!(failed.is_empty(), "failed admissions: {failed:?}");
    assert!(
        handover <= LEASE + RETRY * 3 + Duration::from_secs(2),
        "the standby took the lease {handover:?} after the old leader's last renewal"
    );
    remove_dir(&cert_dir);
    Ok(())
}
