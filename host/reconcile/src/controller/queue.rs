//! A work queue with client-go's guarantees: a key is queued at most once, never processed by
//! two workers at once (an add during processing re-queues it afterwards), with per-key
//! exponential back-off (5 ms doubling up to 1000 s, controller-runtime's default). Delayed
//! adds wait in one timer per queue, a key at most once (its earliest time), as client-go's
//! delaying queue: ten thousand requeues are ten thousand map entries, not ten thousand tasks.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

pub const BASE_DELAY: Duration = Duration::from_millis(5);
pub const MAX_DELAY: Duration = Duration::from_secs(1000);

struct State<K> {
    queue: VecDeque<K>,
    queued: HashSet<K>,
    processing: HashSet<K>,
    dirty: HashSet<K>,
    failures: HashMap<K, u32>,
    /// When each queued key entered the queue, and since when each key in progress is: what
    /// the workqueue metrics report.
    queued_since: HashMap<K, std::time::Instant>,
    processing_since: HashMap<K, std::time::Instant>,
    /// Keys added with a delay, by when they are due (and a sequence number: several keys may
    /// be due at the same instant).
    waiting: BTreeMap<(Instant, u64), K>,
    waiting_keys: HashMap<K, (Instant, u64)>,
    sequence: u64,
    timer_running: bool,
    shutdown: bool,
}

pub struct WorkQueue<K> {
    state: Mutex<State<K>>,
    ready: Notify,
    /// Wakes the timer: an earlier due time, shutdown, or the queue dropped.
    timer_wake: Arc<Notify>,
    stopped: tokio_util::sync::CancellationToken,
}

impl<K> Drop for WorkQueue<K> {
    fn drop(&mut self) {
        self.timer_wake.notify_one();
    }
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
                queued_since: HashMap::new(),
                processing_since: HashMap::new(),
                waiting: BTreeMap::new(),
                waiting_keys: HashMap::new(),
                sequence: 0,
                timer_running: false,
                shutdown: false,
            }),
            ready: Notify::new(),
            timer_wake: Arc::new(Notify::new()),
            stopped: tokio_util::sync::CancellationToken::new(),
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
        s.queued_since
            .insert(key.clone(), std::time::Instant::now());
        s.queue.push_back(key);
        drop(s);
        self.ready.notify_one();
    }

    /// Adds `key` after `delay`; a key already waiting keeps the earlier of its two times.
    pub fn add_after(self: &Arc<Self>, key: K, delay: Duration) {
        if delay.is_zero() {
            return self.add(key);
        }
        let due = Instant::now() + delay;
        let mut s = self.state.lock().expect("queue lock");
        if s.shutdown {
            return;
        }
        match s.waiting_keys.get(&key).copied() {
            Some((at, _)) if at <= due => return,
            Some(slot) => {
                s.waiting.remove(&slot);
            }
            None => {}
        }
        s.sequence += 1;
        let slot = (due, s.sequence);
        s.waiting.insert(slot, key.clone());
        s.waiting_keys.insert(key, slot);
        let start = !std::mem::replace(&mut s.timer_running, true);
        let earliest = s.waiting.keys().next() == Some(&slot);
        drop(s);
        if start {
            tokio::spawn(timer(Arc::downgrade(self), self.timer_wake.clone()));
        } else if earliest {
            self.timer_wake.notify_one();
        }
    }

    /// Takes the delayed keys due by `now` off the waiting list; the next due time, if any.
    fn take_due(&self, now: Instant) -> (Vec<K>, Option<Instant>) {
        let mut s = self.state.lock().expect("queue lock");
        let mut due = Vec::new();
        while let Some(entry) = s.waiting.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let key = entry.remove();
            s.waiting_keys.remove(&key);
            due.push(key);
        }
        (due, s.waiting.keys().next().map(|(at, _)| *at))
    }

    /// Keys waiting for their delay.
    pub fn delayed(&self) -> usize {
        self.state.lock().expect("queue lock").waiting.len()
    }

    /// Re-adds `key` after its next back-off delay, and returns that delay.
    pub fn add_rate_limited(self: &Arc<Self>, key: K) -> Duration {
        self.add_rate_limited_at_least(key, Duration::ZERO)
    }

    /// [`WorkQueue::add_rate_limited`], waiting at least `at_least`.
    pub fn add_rate_limited_at_least(self: &Arc<Self>, key: K, at_least: Duration) -> Duration {
        let delay = {
            let mut s = self.state.lock().expect("queue lock");
            let n = s.failures.entry(key.clone()).or_insert(0);
            *n += 1;
            backoff(*n).max(at_least)
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
        self.get_timed().await.map(|(key, _)| key)
    }

    /// The next key to process and how long it waited in the queue; `None` once shut down.
    pub async fn get_timed(&self) -> Option<(K, Duration)> {
        loop {
            let notified = self.ready.notified();
            {
                let mut s = self.state.lock().expect("queue lock");
                if s.shutdown {
                    return None;
                }
                if let Some(key) = s.queue.pop_front() {
                    let now = std::time::Instant::now();
                    s.queued.remove(&key);
                    let waited = s
                        .queued_since
                        .remove(&key)
                        .map(|t| now.duration_since(t))
                        .unwrap_or_default();
                    s.processing.insert(key.clone());
                    s.processing_since.insert(key.clone(), now);
                    if !s.queue.is_empty() {
                        self.ready.notify_one();
                    }
                    return Some((key, waited));
                }
            }
            notified.await;
        }
    }

    /// Marks `key` processed, returning how long it was in progress; re-queues it if it was
    /// added meanwhile.
    pub fn done(&self, key: &K) -> Option<Duration> {
        let mut s = self.state.lock().expect("queue lock");
        s.processing.remove(key);
        let worked = s.processing_since.remove(key).map(|t| t.elapsed());
        if s.dirty.remove(key) && !s.queued.contains(key) {
            s.queued.insert(key.clone());
            s.queued_since
                .insert(key.clone(), std::time::Instant::now());
            s.queue.push_back(key.clone());
            drop(s);
            self.ready.notify_one();
        }
        worked
    }

    /// How long the keys in progress have been so far: in total, and the longest.
    pub fn in_progress(&self) -> (Duration, Duration) {
        let s = self.state.lock().expect("queue lock");
        let now = std::time::Instant::now();
        s.processing_since
            .values()
            .map(|t| now.duration_since(*t))
            .fold((Duration::ZERO, Duration::ZERO), |(total, longest), d| {
                (total + d, longest.max(d))
            })
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
        self.timer_wake.notify_one();
        self.stopped.cancel();
    }

    /// Resolves once the queue is shut down.
    pub async fn shut_down(&self) {
        self.stopped.cancelled().await
    }

    pub fn is_shut_down(&self) -> bool {
        self.state.lock().expect("queue lock").shutdown
    }
}

