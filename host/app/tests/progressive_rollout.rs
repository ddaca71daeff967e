//! Progressive rollout from the plugins ConfigMap on the real apiserver (the registry watching
//! it): two versions of misbehave (stable labels `misbehave/ok: true`, the candidate
//! `candidate`). A 25% rollout answers exactly the hashed slice's admissions (through the real
//! HTTPS webhook server) and reconciles (through the controllers' call path) with the
//! candidate, object by object; a namespace rollout likewise; promotion leaves no object to the
//! old version. A candidate that denies what stable allows is rolled back by its guard under
//! load, with the status and an Event saying why, and stays loaded.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, Patch, PatchParams};
use odh_model_controller::cache::{CacheFilters, Caches};
use odh_model_controller::dispatch;
use odh_model_controller::gvk::Gvk;
use odh_model_controller::plugin::rollout::Slice;
use odh_model_controller::plugin::wire::RequestKey;
use odh_model_controller::plugin::{CallEnv, ClusterView, NoCluster, PluginSlot, ReconcileInput};
use odh_model_controller::registry::STATUS_CONFIGMAP_NAME;
use odh_model_controller::side_effects::NoSideEffects;
use odh_model_controller::tls::TlsServerConfig;
use odh_model_controller::webhook::{self, WebhookTable};
use odh_test_support::{TestContext, Timing, eventually};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

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

/// Writes misbehave's entry (the published component, `extra` lines added).
async fn configure(t: &TestContext, wasm: &[u8], extra: &str) -> anyhow::Result<()> {
    let text = format!(
        "plugins:\n  misbehave:\n    source: configmap://misbehave-plugin/plugin.wasm\n    sha256: {}\n{extra}",
        common::sha(wasm)
    );
    let cm = ConfigMap {
        data: Some(BTreeMap::from([("plugins.yaml".to_string(), text)])),
        ..Default::default()
    };
    put(t, "odh-model-controller-plugins", cm).await.map(|_| ())
}

/// The registry (watching the ConfigMap) and the webhook server, serving `slot`.
struct Stand {
    t: TestContext,
    slot: PluginSlot,
    wasm: Vec<u8>,
    addr: std::net::SocketAddr,
    ca: rustls::pki_types::CertificateDer<'static>,
    cert_dir: std::path::PathBuf,
    shutdown: CancellationToken,
    /// The host's caches, as the webhooks and controllers read them.
    caches: Arc<Caches>,
}

impl Stand {
    async fn new(name: &str) -> anyhow::Result<Self> {
        let t = TestContext::new(name).await?;
        let (engine, slot, wasm) = common::misbehave_slot()?;
        let component = ConfigMap {
            binary_data: Some(BTreeMap::from([(
                "plugin.wasm".to_string(),
                ByteString(wasm.clone()),
            )])),
            ..Default::default()
        };
        put(&t, "misbehave-plugin", component).await?;
        let shutdown = CancellationToken::new();
        let registry = common::registry(&t, engine, &slot);
        tokio::spawn(Arc::new(registry).run(Duration::from_secs(30), shutdown.clone()));
        let (cert_dir, ca) = odh_test_support::net::serving_cert(name);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        // As the host's: a kind read from memory only (a namespaceSelector's Namespaces) is
        // cached from its first such read on.
        let caches = Caches::new(t.client.clone(), CacheFilters::default());
        let table = WebhookTable::from_slots(std::slice::from_ref(&slot))?;
        let router = webhook::webhook_router(&table, caches.clone(), Arc::new(NoSideEffects));
        tokio::spawn(odh_model_controller::tls::serve_on(
            listener,
            TlsServerConfig {
                bind: addr,
                cert_dir: cert_dir.clone(),
                ..Default::default()
            },
            router,
            shutdown.clone().cancelled_owned(),
        ));
        Ok(Self {
            t,
            slot,
            wasm,
            addr,
            ca,
            cert_dir,
            shutdown,
            caches,
        })
    }

