//! A progressive rollout: a candidate version serving a slice of the objects while the stable
//! version serves the rest. Which version serves an object is a pure function of its key and
//! the entry's slice ([`Slice::takes`]): every webhook replica and the leader agree without
//! talking to each other, and an object never flaps between versions while the slice stays.
//! Guards ([`guards`]) compare what the candidate does with what the stable version does and
//! move the slice back to stable at once when one is breached.

pub mod guards;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use crate::LoadedPlugin;
use crate::cluster_view::ClusterView;
use crate::gvk::Gvk;
pub use guards::{Guards, RolloutStats, Version};
use odh_label_selector::LabelSelector;

/// Basis points: the hash of a key falls in `0..BUCKETS`.
pub const BUCKETS: u64 = 10_000;

/// The objects the candidate serves: those whose key hashes below `percent`, those in
/// `namespaces`, and those in a namespace whose labels `namespace_selector` matches.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Slice {
    /// 0 to 100, in steps of 0.01.
    pub percent: f64,
    pub namespaces: BTreeSet<String>,
    pub namespace_selector: Option<LabelSelector>,
    /// Steps the percentage advances through by itself; empty: `percent` stays.
    pub steps: Vec<Step>,
}

/// One step of a timed rollout: the percentage it serves, and how long before the next step
/// (`None` on the last step, which stays until the entry changes).
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub percent: f64,
    pub pause: Option<Duration>,
}

impl Slice {
    /// Whether the candidate serves the object `namespace/name`. A cluster-scoped object's
    /// namespace is empty; an admission review of an object without a name yet (a
    /// `generateName` CREATE) is keyed by its namespace alone.
    pub fn takes(&self, namespace: Option<&str>, name: Option<&str>) -> bool {
        self.takes_at(namespace, name, self.percent)
    }

    fn takes_at(&self, namespace: Option<&str>, name: Option<&str>, percent: f64) -> bool {
        if let Some(ns) = namespace
            && self.namespaces.contains(ns)
        {
            return true;
        }
        bucket(namespace.unwrap_or(""), name.unwrap_or("")) < (percent * 100.0).round() as u64
    }

    /// The step in force `elapsed` after the rollout started, when the slice has steps.
    pub fn step_at(&self, elapsed: Duration) -> Option<usize> {
        let mut ends = Duration::ZERO;
        for (i, step) in self.steps.iter().enumerate() {
            match step.pause {
                Some(pause) => {
                    ends = ends.saturating_add(pause);
                    if elapsed < ends {
                        return Some(i);
                    }
                }
                None => return Some(i),
            }
        }
        self.steps.len().checked_sub(1)
    }

    /// The percentage in force `elapsed` after the rollout started.
    pub fn percent_at(&self, elapsed: Duration) -> f64 {
        self.step_at(elapsed)
            .map_or(self.percent, |i| self.steps[i].percent)
    }

    /// When the step after the one in force `elapsed` after the start begins, measured from
    /// the start; `None` on the last step (or without steps).
    pub fn next_step_after(&self, elapsed: Duration) -> Option<Duration> {
        let current = self.step_at(elapsed)?;
        let mut ends = Duration::ZERO;
        for step in &self.steps[..=current] {
            ends = ends.saturating_add(step.pause?);
        }
        (current + 1 < self.steps.len()).then_some(ends)
    }

    /// [`Slice::takes`], and with a `namespace_selector`, whether the labels of the object's
    /// namespace, as `cluster` holds them in memory, match it. A namespace the view does not
    /// hold (no Namespace cache, or not created yet) matches nothing: its objects stay with
    /// the stable version rather than wait for a read.
    pub fn takes_in(
        &self,
        namespace: Option<&str>,
        name: Option<&str>,
        cluster: &dyn ClusterView,
    ) -> bool {
        self.takes_in_at(namespace, name, cluster, self.percent)
    }

    fn takes_in_at(
        &self,
        namespace: Option<&str>,
        name: Option<&str>,
        cluster: &dyn ClusterView,
        percent: f64,
    ) -> bool {
        if self.takes_at(namespace, name, percent) {
            return true;
        }
        let (Some(selector), Some(ns)) = (
            &self.namespace_selector,
            namespace.filter(|n| !n.is_empty()),
        ) else {
            return false;
        };
        let Some(Some(text)) = cluster.get_held(&Gvk::new("", "v1", "Namespace"), None, ns) else {
            return false;
        };
        serde_json::from_str::<serde_json::Value>(&text)
            .is_ok_and(|o| selector.matches_json(o.pointer("/metadata/labels")))
    }
}

/// The key's bucket in `0..BUCKETS`: FNV-1a (64 bit) of `namespace/name`, a hash fixed here
/// (not Rust's `DefaultHasher`, whose output may change between releases) so every replica and
/// every release of the host puts a key in the same bucket.
pub fn bucket(namespace: &str, name: &str) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET;
    for byte in namespace
        .bytes()
        .chain(std::iter::once(b'/'))
        .chain(name.bytes())
    {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(PRIME);
    }
    hash % BUCKETS
}

/// A candidate in progressive rollout, on a slot.
pub struct Canary {
    pub plugin: LoadedPlugin,
    pub slice: Slice,
    pub guards: Guards,
    pub stats: RolloutStats,
    /// When the rollout started: its steps are timed from here.
    pub started: SystemTime,
    /// Why the slice went back to the stable version, once a guard was breached.
    rolled_back: Mutex<Option<RolledBack>>,
    /// Told when the candidate is rolled back (the registry writes the status and the Event).
    on_rollback: Arc<tokio::sync::Notify>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RolledBack {
    /// The guard breached (`errorRate`, …).
    pub guard: &'static str,
    pub reason: String,
    pub at: std::time::SystemTime,
}

impl Canary {
    /// `on_rollback` is told when a guard rolls the candidate back; `started` times the steps
    /// (a replica joining a timed rollout takes the time the others started it at).
    pub fn new(
        plugin: LoadedPlugin,
        slice: Slice,
        guards: Guards,
        on_rollback: Arc<tokio::sync::Notify>,
        started: SystemTime,
    ) -> Arc<Self> {
        Arc::new(Self {
            plugin,
            slice,
            guards,
            stats: RolloutStats::default(),
            started,
            rolled_back: Mutex::new(None),
            on_rollback,
        })
    }

