//! Leader election against the real apiserver: one leader among candidates, takeover after a
//! crash within lease duration + retry period, and the optional release on shutdown.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use odh_model_controller::leader::{
    DEFAULT_LEASE_DURATION, DEFAULT_RETRY_PERIOD, ElectionEnd, JITTER_FACTOR, LeaderElector,
    LeaseConfig, lease_expired,
};
use odh_test_support::{TestContext, Timing, consistently, eventually};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

const LEASE: Duration = Duration::from_secs(4);
const RENEW: Duration = Duration::from_secs(3);
const RETRY: Duration = Duration::from_millis(500);

fn config(t: &TestContext, identity: &str) -> LeaseConfig {
    LeaseConfig {
        name: "odh-model-controller.opendatahub.io".into(),
        identity: identity.into(),
        lease_duration: LEASE,
        renew_deadline: RENEW,
        retry_period: RETRY,
        ..LeaseConfig::new(
            t.namespace.clone(),
            odh_model_controller::builtins::DEPLOYMENT.lease_name,
        )
    }
}

struct Candidate {
    identity: String,
    leader: watch::Receiver<bool>,
    task: JoinHandle<ElectionEnd>,
    stop: Option<oneshot::Sender<()>>,
}

fn start(t: &TestContext, cfg: LeaseConfig) -> anyhow::Result<Candidate> {
    let identity = cfg.identity.clone();
    let (stop, stopped) = oneshot::channel::<()>();
    let elector = LeaderElector::new(t.client.clone(), cfg)?;
    let (leader, task) = elector.run(async move {
        let _ = stopped.await;
    });
    Ok(Candidate {
        identity,
        leader,
        task,
        stop: Some(stop),
    })
}

impl Candidate {
    fn is_leader(&self) -> bool {
        *self.leader.borrow()
    }
}

async fn holder(api: &Api<Lease>) -> anyhow::Result<Option<String>> {
    Ok(api
        .get("odh-model-controller.opendatahub.io")
        .await?
        .spec
        .and_then(|s| s.holder_identity))
}

/// Waits until exactly one candidate leads and returns its index.
async fn one_leader(candidates: &[&Candidate]) -> anyhow::Result<usize> {
    eventually(
        "one candidate becomes leader",
        Timing::within(Duration::from_secs(20)),
        || async {
            let leaders: Vec<usize> = (0..candidates.len())
                .filter(|&i| candidates[i].is_leader())
                .collect();
            anyhow::ensure!(leaders.len() == 1, "leaders: {leaders:?}");
            Ok(leaders[0])
        },
    )
    .await
}

#[tokio::test]
async fn two_candidates_elect_exactly_one_leader_and_a_crash_hands_over_in_time()
-> anyhow::Result<()> {
    let t = TestContext::new("leader-election").await?;
    let leases: Api<Lease> = t.api();
    let a = start(&t, config(&t, "replica-a"))?;
    let b = start(&t, config(&t, "replica-b"))?;

    let first = one_leader(&[&a, &b]).await?;
    let (leader, follower) = if first == 0 { (a, b) } else { (b, a) };
    assert_eq!(holder(&leases).await?.as_deref(), Some(&*leader.identity));

    // Renewals keep the same leader, and never are both leaders at once.
    consistently(
        "exactly one leader, the same one",
        Timing {
            timeout: Duration::from_secs(3),
            interval: Duration::from_millis(50),
        },
        || async {
            anyhow::ensure!(
                leader.is_leader() && !follower.is_leader(),
                "leader {} / follower {}",
                leader.is_leader(),
                follower.is_leader()
            );
            Ok(())
        },
    )
    .await?;
    let lease = leases.get("odh-model-controller.opendatahub.io").await?;
    let spec = lease.spec.clone().unwrap_or_default();
    assert_eq!(spec.lease_duration_seconds, Some(4));
    assert_eq!(spec.lease_transitions, Some(0));
    assert!(!lease_expired(&spec, k8s_openapi::jiff::Timestamp::now()));

    // Crash the leader: abort its task, nothing is released.
    let mut follower = follower;
    let crashed_at = Instant::now();
    leader.task.abort();
    assert!(leader.task.await.unwrap_err().is_cancelled());
    tokio::time::timeout(
        Duration::from_secs(30),
        follower.leader.wait_for(|&leads| leads),
    )
    .await??;
    let takeover = crashed_at.elapsed();
    // The worst case by the rules (expiry, then a jittered retry), plus 1 s for API calls and
    // scheduling on a loaded machine.
    let bound = LEASE + RETRY.mul_f64(1.0 + JITTER_FACTOR) + Duration::from_secs(1);
    println!(
        "leader takeover after a crash: {:.2} s (lease {:?}, renew deadline {:?}, retry {:?}; \
         asserted ≤ lease + retry × (1 + jitter) + 1 s = {:?})",
        takeover.as_secs_f64(),
        LEASE,
        RENEW,
        RETRY,
        bound
    );
    println!(
        "with upstream's defaults (lease {:?}, retry {:?}, acquire jitter ×{JITTER_FACTOR}) a \
         takeover after a crash takes between lease − retry = {:?} and lease + retry × (1 + \
         {JITTER_FACTOR}) = {:?} (formula only, not run)",
        DEFAULT_LEASE_DURATION,
        DEFAULT_RETRY_PERIOD,
        DEFAULT_LEASE_DURATION - DEFAULT_RETRY_PERIOD,
        DEFAULT_LEASE_DURATION + DEFAULT_RETRY_PERIOD.mul_f64(1.0 + JITTER_FACTOR)
    );
    assert!(
        takeover <= bound,
        "takeover took {takeover:?}, more than {bound:?}"
    );
    assert!(
        takeover >= LEASE - RETRY - Duration::from_millis(100),
        "took over {takeover:?} after the crash, before the lease could have expired"
    );
    let lease = leases.get("odh-model-controller.opendatahub.io").await?;
    let spec = lease.spec.unwrap_or_default();
    assert_eq!(spec.holder_identity.as_deref(), Some(&*follower.identity));
    assert_eq!(spec.lease_transitions, Some(1));

    // Graceful shutdown of the new leader: the election ends, the lease is kept (upstream).
    follower.stop.take().unwrap().send(()).ok();
    assert_eq!(follower.task.await?, ElectionEnd::Shutdown);
    assert!(!*follower.leader.borrow());
    assert_eq!(
        holder(&leases).await?.as_deref(),
        Some(&*follower.identity),
        "not released by default"
    );
    Ok(())
}

