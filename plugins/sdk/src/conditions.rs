//! Kubernetes status conditions with `meta.SetStatusCondition` semantics.
//!
//! The time is injected (an RFC 3339 string) so the logic is deterministic in tests; [`now`]
//! reads the clock (inside the host: WASI's wall clock, deterministic unless granted).
//!
//! ```
//! use odh_plugin_sdk::conditions::{Condition, set_condition};
//!
//! let mut conditions = Vec::new();
//! let ready = Condition::new("Ready", true).reason("Deployed");
//! assert!(set_condition(&mut conditions, ready.clone(), "2024-05-01T10:00:00Z"));
//! // Same status: lastTransitionTime stays, nothing changed.
//! assert!(!set_condition(&mut conditions, ready, "2024-05-01T11:00:00Z"));
//! assert_eq!(conditions[0].last_transition_time, "2024-05-01T10:00:00Z");
//! ```

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Error;

/// One `status.conditions[]` entry (`metav1.Condition`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// `type`, CamelCase (`Ready`).
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// The `metadata.generation` the condition was set for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// When `status` last changed (RFC 3339); set by [`set_condition`] when empty.
    #[serde(default)]
    pub last_transition_time: String,
    /// CamelCase reason.
    #[serde(default)]
    pub reason: String,
    /// Human-readable message.
    #[serde(default)]
    pub message: String,
}

impl Condition {
    /// A condition with status `True` or `False`.
    pub fn new(type_: &str, status: bool) -> Condition {
        Self::with_status(type_, if status { "True" } else { "False" })
    }

    /// A condition with status `Unknown`.
    pub fn unknown(type_: &str) -> Condition {
        Self::with_status(type_, "Unknown")
    }

    /// A condition with any status string.
    pub fn with_status(type_: &str, status: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            ..Default::default()
        }
    }

    /// Sets the reason.
    pub fn reason(mut self, reason: &str) -> Self {
        self.reason = reason.into();
        self
    }

    /// Sets the message.
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    /// Sets the observed generation.
    pub fn observed_generation(mut self, generation: i64) -> Self {
        self.observed_generation = Some(generation);
        self
    }

    /// Whether the status is `True`.
    pub fn is_true(&self) -> bool {
        self.status == "True"
    }
}

/// Sets `new` in `conditions`: appended when its type is absent; otherwise status, reason,
/// message and observed generation are updated, and `lastTransitionTime` changes only when the
/// status does (to `new.last_transition_time` if set, else `now`). Returns whether anything
/// changed.
pub fn set_condition(conditions: &mut Vec<Condition>, mut new: Condition, now: &str) -> bool {
    let Some(existing) = conditions.iter_mut().find(|c| c.type_ == new.type_) else {
        if new.last_transition_time.is_empty() {
            new.last_transition_time = now.into();
        }
        conditions.push(new);
        return true;
    };
    let mut changed = false;
    if existing.status != new.status {
        existing.status = new.status;
        existing.last_transition_time = if new.last_transition_time.is_empty() {
            now.into()
        } else {
            new.last_transition_time
        };
        changed = true;
    }
    if existing.reason != new.reason {
        existing.reason = new.reason;
        changed = true;
    }
    if existing.message != new.message {
        existing.message = new.message;
        changed = true;
    }
    if existing.observed_generation != new.observed_generation {
        existing.observed_generation = new.observed_generation;
        changed = true;
    }
    changed
}

/// The condition of a type.
pub fn find_condition<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether the condition of a type exists with status `True`.
pub fn is_condition_true(conditions: &[Condition], type_: &str) -> bool {
    find_condition(conditions, type_).is_some_and(Condition::is_true)
}

/// Removes the condition of a type; returns whether it was there.
pub fn remove_condition(conditions: &mut Vec<Condition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_ != type_);
    conditions.len() != before
}

