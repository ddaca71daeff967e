//! Replaying recorded calls against a candidate version (`plugin replay`, and the registry's
//! replay gate): each call is made offline (read-only: reads come from what the record says
//! the plugin read, outgoing HTTP is limited to GET and HEAD), its answer compared with the
//! recorded one, and the differences counted and listed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{
    AdmissionRecord, Answer, RecordLine, RecordedCall, RecordedError, redact_decision,
    redact_outcome,
};
use crate::shadow_report::describe;
use crate::wire::{AdmissionDecision, Operation, Outcome, patch_for};
use crate::{CallEnv, LoadedPlugin, MemoryCluster, ReconcileInput};

/// The most changes the report lists one by one; all are counted.
const MAX_LISTED: usize = 100;

/// When a replay fails: more changed answers than either bound allows.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Thresholds {
    pub max_changed: Option<u64>,
    pub max_changed_ratio: Option<f64>,
}

/// The report, a one-paragraph summary, and whether the thresholds hold.
pub struct Replay {
    pub report: Value,
    pub summary: String,
    pub passed: bool,
    /// Recorded calls of the candidate's plugin replayed.
    pub replayed: u64,
    pub changed: u64,
}

#[derive(Default)]
pub struct Tally {
    replayed: u64,
    skipped_other_plugin: u64,
    changed: u64,
    admission_calls: u64,
    allowed_to_denied: u64,
    denied_to_allowed: u64,
    patches_changed: u64,
    other_admission_changed: u64,
    reconcile_calls: u64,
    outcomes_changed: u64,
    candidate_errors: std::collections::BTreeMap<String, u64>,
    new_errors: u64,
    fixed_errors: u64,
    candidate_latency: Vec<Duration>,
    recorded_latency: Vec<Duration>,
    changes: Vec<Value>,
}

/// What differed on one call, if anything.
enum Change {
    AllowedToDenied,
    DeniedToAllowed,
    Patch,
    Admission,
    Outcome,
    NewError,
    FixedError,
    OtherError,
}

impl Change {
    fn name(&self) -> &'static str {
        match self {
            Self::AllowedToDenied => "allowedToDenied",
            Self::DeniedToAllowed => "deniedToAllowed",
            Self::Patch => "patch",
            Self::Admission => "admission",
            Self::Outcome => "outcome",
            Self::NewError => "newError",
            Self::FixedError => "fixedError",
            Self::OtherError => "otherError",
        }
    }
}

/// Replays every line of `lines` (numbered as in their source) that `candidate`'s plugin
/// recorded; an error names the line whose read objects do not make a cluster.
pub fn replay_lines(
    candidate: &LoadedPlugin,
    lines: &[(usize, RecordLine)],
) -> Result<Tally, String> {
    let mut tally = Tally::default();
    for (number, line) in lines {
        if line.plugin.name != candidate.name() {
            tally.skipped_other_plugin += 1;
            continue;
        }
        let env = CallEnv::read_only(Arc::new(
            cluster_of(line.reads()).map_err(|e| format!("line {number}: a read object: {e}"))?,
        ));
        tally.replayed += 1;
        tally
            .recorded_latency
            .push(Duration::from_micros(line.latency_micros));
        let started = Instant::now();
        let change = match &line.call {
            RecordedCall::Admission { input, answer } => {
                tally.admission_calls += 1;
                let uid = format!("replay-{number}");
                let result = candidate.admit_blocking(input.webhook, &input.to_input(uid), &env);
                tally.candidate_latency.push(started.elapsed());
                let result = result.map_err(|e| RecordedError::of(&e));
                compare_admission(&mut tally, input, answer, &result)
            }
            RecordedCall::Reconcile { input, answer } => {
                tally.reconcile_calls += 1;
                let call: ReconcileInput = input.to_input();
                let result = candidate.reconcile_blocking(&call, &env);
                tally.candidate_latency.push(started.elapsed());
                let result = result.map_err(|e| RecordedError::of(&e));
                compare_outcome(&mut tally, answer, &result)
            }
        };
        if let Some((change, difference, message)) = change {
            tally.changed += 1;
            if tally.changes.len() < MAX_LISTED {
                let operation = match &line.call {
                    RecordedCall::Admission { input, .. } => Some(op_name(input.operation)),
                    RecordedCall::Reconcile { .. } => None,
                };
                tally.changes.push(json!({
                    "line": number,
                    "kind": kind_of(line),
                    "namespace": line.namespace(),
                    "name": line.name(),
                    "operation": operation,
                    "change": change.name(),
                    "candidateMessage": message,
                    "difference": difference,
                }));
            }
        }
    }
    Ok(tally)
}

