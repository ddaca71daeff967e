//! What a shadow candidate has done since it was set: calls, how many differed from the active
//! version, the last difference (as the shadow report writes it: JSON pointers, Secrets
//! redacted), and a bound on the log lines differences make (one per [`LOG_EVERY`], the others
//! counted), so a candidate that differs on every call cannot flood the log. The registry
//! writes these into the plugin's status.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// At most one shadow-difference log line per plugin this often.
pub const LOG_EVERY: Duration = Duration::from_secs(10);

#[derive(Debug)]
pub struct ShadowStats {
    since: SystemTime,
    calls: AtomicU64,
    differing: AtomicU64,
    logged: AtomicU64,
    last: Mutex<Option<String>>,
    /// When a difference was last logged, and how many were not since.
    log: Mutex<(Option<Instant>, u64)>,
}

/// The counters, for the status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShadowSnapshot {
    /// When the candidate was set.
    pub since: SystemTime,
    pub calls: u64,
    pub differing: u64,
    /// Differences logged (the rest were counted only).
    pub logged: u64,
    pub last_difference: Option<String>,
}

impl Default for ShadowStats {
    fn default() -> Self {
        Self {
            since: SystemTime::now(),
            calls: AtomicU64::new(0),
            differing: AtomicU64::new(0),
            logged: AtomicU64::new(0),
            last: Mutex::new(None),
            log: Mutex::new((None, 0)),
        }
    }
}

impl ShadowStats {
    pub fn record_call(&self) {
        self.calls.fetch_add(1, Ordering::Relaxed);
    }

    /// A difference, described; `Some(n)` when it may be logged now (`n` differences were not
    /// logged since the last line), `None` when it is only counted.
    pub fn record_difference(&self, description: String) -> Option<u64> {
        self.differing.fetch_add(1, Ordering::Relaxed);
        *self.last.lock().expect("shadow stats lock") = Some(description);
        let mut log = self.log.lock().expect("shadow stats lock");
        match log.0 {
            Some(at) if at.elapsed() < LOG_EVERY => {
                log.1 += 1;
                None
            }
            _ => {
                let unlogged = std::mem::take(&mut log.1);
                log.0 = Some(Instant::now());
                self.logged.fetch_add(1, Ordering::Relaxed);
                Some(unlogged)
            }
        }
    }

    pub fn snapshot(&self) -> ShadowSnapshot {
        ShadowSnapshot {
            since: self.since,
            calls: self.calls.load(Ordering::Relaxed),
            differing: self.differing.load(Ordering::Relaxed),
            logged: self.logged.load(Ordering::Relaxed),
            last_difference: self.last.lock().expect("shadow stats lock").clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_are_all_counted_and_logged_at_most_once_a_period() {
        let stats = ShadowStats::default();
        let mut logged = 0;
        for i in 0..100 {
            stats.record_call();
            if stats
                .record_difference(format!("/allowed: true → false ({i})"))
                .is_some()
            {
                logged += 1;
            }
        }
        assert_eq!(logged, 1);
        let s = stats.snapshot();
        assert_eq!((s.calls, s.differing, s.logged), (100, 100, 1));
        assert_eq!(
            s.last_difference.as_deref(),
            Some("/allowed: true → false (99)")
        );
    }
}
