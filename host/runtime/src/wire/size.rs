//! What a plugin returns is bounded: bytes of plugin-produced text and entries per answer.

use crate::bindings::{admission_types as adm, reconcile_types as rt, types};

/// Bytes of plugin-produced text in a value, for the output size cap.
pub trait OutputSize {
    fn output_size(&self) -> usize;

    /// How many list entries (objects, deletions, events, keys, warnings) the output holds.
    /// Bounded apart from the bytes: a million empty entries are small but are each a write or
    /// a reconcile.
    fn entries(&self) -> usize {
        0
    }

    /// The most entries one output may hold.
    const MAX_ENTRIES: usize = usize::MAX;
}

/// The most objects, deletions and events one outcome (or side effects and warnings one
/// admission decision) may hold: far above any real plugin's (the largest built-in outcome has
/// a few dozen), far below what would flood the API server.
pub const MAX_OUTCOME_ENTRIES: usize = 10_000;

/// The most primary keys one `map` call may return: every InferenceService of a very large
/// cluster, affected by one shared object, fits.
pub const MAX_MAPPED_KEYS: usize = 100_000;

fn key_size(k: &types::ObjectKey) -> usize {
    k.name.len()
        + k.namespace.as_ref().map_or(0, String::len)
        + k.gvk.kind.len()
        + k.gvk.group.len()
}

impl OutputSize for rt::Outcome {
    fn output_size(&self) -> usize {
        self.apply.iter().map(|d| d.object.len()).sum::<usize>()
            + self.delete.iter().map(key_size).sum::<usize>()
            + self.status.as_ref().map_or(0, String::len)
            + self
                .events
                .iter()
                .map(|e| {
                    e.reason.len() + e.message.len() + e.regarding.as_ref().map_or(0, key_size)
                })
                .sum::<usize>()
            + self.primary_metadata.as_ref().map_or(0, String::len)
            + self.error.as_ref().map_or(0, |e| match e {
                types::Error::Invalid(m)
                | types::Error::Denied(m)
                | types::Error::Transient(m)
                | types::Error::Internal(m) => m.len(),
            })
    }

    fn entries(&self) -> usize {
        self.apply.len() + self.delete.len() + self.events.len()
    }

    const MAX_ENTRIES: usize = MAX_OUTCOME_ENTRIES;
}

impl OutputSize for adm::AdmissionDecision {
    fn output_size(&self) -> usize {
        self.message.as_ref().map_or(0, String::len)
            + self.mutated.as_ref().map_or(0, String::len)
            + self.patch.as_ref().map_or(0, String::len)
            + self.warnings.iter().map(String::len).sum::<usize>()
            + self
                .side_effects
                .iter()
                .map(|d| d.object.len())
                .sum::<usize>()
    }

    fn entries(&self) -> usize {
        self.side_effects.len() + self.warnings.len()
    }

    const MAX_ENTRIES: usize = MAX_OUTCOME_ENTRIES;
}

impl OutputSize for Vec<types::RequestKey> {
    fn output_size(&self) -> usize {
        self.iter()
            .map(|k| k.name.len() + k.namespace.as_ref().map_or(0, String::len))
            .sum()
    }

    fn entries(&self) -> usize {
        self.len()
    }

    const MAX_ENTRIES: usize = MAX_MAPPED_KEYS;
}

impl OutputSize for () {
    fn output_size(&self) -> usize {
        0
    }
}