/// The queue's one timer: adds each delayed key when it is due. Holds the queue only while
/// adding, so a dropped queue ends it (its `Drop` wakes it).
async fn timer<K: Clone + Eq + Hash + Send + 'static>(
    queue: Weak<WorkQueue<K>>,
    wake: Arc<Notify>,
) {
    loop {
        let next = {
            let Some(q) = queue.upgrade() else { return };
            if q.is_shut_down() {
                return;
            }
            let (due, next) = q.take_due(Instant::now());
            for key in due {
                q.add(key);
            }
            next
        };
        match next {
            Some(at) => {
                tokio::select! {
                    _ = tokio::time::sleep_until(at) => {}
                    _ = wake.notified() => {}
                }
            }
            None => wake.notified().await,
        }
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

    /// Delayed adds wait in the queue's one timer, each key once at its earliest time, and
    /// come out in time order.
    #[tokio::test]
    async fn delayed_adds_keep_each_keys_earliest_time_in_one_timer() {
        let q: Arc<WorkQueue<&str>> = WorkQueue::new();
        q.add_after("late", Duration::from_secs(3600));
        q.add_after("soon", Duration::from_millis(20));
        q.add_after("late", Duration::from_millis(40));
        q.add_after("late", Duration::from_secs(7200));
        for i in 0..1000 {
            q.add_after("soon", Duration::from_secs(10 + i));
        }
        assert_eq!(q.delayed(), 2, "each key waits once");
        assert!(q.is_empty());
        let next = || tokio::time::timeout(Duration::from_secs(30), q.get());
        assert_eq!(next().await.unwrap(), Some("soon"));
        assert_eq!(
            next()
                .await
                .expect("due at its earliest time, not in an hour"),
            Some("late")
        );
        assert_eq!(q.delayed(), 0);
    }

    #[tokio::test]
    async fn a_dropped_queue_ends_its_timer() {
        let q: Arc<WorkQueue<u32>> = WorkQueue::new();
        q.add_after(1, Duration::from_secs(3600));
        let wake = q.timer_wake.clone();
        drop(q);
        tokio::task::yield_now().await;
        // Only the test holds the timer's Notify once the timer task has ended.
        for _ in 0..10 {
            if Arc::strong_count(&wake) == 1 {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("the timer task still runs");
    }

    /// A key requeued again and again soon (a plugin asking for 0 ms each time) backs off
    /// instead of spinning, never sooner than asked.
    #[tokio::test]
    async fn soon_requeues_back_off_per_key_never_sooner_than_asked() {
        let q: Arc<WorkQueue<&str>> = WorkQueue::new();
        assert_eq!(
            q.add_rate_limited_at_least("k", Duration::from_millis(300)),
            Duration::from_millis(300)
        );
        assert_eq!(
            q.add_rate_limited_at_least("k", Duration::ZERO),
            Duration::from_millis(10)
        );
        let mut last = Duration::ZERO;
        for _ in 0..12 {
            last = q.add_rate_limited_at_least("k", Duration::ZERO);
        }
        assert_eq!(last, Duration::from_millis(5 << 13));
        q.shutdown();
    }

    #[tokio::test]
    async fn waits_and_work_are_timed() {
        let q: Arc<WorkQueue<&str>> = WorkQueue::new();
        q.add("k");
        let (key, waited) = q.get_timed().await.unwrap();
        assert_eq!(key, "k");
        assert!(waited < Duration::from_secs(60));
        let (total, longest) = q.in_progress();
        assert!(longest <= total);
        q.add("k");
        assert!(q.done(&"k").is_some(), "taken by get: its work is timed");
        assert_eq!(q.in_progress(), (Duration::ZERO, Duration::ZERO));
        assert!(q.done(&"never").is_none());
        assert_eq!(q.get_timed().await.map(|(k, _)| k), Some("k"), "re-queued");
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
