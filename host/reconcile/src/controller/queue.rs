//! A work queue with client-go's guarantees: a key is queued at most once, never processed by
//! two workers at once (an add during processing re-queues it afterwards), with per-key
//! exponential back-off (5 ms doubling up to 1000 s, controller-runtime's default).

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

pub const BASE_DELAY: Duration = Duration::from_millis(5);
pub const MAX_DELAY: Duration = Duration::from_secs(1000);

struct State<K> {
    queue: VecDeque<K>,
    queued: HashSet<K>,
    processing: HashSet<K>,
    dirty: HashSet<K>,
    failures: HashMap<K, u32>,
    shutdown: bool,
}

pub struct WorkQueue<K> {
    state: Mutex<State<K>>,
    ready: Notify,
}

impl<K: Clone + Eq + Hash + Send + 'static> WorkQueue<K> {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                queued: HashSet::new(),
                processing: HashSet::new(),
                dirty: HashSet::new(),
                failures: HashMap::new(),
                shutdown: false,
            }),
            ready: Notify::new(),
        })
    }

    pub fn add(&self, key: K) {
        let mut s = self.state.lock().expect("queue lock");
        if s.shutdown || s.queued.contains(&key) {
            return;
        }
        if s.processing.contains(&key) {
            s.dirty.insert(key);
            return;
        }
        s.queued.insert(key.clone());
        s.queue.push_back(key);
        drop(s);
        self.ready.notify_one();
    }

    /// Adds `key` after `delay`.
    pub fn add_after(self: &Arc<Self>, key: K, delay: Duration) {
        if delay.is_zero() {
            return self.add(key);
        }
        let this = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            this.add(key);
        });
    }

    /// Re-adds `key` after its next back-off delay, and returns that delay.
    pub fn add_rate_limited(self: &Arc<Self>, key: K) -> Duration {
        let delay = {
            let mut s = self.state.lock().expect("queue lock");
            let n = s.failures.entry(key.clone()).or_insert(0);
            *n += 1;
            backoff(*n)
        };
        self.add_after(key, delay);
        delay
    }

    /// Clears `key`'s failure count (after a success).
    pub fn forget(&self, key: &K) {
        self.state.lock().expect("queue lock").failures.remove(key);
    }

    pub fn retries(&self, key: &K) -> u32 {
        self.state
            .lock()
            .expect("queue lock")
            .failures
            .get(key)
            .copied()
            .unwrap_or(0)
    }

    /// The next key to process; `None` once shut down.
    pub async fn get(&self) -> Option<K> {
        loop {
            let notified = self.ready.notified();
            {
                let mut s = self.state.lock().expect("queue lock");
                if s.shutdown {
                    return None;
                }
                if let Some(key) = s.queue.pop_front() {
                    s.queued.remove(&key);
                    s.processing.insert(key.clone());
                    if !s.queue.is_empty() {
                        self.ready.notify_one();
                    }
                    return Some(key);
                }
            }
            notified.await;
        }
    }

    /// Marks `key` processed; re-queues it if it was added meanwhile.
    pub fn done(&self, key: &K) {
        let mut s = self.state.lock().expect("queue lock");
        s.processing.remove(key);
        if s.dirty.remove(key) && !s.queued.contains(key) {
            s.queued.insert(key.clone());
            s.queue.push_back(key.clone());
            drop(s);
            self.ready.notify_one();
        }
    }

    pub fn len(&self) -> usize {
        self.state.lock().expect("queue lock").queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn shutdown(&self) {
        self.state.lock().expect("queue lock").shutdown = true;
        self.ready.notify_waiters();
    }
}

/// The delay before retry `n` (1-based).
pub fn backoff(n: u32) -> Duration {
    let factor = 2u64.saturating_pow(n.saturating_sub(1).min(40));
    BASE_DELAY
        .saturating_mul(factor.min(u32::MAX as u64) as u32)
        .min(MAX_DELAY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_5ms_to_1000s() {
        assert_eq!(backoff(1), Duration::from_millis(5));
        assert_eq!(backoff(2), Duration::from_millis(10));
        assert_eq!(backoff(11), Duration::from_millis(5 * 1024));
        assert_eq!(backoff(30), MAX_DELAY);
        assert_eq!(backoff(u32::MAX), MAX_DELAY);
    }

    #[tokio::test]
    async fn a_key_is_queued_once_and_never_processed_twice_at_once() {
        let q = WorkQueue::new();
        q.add("a");
        q.add("a");
        q.add("b");
        assert_eq!(q.len(), 2);
        let first = q.get().await.unwrap();
        assert_eq!(first, "a");
        q.add("a"); // while processing: deferred, not queued
        assert_eq!(q.len(), 1);
        assert_eq!(q.get().await.unwrap(), "b");
        q.done(&"b");
        assert!(q.is_empty());
        q.done(&"a"); // now re-queued
        assert_eq!(q.get().await.unwrap(), "a");
    }

    #[tokio::test]
    async fn rate_limited_adds_back_off_and_forget_resets() {
        let q = WorkQueue::new();
        assert_eq!(q.add_rate_limited("k"), Duration::from_millis(5));
        assert_eq!(q.add_rate_limited("k"), Duration::from_millis(10));
        assert_eq!(q.retries(&"k"), 2);
        q.forget(&"k");
        assert_eq!(q.retries(&"k"), 0);
        let got = tokio::time::timeout(Duration::from_secs(1), q.get())
            .await
            .unwrap();
        assert_eq!(got, Some("k"));
    }

    #[tokio::test]
    async fn shutdown_wakes_waiting_workers() {
        let q: Arc<WorkQueue<u32>> = WorkQueue::new();
        let waiter = tokio::spawn({
            let q = q.clone();
            async move { q.get().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        q.shutdown();
        assert_eq!(waiter.await.unwrap(), None);
    }
}
