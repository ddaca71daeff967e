//! An entry's `replayGate`: before its version serves, the record the serving version keeps
//! (its `record`) is replayed against it offline, as `plugin replay` does, and the version is
//! refused past the gate's bounds. The refusal is the entry's status line and its
//! `PluginRejected` Event, with the replay's summary; a refused version is tried again at the
//! retry ticks (the record grows meanwhile).

use odh_plugin_runtime::record::RecordLine;
use odh_plugin_runtime::record::replay::{replay_lines, report};
use odh_plugin_runtime::{LoadedPlugin, PluginSlot};
use serde_json::json;

use crate::config::ReplayGate;

/// `Ok` with the replay's summary when `candidate` passes `gate` against `serving`'s record.
pub(super) async fn check(
    serving: Option<&PluginSlot>,
    candidate: &LoadedPlugin,
    gate: &ReplayGate,
) -> Result<String, String> {
    let recorder = serving.and_then(PluginSlot::recorder).ok_or_else(|| {
        "replayGate: the serving version keeps no record to replay (give the entry that serves now a `record`, let it record, then change the version)".to_string()
    })?;
    let candidate = candidate.clone();
    let gate = gate.clone();
    let replay = tokio::task::spawn_blocking(move || {
        let lines: Vec<(usize, RecordLine)> = recorder
            .all_lines()
            .iter()
            .enumerate()
            .filter_map(|(i, text)| Some((i + 1, RecordLine::parse(text).ok()?)))
            .collect();
        let tally = replay_lines(&candidate, &lines)?;
        Ok::<_, String>(report(
            &candidate,
            json!("the serving version's record"),
            tally,
            gate.thresholds,
        ))
    })
    .await
    .map_err(|e| format!("replayGate: the replay stopped: {e}"))??;
    let name = candidate_name(&replay.report);
    if replay.replayed < gate.min_replayed {
        return Err(format!(
            "replayGate: the record holds {} calls of {name}, the gate needs {} (let the serving version record longer)",
            replay.replayed, gate.min_replayed
        ));
    }
    if !replay.passed {
        return Err(format!(
            "replayGate refused the version: {}",
            replay.summary
        ));
    }
    tracing::info!(plugin = name, "replayGate passed: {}", replay.summary);
    Ok(replay.summary)
}

fn candidate_name(report: &serde_json::Value) -> String {
    report["candidate"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}