    async fn client(&self) -> anyhow::Result<odh_test_support::net::Client> {
        eventually("the webhook server answers", Timing::default(), || {
            odh_test_support::net::Client::connect(self.addr, &self.ca)
        })
        .await
    }

    /// Waits until the slot's rollout is the one `percent` and `namespaces` describe.
    async fn rollout_running(&self, percent: f64, namespaces: &[&str]) -> anyhow::Result<()> {
        eventually("the rollout runs", Timing::default(), || async {
            let c = self
                .slot
                .canary()
                .ok_or_else(|| anyhow::anyhow!("no rollout"))?;
            anyhow::ensure!(
                c.slice.percent == percent
                    && c.slice
                        .namespaces
                        .iter()
                        .map(String::as_str)
                        .eq(namespaces.iter().copied()),
                "{:?}",
                c.slice
            );
            Ok(())
        })
        .await
    }

    async fn status(&self) -> anyhow::Result<Value> {
        let cms: Api<ConfigMap> = Api::namespaced(self.t.client.clone(), &self.t.namespace);
        let cm = cms.get(STATUS_CONFIGMAP_NAME).await?;
        Ok(serde_json::from_str(
            &cm.data.unwrap_or_default()["misbehave"],
        )?)
    }

    async fn stop(self) {
        self.shutdown.cancel();
        odh_test_support::net::remove_dir(&self.cert_dir);
    }
}

fn review(namespace: &str, name: &str, data: Value) -> Value {
    json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": format!("{namespace}-{name}"),
            "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "operation": "CREATE", "namespace": namespace, "name": name,
            "object": {"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": name, "namespace": namespace}, "data": data},
            "userInfo": {"username": "tester"}, "dryRun": false,
        },
    })
}

/// FNV-1a 64 of `text`, written out here so the test does not take the routing rule from the
/// code it checks (docs/plugins-configmap.md, "Progressive rollout").
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The `misbehave/ok` label value a mutate answer sets.
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

/// Whether the candidate answered the mutation of `namespace/name`, through the HTTPS server.
async fn admitted_by_candidate(
    client: &mut odh_test_support::net::Client,
    namespace: &str,
    name: &str,
) -> anyhow::Result<bool> {
    let (status, answer) = client
        .post("/mutate-misbehave", &review(namespace, name, json!({})))
        .await?;
    anyhow::ensure!(status == 200, "HTTP {status}");
    match label_of(&answer).as_deref() {
        Some("candidate") => Ok(true),
        Some("true") => Ok(false),
        other => anyhow::bail!("unexpected label {other:?}: {answer}"),
    }
}

/// Whether the candidate reconciled `namespace/name`, through the controllers' call path.
async fn reconciled_by_candidate(
    slot: &PluginSlot,
    cluster: &Arc<Caches>,
    namespace: &str,
    name: &str,
) -> bool {
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {"odh-test/misbehave": "true"}}});
    let input = ReconcileInput {
        controller: "misbehave".into(),
        key: RequestKey {
            namespace: Some(namespace.into()),
            name: name.into(),
        },
        object: Some(object.to_string()),
    };
    let (plugin, result) =
        dispatch::reconcile(slot, input, CallEnv::read_only(cluster.clone())).await;
    result.expect("reconcile");
    slot.canary().is_some_and(|c| plugin.same_as(&c.plugin))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slice_of_objects_goes_to_the_candidate_and_promotion_moves_them_all()
