//! Per-plugin resource limits.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The most calls of one plugin that may run at once: every call holds an instance slot of
/// the engine's pool and up to its memory limit (the host's budget bounds the sum).
pub const MAX_CONCURRENCY: usize = 32;

/// What one plugin may consume per call. Every field has a default; an admin may override
/// them per plugin.
///
/// Two clocks bound a call. The *execution* deadlines (`reconcileTimeoutMs`,
/// `admissionTimeoutMs`) measure the plugin's own code: time blocked in host calls (cluster
/// reads, HTTP) does not count. The *budgets* (`reconcileBudgetMs`, `admissionBudgetMs`) bound
/// the whole call on the wall clock: every host call is cut to what is left of it, so a slow
/// host call fails that call (the plugin sees the error and still returns its outcome) and the
/// call as a whole ends in time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Limits {
    /// Execution deadline of a reconcile, map or validate-settings call.
    pub reconcile_timeout_ms: u64,
    /// Execution deadline of an admission (mutate/validate) or API call.
    pub admission_timeout_ms: u64,
    /// Wall-clock budget of a reconcile or map call, host calls included.
    pub reconcile_budget_ms: u64,
    /// Wall-clock budget of an admission call, host calls included: within the webhook's
    /// `timeoutSeconds` (10 s upstream) with room for the host's own work.
    pub admission_budget_ms: u64,
    /// Wall-clock budget of an API call (a model-serving-api route), host calls included:
    /// upstream bounds gateway discovery at 5 s.
    pub api_budget_ms: u64,
    /// How long an outgoing HTTP request may take to connect (TCP and TLS).
    pub http_connect_timeout_ms: u64,
    /// How long an outgoing HTTP request may take in all, until the last byte of the body.
    pub http_timeout_ms: u64,
    /// Linear memory a call may grow to.
    pub memory_mib: usize,
    /// Bytes of text (objects, status, messages) one call may return.
    pub max_output_bytes: usize,
    /// Calls of this plugin that may run at the same time.
    pub concurrency: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            reconcile_timeout_ms: 2_000,
            admission_timeout_ms: 1_000,
            reconcile_budget_ms: 30_000,
            admission_budget_ms: 8_000,
            api_budget_ms: 5_000,
            http_connect_timeout_ms: 5_000,
            http_timeout_ms: 10_000,
            memory_mib: 128,
            max_output_bytes: 4 * 1024 * 1024,
            concurrency: 4,
        }
    }
}

impl Limits {
    pub fn reconcile_timeout(&self) -> Duration {
        Duration::from_millis(self.reconcile_timeout_ms)
    }

    pub fn admission_timeout(&self) -> Duration {
        Duration::from_millis(self.admission_timeout_ms)
    }

    pub fn reconcile_budget(&self) -> Duration {
        Duration::from_millis(self.reconcile_budget_ms)
    }

    pub fn admission_budget(&self) -> Duration {
        Duration::from_millis(self.admission_budget_ms)
    }

    pub fn api_budget(&self) -> Duration {
        Duration::from_millis(self.api_budget_ms)
    }

    /// The execution deadline and the wall-clock budget of a call of `op`.
    pub fn of_call(&self, op: crate::export::Export) -> (Duration, Duration) {
        match op {
            crate::export::Export::Handle => (self.admission_timeout(), self.api_budget()),
            op if op.is_interactive() => (self.admission_timeout(), self.admission_budget()),
            _ => (self.reconcile_timeout(), self.reconcile_budget()),
        }
    }

    pub fn http_connect_timeout(&self) -> Duration {
        Duration::from_millis(self.http_connect_timeout_ms)
    }

    pub fn http_timeout(&self) -> Duration {
        Duration::from_millis(self.http_timeout_ms)
    }

    pub fn memory_bytes(&self) -> usize {
        self.memory_mib.saturating_mul(1024 * 1024)
    }

    /// What is wrong with these limits, if anything.
    pub fn check(&self, max_memory_mib: usize) -> Result<(), String> {
        if self.memory_mib > max_memory_mib {
            return Err(format!(
                "memory limit {} MiB is above the host's maximum of {max_memory_mib} MiB",
                self.memory_mib
            ));
        }
        if self.concurrency == 0 {
            return Err("concurrency must be at least 1".into());
        }
        if self.concurrency > MAX_CONCURRENCY {
            return Err(format!(
                "concurrency {} is above the host's maximum of {MAX_CONCURRENCY}",
                self.concurrency
            ));
        }
        if self.reconcile_timeout_ms == 0 || self.admission_timeout_ms == 0 {
            return Err("execution deadlines must be at least 1 ms".into());
        }
        if self.admission_budget_ms < self.admission_timeout_ms
            || self.api_budget_ms < self.admission_timeout_ms
            || self.reconcile_budget_ms < self.reconcile_timeout_ms
        {
            return Err("a call's budget must be at least its execution deadline".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An API call (gateway discovery) is bounded at upstream's 5 s; admissions keep theirs.
    #[test]
    fn each_call_gets_its_budget() {
        let limits = Limits::default();
        let secs = |op| limits.of_call(op).1.as_secs();
        assert_eq!(secs(crate::export::Export::Handle), 5);
        assert_eq!(secs(crate::export::Export::Mutate), 8);
        assert_eq!(secs(crate::export::Export::Validate), 8);
        assert_eq!(secs(crate::export::Export::Reconcile), 30);
        assert_eq!(
            limits.of_call(crate::export::Export::Handle).0,
            limits.admission_timeout()
        );
    }

    #[test]
    fn concurrency_is_capped_by_the_host() {
        let with = |concurrency| Limits {
            concurrency,
            ..Limits::default()
        };
        assert!(with(MAX_CONCURRENCY).check(512).is_ok());
        assert!(
            with(MAX_CONCURRENCY + 1)
                .check(512)
                .unwrap_err()
                .contains("above the host's maximum of 32")
        );
        assert!(with(0).check(512).is_err());
    }
}
