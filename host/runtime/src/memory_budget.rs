//! One budget for the linear memory of every plugin call in flight. Per-plugin limits bound a
//! call; they do not bound their sum (ten plugins at 128 MiB and concurrency 4 may ask for five
//! GiB in a pod limited to two). Every memory a call creates or grows reserves its growth here
//! first, and a store gives back what it reserved when it is dropped: past the budget a growth
//! fails like a per-plugin limit does (the call ends with a clear error, the process lives).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A shared budget (cloning shares it). `None` limit: unbounded (no pod limit to derive it
/// from, e.g. a developer's machine).
#[derive(Debug, Clone, Default)]
pub struct MemoryBudget {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    limit: Option<usize>,
    used: AtomicUsize,
}

/// How much of the pod's memory limit plugin calls may hold together: the rest is the host's
/// (object caches, compiled code, buffers).
const SHARE_OF_POD_LIMIT: usize = 2;

impl MemoryBudget {
    pub fn unbounded() -> Self {
        Self::default()
    }

    pub fn with_limit(bytes: usize) -> Self {
        Self {
            inner: Arc::new(Inner {
                limit: Some(bytes),
                used: AtomicUsize::new(0),
            }),
        }
    }

    /// Half the container's memory limit (cgroup v2 `memory.max`, else v1
    /// `memory.limit_in_bytes`); unbounded when the container has none.
    pub fn from_container_limit() -> Self {
        match container_memory_limit() {
            Some(limit) => Self::with_limit(limit / SHARE_OF_POD_LIMIT),
            None => Self::unbounded(),
        }
    }

    pub fn limit(&self) -> Option<usize> {
        self.inner.limit
    }

    /// Bytes reserved by calls in flight.
    pub fn in_use(&self) -> usize {
        self.inner.used.load(Ordering::Acquire)
    }

    /// Reserves `bytes`; false (nothing reserved) when that would pass the limit.
    pub(crate) fn reserve(&self, bytes: usize) -> bool {
        let Some(limit) = self.inner.limit else {
            self.inner.used.fetch_add(bytes, Ordering::AcqRel);
            return true;
        };
        self.inner
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|total| *total <= limit)
            })
            .is_ok()
    }

    pub(crate) fn release(&self, bytes: usize) {
        self.inner.used.fetch_sub(bytes, Ordering::AcqRel);
    }
}

/// The container's memory limit in bytes, if it has one.
fn container_memory_limit() -> Option<usize> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let text = read("/sys/fs/cgroup/memory.max")
        .or_else(|| read("/sys/fs/cgroup/memory/memory.limit_in_bytes"))?;
    parse_limit(&text)
}

/// `max` (v2) or a v1 value near `u64::MAX` mean no limit.
fn parse_limit(text: &str) -> Option<usize> {
    let value: u64 = text.trim().parse().ok()?;
    (value < 1 << 60)
        .then(|| usize::try_from(value).ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_stop_at_the_limit_and_come_back() {
        let budget = MemoryBudget::with_limit(100);
        assert!(budget.reserve(60));
        assert!(!budget.reserve(41), "past the limit");
        assert_eq!(budget.in_use(), 60, "a refused reservation takes nothing");
        assert!(budget.reserve(40));
        budget.release(100);
        assert_eq!(budget.in_use(), 0);
        let unbounded = MemoryBudget::unbounded();
        assert!(unbounded.reserve(usize::MAX / 2));
    }

    #[test]
    fn container_limits_parse() {
        assert_eq!(parse_limit("2147483648\n"), Some(2 << 30));
        assert_eq!(parse_limit("max\n"), None);
        assert_eq!(
            parse_limit("9223372036854771712"),
            None,
            "cgroup v1's no limit"
        );
    }
}