/// The `conditions` of a status object (missing: empty). Malformed entries are
/// [`Error::Invalid`].
pub fn conditions_of(status: &Value) -> Result<Vec<Condition>, Error> {
    match status.get("conditions") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(c) => serde_json::from_value(c.clone())
            .map_err(|e| Error::Invalid(format!("invalid status.conditions: {e}"))),
    }
}

/// [`set_condition`] on the `conditions` array of a status object (made an object if it is
/// not one). Returns whether anything changed.
pub fn set_status_condition(status: &mut Value, new: Condition, now: &str) -> Result<bool, Error> {
    let mut conditions = conditions_of(status)?;
    let changed = set_condition(&mut conditions, new, now);
    if changed {
        if !status.is_object() {
            *status = Value::Object(Default::default());
        }
        status["conditions"] = serde_json::to_value(conditions).expect("conditions serialize");
    }
    Ok(changed)
}

/// The current time as RFC 3339 UTC with second precision (`2024-05-01T10:00:00Z`), as
/// Kubernetes writes `lastTransitionTime`.
pub fn now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339(secs)
}

/// Seconds since the Unix epoch as RFC 3339 UTC (`1970-01-01T00:00:00Z`).
pub fn rfc3339(unix_secs: u64) -> String {
    let days = unix_secs / 86_400;
    let rem = unix_secs % 86_400;
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Howard Hinnant's `civil_from_days`.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const T1: &str = "2024-05-01T10:00:00Z";
    const T2: &str = "2024-05-01T11:00:00Z";

    #[test]
    fn set_semantics() {
        let mut cs = Vec::new();
        assert!(set_condition(
            &mut cs,
            Condition::new("Ready", false).reason("Pending"),
            T1
        ));
        assert_eq!(cs[0].last_transition_time, T1);
        // Reason change only: changed, time kept.
        assert!(set_condition(
            &mut cs,
            Condition::new("Ready", false).reason("Waiting"),
            T2
        ));
        assert_eq!(
            (cs[0].reason.as_str(), cs[0].last_transition_time.as_str()),
            ("Waiting", T1)
        );
        // Identical: unchanged.
        assert!(!set_condition(
            &mut cs,
            Condition::new("Ready", false).reason("Waiting"),
            T2
        ));
        // Status change: time moves.
        assert!(set_condition(
            &mut cs,
            Condition::new("Ready", true).reason("Waiting"),
            T2
        ));
        assert_eq!(cs[0].last_transition_time, T2);
        assert!(is_condition_true(&cs, "Ready"));
        // Explicit transition time wins.
        let mut explicit = Condition::new("Ready", false).reason("Waiting");
        explicit.last_transition_time = "2000-01-01T00:00:00Z".into();
        assert!(set_condition(&mut cs, explicit, T2));
        assert_eq!(cs[0].last_transition_time, "2000-01-01T00:00:00Z");
        // Observed generation counts.
        assert!(set_condition(
            &mut cs,
            Condition::new("Ready", false)
                .reason("Waiting")
                .observed_generation(2),
            T2
        ));
        assert!(set_condition(&mut cs, Condition::unknown("Other"), T2));
        assert_eq!(cs.len(), 2);
        assert!(remove_condition(&mut cs, "Other"));
        assert!(!remove_condition(&mut cs, "Other"));
    }

    #[test]
    fn on_status_json() {
        let mut status = json!({"phase": "x"});
        assert!(set_status_condition(&mut status, Condition::new("Ready", true), T1).unwrap());
        assert!(!set_status_condition(&mut status, Condition::new("Ready", true), T2).unwrap());
        assert_eq!(
            status,
            json!({"phase": "x", "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": T1, "reason": "", "message": ""}]})
        );
        let mut null = Value::Null;
        assert!(set_status_condition(&mut null, Condition::new("A", false), T1).unwrap());
        assert!(conditions_of(&json!({"conditions": 3})).is_err());
    }

    #[test]
    fn time_formatting() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_714_557_600), "2024-05-01T10:00:00Z");
        assert_eq!(rfc3339(4_107_542_399), "2100-02-28T23:59:59Z");
        assert_eq!(now().len(), 20);
    }
}