fn kind_of(line: &RecordLine) -> &'static str {
    match line.call {
        RecordedCall::Admission { .. } => "admission",
        RecordedCall::Reconcile { .. } => "reconcile",
    }
}

fn op_name(op: Operation) -> &'static str {
    match op {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
        Operation::Connect => "CONNECT",
    }
}

fn cluster_of(reads: &[Value]) -> anyhow::Result<MemoryCluster> {
    let mut cluster = MemoryCluster::default();
    for object in reads {
        cluster.insert(object.clone())?;
    }
    Ok(cluster)
}

/// A decision as compared: redacted as the recorder redacts, the patch the host would send in
/// place of the mutated object.
fn comparable_decision(input: &AdmissionRecord, decision: &AdmissionDecision) -> Value {
    let mut d = redact_decision(decision, input.is_secret());
    d.patch = patch_for(
        d.patch.take(),
        d.mutated.take(),
        (input.operation != Operation::Delete)
            .then_some(input.object.as_ref())
            .flatten(),
    );
    serde_json::to_value(&d).unwrap_or_default()
}

type Changed = Option<(Change, String, Option<String>)>;

/// Counts how the candidate's error differs from the recorded answer, if either failed.
fn compare_errors<T>(
    tally: &mut Tally,
    recorded: &Answer<T>,
    candidate: &Result<T, RecordedError>,
) -> Option<Changed> {
    if let Err(e) = candidate {
        *tally.candidate_errors.entry(e.kind.clone()).or_default() += 1;
    }
    match (recorded, candidate) {
        (Answer::Ok(_), Ok(_)) => None,
        (Answer::Ok(_), Err(e)) => {
            tally.new_errors += 1;
            Some(Some((
                Change::NewError,
                format!(
                    "the recorded version answered, the candidate failed ({})",
                    e.kind
                ),
                Some(e.message.clone()),
            )))
        }
        (Answer::Error(r), Ok(_)) => {
            tally.fixed_errors += 1;
            Some(Some((
                Change::FixedError,
                format!(
                    "the recorded version failed ({}), the candidate answered",
                    r.kind
                ),
                None,
            )))
        }
        (Answer::Error(r), Err(e)) if r.kind == e.kind => Some(None),
        (Answer::Error(r), Err(e)) => Some(Some((
            Change::OtherError,
            format!("both failed, differently: {} → {}", r.kind, e.kind),
            Some(e.message.clone()),
        ))),
    }
}

fn compare_admission(
    tally: &mut Tally,
    input: &AdmissionRecord,
    recorded: &Answer<AdmissionDecision>,
    candidate: &Result<AdmissionDecision, RecordedError>,
) -> Changed {
    if let Some(changed) = compare_errors(tally, recorded, candidate) {
        return changed;
    }
    let (Answer::Ok(recorded), Ok(candidate)) = (recorded, candidate) else {
        unreachable!("compare_errors handles every failure")
    };
    let (r, c) = (
        comparable_decision(input, recorded),
        comparable_decision(input, candidate),
    );
    if r == c {
        return None;
    }
    let difference = describe(&Ok(r.clone()), &Ok(c.clone()));
    let message = candidate.message.clone();
    let change = match (recorded.allowed, candidate.allowed) {
        (true, false) => {
            tally.allowed_to_denied += 1;
            Change::AllowedToDenied
        }
        (false, true) => {
            tally.denied_to_allowed += 1;
            Change::DeniedToAllowed
        }
        _ if r.get("patch") != c.get("patch") => {
            tally.patches_changed += 1;
            Change::Patch
        }
        _ => {
            tally.other_admission_changed += 1;
            Change::Admission
        }
    };
    Some((change, difference, message))
}

