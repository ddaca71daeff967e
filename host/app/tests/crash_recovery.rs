//! Crashes and restarts in the middle of a burst of InferenceService writes (issue #18): a host
//! killed with SIGKILL and started again; an apiserver restarted (its data kept) while the host
//! is frozen, so the host's watches resume from a resourceVersion the new apiserver no longer
//! serves (410 Gone) and must be relisted. Every InferenceService converges (its finalizer, its
//! `<name>-metrics-dashboard` ConfigMap, `<name>-metrics` Service and ServiceMonitor, as
//! host/benches/isvc_converge.rs counts them), every deleted one is released, and nothing is
//! there twice: one finalizer entry, one owner reference per object, no object beyond the
//! expected ones.
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
use odh_test_support::{RestartableApiserver, TestContext};

const COUNT: usize = 200;
/// InferenceServices of the first half deleted, and others updated, while the host is dead.
const DELETED_WHILE_DEAD: usize = 20;
const UPDATED_WHILE_DEAD: usize = 20;
const FINALIZER: &str = "odh.inferenceservice.finalizers";

fn dynamic(t: &TestContext, gvk: (&str, &str, &str), plural: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(gvk.0, gvk.1, gvk.2), plural);
    Api::namespaced_with(t.client.clone(), &t.namespace, &ar)
}

