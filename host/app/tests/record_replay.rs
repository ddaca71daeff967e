//! Record and replay end to end: an entry of the plugins ConfigMap (real apiserver) turns on
//! recording; admission reviews go through the real HTTPS webhook server; `plugin record
//! export` prints them (credentials redacted) and `plugin replay` of a candidate that denies
//! more reports exactly the reviews it would deny.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use odh_model_controller::plugin::NoCluster;
use odh_model_controller::registry::SwapResult;
use odh_model_controller::side_effects::NoSideEffects;
use odh_model_controller::tls::TlsServerConfig;
use odh_model_controller::webhook::{self, WebhookTable};
use odh_test_support::TestContext;
use odh_test_support::{Timing, eventually};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const REVIEWS: usize = 30;

fn risky(i: usize) -> bool {
    i.is_multiple_of(5)
}

async fn put(t: &TestContext, name: &str, mut cm: ConfigMap) -> anyhow::Result<ConfigMap> {
    cm.metadata.name = Some(name.into());
    let cms: Api<ConfigMap> = Api::namespaced(t.client.clone(), &t.namespace);
    Ok(cms
        .patch(
            name,
            &PatchParams::apply("test").force(),
            &Patch::Apply(&cm),
        )
        .await?)
}

/// Publishes misbehave and writes its entry with `extra` lines.
async fn configure(t: &TestContext, wasm: &[u8], extra: &str) -> anyhow::Result<ConfigMap> {
    let component = ConfigMap {
        binary_data: Some(BTreeMap::from([(
            "plugin.wasm".to_string(),
            ByteString(wasm.to_vec()),
        )])),
        ..Default::default()
    };
    put(t, "misbehave-plugin", component).await?;
    let text = format!(
        "plugins:\n  misbehave:\n    source: configmap://misbehave-plugin/plugin.wasm\n    sha256: {}\n{extra}",
        common::sha(wasm)
    );
    let cm = ConfigMap {
        data: Some(BTreeMap::from([("plugins.yaml".to_string(), text)])),
        ..Default::default()
    };
    put(t, "odh-model-controller-plugins", cm).await
}

fn review(i: usize) -> Value {
    let mut data = json!({"n": i.to_string()});
    if risky(i) {
        data["risky"] = json!("yes");
    }
    let mut review = common::config_map_review(&format!("u-{i}"), &format!("cm-{i}"), data);
    review["request"]["object"]["metadata"]["annotations"] =
        json!({"example.com/api-token": "s3cr3t-token", "team": "ml"});
    review["request"]["userInfo"]["extra"] = json!({"credential-id": ["JTI=s3cr3t-id"]});
    review
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_odh-model-controller"))
}

