//! Swap under load: while admission requests flow at a steady rate through the real HTTPS
//! webhook server, the plugins ConfigMap flips the plugin between two versions 20 times. No
//! request fails, every answer comes from one of the versions, and each new version answers
//! within 1 s of the ConfigMap update.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use odh_model_controller::plugin::{NoCluster, PluginSlot};
use odh_model_controller::registry::SwapResult;
use odh_model_controller::side_effects::NoSideEffects;
use odh_model_controller::tls::TlsServerConfig;
use odh_model_controller::webhook::{self, WebhookTable};
use odh_test_support::TestContext;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

fn review(uid: u64) -> Value {
    common::config_map_review(&format!("u-{uid}"), "x", json!({}))
}

/// The `misbehave/ok` label value an answer sets, from its JSON patch.
fn label_of(answer: &Value) -> Option<String> {
    let patch = base64::engine::general_purpose::STANDARD
        .decode(answer["response"]["patch"].as_str()?)
        .ok()?;
    let ops: Vec<Value> = serde_json::from_slice(&patch).ok()?;
    ops.iter().find_map(|op| {
        let value = &op["value"];
        value
            .get("misbehave/ok")
            .or(Some(value))
            .and_then(Value::as_str)
            .map(str::to_string)
    })
}

/// Server-side applies a ConfigMap named `name` in the test's namespace.
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

/// Publishes the component as `binaryData` of ConfigMap `misbehave-plugin`.
async fn publish(t: &TestContext, wasm: &[u8]) -> anyhow::Result<()> {
    let cm = ConfigMap {
        binary_data: Some(BTreeMap::from([(
            "plugin.wasm".to_string(),
            ByteString(wasm.to_vec()),
        )])),
        ..Default::default()
    };
    put(t, "misbehave-plugin", cm).await.map(|_| ())
}

/// Writes the plugins ConfigMap with one misbehave entry (`extra` lines appended to it).
async fn configure(t: &TestContext, wasm: &[u8], extra: &str) -> anyhow::Result<ConfigMap> {
    let text = format!(
        "plugins:\n  misbehave:\n    source: configmap://misbehave-plugin/plugin.wasm\n    sha256: {}\n{extra}",
        hex::encode(Sha256::digest(wasm))
    );
    let cm = ConfigMap {
        data: Some(BTreeMap::from([("plugins.yaml".to_string(), text)])),
        ..Default::default()
    };
    put(t, "odh-model-controller-plugins", cm).await
}

