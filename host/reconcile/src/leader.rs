//! Leader election on a `coordination.k8s.io/v1` Lease, as controller-runtime does it.
//!
//! Every replica runs a [`LeaderElector`]; the one holding the Lease runs the controllers,
//! while webhooks serve on every replica. The defaults are upstream's: the Lease the application
//! names (upstream's election ID) in the pod's own namespace, lease duration 15 s,
//! renew deadline 10 s, retry period 2 s, identity `<hostname>_<uuid>`, and the lease is *not*
//! released on shutdown (a successor waits for it to expire).
//!
//! The algorithm follows client-go's `leaderelection` package:
//!
//! * **Acquire.** A candidate reads the Lease every retry period (jittered by up to 1.2 × the
//!   period, as client-go's `JitterUntil`). It creates the Lease when there is none (an
//!   `AlreadyExists` means another candidate won), and takes it over when the holder is empty or
//!   the lease expired, i.e. `renewTime + leaseDurationSeconds < now`. Writes are updates carrying
//!   the `resourceVersion` that was read, so of two candidates racing for an expired lease only
//!   one succeeds (the other gets a `Conflict`).
//! * **Renew.** The leader rewrites `renewTime` every retry period. When a round of attempts
//!   (one every retry period) has not succeeded within the renew deadline, or the Lease shows
//!   another holder, the leader reports that it is no longer leader and the election ends; the
//!   caller exits the process, as controller-runtime does.
//!
//! Divergence: client-go judges expiry by the *local* time at which it last saw the record
//! change (so clock skew between replicas cannot matter, at the price of a new candidate always
//! waiting one full lease duration); here expiry is judged from the Lease's `renewTime`, so a
//! replica that starts after the old leader died takes over as soon as the lease has expired.
//! Replicas' clocks must agree to well within the lease duration (NTP).

use std::hash::{BuildHasher, Hasher};
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, ObjectMeta, PostParams};
use kube::{Client, ResourceExt};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep, sleep_until, timeout, timeout_at};
use tracing::{debug, error, info, warn};

/// How long a lease is valid after its last renewal (controller-runtime's default).
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
/// How long the leader keeps retrying a failing renewal before giving up.
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// The interval between attempts to acquire or renew.
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);
/// client-go's `JitterFactor`: acquire attempts are `retry_period × (1 + U[0, 1.2))` apart.
pub const JITTER_FACTOR: f64 = 1.2;
/// Where a pod finds its own namespace.
pub const SERVICE_ACCOUNT_NAMESPACE_FILE: &str =
    "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// Which Lease to compete for, as whom, and how often.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseConfig {
    pub namespace: String,
    pub name: String,
    /// This replica's identity, written to `holderIdentity`; unique per process.
    pub identity: String,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
    /// Give the lease up (empty holder) on a graceful shutdown so a successor need not wait for
    /// it to expire. Off, as upstream: it is only safe when the process exits right after.
    pub release_on_cancel: bool,
}

impl LeaseConfig {
    /// The Lease `name` in `namespace` with client-go's timings and a fresh
    /// [`default_identity`] (the deployment's lease name is the application's to choose).
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
            identity: default_identity(),
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            release_on_cancel: false,
        }
    }

    /// client-go's constraints: lease duration > renew deadline > 1.2 × retry period > 0.
    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            !self.namespace.is_empty(),
            "leader election needs a namespace"
        );
        anyhow::ensure!(!self.name.is_empty(), "leader election needs a lease name");
        anyhow::ensure!(
            !self.identity.is_empty(),
            "leader election needs an identity"
        );
        anyhow::ensure!(
            !self.retry_period.is_zero(),
            "retry period must be greater than zero"
        );
        anyhow::ensure!(
            self.lease_duration > self.renew_deadline,
            "lease duration ({:?}) must be greater than the renew deadline ({:?})",
            self.lease_duration,
            self.renew_deadline
        );
        anyhow::ensure!(
            self.renew_deadline > self.retry_period.mul_f64(JITTER_FACTOR),
            "renew deadline ({:?}) must be greater than {JITTER_FACTOR} × the retry period ({:?})",
            self.renew_deadline,
            self.retry_period
        );
        Ok(())
    }

    /// `leaseDurationSeconds` as written to the Lease: whole seconds, rounded up, at least 1.
    pub fn lease_duration_seconds(&self) -> i32 {
        let secs = self.lease_duration.as_secs_f64().ceil();
        if secs >= f64::from(i32::MAX) {
            i32::MAX
        } else {
            (secs as i32).max(1)
        }
    }
}