/// `plugin record export --dir <dir> --plugin misbehave`: the lines.
fn export(dir: &Path) -> anyhow::Result<Vec<String>> {
    let out = bin()
        .args([
            "plugin",
            "record",
            "export",
            "--plugin",
            "misbehave",
            "--dir",
        ])
        .arg(dir)
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "export: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8(out.stdout)?
        .lines()
        .map(str::to_string)
        .collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_admissions_replay_against_a_candidate_with_exactly_its_changes()
-> anyhow::Result<()> {
    let t = TestContext::new("record-replay").await?;
    let (engine, slot, wasm) = common::misbehave_slot()?;
    let records = std::env::temp_dir().join(format!("odh-records-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&records);
    let registry = common::registry(&t, engine, &slot).with_record_dir(Some(records.clone()));

    let config = configure(&t, &wasm, "    record: {sampleRate: 1, maxEntries: 1000}\n").await?;
    let results = registry
        .apply_configmap(Some(&config))
        .await
        .map_err(anyhow::Error::msg)?;
    assert!(
        matches!(results["misbehave"], SwapResult::Swapped(_)),
        "{results:?}"
    );
    assert!(slot.recorder().is_some(), "the entry turned recording on");

    let shutdown = CancellationToken::new();
    let (cert_dir, ca) = odh_test_support::net::serving_cert("record-replay");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let table = WebhookTable::from_slots(std::slice::from_ref(&slot))?;
    let router = webhook::webhook_router(&table, Arc::new(NoCluster), Arc::new(NoSideEffects));
    let server = tokio::spawn(odh_model_controller::tls::serve_on(
        listener,
        TlsServerConfig {
            bind: addr,
            cert_dir: cert_dir.clone(),
            ..Default::default()
        },
        router,
        shutdown.clone().cancelled_owned(),
    ));
    let mut client = eventually("the webhook server answers", Timing::default(), || {
        odh_test_support::net::Client::connect(addr, &ca)
    })
    .await?;
    for i in 0..REVIEWS {
        let (status, answer) = client.post("/validate-misbehave", &review(i)).await?;
        assert_eq!(status, 200);
        assert_eq!(answer["response"]["allowed"], true, "stable allows all");
    }

    // Lines reach the files within a flush period.
    let lines = eventually("every review is recorded", Timing::default(), || {
        let records = records.clone();
        async move {
            let lines = export(&records)?;
            anyhow::ensure!(lines.len() >= REVIEWS, "{} lines", lines.len());
            Ok(lines)
        }
    })
    .await?;
    assert_eq!(lines.len(), REVIEWS, "one line per review");
    let text = lines.join("\n");
    assert!(
        !text.contains("s3cr3t"),
        "a credential annotation or user extra leaked: {}",
        lines[0]
    );
    let first: Value = serde_json::from_str(&lines[0])?;
    assert_eq!(first["kind"], "admission");
    assert_eq!(first["plugin"]["name"], "misbehave");
    assert_eq!(first["plugin"]["sha256"], common::sha(&wasm));
    assert_eq!(first["input"]["webhook"], "validating");
    assert_eq!(
        first["input"]["object"]["metadata"]["annotations"]["team"],
        "ml"
    );
    assert_eq!(first["answer"]["ok"]["allowed"], true);

    let dir = std::env::temp_dir().join(format!("odh-replay-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let record: PathBuf = dir.join("record.jsonl");
    std::fs::write(&record, text + "\n")?;
    let settings = dir.join("settings.json");
    std::fs::write(&settings, r#"{"denyKey": "risky"}"#)?;
    let out = bin()
        .args(["plugin", "replay"])
        .arg(odh_test_support::plugin_wasm("misbehave")?)
        .arg("--against")
        .arg(&record)
        .arg("--settings")
        .arg(&settings)
        .args(["--max-changed", "5"])
        .output()?;
    let report: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(
        out.status.code(),
        Some(3),
        "6 changes are past 5: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let denied: Vec<&str> = report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["change"] == "allowedToDenied")
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = (0..REVIEWS)
        .filter(|i| risky(*i))
        .map(|i| format!("cm-{i}"))
        .collect();
    assert_eq!(denied, expected);
    assert_eq!(report["changed"], expected.len());
    assert_eq!(report["replayed"], REVIEWS);

    // A replay gate on the entry: the candidate (denying `risky`) is replayed against the
    // record the serving version holds; 6 changes are past 5, so it is refused and the
    // stable version keeps serving, the status saying why; within the bound it serves.
    let stable = slot.current();
    let gated = |bound: &str| {
        format!(
            "    record: {{sampleRate: 1, maxEntries: 1000}}\n    settings: {{denyKey: risky}}\n    replayGate: {{{bound}}}\n"
        )
    };
    let config = configure(&t, &wasm, &gated("maxChanged: 5")).await?;
    let results = registry
        .apply_configmap(Some(&config))
        .await
        .map_err(anyhow::Error::msg)?;
    let SwapResult::Rejected(message) = &results["misbehave"] else {
        panic!("refused past the gate: {results:?}");
    };
    assert!(
        message.contains("replayGate refused") && message.contains("6 changed"),
        "{message}"
    );
    assert!(
        slot.current().same_as(&stable),
        "the stable version still serves"
    );
    let cms: Api<ConfigMap> = Api::namespaced(t.client.clone(), &t.namespace);
    let status = cms
        .get(odh_model_controller::registry::STATUS_CONFIGMAP_NAME)
        .await?;
    let entry = &status.data.unwrap_or_default()["misbehave"];
    assert!(entry.contains("replayGate refused"), "{entry}");
    let config = configure(&t, &wasm, &gated("maxChanged: 6")).await?;
    let results = registry
        .apply_configmap(Some(&config))
        .await
        .map_err(anyhow::Error::msg)?;
    assert!(
        matches!(results["misbehave"], SwapResult::Swapped(_)),
        "within the gate: {results:?}"
    );
    let (_, answer) = client.post("/validate-misbehave", &review(0)).await?;
    assert_eq!(answer["response"]["allowed"], false, "the candidate serves");

    // Without `record` the entry turns recording off again.
    let config = configure(&t, &wasm, "").await?;
    registry
        .apply_configmap(Some(&config))
        .await
        .map_err(anyhow::Error::msg)?;
    assert!(slot.recorder().is_none(), "recording is off");

    shutdown.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(15), server).await;
    odh_test_support::net::remove_dir(&cert_dir);
    let _ = std::fs::remove_dir_all(&records);
    Ok(())
}