    /// Whether the candidate serves `namespace/name` now (never after a rollback); `cluster`
    /// answers a namespace selector ([`Slice::takes_in`]).
    pub fn serves(
        &self,
        namespace: Option<&str>,
        name: Option<&str>,
        cluster: &dyn ClusterView,
    ) -> bool {
        self.rolled_back().is_none()
            && self
                .slice
                .takes_in_at(namespace, name, cluster, self.percent_now())
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed().unwrap_or_default()
    }

    /// The step in force now (timed rollouts only).
    pub fn step_now(&self) -> Option<usize> {
        self.slice.step_at(self.elapsed())
    }

    /// The percentage in force now.
    pub fn percent_now(&self) -> f64 {
        self.slice.percent_at(self.elapsed())
    }

    pub fn rolled_back(&self) -> Option<RolledBack> {
        self.rolled_back
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Moves the slice back to the stable version; `true` the first time only.
    pub fn roll_back(&self, guard: &'static str, reason: String) -> bool {
        let mut state = self.rolled_back.lock().unwrap_or_else(|e| e.into_inner());
        if state.is_some() {
            return false;
        }
        *state = Some(RolledBack {
            guard,
            reason,
            at: std::time::SystemTime::now(),
        });
        drop(state);
        self.on_rollback.notify_one();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_fixed_and_spread() {
        // Fixed values: a change of hash would move objects between versions on upgrade.
        assert_eq!(bucket("", ""), 0xaf63_a24c_8601_89fe % BUCKETS);
        assert_eq!(bucket("", ""), 5758);
        assert_eq!(bucket("ns", "a"), 734);
        assert_eq!(bucket("ns", "a"), bucket("ns", "a"));
        let taken = (0..10_000)
            .filter(|i| {
                Slice {
                    percent: 25.0,
                    ..Default::default()
                }
                .takes(Some("ns"), Some(&format!("obj-{i}")))
            })
            .count();
        assert!((2300..2700).contains(&taken), "{taken} of 10000 at 25%");
    }

    #[test]
    fn a_slice_takes_its_namespaces_and_grows_without_moving_objects_back() {
        let at = |percent| Slice {
            percent,
            namespaces: ["canary".to_string()].into(),
            ..Default::default()
        };
        assert!(at(0.0).takes(Some("canary"), Some("x")));
        assert!(!at(0.0).takes(Some("other"), Some("x")));
        assert!(at(100.0).takes(Some("other"), Some("x")));
        for i in 0..1000 {
            let name = format!("o{i}");
            if at(10.0).takes(Some("n"), Some(&name)) {
                assert!(at(25.0).takes(Some("n"), Some(&name)), "{name} moved back");
            }
        }
    }

    #[test]
    fn a_namespace_selector_takes_the_namespaces_whose_held_labels_match() {
        use crate::cluster_view::{MemoryCluster, NoCluster};
        let slice = Slice {
            namespace_selector: Some(LabelSelector::parse("rollout=canary").unwrap()),
            ..Default::default()
        };
        let mut cluster = MemoryCluster::default();
        for (ns, value) in [("team-a", "canary"), ("team-b", "stable")] {
            cluster
                .insert(serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": ns, "labels": {"rollout": value}}}))
                .unwrap();
        }
        assert!(slice.takes_in(Some("team-a"), Some("x"), &cluster));
        assert!(!slice.takes_in(Some("team-b"), Some("x"), &cluster));
        // Unknown namespace, cluster-scoped object, or a view holding no Namespaces: stable.
        assert!(!slice.takes_in(Some("team-c"), Some("x"), &cluster));
        assert!(!slice.takes_in(None, Some("x"), &cluster));
        assert!(!slice.takes_in(Some("team-a"), Some("x"), &NoCluster));
    }

    #[test]
    fn steps_advance_with_time_and_stay_on_the_last() {
        let minutes = |m: u64| Some(Duration::from_secs(60 * m));
        let slice = Slice {
            steps: vec![
                Step {
                    percent: 5.0,
                    pause: minutes(10),
                },
                Step {
                    percent: 25.0,
                    pause: minutes(30),
                },
                Step {
                    percent: 100.0,
                    pause: None,
                },
            ],
            ..Default::default()
        };
        let at = |m: u64| Duration::from_secs(60 * m);
        assert_eq!(slice.step_at(at(0)), Some(0));
        assert_eq!(slice.percent_at(at(9)), 5.0);
        assert_eq!(slice.percent_at(at(10)), 25.0);
        assert_eq!(slice.percent_at(at(39)), 25.0);
        assert_eq!(slice.percent_at(at(40)), 100.0);
        assert_eq!(slice.percent_at(at(10_000)), 100.0);
        assert_eq!(slice.next_step_after(at(3)), Some(at(10)));
        assert_eq!(slice.next_step_after(at(12)), Some(at(40)));
        assert_eq!(slice.next_step_after(at(41)), None);
        // Without steps the percentage stays.
        let plain = Slice {
            percent: 7.0,
            ..Default::default()
        };
        assert_eq!(
            (plain.step_at(at(100)), plain.percent_at(at(100))),
            (None, 7.0)
        );
    }
}
