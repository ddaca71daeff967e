//! What a rollout measures per version, and the guards that move its slice back to the stable
//! version. Guards are evaluated after every candidate call, over the rollout's calls so far,
//! once the candidate has answered `minCalls`: the window is the rollout itself, so a bad
//! candidate is caught within `minCalls` of its calls.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Which version answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Stable,
    Candidate,
}

impl Version {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stable => "stable",
            Self::Candidate => "candidate",
        }
    }
}

/// The entry's `rollout.guards`; `None` turns a guard off.
#[derive(Debug, Clone, PartialEq)]
pub struct Guards {
    /// Guards wait for this many candidate calls.
    pub min_calls: u64,
    /// The most failed calls, as a share of the candidate's calls.
    pub max_error_rate: Option<f64>,
    /// The most the candidate's share of denied admissions may exceed the stable version's.
    pub max_deny_rate_increase: Option<f64>,
    /// The most candidate calls that ran out of time (timeout or budget).
    pub max_deadline_overruns: Option<u64>,
    /// The slowest the candidate's 99th percentile may be.
    pub max_p99: Option<Duration>,
}

impl Default for Guards {
    fn default() -> Self {
        Self {
            min_calls: 20,
            max_error_rate: Some(0.05),
            max_deny_rate_increase: Some(0.1),
            max_deadline_overruns: Some(0),
            max_p99: None,
        }
    }
}

/// Latency buckets: 50 µs doubling, 24 of them (up to about 7 minutes).
const LATENCY_BUCKETS: usize = 24;
const FIRST_BUCKET_MICROS: u64 = 50;

#[derive(Default)]
pub struct VersionStats {
    pub calls: AtomicU64,
    pub errors: AtomicU64,
    /// Admission calls, and those denied.
    pub admissions: AtomicU64,
    pub denies: AtomicU64,
    pub overruns: AtomicU64,
    latency: [AtomicU64; LATENCY_BUCKETS],
}

/// A snapshot of one version's counters.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct VersionSnapshot {
    pub calls: u64,
    pub errors: u64,
    pub admissions: u64,
    pub denies: u64,
    pub overruns: u64,
    /// The upper bound of the bucket holding the 99th percentile.
    pub p99: Duration,
}

impl VersionSnapshot {
    pub fn error_rate(&self) -> f64 {
        ratio(self.errors, self.calls)
    }

    pub fn deny_rate(&self) -> f64 {
        ratio(self.denies, self.admissions)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// What a call came to, for the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallResult {
    Allowed,
    Denied,
    Success,
    Error { overrun: bool },
}

impl CallResult {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allowed => "allowed",
            Self::Denied => "denied",
            Self::Success => "success",
            Self::Error { .. } => "error",
        }
    }
}

