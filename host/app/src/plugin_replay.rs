//! `odh-model-controller plugin replay CANDIDATE --against RECORD.jsonl`: calls a candidate
//! version offline, as `plugin eval` does (read-only: reads come from what the record says the
//! plugin read, outgoing HTTP is limited to GET and HEAD), on every recorded call, and compares
//! its answers with the recorded ones. The report is JSON on stdout, a summary on stderr; past a
//! threshold the exit status is [`EXIT_PAST_THRESHOLD`], so CI can gate a release on it.

use std::io::BufRead;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::plugin::record::{
    AdmissionRecord, Answer, RecordLine, RecordedCall, RecordedError, redact_decision,
    redact_outcome,
};
use crate::plugin::shadow_report::describe;
use crate::plugin::wire::{AdmissionDecision, Operation, Outcome};
use crate::plugin::{CallEnv, LoadedPlugin, MemoryCluster, ReconcileInput};
use crate::plugin_cli::{EvalError, load, read_one};
use crate::webhook::verdict::patch_for;

/// Exit status when the candidate changed more answers than the thresholds allow (1: the
/// candidate failed to load; 2: bad arguments or record).
pub const EXIT_PAST_THRESHOLD: u8 = 3;

/// The most changes the report lists one by one; all are counted.
const MAX_LISTED: usize = 100;

#[derive(Debug, Clone, clap::Args)]
pub struct ReplayArgs {
    /// The candidate: a component file (`.wasm`) or the name of a built-in plugin.
    pub candidate: String,
    /// The record: JSON lines as `plugin record export` writes them.
    #[arg(long, value_name = "RECORD.jsonl")]
    pub against: PathBuf,
    /// The candidate's settings, YAML or JSON (default `{}`).
    #[arg(long)]
    pub settings: Option<PathBuf>,
    /// Fail (exit 3) when more than N recorded calls are answered differently.
    #[arg(long, value_name = "N")]
    pub max_changed: Option<u64>,
    /// Fail (exit 3) when more than this share (0 to 1) of the calls are answered differently.
    #[arg(long, value_name = "R", value_parser = ratio)]
    pub max_changed_ratio: Option<f64>,
}

fn ratio(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
        _ => Err(format!("{s:?} is not a ratio between 0 and 1")),
    }
}

/// The report, a one-paragraph summary, and whether the thresholds hold.
pub struct Replay {
    pub report: Value,
    pub summary: String,
    pub passed: bool,
}

#[derive(Default)]
struct Tally {
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

fn usage(e: impl Into<anyhow::Error>) -> EvalError {
    EvalError::Usage(e.into())
}

pub fn replay(args: &ReplayArgs) -> Result<Replay, EvalError> {
    let settings = match &args.settings {
        Some(p) => read_one(p).map_err(usage)?,
        None => json!({}),
    };
    let file = std::fs::File::open(&args.against)
        .map_err(|e| usage(anyhow::anyhow!("reading {}: {e}", args.against.display())))?;
    // The whole record is read and checked before the candidate runs: a bad line is an error
    // of the record, not half a report.
    let mut lines = Vec::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line =
            line.map_err(|e| usage(anyhow::anyhow!("reading {}: {e}", args.against.display())))?;
        if line.trim().is_empty() {
            continue;
        }
        let parsed = RecordLine::parse(&line).map_err(|e| {
            usage(anyhow::anyhow!(
                "{}:{}: not a record line: {e}",
                args.against.display(),
                i + 1
            ))
        })?;
        lines.push((i + 1, parsed));
    }
    let candidate = load(&args.candidate, Some(settings))?;
    let mut tally = Tally::default();
    for (number, line) in &lines {
        if line.plugin.name != candidate.name() {
            tally.skipped_other_plugin += 1;
            continue;
        }
        let env = CallEnv::read_only(Arc::new(cluster_of(line.reads()).map_err(|e| {
            usage(anyhow::anyhow!(
                "{}:{number}: a read object: {e}",
                args.against.display()
            ))
        })?));
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
    Ok(report(args, &candidate, tally))
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

fn report(args: &ReplayArgs, candidate: &LoadedPlugin, mut t: Tally) -> Replay {
    t.candidate_latency.sort();
    t.recorded_latency.sort();
    let ratio = if t.replayed == 0 {
        0.0
    } else {
        t.changed as f64 / t.replayed as f64
    };
    let past_count = args.max_changed.is_some_and(|n| t.changed > n);
    let past_ratio = args.max_changed_ratio.is_some_and(|r| ratio > r);
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
        "record": args.against,
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
            "maxChanged": args.max_changed,
            "maxChangedRatio": args.max_changed_ratio,
            "passed": passed,
        },
        "changes": t.changes,
        "changesListed": t.changes.len(),
    });
    let verdict = match (args.max_changed, args.max_changed_ratio) {
        (None, None) => "no threshold".to_string(),
        _ if passed => "within the threshold".to_string(),
        _ => format!("PAST THE THRESHOLD (exit {EXIT_PAST_THRESHOLD})"),
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
    }
}

/// Runs `plugin replay`: the report on stdout, the summary on stderr, the exit status.
pub fn main(args: &ReplayArgs) -> std::process::ExitCode {
    match replay(args) {
        Ok(r) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&r.report).expect("JSON values always serialize")
            );
            eprintln!("{}", r.summary);
            if r.passed {
                std::process::ExitCode::SUCCESS
            } else {
                std::process::ExitCode::from(EXIT_PAST_THRESHOLD)
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::from(e.exit_code())
        }
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

    #[test]
    fn a_ratio_is_between_zero_and_one() {
        assert_eq!(ratio("0.05"), Ok(0.05));
        assert!(ratio("1.5").is_err() && ratio("-0.1").is_err() && ratio("x").is_err());
    }
}