/// The webhook HTTPS server for `slot` on a free loopback port, until `shutdown`.
struct Server {
    addr: std::net::SocketAddr,
    ca: rustls::pki_types::CertificateDer<'static>,
    cert_dir: std::path::PathBuf,
    handle: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Server {
    async fn start(slot: &PluginSlot, shutdown: &CancellationToken) -> anyhow::Result<Self> {
        let (cert_dir, ca) = odh_test_support::net::serving_cert("registry-swap");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let table = WebhookTable::from_slots(std::slice::from_ref(slot))?;
        let router = webhook::webhook_router(&table, Arc::new(NoCluster), Arc::new(NoSideEffects));
        let config = TlsServerConfig {
            bind: addr,
            cert_dir: cert_dir.clone(),
            ..Default::default()
        };
        let handle = tokio::spawn(odh_model_controller::tls::serve_on(
            listener,
            config,
            router,
            shutdown.clone().cancelled_owned(),
        ));
        Ok(Self {
            addr,
            ca,
            cert_dir,
            handle,
        })
    }

    async fn stop(self, shutdown: &CancellationToken) {
        shutdown.cancel();
        let _ = self.handle.await;
        odh_test_support::net::remove_dir(&self.cert_dir);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swaps_under_load_lose_no_request() -> anyhow::Result<()> {
    let t = TestContext::new("swap-load").await?;
    let (engine, slot, wasm) = common::misbehave_slot()?;
    publish(&t, &wasm).await?;
    let shutdown = CancellationToken::new();
    let registry = common::registry(&t, engine, &slot);
    tokio::spawn(Arc::new(registry).run(Duration::from_secs(30), shutdown.clone()));
    let server = Server::start(&slot, &shutdown).await?;

    // Load: 4 keep-alive connections, one request every 2 ms each.
    let last: Arc<Mutex<Option<(Instant, String)>>> = Arc::default();
    let answers: Arc<Mutex<BTreeMap<String, u64>>> = Arc::default();
    let failures: Arc<Mutex<Vec<String>>> = Arc::default();
    let stop_load = CancellationToken::new();
    let mut load = tokio::task::JoinSet::new();
    for worker in 0..4u64 {
        let (last, answers, failures) = (last.clone(), answers.clone(), failures.clone());
        let (stop, ca, addr) = (stop_load.clone(), server.ca.clone(), server.addr);
        load.spawn(async move {
            let mut client = odh_test_support::net::Client::connect(addr, &ca)
                .await
                .expect("connect");
            let mut n = 0u64;
            while !stop.is_cancelled() {
                n += 1;
                match client
                    .post("/mutate-misbehave", &review(worker * 1_000_000 + n))
                    .await
                {
                    Ok((200, answer)) if answer["response"]["allowed"] == true => {
                        match label_of(&answer) {
                            Some(label) => {
                                *answers.lock().unwrap().entry(label.clone()).or_default() += 1;
                                *last.lock().unwrap() = Some((Instant::now(), label));
                            }
                            None => failures
                                .lock()
                                .unwrap()
                                .push(format!("no label in {answer}")),
                        }
                    }
                    Ok((status, answer)) => {
                        failures.lock().unwrap().push(format!("{status}: {answer}"))
                    }
                    Err(e) => failures.lock().unwrap().push(e.to_string()),
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        });
    }

    let mut latencies = Vec::new();
    for i in 0..20 {
        let label = if i % 2 == 0 { "a" } else { "b" };
        let updated = Instant::now();
        configure(
            &t,
            &wasm,
            &format!("    settings:\n      okLabel: {label}\n"),
        )
        .await?;
        loop {
            if let Some((at, seen)) = last.lock().unwrap().clone()
                && seen == label
                && at > updated
            {
                latencies.push(at - updated);
                break;
            }
            anyhow::ensure!(
                updated.elapsed() < Duration::from_secs(5),
                "version {label} never answered"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop_load.cancel();
    while load.join_next().await.is_some() {}
    server.stop(&shutdown).await;

    let failures = failures.lock().unwrap().clone();
    assert!(
        failures.is_empty(),
        "{} failed requests, e.g. {:?}",
        failures.len(),
        failures.first()
    );
    let answers = answers.lock().unwrap().clone();
    assert!(
        answers
            .keys()
            .all(|l| ["true", "a", "b"].contains(&l.as_str())),
        "answers {answers:?}"
    );
    latencies.sort();
    let (p50, p99) = (
        latencies[latencies.len() / 2],
        latencies[(latencies.len() * 99) / 100],
    );
    let slowest = *latencies.last().unwrap();
    println!(
        "{} answers {answers:?}; swap latency p50 {p50:?} p99 {p99:?} max {slowest:?}",
        answers.values().sum::<u64>()
    );
    assert!(
        slowest <= Duration::from_secs(1),
        "slowest swap {slowest:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shadow_candidate_records_exactly_its_differences_and_changes_nothing()
-> anyhow::Result<()> {
    let t = TestContext::new("shadow").await?;
    let (engine, slot, wasm) = common::misbehave_slot()?;
    publish(&t, &wasm).await?;
    let config = configure(
        &t,
        &wasm,
        "    mode: shadow\n    settings:\n      okLabel: shadow\n",
    )
    .await?;
    let registry = common::registry(&t, engine, &slot);
    let results = registry
        .apply_configmap(Some(&config))
        .await
        .map_err(anyhow::Error::msg)?;
    assert!(
        matches!(results["misbehave"], SwapResult::Shadowed(_)),
        "{results:?}"
    );
    let shutdown = CancellationToken::new();
    let server = Server::start(&slot, &shutdown).await?;
    let mut client = odh_test_support::net::Client::connect(server.addr, &server.ca).await?;

    // One input on which the versions differ (the mutation's label), three on which they agree.
    let (status, answer) = client.post("/mutate-misbehave", &review(1)).await?;
    assert_eq!(status, 200);
    assert_eq!(
        label_of(&answer).as_deref(),
        Some("true"),
        "the active version answers"
    );
    for uid in 2..5 {
        let (status, answer) = client.post("/validate-misbehave", &review(uid)).await?;
        assert_eq!(
            (status, &answer["response"]["allowed"]),
            (200, &json!(true))
        );
    }
    let metrics = odh_model_controller::metrics::Metrics::global();
    let mutate_line = r#"odh_plugin_shadow_differences_total{plugin="misbehave",op="mutate"} 1"#;
    odh_test_support::eventually(
        "the difference is recorded",
        odh_test_support::Timing::default(),
        || async {
            anyhow::ensure!(metrics.render().contains(mutate_line), "not yet");
            Ok(())
        },
    )
    .await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let text = metrics.render();
    assert!(text.contains(mutate_line));
    assert!(
        !text.contains(r#"odh_plugin_shadow_differences_total{plugin="misbehave",op="validate"}"#),
        "validate agreed"
    );
    assert_eq!(
        slot.current().sha256(),
        slot.shadow().unwrap().sha256(),
        "same bytes, other settings"
    );
    server.stop(&shutdown).await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failure_policy_ignore_admits_when_the_plugin_fails() -> anyhow::Result<()> {
    let t = TestContext::new("fail-open").await?;
    let (engine, slot, wasm) = common::misbehave_slot()?;
    let shutdown = CancellationToken::new();
    let server = Server::start(&slot, &shutdown).await?;
    let mut client = odh_test_support::net::Client::connect(server.addr, &server.ca).await?;
    let mut panicking = review(1);
    panicking["request"]["object"]["data"] = json!({"behaviour": "panic"});

    let (_, answer) = client.post("/validate-misbehave", &panicking).await?;
    assert_eq!(
        answer["response"]["allowed"], false,
        "Fail (the default) denies"
    );
    assert!(
        answer["response"]["status"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("misbehave"),
        "{answer}"
    );

    publish(&t, &wasm).await?;
    let config = configure(&t, &wasm, "    failurePolicy: Ignore\n").await?;
    let registry = common::registry(&t, engine, &slot);
    registry
        .apply_configmap(Some(&config))
        .await
        .map_err(anyhow::Error::msg)?;
    let (_, answer) = client.post("/validate-misbehave", &panicking).await?;
    assert_eq!(
        answer["response"]["allowed"], true,
        "Ignore admits: {answer}"
    );
    server.stop(&shutdown).await;
    Ok(())
}
