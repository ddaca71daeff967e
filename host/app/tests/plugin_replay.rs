//! `odh-model-controller plugin replay` as docs/plugin-authors.md describes it: a record of real
//! calls (made here by the stable version, in the recorder's own line format), a candidate
//! that decides differently, and exactly the known changes in the report and the exit status.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Instant;

use odh_model_controller::gvk::Gvk;
use odh_model_controller::plugin::record::RecordLine;
use odh_model_controller::plugin::wire::{Operation, RawJson, RequestKey, WebhookType};
use odh_model_controller::plugin::{
    AdmissionInput, CallEnv, EngineOptions, LoadRequest, LoadedPlugin, MemoryCluster, PluginEngine,
    ReconcileInput, Source,
};
use serde_json::{Value, json};

/// ConfigMaps `cm-<i>`; every fifth holds the key `risky`.
const OBJECTS: usize = 40;

fn risky(i: usize) -> bool {
    i.is_multiple_of(5)
}

fn misbehave() -> PathBuf {
    odh_test_support::plugin_wasm("misbehave").unwrap()
}

fn load(settings: Value) -> LoadedPlugin {
    let path = misbehave();
    let bytes = std::fs::read(&path).unwrap();
    let engine = PluginEngine::new(EngineOptions::default()).unwrap();
    LoadedPlugin::load(
        &engine,
        LoadRequest::new(Source::File(path), &bytes).settings(settings),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn config_map(i: usize) -> Value {
    let mut data = json!({"n": i.to_string()});
    if risky(i) {
        data["risky"] = json!("yes");
    }
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": format!("cm-{i}"), "namespace": "replay",
                        "labels": {"odh-test/misbehave": "true"}},
           "data": data})
}

fn admission(kind: WebhookType, object: &Value) -> AdmissionInput {
    let path = match kind {
        WebhookType::Mutating => "/mutate-misbehave",
        WebhookType::Validating => "/validate-misbehave",
    };
    AdmissionInput {
        uid: "u".into(),
        path: path.into(),
        gvk: Gvk::new("", "v1", "ConfigMap"),
        resource: "configmaps".into(),
        sub_resource: None,
        operation: Operation::Create,
        namespace: Some("replay".into()),
        name: object["metadata"]["name"].as_str().map(str::to_string),
        object: Some(RawJson::from_value(object)),
        old_object: None,
        dry_run: false,
        user_info: RawJson::from(json!({"username": "alice", "extra": {"k": ["v"]}})),
    }
}