-> anyhow::Result<()> {
    let s = Stand::new("rollout-slice").await?;
    let stable = s.slot.current();
    let mut client = s.client().await?;
    let candidate = "    settings: {okLabel: candidate}\n";

    configure(
        &s.t,
        &s.wasm,
        &format!("{candidate}    rollout: {{percent: 25}}\n"),
    )
    .await?;
    s.rollout_running(25.0, &[]).await?;
    let mut taken = 0;
    for i in 0..200 {
        let name = format!("obj-{i}");
        let expected = fnv1a(&format!("ns/{name}")) % 10_000 < 2_500;
        assert_eq!(
            Slice {
                percent: 25.0,
                ..Default::default()
            }
            .takes(Some("ns"), Some(&name)),
            expected
        );
        taken += usize::from(expected);
        assert_eq!(
            admitted_by_candidate(&mut client, "ns", &name).await?,
            expected,
            "admission of ns/{name}"
        );
        assert_eq!(
            reconciled_by_candidate(&s.slot, &s.caches, "ns", &name).await,
            expected,
            "reconcile of ns/{name}"
        );
        // The same object again: never flaps.
        assert_eq!(
            admitted_by_candidate(&mut client, "ns", &name).await?,
            expected
        );
    }
    assert!((30..70).contains(&taken), "{taken} of 200 in a 25% slice");
    assert!(
        s.slot.current().same_as(&stable),
        "the stable version still serves"
    );

    // A namespace rollout: exactly the objects of `team-a`.
    configure(
        &s.t,
        &s.wasm,
        &format!("{candidate}    rollout: {{namespaces: [team-a]}}\n"),
    )
    .await?;
    s.rollout_running(0.0, &["team-a"]).await?;
    for i in 0..40 {
        let name = format!("obj-{i}");
        assert!(admitted_by_candidate(&mut client, "team-a", &name).await?);
        assert!(reconciled_by_candidate(&s.slot, &s.caches, "team-a", &name).await);
        assert!(!admitted_by_candidate(&mut client, "team-b", &name).await?);
        assert!(!reconciled_by_candidate(&s.slot, &s.caches, "team-b", &name).await);
    }
    let status = s.status().await?;
    assert_eq!(
        status["rollout"]["namespaces"],
        json!(["team-a"]),
        "{status}"
    );

    // A namespace-selector rollout: exactly the objects of the namespaces whose labels match,
    // as the Namespace cache holds them; a namespace relabelled moves with its label.
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(s.t.client.clone());
    let canary_ns = odh_test_support::namespace::unique_name("rollout-canary");
    let other_ns = odh_test_support::namespace::unique_name("rollout-other");
    for (ns, value) in [(&canary_ns, "canary"), (&other_ns, "stable")] {
        namespaces
            .create(
                &Default::default(),
                &serde_json::from_value(json!({"metadata": {"name": ns,
                    "labels": {"odh-test/rollout": value}}}))?,
            )
            .await?;
    }
    configure(
        &s.t,
        &s.wasm,
        &format!("{candidate}    rollout: {{namespaceSelector: \"odh-test/rollout=canary\"}}\n"),
    )
    .await?;
    eventually("the selector rollout runs", Timing::default(), || async {
        let c = s
            .slot
            .canary()
            .ok_or_else(|| anyhow::anyhow!("no rollout"))?;
        anyhow::ensure!(c.slice.namespace_selector.is_some(), "{:?}", c.slice);
        anyhow::ensure!(
            s.caches
                .get_held(&Gvk::new("", "v1", "Namespace"), None, &other_ns)
                .is_some_and(|n| n.is_some()),
            "the cache has not seen the namespaces yet"
        );
        Ok(())
    })
    .await?;
    for i in 0..20 {
        let name = format!("obj-{i}");
        assert!(admitted_by_candidate(&mut client, &canary_ns, &name).await?);
        assert!(reconciled_by_candidate(&s.slot, &s.caches, &canary_ns, &name).await);
        assert!(!admitted_by_candidate(&mut client, &other_ns, &name).await?);
        assert!(!reconciled_by_candidate(&s.slot, &s.caches, &other_ns, &name).await);
    }
    namespaces
        .patch(
            &other_ns,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"odh-test/rollout": "canary"}}})),
        )
        .await?;
    eventually(
        "the relabelled namespace moves to the candidate",
        Timing::default(),
        || async {
            let mut fresh = odh_test_support::net::Client::connect(s.addr, &s.ca).await?;
            anyhow::ensure!(admitted_by_candidate(&mut fresh, &other_ns, "obj-0").await?);
            Ok(())
        },
    )
    .await?;
    let status = s.status().await?;
    assert_eq!(
        status["rollout"]["namespaceSelector"],
        json!("odh-test/rollout=canary"),
        "{status}"
    );
    for ns in [&canary_ns, &other_ns] {
        namespaces.delete(ns, &Default::default()).await?;
    }

    // A timed rollout: the first step (0%) keeps every object on the stable version; when its
    // pause is over the next (100%) moves them all, and the controllers are told to reconcile
    // every object again; the status follows the step.
    configure(
        &s.t,
        &s.wasm,
        &format!(
            "{candidate}    rollout: {{steps: [{{percent: 0, pause: 15s}}, {{percent: 100}}]}}\n"
        ),
    )
    .await?;
    let canary = eventually("the timed rollout runs", Timing::default(), || async {
        let c = s
            .slot
            .canary()
            .ok_or_else(|| anyhow::anyhow!("no rollout"))?;
        anyhow::ensure!(c.slice.steps.len() == 2, "{:?}", c.slice);
        Ok(c)
    })
    .await?;
    let mut resyncs = s.slot.swaps();
    resyncs.mark_unchanged();
    for i in 0..20 {
        let name = format!("obj-{i}");
        assert!(!admitted_by_candidate(&mut client, "ns", &name).await?);
        assert!(!reconciled_by_candidate(&s.slot, &s.caches, "ns", &name).await);
    }
    assert!(
        canary.elapsed() < Duration::from_secs(15),
        "the first step's checks ran past its pause: this machine is too slow for the test"
    );
    tokio::time::timeout(Duration::from_secs(60), resyncs.changed()).await??;
    assert_eq!(canary.step_now(), Some(1));
    for i in 0..20 {
        let name = format!("obj-{i}");
        assert!(admitted_by_candidate(&mut client, "ns", &name).await?);
        assert!(reconciled_by_candidate(&s.slot, &s.caches, "ns", &name).await);
    }
    eventually(
        "the status shows the second step",
        Timing::default(),
        || async {
            let status = s.status().await?;
            anyhow::ensure!(status["rollout"]["step"] == 1, "{status}");
            anyhow::ensure!(status["rollout"]["percent"] == 100.0, "{status}");
            anyhow::ensure!(status["rollout"]["startedAt"].is_string(), "{status}");
            Ok(())
        },
    )
    .await?;

    // Promotion: the entry without `rollout`. Every object's reconcile is run again (the
    // controllers follow the slot's swaps) by the promoted version.
    let mut swaps = s.slot.swaps();
    swaps.borrow_and_update();
    configure(&s.t, &s.wasm, candidate).await?;
    eventually("the candidate is promoted", Timing::default(), || async {
        anyhow::ensure!(s.slot.canary().is_none() && !s.slot.current().same_as(&stable));
        Ok(())
    })
    .await?;
    assert!(
        swaps.has_changed()?,
        "the controllers were told to reconcile again"
    );
    let promoted = s.slot.current();
    for i in 0..200 {
        let name = format!("obj-{i}");
        let (plugin, _) = dispatch::reconcile(
            &s.slot,
            ReconcileInput {
                controller: "misbehave".into(),
                key: RequestKey {
                    namespace: Some("ns".into()),
                    name: name.clone(),
                },
                object: None,
            },
            CallEnv::read_only(Arc::new(NoCluster)),
        )
        .await;
        assert!(
            plugin.same_as(&promoted),
            "ns/{name} reconciled by the old version"
        );
        assert!(
            admitted_by_candidate(&mut client, "team-b", &name).await?,
            "the promoted version answers every admission"
        );
    }
    s.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_candidate_denying_what_stable_allows_is_rolled_back_by_its_guard_under_load()
