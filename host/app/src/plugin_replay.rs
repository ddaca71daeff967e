//! `odh-model-controller plugin replay CANDIDATE --against RECORD.jsonl`: calls a candidate
//! version offline, as `plugin eval` does (read-only: reads come from what the record says the
//! plugin read, outgoing HTTP is limited to GET and HEAD), on every recorded call, and compares
//! its answers with the recorded ones. The report is JSON on stdout, a summary on stderr; past a
//! threshold the exit status is [`EXIT_PAST_THRESHOLD`], so CI can gate a release on it.

use std::io::BufRead;
use std::path::PathBuf;

use serde_json::json;

use crate::plugin::record::RecordLine;
pub use crate::plugin::record::replay::Replay;
use crate::plugin::record::replay::{Thresholds, replay_lines, report};
use crate::plugin_cli::{EvalError, load, read_one};

/// Exit status when the candidate changed more answers than the thresholds allow (1: the
/// candidate failed to load; 2: bad arguments or record).
pub const EXIT_PAST_THRESHOLD: u8 = 3;

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
    let tally = replay_lines(&candidate, &lines)
        .map_err(|e| usage(anyhow::anyhow!("{}: {e}", args.against.display())))?;
    let mut replay = report(
        &candidate,
        json!(args.against),
        tally,
        Thresholds {
            max_changed: args.max_changed,
            max_changed_ratio: args.max_changed_ratio,
        },
    );
    if !replay.passed {
        replay
            .summary
            .push_str(&format!(" (exit {EXIT_PAST_THRESHOLD})"));
    }
    Ok(replay)
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
    fn a_ratio_is_between_zero_and_one() {
        assert_eq!(ratio("0.05"), Ok(0.05));
        assert!(ratio("1.5").is_err() && ratio("-0.1").is_err() && ratio("x").is_err());
    }
}