impl VersionStats {
    pub fn record(&self, result: CallResult, latency: Duration) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        match result {
            CallResult::Allowed => {
                self.admissions.fetch_add(1, Ordering::Relaxed);
            }
            CallResult::Denied => {
                self.admissions.fetch_add(1, Ordering::Relaxed);
                self.denies.fetch_add(1, Ordering::Relaxed);
            }
            CallResult::Success => {}
            CallResult::Error { overrun } => {
                self.errors.fetch_add(1, Ordering::Relaxed);
                if overrun {
                    self.overruns.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        let mut i = 0;
        while i + 1 < LATENCY_BUCKETS && micros > FIRST_BUCKET_MICROS << i {
            i += 1;
        }
        self.latency[i].fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> VersionSnapshot {
        let counts: Vec<u64> = self
            .latency
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect();
        let total: u64 = counts.iter().sum();
        let wanted = (total as f64 * 0.99).ceil() as u64;
        let mut seen = 0;
        let mut p99 = Duration::ZERO;
        for (i, n) in counts.iter().enumerate() {
            seen += n;
            if total > 0 && seen >= wanted {
                p99 = Duration::from_micros(FIRST_BUCKET_MICROS << i);
                break;
            }
        }
        VersionSnapshot {
            calls: self.calls.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            admissions: self.admissions.load(Ordering::Relaxed),
            denies: self.denies.load(Ordering::Relaxed),
            overruns: self.overruns.load(Ordering::Relaxed),
            p99,
        }
    }
}

/// Both versions' counters since the rollout started.
#[derive(Default)]
pub struct RolloutStats {
    pub stable: VersionStats,
    pub candidate: VersionStats,
}

impl RolloutStats {
    pub fn of(&self, version: Version) -> &VersionStats {
        match version {
            Version::Stable => &self.stable,
            Version::Candidate => &self.candidate,
        }
    }
}

impl Guards {
    /// The first guard the candidate breaches (its name and why), if any.
    pub fn breached(
        &self,
        stable: &VersionSnapshot,
        candidate: &VersionSnapshot,
    ) -> Option<(&'static str, String)> {
        if candidate.calls < self.min_calls {
            return None;
        }
        if let Some(max) = self.max_error_rate
            && candidate.error_rate() > max
        {
            return Some((
                "errorRate",
                format!(
                    "{} of the candidate's {} calls failed ({:.1}%, the guard allows {:.1}%)",
                    candidate.errors,
                    candidate.calls,
                    candidate.error_rate() * 100.0,
                    max * 100.0
                ),
            ));
        }
        if let Some(max) = self.max_deny_rate_increase
            && candidate.admissions >= self.min_calls
            && candidate.deny_rate() - stable.deny_rate() > max
        {
            return Some((
                "denyRateIncrease",
                format!(
                    "the candidate denied {:.1}% of {} admissions, the stable version {:.1}% of {} (the guard allows {:.1} points more)",
                    candidate.deny_rate() * 100.0,
                    candidate.admissions,
                    stable.deny_rate() * 100.0,
                    stable.admissions,
                    max * 100.0
                ),
            ));
        }
        if let Some(max) = self.max_deadline_overruns
            && candidate.overruns > max
        {
            return Some((
                "deadlineOverruns",
                format!(
                    "{} of the candidate's calls ran out of time (the guard allows {max})",
                    candidate.overruns
                ),
            ));
        }
        if let Some(max) = self.max_p99
            && candidate.p99 > max
        {
            return Some((
                "p99",
                format!(
                    "the candidate's 99th percentile latency is up to {:?} (the guard allows {max:?})",
                    candidate.p99
                ),
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(stats: &VersionStats, n: u64, result: CallResult) {
        for _ in 0..n {
            stats.record(result, Duration::from_millis(1));
        }
    }

    #[test]
    fn guards_wait_for_min_calls_then_name_the_breach() {
        let g = Guards::default();
        let s = RolloutStats::default();
        calls(&s.stable, 100, CallResult::Allowed);
        calls(&s.candidate, 19, CallResult::Denied);
        assert_eq!(
            g.breached(&s.stable.snapshot(), &s.candidate.snapshot()),
            None
        );
        calls(&s.candidate, 1, CallResult::Denied);
        let (guard, why) = g
            .breached(&s.stable.snapshot(), &s.candidate.snapshot())
            .unwrap();
        assert_eq!(guard, "denyRateIncrease");
        assert!(why.contains("denied 100.0% of 20 admissions"), "{why}");

        let s = RolloutStats::default();
        calls(&s.candidate, 18, CallResult::Success);
        calls(&s.candidate, 2, CallResult::Error { overrun: false });
        assert_eq!(
            g.breached(&s.stable.snapshot(), &s.candidate.snapshot())
                .unwrap()
                .0,
            "errorRate"
        );
        let lenient = Guards {
            max_error_rate: Some(0.5),
            ..Guards::default()
        };
        assert_eq!(
            lenient.breached(&s.stable.snapshot(), &s.candidate.snapshot()),
            None
        );
        calls(&s.candidate, 1, CallResult::Error { overrun: true });
        assert_eq!(
            lenient
                .breached(&s.stable.snapshot(), &s.candidate.snapshot())
                .unwrap()
                .0,
            "deadlineOverruns"
        );
    }

    #[test]
    fn the_deny_rate_is_compared_with_the_stable_versions() {
        let g = Guards::default();
        let s = RolloutStats::default();
        calls(&s.stable, 50, CallResult::Denied);
        calls(&s.stable, 50, CallResult::Allowed);
        calls(&s.candidate, 11, CallResult::Denied);
        calls(&s.candidate, 9, CallResult::Allowed);
        assert_eq!(
            g.breached(&s.stable.snapshot(), &s.candidate.snapshot()),
            None,
            "55% against 50%: within 10 points"
        );
    }

    #[test]
    fn p99_is_the_bound_of_its_bucket() {
        let s = VersionStats::default();
        for _ in 0..99 {
            s.record(CallResult::Success, Duration::from_micros(40));
        }
        s.record(CallResult::Success, Duration::from_millis(30));
        assert_eq!(s.snapshot().p99, Duration::from_micros(50));
        s.record(CallResult::Success, Duration::from_millis(30));
        assert_eq!(s.snapshot().p99, Duration::from_micros(50 << 10));
        let g = Guards {
            max_p99: Some(Duration::from_millis(10)),
            min_calls: 1,
            ..Guards::default()
        };
        assert_eq!(
            g.breached(&VersionSnapshot::default(), &s.snapshot())
                .unwrap()
                .0,
            "p99"
        );
    }
}