-> anyhow::Result<()> {
    let s = Stand::new("rollout-guard").await?;
    let stable = s.slot.current();
    let min_calls = 10;
    configure(
        &s.t,
        &s.wasm,
        &format!(
            "    settings: {{denyKey: risky}}\n    rollout: {{percent: 50, guards: {{minCalls: {min_calls}}}}}\n"
        ),
    )
    .await?;
    s.rollout_running(50.0, &[]).await?;
    let mut swaps = s.slot.swaps();
    swaps.borrow_and_update();

    // Load: 4 connections validating ConfigMaps that hold the key the candidate denies.
    let denied = Arc::new(AtomicU64::new(0));
    let allowed = Arc::new(AtomicU64::new(0));
    let failures: Arc<Mutex<Vec<String>>> = Arc::default();
    let stop = CancellationToken::new();
    let mut load = tokio::task::JoinSet::new();
    for worker in 0..4 {
        let (denied, allowed, failures, stop) = (
            denied.clone(),
            allowed.clone(),
            failures.clone(),
            stop.clone(),
        );
        let mut client = s.client().await?;
        load.spawn(async move {
            let mut n = 0;
            while !stop.is_cancelled() {
                n += 1;
                let name = format!("w{worker}-{n}");
                match client
                    .post(
                        "/validate-misbehave",
                        &review("ns", &name, json!({"risky": "1"})),
                    )
                    .await
                {
                    Ok((200, a)) if a["response"]["allowed"] == true => {
                        allowed.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok((200, _)) => {
                        denied.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok((status, a)) => failures.lock().unwrap().push(format!("{status}: {a}")),
                    Err(e) => failures.lock().unwrap().push(e.to_string()),
                }
            }
        });
    }
    let back = eventually(
        "the guard rolls the candidate back",
        Timing::default(),
        || async {
            s.slot
                .canary()
                .and_then(|c| c.rolled_back())
                .ok_or_else(|| anyhow::anyhow!("still rolling out"))
        },
    )
    .await?;
    let denied_at_rollback = denied.load(Ordering::Relaxed);
    // Every answer after the rollback is the stable version's.
    let allowed_at_rollback = allowed.load(Ordering::Relaxed);
    eventually("answers keep coming", Timing::default(), || async {
        anyhow::ensure!(allowed.load(Ordering::Relaxed) > allowed_at_rollback + 100);
        Ok(())
    })
    .await?;
    stop.cancel();
    while load.join_next().await.is_some() {}

    assert_eq!(back.guard, "denyRateIncrease", "{back:?}");
    assert!(
        back.reason.contains("the candidate denied 100.0%"),
        "{}",
        back.reason
    );
    let denied_total = denied.load(Ordering::Relaxed);
    // The guard's budget: its minCalls, plus the calls in flight on the 4 connections when it
    // tripped.
    assert!(
        denied_total <= min_calls + 4,
        "{denied_total} denials ({denied_at_rollback} at the rollback), the budget is {min_calls} + 4 in flight"
    );
    let failures = failures.lock().unwrap().clone();
    assert!(failures.is_empty(), "failed requests: {failures:?}");
    assert!(s.slot.canary().is_some(), "the candidate stays loaded");
    assert!(s.slot.current().same_as(&stable));
    assert!(swaps.has_changed()?, "moved objects are reconciled again");

    let status = eventually("the status says why", Timing::default(), || async {
        let status = s.status().await?;
        anyhow::ensure!(
            status["rollout"]["rolledBack"]["guard"] == "denyRateIncrease",
            "{status}"
        );
        Ok(status)
    })
    .await?;
    assert!(status["rollout"]["candidate"]["denies"].as_u64().unwrap() >= min_calls);
    let events: Api<Event> = Api::namespaced(s.t.client.clone(), &s.t.namespace);
    eventually("an Event says why", Timing::default(), || async {
        let notes: Vec<String> = events
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some("PluginRolledBack"))
            .filter_map(|e| e.note)
            .collect();
        anyhow::ensure!(
            notes.iter().any(|n| n.contains("guard denyRateIncrease")),
            "{notes:?}"
        );
        Ok(())
    })
    .await?;
    s.stop().await;
    Ok(())
}