#[tokio::test]
async fn many_candidates_never_share_leadership() -> anyhow::Result<()> {
    let t = TestContext::new("leader-many").await?;
    let candidates: Vec<Candidate> = (0..4)
        .map(|i| start(&t, config(&t, &format!("replica-{i}"))))
        .collect::<anyhow::Result<_>>()?;
    let refs: Vec<&Candidate> = candidates.iter().collect();
    let first = one_leader(&refs).await?;
    consistently(
        "at most one leader, always the first",
        Timing {
            timeout: Duration::from_secs(2),
            interval: Duration::from_millis(50),
        },
        || async {
            let leaders: Vec<usize> = (0..candidates.len())
                .filter(|&i| candidates[i].is_leader())
                .collect();
            anyhow::ensure!(leaders == vec![first], "leaders: {leaders:?}");
            Ok(())
        },
    )
    .await?;
    for c in candidates {
        c.task.abort();
    }
    Ok(())
}

#[tokio::test]
async fn release_on_cancel_hands_over_without_waiting_for_expiry() -> anyhow::Result<()> {
    let t = TestContext::new("leader-release").await?;
    let leases: Api<Lease> = t.api();
    let mut a = start(
        &t,
        LeaseConfig {
            release_on_cancel: true,
            ..config(&t, "releasing-a")
        },
    )?;
    tokio::time::timeout(Duration::from_secs(20), a.leader.wait_for(|&l| l)).await??;
    let mut b = start(&t, config(&t, "waiting-b"))?;
    // b sees a valid lease and waits.
    tokio::time::sleep(RETRY * 2).await;
    assert!(!b.is_leader());

    let released_at = Instant::now();
    a.stop.take().unwrap().send(()).ok();
    assert_eq!(a.task.await?, ElectionEnd::Shutdown);
    tokio::time::timeout(Duration::from_secs(20), b.leader.wait_for(|&l| l)).await??;
    let handover = released_at.elapsed();
    println!("handover after a release: {:.2} s", handover.as_secs_f64());
    assert!(
        handover < LEASE - RETRY,
        "a released lease is taken at the next retry, not after expiry ({handover:?})"
    );
    assert_eq!(holder(&leases).await?.as_deref(), Some("waiting-b"));
    b.task.abort();
    Ok(())
}

#[tokio::test]
async fn a_leader_that_cannot_renew_reports_not_leader() -> anyhow::Result<()> {
    let t = TestContext::new("leader-lost").await?;
    let leases: Api<Lease> = t.api();
    let mut a = start(&t, config(&t, "doomed"))?;
    tokio::time::timeout(Duration::from_secs(20), a.leader.wait_for(|&l| l)).await??;

    // Someone else overwrites the lease (as a partitioned leader would find on its return).
    let mut lease = leases.get("odh-model-controller.opendatahub.io").await?;
    let spec = lease.spec.get_or_insert_with(Default::default);
    spec.holder_identity = Some("usurper".into());
    spec.renew_time = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
        k8s_openapi::jiff::Timestamp::now(),
    ));
    leases
        .replace(
            "odh-model-controller.opendatahub.io",
            &Default::default(),
            &lease,
        )
        .await?;

    let end = tokio::time::timeout(RENEW + RETRY * 2, &mut a.task).await??;
    assert_eq!(end, ElectionEnd::LostLeadership);
    assert!(!*a.leader.borrow(), "reports not-leader");
    Ok(())
}