/// Why an election task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElectionEnd {
    /// The shutdown future completed (the lease was released if `release_on_cancel`).
    Shutdown,
    /// This replica led and could not renew within the renew deadline, or saw another holder.
    /// The caller should exit, as controller-runtime does.
    LostLeadership,
}

/// Competes for one Lease. See the [module docs](self).
pub struct LeaderElector {
    api: Api<Lease>,
    config: LeaseConfig,
    /// The Lease as last read or written: its resourceVersion makes the next write conditional.
    observed: Option<Lease>,
    /// The holder last seen, to log changes of leader once.
    observed_holder: Option<String>,
    is_leader: bool,
}

/// The result of one attempt to acquire or renew.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Attempt {
    /// We hold the lease now.
    Held,
    /// Someone else holds a valid lease (their identity).
    HeldByOther(String),
    /// Another write got in first (create or update conflict); look again next time.
    Lost,
}

impl LeaderElector {
    /// An elector for `config` (validated, see [`LeaseConfig::validate`]).
    pub fn new(client: Client, config: LeaseConfig) -> anyhow::Result<Self> {
        config.validate()?;
        Ok(Self {
            api: Api::namespaced(client, &config.namespace),
            config,
            observed: None,
            observed_holder: None,
            is_leader: false,
        })
    }

    pub fn config(&self) -> &LeaseConfig {
        &self.config
    }