fn isvcs(t: &TestContext) -> Api<DynamicObject> {
    t.inference_services()
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

/// Creates InferenceServices `model-<i>` for `range`, four at a time; the result of each.
async fn create_isvcs(
    api: Api<DynamicObject>,
    namespace: String,
    range: std::ops::Range<usize>,
) -> Vec<kube::Result<()>> {
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
    futures::stream::iter(range)
        .map(create)
        .buffer_unordered(4)
        .collect()
        .await
}

/// Polls until `count` InferenceServices are converged and no other one is left, at most
/// `within`; how long it took.
async fn wait_converged(
    t: &TestContext,
    count: usize,
    within: Duration,
    log: &Path,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let (mut done, mut listed) = (0, 0);
    while started.elapsed() < within {
        done = converged(t).await?;
        listed = isvcs(t).list(&ListParams::default()).await?.items.len();
        if done == count && listed == count {
            return Ok(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    anyhow::bail!(
        "{done} of {count} converged and {listed} InferenceServices listed after {within:?} (log: {})",
        log.display()
    )
}

/// Nothing twice: one finalizer entry per InferenceService, one dashboard ConfigMap, metrics
/// Service and ServiceMonitor each, owned by it alone.
async fn assert_nothing_twice(t: &TestContext, count: usize) -> anyhow::Result<()> {
    let lp = ListParams::default();
    let listed = isvcs(t).list(&lp).await?;
    assert_eq!(listed.items.len(), count);
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
    let sms = monitors(t).list(&lp).await?;
    let sms: Vec<&ObjectMeta> = sms.items.iter().map(|o| &o.metadata).collect();
    check_owned("ServiceMonitor", &sms, "-metrics", &uids);
    Ok(())
}

/// Deletes every InferenceService and waits for the host to release them all.
async fn delete_all(t: &TestContext) -> anyhow::Result<()> {
    isvcs(t)
        .delete_collection(&Default::default(), &ListParams::default())
        .await?;
    odh_test_support::eventually(
        "every InferenceService is deleted",
        odh_test_support::Timing {
            timeout: Duration::from_secs(180),
            interval: Duration::from_millis(500),
        },
        || async {
            let left = isvcs(t).list(&ListParams::default()).await?.items.len();
            anyhow::ensure!(left == 0, "{left} left");
            Ok(())
        },
    )
    .await
}

/// Polls until at least `n` InferenceServices are converged (at most 120 s): the host is
/// visibly mid-work.
async fn wait_for_progress(t: &TestContext, n: usize, log: &Path) -> anyhow::Result<usize> {
    let started = Instant::now();
    loop {
        let done = converged(t).await?;
        if done >= n {
            return Ok(done);
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(120),
            "the host converged {done} in 120 s (log: {})",
            log.display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn log_file(name: &str) -> std::path::PathBuf {
    let dir = odh_test_support::workspace_root().join("target/tmp");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{name}.log"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_killed_mid_burst_converges_everything_once_restarted() -> anyhow::Result<()> {
    let t = TestContext::new("crash-recovery").await?;
    let kubeconfig = odh_test_support::cluster()?.kubeconfig.clone();
    let log = log_file(&format!("crash-recovery-{}", t.namespace));
    t.create_serving_runtime(fixtures::ovms_runtime_in(&t.namespace))
        .await?;

    let mut host = start_host(&kubeconfig, &log);
    // The burst: the first half is created while the host runs; the second half waits for
    // the kill, so the kill lands mid-burst however fast or slow the host starts.
    let (killed, kill_seen) = tokio::sync::oneshot::channel::<()>();
    let (api, namespace) = (isvcs(&t), t.namespace.clone());
    let creates = tokio::spawn(async move {
        let mut results = create_isvcs(api.clone(), namespace.clone(), 0..COUNT / 2).await;
        let _ = kill_seen.await;
        results.extend(create_isvcs(api.clone(), namespace, COUNT / 2..COUNT).await);
        // Deletions (held by the finalizers of those the dead host had converged) and
        // updates, for the restarted host to find.
        for i in 0..DELETED_WHILE_DEAD {
            let deleted = api
                .delete(&format!("model-{i:03}"), &Default::default())
                .await;
            results.push(deleted.map(|_| ()));
        }
        for i in DELETED_WHILE_DEAD..DELETED_WHILE_DEAD + UPDATED_WHILE_DEAD {
            let patch = serde_json::json!({"metadata": {"annotations": {"odh-test/touched": "while-dead"}}});
            let updated = api
                .patch(
                    &format!("model-{i:03}"),
                    &kube::api::PatchParams::default(),
                    &kube::api::Patch::Merge(&patch),
                )
                .await;
            results.push(updated.map(|_| ()));
        }
        results
    });

    // SIGKILL once the host is visibly mid-work: some converged, not all.
    let started = Instant::now();
    let converged_at_kill = wait_for_progress(&t, 10, &log).await?;
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
    let left = COUNT - DELETED_WHILE_DEAD;
    let recovery = wait_converged(&t, left, Duration::from_secs(300), &log).await?;
    println!(
        "crash recovery: SIGKILL {killed_after:?} after start, {converged_at_kill} of the first \
         {} InferenceServices converged, the other {} created, {DELETED_WHILE_DEAD} deleted and \
         {UPDATED_WHILE_DEAD} updated while it was down ({converged_while_dead} converged then); \
         after the restart all {left} converged and the deletions released in {recovery:?}, \
         nothing twice",
        COUNT / 2,
        COUNT - COUNT / 2
    );
    assert_nothing_twice(&t, left).await?;

    // The restarted host also finishes the deletions (finalizers removed), leaving the
    // namespace deletable.
    delete_all(&t).await?;
    host.kill();
    Ok(())
}

/// Sends `signal` (`STOP`, `CONT`) to the host.
fn signal(host: &Host, signal: &str) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &host.0.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{signal}");
}

/// The apiserver restarted (its etcd data kept) while the host is frozen (SIGSTOP) and the
/// burst goes on: 50 InferenceServices created, 10 of the first ones deleted. Once thawed, the
/// host's watches resume from a resourceVersion older than anything the new apiserver's watch
/// cache serves (410 Gone): its reflectors must relist. Everything converges, every deletion is
/// released, nothing twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apiserver_restart_with_expired_watches_loses_nothing() -> anyhow::Result<()> {
    let mut server =
        tokio::task::block_in_place(|| RestartableApiserver::start("apiserver-restart"))?;
    let t = TestContext::with_config(server.config().await?, "apiserver-restart").await?;
    let log = log_file(&format!("apiserver-restart-{}", t.namespace));
    t.create_serving_runtime(fixtures::ovms_runtime_in(&t.namespace))
        .await?;

    let mut host = start_host(&server.kubeconfig, &log);
    for r in create_isvcs(isvcs(&t), t.namespace.clone(), 0..COUNT / 2).await {
        r?;
    }
    let converged_at_freeze = wait_for_progress(&t, 10, &log).await?;
    signal(&host, "STOP");
    for r in create_isvcs(isvcs(&t), t.namespace.clone(), COUNT / 2..COUNT).await {
        r?;
    }
    const DELETED: usize = 10;
    for i in 0..DELETED {
        isvcs(&t)
            .delete(&format!("model-{i:03}"), &Default::default())
            .await?;
    }
    let restarting = Instant::now();
    tokio::task::block_in_place(|| server.restart())?;
    let restart_took = restarting.elapsed();
    signal(&host, "CONT");

    let recovery = wait_converged(&t, COUNT - DELETED, Duration::from_secs(300), &log).await?;
    println!(
        "apiserver restart: host frozen with {converged_at_freeze} of the first {} converged; \
         {} created and {DELETED} deleted meanwhile; apiserver restarted in {restart_took:?}; \
         after the thaw all {} converged and the deletions released in {recovery:?}, nothing \
         twice",
        COUNT / 2,
        COUNT - COUNT / 2,
        COUNT - DELETED
    );
    assert_nothing_twice(&t, COUNT - DELETED).await?;
    // The scenario happened: the resumed watches were refused as expired, then relisted.
    let output = std::fs::read_to_string(&log)?;
    assert!(
        output.contains("too old resource version"),
        "no watch of the thawed host expired (log: {})",
        log.display()
    );
    delete_all(&t).await?;
    host.kill();
    Ok(())
}
