//! Per-plugin resource limits.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What one plugin may consume per call. Every field has a default; an admin may override
/// them per plugin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Limits {
    /// Deadline of a reconcile, map or validate-settings call.
    pub reconcile_timeout_ms: u64,
    /// Deadline of an admission (mutate/validate) call.
    pub admission_timeout_ms: u64,
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

    pub fn memory_bytes(&self) -> usize {
        self.memory_mib.saturating_mul(1024 * 1024)
    }
}
