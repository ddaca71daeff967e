//! A host killed with SIGKILL in the middle of a burst of InferenceService creates, then
//! started again (issue #18): every InferenceService converges (its finalizer, its
//! `<name>-metrics-dashboard` ConfigMap, `<name>-metrics` Service and ServiceMonitor, as
//! host/benches/isvc_converge.rs counts them) and nothing is there twice: one finalizer entry,
//! one owner reference per object, no object beyond the expected ones.
//!
//! The real `odh-model-controller run` binary against the test apiserver (`make apiserver`),
//! its built-in plugins, webhooks off.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, ObjectMeta, PostParams};
use kube::core::GroupVersionKind;
use odh_test_fixtures as fixtures;
use odh_test_support::TestContext;

const COUNT: usize = 100;
const FINALIZER: &str = "odh.inferenceservice.finalizers";

fn dynamic(t: &TestContext, gvk: (&str, &str, &str), plural: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(gvk.0, gvk.1, gvk.2), plural);
    Api::namespaced_with(t.client.clone(), &t.namespace, &ar)
}

fn isvcs(t: &TestContext) -> Api<DynamicObject> {
    dynamic(
        t,
        ("serving.kserve.io", "v1beta1", "InferenceService"),
        "inferenceservices",
    )
}

fn monitors(t: &TestContext) -> Api<DynamicObject> {
    dynamic(
        t,
        ("monitoring.coreos.com", "v1", "ServiceMonitor"),
        "servicemonitors",
    )
}

/// The host process; killed (SIGKILL) when dropped, so a failing test leaves none behind.
struct Host(Child);

impl Host {
    fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The host, logging to `log`.
fn start_host(kubeconfig: &Path, log: &Path) -> Host {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    Command::new(env!("CARGO_BIN_EXE_odh-model-controller"))
        .args([
            "run",
            "--zap-devel=false",
            "--metrics-bind-address=0",
            "--health-probe-bind-address=0",
            "--zap-log-level=info",
        ])
        .arg(format!("--kubeconfig={}", kubeconfig.display()))
        .env("ENABLE_WEBHOOKS", "false")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .map(Host)
        .expect("starting odh-model-controller run")
}

/// Names of the objects of one list.
fn names<'a>(items: impl Iterator<Item = &'a ObjectMeta>) -> Vec<String> {
    items.filter_map(|m| m.name.clone()).collect()
}

/// How many InferenceServices are converged, by the bench's definition.
async fn converged(t: &TestContext) -> anyhow::Result<usize> {
    let lp = ListParams::default();
    let isvcs = isvcs(t).list(&lp).await?;
    let cms = names(
        t.api::<ConfigMap>()
            .list(&lp)
            .await?
            .items
            .iter()
            .map(|o| &o.metadata),
    );
    let svcs = names(
        t.api::<Service>()
            .list(&lp)
            .await?
            .items
            .iter()
            .map(|o| &o.metadata),
    );
    let sms = names(
        monitors(t)
            .list(&lp)
            .await?
            .items
            .iter()
            .map(|o| &o.metadata),
    );
    Ok(isvcs
        .items
        .iter()
        .filter(|i| {
            let name = i.metadata.name.clone().unwrap_or_default();
            i.metadata
                .finalizers
                .as_ref()
                .is_some_and(|f| f.iter().any(|x| x == FINALIZER))
                && cms.contains(&format!("{name}-metrics-dashboard"))
                && svcs.contains(&format!("{name}-metrics"))
                && sms.contains(&format!("{name}-metrics"))
        })
        .count())
}