    /// Starts competing. The receiver is `true` while this replica leads; the task ends with
    /// [`ElectionEnd::LostLeadership`] (the receiver turns `false`) or, once `shutdown`
    /// completes, with [`ElectionEnd::Shutdown`]. Aborting the task (or dropping the runtime)
    /// leaves the lease as it is, like a crash.
    pub fn run<F>(self, shutdown: F) -> (watch::Receiver<bool>, JoinHandle<ElectionEnd>)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let (tx, rx) = watch::channel(false);
        let handle = tokio::spawn(self.elect(tx, shutdown));
        (rx, handle)
    }

    async fn elect<F>(mut self, tx: watch::Sender<bool>, shutdown: F) -> ElectionEnd
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let mut shutdown = std::pin::pin!(shutdown);
        let lease = format!("{}/{}", self.config.namespace, self.config.name);
        info!(lease, identity = %self.config.identity, "attempting to acquire leader lease");

        // Acquire: one attempt per jittered retry period until one succeeds.
        loop {
            let attempt = tokio::select! {
                biased;
                _ = &mut shutdown => return ElectionEnd::Shutdown,
                r = timeout(self.config.renew_deadline, self.try_acquire_or_renew()) => r,
            };
            match attempt {
                Ok(Ok(Attempt::Held)) => break,
                Ok(Ok(other)) => debug!(lease, ?other, "lease not acquired"),
                Ok(Err(e)) => warn!(lease, error = %e, "error acquiring the leader lease"),
                Err(_) => warn!(lease, "acquiring the leader lease timed out"),
            }
            let pause = jittered(self.config.retry_period, JITTER_FACTOR);
            tokio::select! {
                biased;
                _ = &mut shutdown => return ElectionEnd::Shutdown,
                _ = sleep(pause) => {}
            }
        }
        info!(lease, identity = %self.config.identity, "successfully acquired lease");
        tx.send_replace(true);

        // Renew: every retry period, a round of attempts bounded by the renew deadline.
        loop {
            tokio::select! {
                biased;
                _ = &mut shutdown => {
                    self.step_down(&lease).await;
                    tx.send_replace(false);
                    return ElectionEnd::Shutdown;
                }
                _ = sleep(self.config.retry_period) => {}
            }
            let deadline = Instant::now() + self.config.renew_deadline;
            loop {
                let attempt = tokio::select! {
                    biased;
                    _ = &mut shutdown => {
                        self.step_down(&lease).await;
                        tx.send_replace(false);
                        return ElectionEnd::Shutdown;
                    }
                    r = timeout_at(deadline, self.try_acquire_or_renew()) => r,
                };
                match attempt {
                    Ok(Ok(Attempt::Held)) => break,
                    Ok(Ok(Attempt::HeldByOther(holder))) => {
                        error!(lease, holder, "leader lease taken over by another replica");
                        return self.lost(&tx);
                    }
                    Ok(Ok(Attempt::Lost)) => debug!(lease, "conflict renewing the leader lease"),
                    Ok(Err(e)) => warn!(lease, error = %e, "error renewing the leader lease"),
                    Err(_) => {}
                }
                let next = (Instant::now() + self.config.retry_period).min(deadline);
                tokio::select! {
                    biased;
                    _ = &mut shutdown => {
                        self.step_down(&lease).await;
                        tx.send_replace(false);
                        return ElectionEnd::Shutdown;
                    }
                    _ = sleep_until(next) => {}
                }
                if Instant::now() >= deadline {
                    error!(
                        lease,
                        renew_deadline = ?self.config.renew_deadline,
                        "failed to renew the leader lease within the renew deadline"
                    );
                    return self.lost(&tx);
                }
            }
        }
    }

    fn lost(&mut self, tx: &watch::Sender<bool>) -> ElectionEnd {
        self.is_leader = false;
        tx.send_replace(false);
        ElectionEnd::LostLeadership
    }

    /// On shutdown: keep the lease (upstream) or release it when configured to.
    async fn step_down(&mut self, lease: &str) {
        if !self.config.release_on_cancel || !self.is_leader {
            return;
        }
        self.is_leader = false;
        let Some(mut current) = self.observed.clone() else {
            return;
        };
        let now = Timestamp::now();
        let spec = current.spec.get_or_insert_with(Default::default);
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.acquire_time = Some(MicroTime(now));
        spec.renew_time = Some(MicroTime(now));
        let pp = PostParams::default();
        let write = self.api.replace(&self.config.name, &pp, &current);
        match timeout(self.config.renew_deadline, write).await {
            Ok(Ok(_)) => info!(lease, "released the leader lease"),
            Ok(Err(e)) => warn!(lease, error = %e, "could not release the leader lease"),
            Err(_) => warn!(lease, "releasing the leader lease timed out"),
        }
    }

    /// client-go's `tryAcquireOrRenew`: a leader first updates its cached copy (one request);
    /// otherwise read, and create or take over when allowed.
    async fn try_acquire_or_renew(&mut self) -> Result<Attempt, kube::Error> {
        let now = Timestamp::now();
        let pp = PostParams::default();

        if self.is_leader
            && let Some(cached) = &self.observed
        {
            let mut renewed = cached.clone();
            renewed.spec = Some(next_spec(
                cached.spec.as_ref(),
                &self.config.identity,
                self.config.lease_duration_seconds(),
                now,
            ));
            match self.api.replace(&self.config.name, &pp, &renewed).await {
                Ok(written) => {
                    self.observe(written);
                    return Ok(Attempt::Held);
                }
                // Fall through to a fresh read: the cached copy may be stale.
                Err(e) => debug!(error = %e, "fast-path renewal failed"),
            }
        }

        let Some(current) = self.api.get_opt(&self.config.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.config.name.clone()),
                    namespace: Some(self.config.namespace.clone()),
                    ..Default::default()
                },
                spec: Some(next_spec(
                    None,
                    &self.config.identity,
                    self.config.lease_duration_seconds(),
                    now,
                )),
            };
            return match self.api.create(&pp, &lease).await {
                Ok(created) => {
                    self.observe(created);
                    self.is_leader = true;
                    Ok(Attempt::Held)
                }
                Err(kube::Error::Api(s)) if s.is_already_exists() || s.is_conflict() => {
                    Ok(Attempt::Lost)
                }
                Err(e) => Err(e),
            };
        };

        self.observe(current.clone());
        let spec = current.spec.clone().unwrap_or_default();
        if let Some(holder) = valid_other_holder(&spec, &self.config.identity, now) {
            self.is_leader = false;
            return Ok(Attempt::HeldByOther(holder.to_string()));
        }
        let mut next = current;
        next.spec = Some(next_spec(
            Some(&spec),
            &self.config.identity,
            self.config.lease_duration_seconds(),
            now,
        ));
        // The update carries the resourceVersion just read: a concurrent writer makes it fail.
        match self.api.replace(&self.config.name, &pp, &next).await {
            Ok(written) => {
                self.observe(written);
                self.is_leader = true;
                Ok(Attempt::Held)
            }
            Err(kube::Error::Api(s)) if s.is_conflict() => Ok(Attempt::Lost),
            Err(e) => Err(e),
        }
    }

    fn observe(&mut self, lease: Lease) {
        let holder = lease
            .spec
            .as_ref()
            .and_then(|s| s.holder_identity.clone())
            .filter(|h| !h.is_empty());
        if holder != self.observed_holder {
            match &holder {
                Some(h) if *h == self.config.identity => {}
                Some(h) => info!(lease = %lease.name_any(), leader = %h, "new leader elected"),
                None => debug!(lease = %lease.name_any(), "leader lease is free"),
            }
            self.observed_holder = holder;
        }
        self.observed = Some(lease);
    }
}