/// What `stable` answers to a validate and a mutate of every ConfigMap and to four reconciles
/// that read a ConfigMap, as record lines.
fn record(stable: &LoadedPlugin, dir: &Path) -> PathBuf {
    let env = CallEnv::read_only(Arc::new(MemoryCluster::default()));
    let mut lines = Vec::new();
    for i in 0..OBJECTS {
        for kind in [WebhookType::Validating, WebhookType::Mutating] {
            let input = admission(kind, &config_map(i));
            let started = Instant::now();
            let answer = stable.admit_blocking(kind, &input, &env);
            lines.push(RecordLine::admission(
                stable,
                kind,
                &input,
                vec![],
                &answer,
                started.elapsed(),
            ));
        }
    }
    let target = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "target", "namespace": "replay"}});
    let mut cluster = MemoryCluster::default();
    cluster.insert(target.clone()).unwrap();
    let reads_env = CallEnv::read_only(Arc::new(cluster));
    for i in 0..4 {
        let primary = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("reader-{i}"), "namespace": "replay"},
            "data": {"behaviour": "read-granted", "target": "target"}});
        let input = ReconcileInput {
            controller: "misbehave".into(),
            key: RequestKey {
                namespace: Some("replay".into()),
                name: format!("reader-{i}"),
            },
            object: Some(primary.to_string()),
        };
        let started = Instant::now();
        let answer = stable.reconcile_blocking(&input, &reads_env);
        assert_eq!(
            answer.as_ref().unwrap().status,
            Some(json!({"found": true})),
            "the recorded reconcile read the target"
        );
        lines.push(RecordLine::reconcile(
            stable,
            &input,
            vec![target.clone()],
            &answer,
            started.elapsed(),
        ));
    }
    let path = dir.join("record.jsonl");
    let text: String = lines
        .iter()
        .map(|l| serde_json::to_string(l).unwrap() + "\n")
        .collect();
    std::fs::write(&path, text).unwrap();
    path
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("odh-replay-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `plugin replay misbehave.wasm --against record --settings <settings> <extra>`: exit status,
/// report, stderr.
fn replay(dir: &Path, record: &Path, settings: Value, extra: &[&str]) -> (i32, Value, String) {
    let settings_file = dir.join("settings.json");
    std::fs::write(&settings_file, settings.to_string()).unwrap();
    let Output {
        status,
        stdout,
        stderr,
    } = Command::new(env!("CARGO_BIN_EXE_odh-model-controller"))
        .args(["plugin", "replay"])
        .arg(misbehave())
        .arg("--against")
        .arg(record)
        .arg("--settings")
        .arg(&settings_file)
        .args(extra)
        .output()
        .unwrap();
    (
        status.code().unwrap_or(-1),
        serde_json::from_slice(&stdout).unwrap_or(Value::Null),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

fn changed_names(report: &Value, change: &str) -> Vec<String> {
    report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["change"] == change)
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect()
}

fn risky_names() -> Vec<String> {
    (0..OBJECTS)
        .filter(|i| risky(*i))
        .map(|i| format!("cm-{i}"))
        .collect()
}

#[test]
fn a_candidate_that_denies_more_is_reported_call_by_call() {
    let dir = tmpdir("deny");
    let record = record(&load(json!({})), &dir);
    let calls = (2 * OBJECTS + 4) as u64;

    let (code, report, err) = replay(&dir, &record, json!({"denyKey": "risky"}), &[]);
    assert_eq!(code, 0, "no threshold, no failure: {err}");
    assert_eq!(report["replayed"], calls, "{report:#}");
    assert_eq!(report["admission"]["calls"], 2 * OBJECTS as u64);
    assert_eq!(report["reconcile"]["calls"], 4);
    let expected = risky_names();
    assert_eq!(
        report["admission"]["allowedToDenied"],
        expected.len() as u64
    );
    assert_eq!(report["admission"]["deniedToAllowed"], 0);
    assert_eq!(report["admission"]["patchesChanged"], 0, "{report:#}");
    assert_eq!(
        report["reconcile"]["outcomesChanged"], 0,
        "replay reads what the record says was read: {report:#}"
    );
    assert_eq!(report["errors"]["candidate"], 0);
    assert_eq!(report["changed"], expected.len() as u64);
    assert_eq!(changed_names(&report, "allowedToDenied"), expected);
    let first = &report["changes"][0];
    assert_eq!(first["operation"], "CREATE");
    assert_eq!(
        first["candidateMessage"],
        r#"misbehave: the key "risky" is denied"#
    );
    assert!(
        first["difference"]
            .as_str()
            .unwrap()
            .contains("/allowed: true → false"),
        "{first}"
    );
    assert!(
        report["latencyMicros"]["candidate"]["p99"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(err.contains("8 allowed→denied"), "{err}");

    // Thresholds: 8 changes of 84 calls.
    let (code, report, err) = replay(
        &dir,
        &record,
        json!({"denyKey": "risky"}),
        &["--max-changed", "7"],
    );
    assert_eq!(code, 3, "past the threshold: {err}");
    assert_eq!(report["threshold"]["passed"], false);
    assert!(err.contains("PAST THE THRESHOLD"), "{err}");
    let (code, _, err) = replay(
        &dir,
        &record,
        json!({"denyKey": "risky"}),
        &["--max-changed", "8"],
    );
    assert_eq!(code, 0, "at the threshold: {err}");
    let (code, _, _) = replay(
        &dir,
        &record,
        json!({"denyKey": "risky"}),
        &["--max-changed-ratio", "0.05"],
    );
    assert_eq!(code, 3, "8/84 is past 5%");
    let (code, _, _) = replay(
        &dir,
        &record,
        json!({"denyKey": "risky"}),
        &["--max-changed-ratio", "0.1"],
    );
    assert_eq!(code, 0, "8/84 is within 10%");
}

#[test]
fn the_other_direction_and_patches_are_counted_apart() {
    let dir = tmpdir("directions");
    let record = record(&load(json!({"denyKey": "risky"})), &dir);
    let (code, report, err) = replay(&dir, &record, json!({}), &["--max-changed", "0"]);
    assert_eq!(code, 3, "{err}");
    assert_eq!(report["admission"]["allowedToDenied"], 0);
    assert_eq!(changed_names(&report, "deniedToAllowed"), risky_names());

    let (code, report, err) = replay(
        &dir,
        &record,
        json!({"denyKey": "risky", "okLabel": "x"}),
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(report["admission"]["allowedToDenied"], 0);
    assert_eq!(report["admission"]["deniedToAllowed"], 0);
    assert_eq!(
        report["admission"]["patchesChanged"], OBJECTS as u64,
        "every mutation's label value changed: {report:#}"
    );

    let (code, report, err) = replay(
        &dir,
        &record,
        json!({"denyKey": "risky"}),
        &["--max-changed", "0"],
    );
    assert_eq!(
        code, 0,
        "the recorded version itself changes nothing: {err}"
    );
    assert_eq!(report["changed"], 0);
}

#[test]
fn a_bad_record_is_refused_before_anything_runs() {
    let dir = tmpdir("bad");
    let record = record(&load(json!({})), &dir);
    let mut text = std::fs::read_to_string(&record).unwrap();
    text.push_str("{\"format\": 1, \"kind\": \"admission\"}\n");
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, text).unwrap();
    let (code, report, err) = replay(&dir, &bad, json!({}), &[]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(report, Value::Null, "no half report");
    assert!(
        err.contains(&format!("bad.jsonl:{}", 2 * OBJECTS + 5)),
        "the line is named: {err}"
    );
    let (code, _, err) = replay(&dir, &dir.join("absent.jsonl"), json!({}), &[]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = replay(&dir, &record, json!({"unknown": 1}), &[]);
    assert_eq!(code, 1, "the candidate refuses its settings: {err}");
}