/// Objects of a kind named `<isvc><suffix>`: one per InferenceService, each with exactly one
/// owner reference to it.
fn check_owned(what: &str, objects: &[&ObjectMeta], suffix: &str, uids: &BTreeMap<String, String>) {
    let mut found = 0;
    for meta in objects {
        let refs: Vec<_> = meta
            .owner_references
            .iter()
            .flatten()
            .filter(|r| r.kind == "InferenceService")
            .collect();
        let name = meta.name.clone().unwrap_or_default();
        let Some(isvc) = name.strip_suffix(suffix).filter(|n| uids.contains_key(*n)) else {
            continue;
        };
        found += 1;
        assert_eq!(refs.len(), 1, "{what} {name}: owner references {refs:?}");
        assert_eq!(
            refs[0].uid, uids[isvc],
            "{what} {name} owned by another uid"
        );
    }
    assert_eq!(found, uids.len(), "{what}: one per InferenceService");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_killed_mid_burst_converges_everything_once_restarted() -> anyhow::Result<()> {
    let t = TestContext::new("crash-recovery").await?;
    let kubeconfig = odh_test_support::cluster()?.kubeconfig.clone();
    let log = odh_test_support::workspace_root()
        .join("target/tmp")
        .join(format!("crash-recovery-{}.log", t.namespace));
    std::fs::create_dir_all(log.parent().unwrap())?;
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

    let mut host = start_host(&kubeconfig, &log);
    // The burst: the first half is created while the host runs; the second half waits for
    // the kill, so the kill lands mid-burst however fast or slow the host starts.
    let (killed, kill_seen) = tokio::sync::oneshot::channel::<()>();
    let api = isvcs(&t);
    let namespace = t.namespace.clone();
    let creates = tokio::spawn(async move {
        let create = |i: usize| {
            let (api, namespace) = (api.clone(), namespace.clone());
            async move {
                let obj: DynamicObject = serde_json::from_value(
                    fixtures::isvc(&format!("model-{i:03}"))
                        .namespace(&namespace)
                        .remove("/metadata/uid")
                        .build(),
                )
                .unwrap();
                api.create(&PostParams::default(), &obj).await.map(|_| ())
            }
        };
        let mut results: Vec<_> = futures::stream::iter(0..COUNT / 2)
            .map(create)
            .buffer_unordered(4)
            .collect()
            .await;
        let _ = kill_seen.await;
        results.extend(
            futures::stream::iter(COUNT / 2..COUNT)
                .map(create)
                .buffer_unordered(4)
                .collect::<Vec<_>>()
                .await,
        );
        results
    });

    // SIGKILL once the host is visibly mid-work: some converged, not all.
    let started = Instant::now();
    let converged_at_kill = loop {
        let n = converged(&t).await?;
        if n >= 10 || started.elapsed() > Duration::from_secs(120) {
            break n;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        converged_at_kill >= 10,
        "the host converged nothing in 120 s (log: {})",
        log.display()
    );
    // `Child::kill` is SIGKILL: no shutdown code runs.
    host.kill();
    let killed_after = started.elapsed();
    let _ = killed.send(());
    for r in creates.await? {
        r?;
    }
    // What the dead host left: some converged, the rest (half at least) not.
    let converged_while_dead = converged(&t).await?;
    assert!(
        converged_while_dead <= COUNT / 2,
        "{converged_while_dead} converged while dead"
    );

    let mut host = start_host(&kubeconfig, &log);
    let restarted = Instant::now();
    let deadline = restarted + Duration::from_secs(300);
    let mut done = 0;
    while Instant::now() < deadline {
        done = converged(&t).await?;
        if done == COUNT {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let recovery = restarted.elapsed();
    assert_eq!(
        done,
        COUNT,
        "converged after the restart (log: {})",
        log.display()
    );
    println!(
        "crash recovery: SIGKILL {killed_after:?} after start, {converged_at_kill} of the first \
         {} InferenceServices converged, the other {} created while it was down \
         ({converged_while_dead} converged then); after the restart all {COUNT} converged in \
         {recovery:?}, nothing twice",
        COUNT / 2,
        COUNT - COUNT / 2
    );

    // Nothing twice.
    let lp = ListParams::default();
    let listed = isvcs(&t).list(&lp).await?;
    assert_eq!(listed.items.len(), COUNT);
    let mut uids = BTreeMap::new();
    for i in &listed.items {
        let name = i.metadata.name.clone().unwrap();
        let finalizers = i.metadata.finalizers.clone().unwrap_or_default();
        let mine = finalizers.iter().filter(|f| *f == FINALIZER).count();
        assert_eq!(mine, 1, "{name}: finalizers {finalizers:?}");
        uids.insert(name, i.metadata.uid.clone().unwrap());
    }
    let cms = t.api::<ConfigMap>().list(&lp).await?;
    let cms: Vec<&ObjectMeta> = cms.items.iter().map(|o| &o.metadata).collect();
    check_owned("ConfigMap", &cms, "-metrics-dashboard", &uids);
    let svcs = t.api::<Service>().list(&lp).await?;
    let svcs: Vec<&ObjectMeta> = svcs.items.iter().map(|o| &o.metadata).collect();
    check_owned("Service", &svcs, "-metrics", &uids);
    let sms = monitors(&t).list(&lp).await?;
    let sms: Vec<&ObjectMeta> = sms.items.iter().map(|o| &o.metadata).collect();
    check_owned("ServiceMonitor", &sms, "-metrics", &uids);

    // The restarted host also finishes the deletions (finalizers removed), leaving the
    // namespace deletable.
    isvcs(&t)
        .delete_collection(&Default::default(), &lp)
        .await?;
    odh_test_support::eventually(
        "every InferenceService is deleted",
        odh_test_support::Timing {
            timeout: Duration::from_secs(180),
            interval: Duration::from_millis(500),
        },
        || async {
            let left = isvcs(&t).list(&ListParams::default()).await?.items.len();
            anyhow::ensure!(left == 0, "{left} left");
            Ok(())
        },
    )
    .await?;
    host.kill();
    Ok(())
}