/// Whether a lease has expired at `now`: `renewTime` (or `acquireTime` when never renewed) plus
/// `leaseDurationSeconds` lies in the past. A lease without times or duration has expired.
pub fn lease_expired(spec: &LeaseSpec, now: Timestamp) -> bool {
    let Some(MicroTime(renewed)) = spec.renew_time.as_ref().or(spec.acquire_time.as_ref()) else {
        return true;
    };
    let duration = SignedDuration::from_secs(i64::from(spec.lease_duration_seconds.unwrap_or(0)));
    match renewed.checked_add(duration) {
        Ok(expiry) => expiry < now,
        Err(_) => false, // beyond the end of time: never expires
    }
}

/// The holder of a still-valid lease, unless it is `identity` or nobody.
fn valid_other_holder<'a>(spec: &'a LeaseSpec, identity: &str, now: Timestamp) -> Option<&'a str> {
    let holder = spec.holder_identity.as_deref().filter(|h| !h.is_empty())?;
    (holder != identity && !lease_expired(spec, now)).then_some(holder)
}

/// The spec `identity` writes to acquire or renew: a renewal keeps the acquire time and the
/// transition count; a takeover stamps a new acquire time and counts one more transition.
fn next_spec(
    current: Option<&LeaseSpec>,
    identity: &str,
    lease_duration_seconds: i32,
    now: Timestamp,
) -> LeaseSpec {
    let renewing = current
        .and_then(|s| s.holder_identity.as_deref())
        .is_some_and(|h| h == identity);
    let (acquire_time, transitions) = match current {
        None => (MicroTime(now), 0),
        Some(s) if renewing => (
            s.acquire_time.clone().unwrap_or(MicroTime(now)),
            s.lease_transitions.unwrap_or(0),
        ),
        Some(s) => (
            MicroTime(now),
            s.lease_transitions.unwrap_or(0).saturating_add(1),
        ),
    };
    LeaseSpec {
        holder_identity: Some(identity.to_string()),
        lease_duration_seconds: Some(lease_duration_seconds),
        acquire_time: Some(acquire_time),
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(transitions),
        ..current.cloned().unwrap_or_default()
    }
}

/// The namespace of the leader election Lease: `POD_NAMESPACE` when set (pass
/// `std::env::var("POD_NAMESPACE").ok()`), else the pod's service-account namespace file.
/// Out of cluster with neither, this fails, as upstream does with `--leader-elect`.
pub fn lease_namespace(pod_namespace_env: Option<String>) -> anyhow::Result<String> {
    lease_namespace_from(pod_namespace_env, Path::new(SERVICE_ACCOUNT_NAMESPACE_FILE))
}