fn compare_outcome(
    tally: &mut Tally,
    recorded: &Answer<Outcome>,
    candidate: &Result<Outcome, RecordedError>,
) -> Changed {
    if let Some(changed) = compare_errors(tally, recorded, candidate) {
        return changed;
    }
    let (Answer::Ok(recorded), Ok(candidate)) = (recorded, candidate) else {
        unreachable!("compare_errors handles every failure")
    };
    let as_value = |o: &Outcome| serde_json::to_value(redact_outcome(o)).unwrap_or_default();
    let (r, c) = (as_value(recorded), as_value(candidate));
    if r == c {
        return None;
    }
    tally.outcomes_changed += 1;
    Some((Change::Outcome, describe(&Ok(r), &Ok(c)), None))
}

/// The `q` quantile (nearest rank) in microseconds; 0 when there are none.
fn quantile(sorted: &[Duration], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    u64::try_from(sorted[rank - 1].as_micros()).unwrap_or(u64::MAX)
}

/// The report of a replay of `record` (what the report names as its source) by `candidate`.
pub fn report(
    candidate: &LoadedPlugin,
    record: Value,
    mut t: Tally,
    thresholds: Thresholds,
) -> Replay {
    t.candidate_latency.sort();
    t.recorded_latency.sort();
    let ratio = if t.replayed == 0 {
        0.0
    } else {
        t.changed as f64 / t.replayed as f64
    };
    let past_count = thresholds.max_changed.is_some_and(|n| t.changed > n);
    let past_ratio = thresholds.max_changed_ratio.is_some_and(|r| ratio > r);
    let passed = !past_count && !past_ratio;
    let latency = |v: &[Duration]| {
        json!({"p50": quantile(v, 0.5), "p99": quantile(v, 0.99),
               "max": v.last().map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX)).unwrap_or(0)})
    };
    let candidate_errors: u64 = t.candidate_errors.values().sum();
    let report = json!({
        "candidate": {
            "name": candidate.name(),
            "sha256": candidate.sha256(),
            "source": candidate.source().to_string(),
        },
        "record": record,
        "replayed": t.replayed,
        "skippedOtherPlugin": t.skipped_other_plugin,
        "changed": t.changed,
        "changedRatio": ratio,
        "admission": {
            "calls": t.admission_calls,
            "allowedToDenied": t.allowed_to_denied,
            "deniedToAllowed": t.denied_to_allowed,
            "patchesChanged": t.patches_changed,
            "otherChanged": t.other_admission_changed,
        },
        "reconcile": {
            "calls": t.reconcile_calls,
            "outcomesChanged": t.outcomes_changed,
        },
        "errors": {
            "candidate": candidate_errors,
            "byKind": t.candidate_errors,
            "new": t.new_errors,
            "fixed": t.fixed_errors,
        },
        "latencyMicros": {
            "candidate": latency(&t.candidate_latency),
            "recorded": latency(&t.recorded_latency),
        },
        "threshold": {
            "maxChanged": thresholds.max_changed,
            "maxChangedRatio": thresholds.max_changed_ratio,
            "passed": passed,
        },
        "changes": t.changes,
        "changesListed": t.changes.len(),
    });
    let verdict = match (thresholds.max_changed, thresholds.max_changed_ratio) {
        (None, None) => "no threshold".to_string(),
        _ if passed => "within the threshold".to_string(),
        _ => "PAST THE THRESHOLD".to_string(),
    };
    let summary = format!(
        "replayed {} calls ({} admission, {} reconcile) against {} {}: {} changed ({:.1}%): \
         {} allowed→denied, {} denied→allowed, {} patches, {} other admission answers, \
         {} reconcile outcomes, {} new errors, {} fixed; candidate latency p50 {}µs p99 {}µs; {}",
        t.replayed,
        t.admission_calls,
        t.reconcile_calls,
        candidate.name(),
        &candidate.sha256()[..12.min(candidate.sha256().len())],
        t.changed,
        ratio * 100.0,
        t.allowed_to_denied,
        t.denied_to_allowed,
        t.patches_changed,
        t.other_admission_changed,
        t.outcomes_changed,
        t.new_errors,
        t.fixed_errors,
        quantile(&t.candidate_latency, 0.5),
        quantile(&t.candidate_latency, 0.99),
        verdict
    );
    Replay {
        report,
        summary,
        passed,
        replayed: t.replayed,
        changed: t.changed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_take_the_nearest_rank() {
        let v: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        assert_eq!(quantile(&v, 0.5), 50);
        assert_eq!(quantile(&v, 0.99), 99);
        assert_eq!(quantile(&[], 0.5), 0);
        assert_eq!(quantile(&v[..1], 0.99), 1);
    }
}