fn lease_namespace_from(env: Option<String>, file: &Path) -> anyhow::Result<String> {
    if let Some(ns) = env.map(|s| s.trim().to_string()).filter(|s| !s.is_empty()) {
        return Ok(ns);
    }
    match std::fs::read_to_string(file) {
        Ok(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        Ok(_) => anyhow::bail!(
            "leader election is enabled but {} is empty and POD_NAMESPACE is not set",
            file.display()
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => anyhow::bail!(
            "leader election is enabled but no namespace is configured for its lease: set \
             POD_NAMESPACE, or run in-cluster (there is no {})",
            file.display()
        ),
        Err(e) => {
            Err(e).with_context(|| format!("reading the lease namespace from {}", file.display()))
        }
    }
}

/// `<hostname>_<uuid>`, as controller-runtime builds the default identity.
pub fn default_identity() -> String {
    format!("{}_{}", hostname(), uuid_v4())
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "localhost".to_string())
}

fn uuid_v4() -> String {
    let mut b = [0u8; 16];
    let from_os = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_ok();
    if !from_os {
        b[..8].copy_from_slice(&random_u64().to_le_bytes());
        b[8..].copy_from_slice(&random_u64().to_le_bytes());
    }
    b[6] = (b[6] & 0x0f) | 0x40; // version 4
    b[8] = (b[8] & 0x3f) | 0x80; // RFC 4122 variant
    let h = hex::encode(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// Randomness for jitter: std's per-process random hash keys over a counter and the clock.
fn random_u64() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish()
}

/// client-go's `wait.Jitter`: `d + U[0, 1) × factor × d`.
fn jittered(d: Duration, factor: f64) -> Duration {
    let unit = (random_u64() >> 11) as f64 / (1u64 << 53) as f64;
    d + d.mul_f64(unit * factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn spec(holder: Option<&str>, renewed: Option<&str>, secs: Option<i32>) -> LeaseSpec {
        LeaseSpec {
            holder_identity: holder.map(String::from),
            renew_time: renewed.map(|r| MicroTime(ts(r))),
            lease_duration_seconds: secs,
            ..Default::default()
        }
    }

    #[test]
    fn a_lease_expires_once_renew_time_plus_duration_has_passed() {
        let s = spec(Some("a"), Some("2026-01-01T00:00:00Z"), Some(15));
        assert!(!lease_expired(&s, ts("2026-01-01T00:00:10Z")));
        // Exactly at renewTime + duration it still holds; strictly after, it has expired.
        assert!(!lease_expired(&s, ts("2026-01-01T00:00:15Z")));
        assert!(lease_expired(&s, ts("2026-01-01T00:00:15.000001Z")));
        assert!(lease_expired(&s, ts("2026-01-01T00:01:00Z")));
        // A clock behind the writer's sees it as fresh.
        assert!(!lease_expired(&s, ts("2025-12-31T23:59:59Z")));
    }

    #[test]
    fn a_lease_without_renew_time_uses_acquire_time_and_without_either_has_expired() {
        let mut s = spec(Some("a"), None, Some(15));
        assert!(lease_expired(&s, ts("2026-01-01T00:00:00Z")));
        s.acquire_time = Some(MicroTime(ts("2026-01-01T00:00:00Z")));
        assert!(!lease_expired(&s, ts("2026-01-01T00:00:05Z")));
        assert!(lease_expired(&s, ts("2026-01-01T00:00:16Z")));
        // No duration: expired as soon as written (Go reads a nil duration as 0).
        let s = spec(Some("a"), Some("2026-01-01T00:00:00Z"), None);
        assert!(lease_expired(&s, ts("2026-01-01T00:00:00.5Z")));
    }

    #[test]
    fn only_a_valid_lease_of_someone_else_blocks_acquisition() {
        let now = ts("2026-01-01T00:00:05Z");
        let fresh = spec(Some("other"), Some("2026-01-01T00:00:00Z"), Some(15));
        assert_eq!(valid_other_holder(&fresh, "me", now), Some("other"));
        assert_eq!(valid_other_holder(&fresh, "other", now), None, "our own");
        let stale = spec(Some("other"), Some("2025-12-31T23:00:00Z"), Some(15));
        assert_eq!(valid_other_holder(&stale, "me", now), None, "expired");
        let released = spec(Some(""), Some("2026-01-01T00:00:04Z"), Some(1));
        assert_eq!(valid_other_holder(&released, "me", now), None, "released");
        let free = spec(None, Some("2026-01-01T00:00:04Z"), Some(15));
        assert_eq!(valid_other_holder(&free, "me", now), None, "no holder");
    }

    #[test]
    fn renewal_keeps_acquire_time_and_takeover_counts_a_transition() {
        let t0 = ts("2026-01-01T00:00:00Z");
        let t1 = ts("2026-01-01T00:00:02Z");
        let created = next_spec(None, "me", 15, t0);
        assert_eq!(created.holder_identity.as_deref(), Some("me"));
        assert_eq!(created.lease_duration_seconds, Some(15));
        assert_eq!(created.lease_transitions, Some(0));
        assert_eq!(created.acquire_time, Some(MicroTime(t0)));

        let renewed = next_spec(Some(&created), "me", 15, t1);
        assert_eq!(renewed.acquire_time, Some(MicroTime(t0)));
        assert_eq!(renewed.renew_time, Some(MicroTime(t1)));
        assert_eq!(renewed.lease_transitions, Some(0));

        let taken = next_spec(Some(&renewed), "you", 15, t1);
        assert_eq!(taken.holder_identity.as_deref(), Some("you"));
        assert_eq!(taken.acquire_time, Some(MicroTime(t1)));
        assert_eq!(taken.lease_transitions, Some(1));
    }

    #[test]
    fn config_defaults_and_validation_follow_client_go() {
        let c = LeaseConfig::new("ns", "lease");
        assert_eq!(c.name, "lease");
        assert_eq!(
            (c.lease_duration, c.renew_deadline, c.retry_period),
            (
                Duration::from_secs(15),
                Duration::from_secs(10),
                Duration::from_secs(2)
            )
        );
        assert!(!c.release_on_cancel);
        c.validate().unwrap();
        assert_eq!(c.lease_duration_seconds(), 15);

        let bad = LeaseConfig {
            renew_deadline: Duration::from_secs(15),
            ..c.clone()
        };
        assert!(bad.validate().is_err(), "renew deadline == lease duration");
        let bad = LeaseConfig {
            retry_period: Duration::from_secs(9),
            ..c.clone()
        };
        assert!(bad.validate().is_err(), "1.2 × retry > renew deadline");
        let bad = LeaseConfig {
            namespace: String::new(),
            ..c.clone()
        };
        assert!(bad.validate().is_err());
        let short = LeaseConfig {
            lease_duration: Duration::from_millis(1500),
            renew_deadline: Duration::from_secs(1),
            retry_period: Duration::from_millis(200),
            ..c
        };
        assert_eq!(short.lease_duration_seconds(), 2, "rounded up");
    }

    #[test]
    fn identity_is_hostname_underscore_uuid_and_unique() {
        let a = default_identity();
        let b = default_identity();
        assert_ne!(a, b);
        let (host, uuid) = a.rsplit_once('_').unwrap();
        assert_eq!(host, hostname());
        assert_eq!(uuid.len(), 36, "{uuid}");
        assert_eq!(uuid.as_bytes()[14], b'4', "version 4: {uuid}");
    }

    #[test]
    fn jitter_stays_within_client_go_bounds() {
        let d = Duration::from_millis(100);
        for _ in 0..1000 {
            let j = jittered(d, JITTER_FACTOR);
            assert!(j >= d && j < Duration::from_millis(220), "{j:?}");
        }
    }

    #[test]
    fn lease_namespace_prefers_pod_namespace_then_the_service_account_file() {
        let dir = std::env::temp_dir().join(format!("odh-leader-ns-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("namespace");
        let missing = dir.join("missing");

        assert_eq!(
            lease_namespace_from(Some("from-env".into()), &missing).unwrap(),
            "from-env"
        );
        let err = lease_namespace_from(None, &missing)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("POD_NAMESPACE") && err.contains("in-cluster"),
            "{err}"
        );
        let err = lease_namespace_from(Some(String::new()), &missing).unwrap_err();
        assert!(
            err.to_string().contains("POD_NAMESPACE"),
            "empty env counts as unset"
        );

        std::fs::write(&file, "controller-ns\n").unwrap();
        assert_eq!(lease_namespace_from(None, &file).unwrap(), "controller-ns");
        assert_eq!(
            lease_namespace_from(Some("env".into()), &file).unwrap(),
            "env"
        );
        std::fs::write(&file, "  ").unwrap();
        assert!(lease_namespace_from(None, &file).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
