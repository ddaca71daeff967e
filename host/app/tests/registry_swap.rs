//! Hot swap from the plugins ConfigMap on the real apiserver: a good candidate replaces the
//! serving version; each bad candidate leaves the last good version serving and is reported
//! (status ConfigMap + Warning Event); a removed entry reverts to the default; an unreachable
//! source is retried.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, Patch, PatchParams};
use odh_model_controller::gvk::Gvk;
use odh_model_controller::plugin::wire::{Operation, WebhookType};
use odh_model_controller::plugin::{CallEnv, NoCluster, PluginSlot};
use odh_model_controller::registry::{Registry, STATUS_CONFIGMAP_NAME, SwapResult};
use odh_test_support::TestContext;
use serde_json::{Value, json};

struct Fixture {
    t: TestContext,
    slot: PluginSlot,
    registry: Registry,
    misbehave: Vec<u8>,
}

async fn fixture(name: &str) -> anyhow::Result<Fixture> {
    let t = TestContext::new(name).await?;
    let (engine, slot, misbehave) = common::misbehave_slot()?;
    let registry = common::registry(&t, engine, &slot);
    Ok(Fixture {
        t,
        slot,
        registry,
        misbehave,
    })
}

use common::{gzip, sha};

impl Fixture {
    fn configmaps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.t.client.clone(), &self.t.namespace)
    }

    async fn put(&self, name: &str, cm: ConfigMap) -> anyhow::Result<ConfigMap> {
        let mut cm = cm;
        cm.metadata.name = Some(name.into());
        Ok(self
            .configmaps()
            .patch(
                name,
                &PatchParams::apply("test").force(),
                &Patch::Apply(&cm),
            )
            .await?)
    }

    async fn put_component(&self, name: &str, bytes: &[u8]) -> anyhow::Result<()> {
        let cm = ConfigMap {
            binary_data: Some(BTreeMap::from([(
                "plugin.wasm.gz".to_string(),
                ByteString(gzip(bytes)),
            )])),
            ..Default::default()
        };
        self.put(name, cm).await.map(|_| ())
    }

    /// Writes the plugins ConfigMap with `entry` for misbehave and applies it.
    async fn configure(&self, entry: &str) -> anyhow::Result<SwapResult> {
        let mut results = self
            .write_plugins(format!("plugins:\n  misbehave:\n{entry}"))
            .await?;
        Ok(results.remove("misbehave").unwrap_or(SwapResult::Unchanged))
    }

    /// Writes the plugins ConfigMap's `plugins.yaml` and applies it: what became of each plugin.
    async fn write_plugins(&self, yaml: String) -> anyhow::Result<BTreeMap<String, SwapResult>> {
        let cm = ConfigMap {
            data: Some(BTreeMap::from([("plugins.yaml".to_string(), yaml)])),
            ..Default::default()
        };
        let cm = self.put("odh-model-controller-plugins", cm).await?;
        self.registry
            .apply_configmap(Some(&cm))
            .await
            .map_err(anyhow::Error::msg)
    }

    /// The value the serving version gives the `misbehave/ok` label.
    fn decision(&self) -> String {
        let input = odh_test_support::host::admission(
            "/mutate-misbehave",
            Operation::Create,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "ns"}}),
        );
        let d = self
            .slot
            .current()
            .admit_blocking(
                WebhookType::Mutating,
                &input,
                &CallEnv::live(Arc::new(NoCluster)),
            )
            .expect("mutate");
        d.mutated.unwrap()["metadata"]["labels"]["misbehave/ok"]
            .as_str()
            .unwrap()
            .to_string()
    }

    async fn status(&self) -> anyhow::Result<Value> {
        let cm = self.configmaps().get(STATUS_CONFIGMAP_NAME).await?;
        Ok(serde_json::from_str(&cm.data.unwrap()["misbehave"])?)
    }

    fn entry(&self, source: &str, digest: &str, extra: &str) -> String {
        format!("    source: {source}\n    sha256: {digest}\n{extra}")
    }
}

#[tokio::test]
async fn a_good_candidate_swaps_in_and_a_removed_entry_reverts() -> anyhow::Result<()> {
    let f = fixture("swap-good").await?;
    assert_eq!(f.decision(), "true");
    f.put_component("misbehave-plugin", &f.misbehave).await?;
    let digest = sha(&f.misbehave);
    let entry = f.entry(
        "configmap://misbehave-plugin/plugin.wasm.gz",
        &digest,
        "    settings:\n      okLabel: v2\n    failurePolicy: Ignore\n",
    );
    assert_eq!(
        f.configure(&entry).await?,
        SwapResult::Swapped(digest.clone())
    );
    assert_eq!(f.decision(), "v2");
    assert!(f.slot.fail_open());
    let status = f.status().await?;
    assert_eq!(status["activeDigest"], digest);
    assert_eq!(status["lastError"], Value::Null);
    assert_eq!(
        f.configure(&entry).await?,
        SwapResult::Unchanged,
        "an unchanged entry is not fetched again"
    );

    // Without an entry the plugin goes back to the version it started with.
    let cm = f
        .put(
            "odh-model-controller-plugins",
            ConfigMap {
                data: Some(BTreeMap::from([(
                    "plugins.yaml".to_string(),
                    "plugins: {}\n".to_string(),
                )])),
                ..Default::default()
            },
        )
        .await?;
    f.registry
        .apply_configmap(Some(&cm))
        .await
        .map_err(anyhow::Error::msg)?;
    assert_eq!(f.decision(), "true");
    assert!(
        !f.slot.fail_open(),
        "the starting version fails closed again"
    );
    Ok(())
}

/// One grants rule: a grant narrows what the manifest declares (kinds by equality, HTTP hosts by
/// coverage); a candidate whose declared HTTP hosts are cut to one port is swapped in with the
/// narrower capabilities, and the status says what it goes without. Withholding a kind its own
/// controller runs on (its primary) would leave it failing on every reconcile: refused.
#[tokio::test]
async fn grants_narrow_a_candidate_unless_it_cannot_work_without_what_they_withhold()
-> anyhow::Result<()> {
    let f = fixture("swap-narrow").await?;
    f.put_component("misbehave-plugin", &f.misbehave).await?;
    let digest = sha(&f.misbehave);
    let source = "configmap://misbehave-plugin/plugin.wasm.gz";
    let unworkable = f.entry(
        source,
        &digest,
        "    settings:\n      okLabel: narrow\n    grants:\n      reads: []\n",
    );
    let SwapResult::Rejected(message) = f.configure(&unworkable).await? else {
        panic!("withholding the controller's primary kind must refuse the candidate");
    };
    assert!(
        message
            .contains("the entry's grants withhold reads ConfigMap/v1 that the candidate declares"),
        "{message}"
    );
    assert_eq!(f.decision(), "true", "the last good version keeps serving");

    let entry = f.entry(
        source,
        &digest,
        "    settings:\n      okLabel: narrow\n    grants:\n      httpHosts: [\"127.0.0.1:8443\"]\n",
    );
    assert_eq!(f.configure(&entry).await?, SwapResult::Swapped(digest));
    assert_eq!(f.decision(), "narrow");
    let serving = f.slot.current();
    let caps = serving.capabilities();
    assert!(caps.may_connect("127.0.0.1:8443"));
    assert!(
        !caps.may_connect("127.0.0.1:9000"),
        "the declared host narrowed to one port"
    );
    let narrowed = ["HTTP host 127.0.0.1", "HTTP host localhost"];
    assert_eq!(caps.withheld(serving.manifest()), narrowed);
    let status = f.status().await?;
    assert_eq!(status["grantsNarrowed"], json!(narrowed), "{status}");
    assert_eq!(status["lastError"], Value::Null);
    Ok(())
}

/// Grants pinned in the entry are the admin's "no more than this": a later version of the
/// plugin that declares a read its predecessor did not (a Secret) is not loaded narrowed, where
/// it would go live and fail on it, but refused, with the status and one Event naming what the
/// grants withhold; the version it would replace keeps serving and reconciling.
#[tokio::test]
async fn a_candidate_asking_past_its_pinned_grants_never_replaces_the_serving_version()
-> anyhow::Result<()> {
    use odh_model_controller::plugin::ReconcileInput;
    use odh_model_controller::plugin::wire::RequestKey;
    let t = TestContext::new("swap-pinned").await?;
    let (_, misbehave_slot, _) = common::misbehave_slot()?;
    let registry = common::registry(&t, odh_test_support::host::engine(), &misbehave_slot);
    let set = registry.plugins().clone();
    let f = Fixture {
        t,
        slot: misbehave_slot,
        registry,
        misbehave: Vec::new(),
    };
    let (_, owner) = odh_test_support::host::component("owner");
    let (_, grown) = odh_test_support::host::component("grown");
    f.put_component("owner-1", &owner).await?;
    f.put_component("owner-2", &grown).await?;
    let pinned = "    grants:\n      reads: [{group: \"\", version: v1, kind: ConfigMap}]\n      writes: [{group: \"\", version: v1, kind: ConfigMap}]\n";
    let apply = |part: &str, digest: String| {
        let yaml = format!(
            "plugins:\n  owner:\n    source: configmap://{part}/plugin.wasm.gz\n    sha256: {digest}\n{pinned}"
        );
        let f = &f;
        async move {
            let mut results = f.write_plugins(yaml).await?;
            anyhow::Ok(results.remove("owner").unwrap_or(SwapResult::Unchanged))
        }
    };
    assert_eq!(
        apply("owner-1", sha(&owner)).await?,
        SwapResult::Swapped(sha(&owner))
    );
    let SwapResult::Rejected(message) = apply("owner-2", sha(&grown)).await? else {
        panic!("a candidate asking past its pinned grants must be refused");
    };
    assert!(
        message.contains("withhold reads Secret/v1 that the candidate declares")
            && message.contains("add them to the entry's grants"),
        "{message}"
    );
    let serving = set.get("owner").expect("owner still served").current();
    assert_eq!(
        serving.manifest().version,
        "0.1.0",
        "the pinned version keeps serving"
    );
    let primary = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "p", "namespace": f.t.namespace, "uid": "u1",
                     "labels": {"odh-test/primary": "true"}},
        "data": {"value": "v"}});
    let input = ReconcileInput {
        controller: "owner".into(),
        key: RequestKey {
            namespace: Some(f.t.namespace.clone()),
            name: "p".into(),
        },
        object: Some(primary.to_string()),
    };
    let outcome = serving
        .reconcile_blocking(&input, &CallEnv::live(Arc::new(NoCluster)))
        .expect("the serving version reconciles without errors");
    assert!(outcome.error.is_none(), "{outcome:?}");
    assert_eq!(
        outcome.apply.len(),
        1,
        "it still makes its owned ConfigMap: {outcome:?}"
    );
    for _ in 0..4 {
        f.registry.retry_rejected().await;
    }
    let cm = f.configmaps().get(STATUS_CONFIGMAP_NAME).await?;
    let status: Value = serde_json::from_str(&cm.data.unwrap()["owner"])?;
    assert_eq!(status["activeDigest"], sha(&owner));
    assert_eq!(status["lastError"], json!(message), "{status}");
    let notes = common::rejection_notes(&f.t).await?;
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("reads Secret/v1"), "{notes:?}");
    Ok(())
}

#[tokio::test]
async fn each_bad_candidate_leaves_the_last_good_version_serving_and_is_reported()
-> anyhow::Result<()> {
    let f = fixture("swap-bad").await?;
    f.put_component("misbehave-plugin", &f.misbehave).await?;
    let digest = sha(&f.misbehave);
    let good = f.entry(
        "configmap://misbehave-plugin/plugin.wasm.gz",
        &digest,
        "    settings:\n      okLabel: good\n",
    );
    assert!(matches!(f.configure(&good).await?, SwapResult::Swapped(_)));

    let corrupt = b"\0asm\x0d\0\x01\0 but not really a component".to_vec();
    f.put_component("corrupt-plugin", &corrupt).await?;
    let (_, hello) = odh_test_support::host::component("hello");
    f.put_component("hello-plugin", &hello).await?;
    // A valid component that does not export odh:controller@0.1.0 (another WIT version or world).
    let foreign = b"\0asm\x0d\0\x01\0".to_vec();
    f.put_component("foreign-plugin", &foreign).await?;
    // Decompresses past the size cap (a ConfigMap itself cannot exceed 1 MiB; a gzip bomb can).
    let bomb = vec![0u8; odh_model_controller::registry::fetch::MAX_COMPONENT_BYTES + 1];
    f.put_component("bomb-plugin", &bomb).await?;
    let cases = [
        (
            "corrupt bytes",
            f.entry(
                "configmap://corrupt-plugin/plugin.wasm.gz",
                &sha(&corrupt),
                "",
            ),
            "not a valid WebAssembly component",
        ),
        (
            "wrong digest",
            f.entry(
                "configmap://misbehave-plugin/plugin.wasm.gz",
                &"0".repeat(64),
                "",
            ),
            "digest mismatch",
        ),
        (
            "another plugin",
            f.entry("configmap://hello-plugin/plugin.wasm.gz", &sha(&hello), ""),
            "is plugin \"hello\", not \"misbehave\"",
        ),
        (
            "another WIT version",
            f.entry(
                "configmap://foreign-plugin/plugin.wasm.gz",
                &sha(&foreign),
                "",
            ),
            "does not export the odh:controller@0.1.5 plugin interface",
        ),
        (
            "oversized component",
            f.entry("configmap://bomb-plugin/plugin.wasm.gz", &sha(&bomb), ""),
            "larger than 32 MiB",
        ),
        (
            "invalid settings",
            f.entry(
                "configmap://misbehave-plugin/plugin.wasm.gz",
                &digest,
                "    settings:\n      bogus: 1\n",
            ),
            "invalid plugin settings",
        ),
        (
            "a file source without --plugin-file-dir",
            f.entry("file:///nonexistent/misbehave.wasm", &digest, ""),
            "file:///nonexistent/misbehave.wasm is not read: file:// sources are off",
        ),
        (
            "a device as the source",
            f.entry("file:///dev/zero", &digest, ""),
            "file:///dev/zero is not read",
        ),
    ];
    for (i, (case, entry, want)) in cases.iter().enumerate() {
        match f.configure(entry).await? {
            SwapResult::Rejected(message) => assert!(message.contains(want), "{case}: {message}"),
            other => panic!("{case}: expected a rejection, got {other:?}"),
        }
        assert_eq!(
            f.decision(),
            "good",
            "{case}: the last good version keeps serving"
        );
        let status = f.status().await?;
        assert!(
            status["lastError"].as_str().unwrap_or("").contains(want),
            "{case}: status {status}"
        );
        assert_eq!(status["activeDigest"], digest, "{case}");
        let events = common::rejection_notes(&f.t).await?;
        assert!(
            events.iter().any(|n| n.contains(want)),
            "{case}: events {events:?}"
        );
        assert!(events.len() > i, "{case}: one Event per rejection");
    }

    // A configuration that does not even parse changes nothing.
    let cm = f
        .put(
            "odh-model-controller-plugins",
            ConfigMap {
                data: Some(BTreeMap::from([(
                    "plugins.yaml".to_string(),
                    "plugins: [not, a, map]\n".to_string(),
                )])),
                ..Default::default()
            },
        )
        .await?;
    assert!(f.registry.apply_configmap(Some(&cm)).await.is_err());
    assert_eq!(f.decision(), "good");
    Ok(())
}

#[tokio::test]
async fn an_unreachable_source_is_retried_until_it_comes_back() -> anyhow::Result<()> {
    let f = fixture("swap-retry").await?;
    let digest = sha(&f.misbehave);
    let entry = f.entry(
        "configmap://later-plugin/plugin.wasm.gz",
        &digest,
        "    settings:\n      okLabel: later\n",
    );
    match f.configure(&entry).await? {
        SwapResult::Rejected(m) => assert!(m.contains("does not exist"), "{m}"),
        other => panic!("expected a rejection, got {other:?}"),
    }
    assert_eq!(
        f.decision(),
        "true",
        "the version it started with serves meanwhile"
    );
    f.put_component("later-plugin", &f.misbehave).await?;
    let results = f.registry.retry_rejected().await;
    assert_eq!(results.get("misbehave"), Some(&SwapResult::Swapped(digest)));
    assert_eq!(f.decision(), "later");
    Ok(())
}

/// Grants cannot widen silently: a candidate from a ConfigMap without `grants` that declares a
/// read the version it replaces did not hold is refused with a status saying what and how to
/// allow it; with the read granted it goes live and the status lists what the grant widened.
#[tokio::test]
async fn a_candidate_reading_more_than_its_predecessor_needs_an_explicit_grant()
-> anyhow::Result<()> {
    use odh_model_controller::plugin::{Grants, PluginSet};
    let t = odh_test_support::TestContext::new("swap-widen").await?;
    let narrowed = odh_test_support::host::load_with("misbehave", |r| {
        r.grants(Grants {
            reads: Some(Default::default()),
            ..Default::default()
        })
    });
    let slot = PluginSlot::new(narrowed);
    let (_, misbehave) = odh_test_support::host::component("misbehave");
    let f = Fixture {
        registry: Registry::new(
            t.client.clone(),
            t.namespace.clone(),
            odh_test_support::host::engine(),
            PluginSet::new([slot.clone()]),
            odh_model_controller::builtins::catalog(),
        ),
        t,
        slot,
        misbehave,
    };
    f.put_component("misbehave-plugin", &f.misbehave).await?;
    let digest = sha(&f.misbehave);
    let source = "configmap://misbehave-plugin/plugin.wasm.gz";
    match f
        .configure(&f.entry(source, &digest, "    settings:\n      okLabel: wide\n"))
        .await?
    {
        SwapResult::Rejected(m) => assert!(
            m.contains("declares reads ConfigMap/v1 beyond what the version it replaces holds")
                && m.contains("grants"),
            "{m}"
        ),
        other => panic!("expected a rejection, got {other:?}"),
    }
    assert_eq!(f.decision(), "true", "the narrowed version keeps serving");
    let status = f.status().await?;
    assert!(
        status["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("reads ConfigMap/v1")),
        "{status}"
    );
    let granted = f.entry(
        source,
        &digest,
        "    settings:\n      okLabel: wide\n    grants:\n      reads: [{group: \"\", version: v1, kind: ConfigMap}]\n",
    );
    assert_eq!(
        f.configure(&granted).await?,
        SwapResult::Swapped(digest.clone())
    );
    assert_eq!(f.decision(), "wide");
    assert!(
        f.slot
            .current()
            .capabilities()
            .may_read(&Gvk::new("", "v1", "ConfigMap"))
    );
    let status = f.status().await?;
    assert_eq!(status["grantsWidened"], json!(["reads ConfigMap/v1"]));
    assert_eq!(status["lastError"], Value::Null);
    Ok(())
}

/// A bad entry left alone for an hour of 30 s retry ticks: retried with back-off (1, 2, 4 …
/// up to 20 ticks apart) and reported by one Event whose series counts the attempts, not one
/// Event per attempt.
#[tokio::test]
async fn a_bad_entry_left_alone_makes_one_event_and_is_retried_with_back_off() -> anyhow::Result<()>
{
    let f = fixture("swap-storm").await?;
    let entry = f.entry("file:///nonexistent/misbehave.wasm", &sha(&f.misbehave), "");
    assert!(matches!(
        f.configure(&entry).await?,
        SwapResult::Rejected(_)
    ));
    let mut attempts = 1;
    for _ in 0..120 {
        if f.registry.retry_rejected().await.contains_key("misbehave") {
            attempts += 1;
        }
    }
    // Retries at ticks 1, 3, 7, 15, 31, 51, 71, 91, 111.
    assert_eq!(attempts, 10);
    let events: Api<Event> = Api::namespaced(f.t.client.clone(), &f.t.namespace);
    let rejections: Vec<Event> = events
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("PluginRejected"))
        .collect();
    assert_eq!(rejections.len(), 1, "{rejections:?}");
    assert_eq!(
        rejections[0].series.as_ref().map(|s| s.count),
        Some(attempts)
    );
    assert_eq!(f.status().await?["failures"], json!(attempts));
    Ok(())
}

/// An entry naming a plugin the host does not serve adds it; removing the entry removes it
/// and its status.
#[tokio::test]
async fn a_new_plugin_joins_with_its_entry_and_leaves_without_it() -> anyhow::Result<()> {
    let f = fixture("swap-add").await?;
    let (_, hello) = odh_test_support::host::component("hello");
    f.put_component("hello-plugin", &hello).await?;
    let set = f.registry.plugins().clone();
    let f = &f;
    let write = |yaml: String| f.write_plugins(yaml);
    let results = write(format!(
        "plugins:\n  hello:\n    source: configmap://hello-plugin/plugin.wasm.gz\n    sha256: {}\n",
        sha(&hello)
    ))
    .await?;
    assert_eq!(results["hello"], SwapResult::Swapped(sha(&hello)));
    assert_eq!(
        set.slots()
            .iter()
            .map(|s| s.name().to_string())
            .collect::<Vec<_>>(),
        ["hello", "misbehave"]
    );
    let cm = f.configmaps().get(STATUS_CONFIGMAP_NAME).await?;
    assert!(cm.data.unwrap().contains_key("hello"));

    let results = write("plugins: {}\n".into()).await?;
    assert_eq!(results["hello"], SwapResult::Removed);
    assert!(set.get("hello").is_none());
    assert!(set.get("misbehave").is_some(), "a built-in stays");
    let cm = f.configmaps().get(STATUS_CONFIGMAP_NAME).await?;
    assert!(!cm.data.unwrap_or_default().contains_key("hello"));
    Ok(())
}

/// The ceiling a cluster admin sets holds against the ConfigMap's grants: an entry granting a
/// read and an HTTP host past it is refused whole (never loaded narrowed), with the status
/// saying what and where the ceiling is set, and one Event however often it is retried; the
/// last good version keeps serving.
#[tokio::test]
async fn an_entry_granting_past_the_ceiling_is_refused_with_a_status_and_one_event()
-> anyhow::Result<()> {
    use odh_model_controller::plugin::Grants;
    use odh_model_controller::registry::{Ceiling, KindCeiling, ceiling};
    let t = TestContext::new("swap-ceiling").await?;
    let narrowed = odh_test_support::host::load_with("misbehave", |r| r.grants(Grants::none()));
    let slot = PluginSlot::new(narrowed);
    let (_, misbehave) = odh_test_support::host::component("misbehave");
    let f = Fixture {
        registry: common::registry(&t, odh_test_support::host::engine(), &slot).with_ceiling(
            Ceiling {
                reads: KindCeiling::parse(&[]).map_err(anyhow::Error::msg)?,
                http_hosts: ceiling::hosts(["*.example.com"]),
                ..Ceiling::default()
            },
        ),
        t,
        slot,
        misbehave,
    };
    f.put_component("misbehave-plugin", &f.misbehave).await?;
    let entry = f.entry(
        "configmap://misbehave-plugin/plugin.wasm.gz",
        &sha(&f.misbehave),
        "    settings:\n      okLabel: past\n    grants:\n      reads: [{group: \"\", version: v1, kind: ConfigMap}]\n      writes: []\n      httpHosts: [\"127.0.0.1\"]\n",
    );
    let SwapResult::Rejected(message) = f.configure(&entry).await? else {
        panic!("an entry past the ceiling must be refused");
    };
    assert!(
        message.contains(
            "grants reads ConfigMap/v1, HTTP host 127.0.0.1 past what this cluster allows"
        ) && message.contains("--plugin-grantable-"),
        "{message}"
    );
    assert_eq!(f.decision(), "true", "the last good version keeps serving");
    assert!(
        !f.slot
            .current()
            .capabilities()
            .may_read(&Gvk::new("", "v1", "ConfigMap"))
    );
    for _ in 0..8 {
        f.registry.retry_rejected().await;
    }
    let status = f.status().await?;
    assert_eq!(status["lastError"], json!(message), "{status}");
    let notes = common::rejection_notes(&f.t).await?;
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("past what this cluster allows"),
        "{notes:?}"
    );
    Ok(())
}

/// A plugin new to the host whose webhooks intercept a sensitive kind (Pods) joins only when
/// the ceiling names that kind; the same entry goes live under a ceiling that does.
#[tokio::test]
async fn a_new_plugin_intercepting_pods_needs_the_ceiling_to_name_them() -> anyhow::Result<()> {
    use odh_model_controller::plugin::PluginSet;
    use odh_model_controller::registry::{Ceiling, KindCeiling};
    let t = TestContext::new("swap-ceiling-pods").await?;
    let (_, misbehave) = odh_test_support::host::component("misbehave");
    let registry = |ceiling: Ceiling| {
        Registry::new(
            t.client.clone(),
            t.namespace.clone(),
            odh_test_support::host::engine(),
            PluginSet::new([]),
            odh_model_controller::builtins::catalog(),
        )
        .with_ceiling(ceiling)
    };
    let configmaps: Api<ConfigMap> = Api::namespaced(t.client.clone(), &t.namespace);
    let put = |name: &'static str, cm: ConfigMap| {
        let configmaps = configmaps.clone();
        async move {
            let mut cm = cm;
            cm.metadata.name = Some(name.into());
            configmaps
                .patch(
                    name,
                    &PatchParams::apply("test").force(),
                    &Patch::Apply(&cm),
                )
                .await
        }
    };
    put(
        "misbehave-plugin",
        ConfigMap {
            binary_data: Some(BTreeMap::from([(
                "plugin.wasm.gz".to_string(),
                ByteString(gzip(&misbehave)),
            )])),
            ..Default::default()
        },
    )
    .await?;
    let plugins = put(
        "odh-model-controller-plugins",
        ConfigMap {
            data: Some(BTreeMap::from([(
                "plugins.yaml".to_string(),
                format!(
                    "plugins:\n  misbehave:\n    source: configmap://misbehave-plugin/plugin.wasm.gz\n    sha256: {}\n    grants:\n      httpHosts: [\"127.0.0.1\", \"localhost\"]\n",
                    sha(&misbehave)
                ),
            )])),
            ..Default::default()
        },
    )
    .await?;

    let refusing = registry(Ceiling::default());
    let results = refusing
        .apply_configmap(Some(&plugins))
        .await
        .map_err(anyhow::Error::msg)?;
    match &results["misbehave"] {
        SwapResult::Rejected(m) => assert!(m.contains("a webhook on Pod/v1"), "{m}"),
        other => panic!("a Pod webhook past the ceiling must be refused, got {other:?}"),
    }
    assert!(refusing.plugins().get("misbehave").is_none());

    let admitting = registry(Ceiling {
        webhook_kinds: KindCeiling::parse(&["*".into(), "Pod".into()])
            .map_err(anyhow::Error::msg)?,
        ..Ceiling::default()
    });
    let results = admitting
        .apply_configmap(Some(&plugins))
        .await
        .map_err(anyhow::Error::msg)?;
    assert_eq!(results["misbehave"], SwapResult::Swapped(sha(&misbehave)));
    assert!(admitting.plugins().get("misbehave").is_some());
    Ok(())
}

/// Where the cluster requires signatures, an entry pinned by sha256 alone is refused before
/// anything is fetched, saying how to comply.
#[tokio::test]
async fn where_signatures_are_required_a_sha256_pin_alone_is_refused() -> anyhow::Result<()> {
    use odh_model_controller::registry::{Ceiling, SignatureRequirement};
    let t = TestContext::new("swap-ceiling-signed").await?;
    let (engine, slot, misbehave) = common::misbehave_slot()?;
    let f = Fixture {
        registry: common::registry(&t, engine, &slot).with_ceiling(Ceiling {
            signatures: SignatureRequirement::Required,
            ..Ceiling::default()
        }),
        t,
        slot,
        misbehave,
    };
    f.put_component("misbehave-plugin", &f.misbehave).await?;
    let entry = f.entry(
        "configmap://misbehave-plugin/plugin.wasm.gz",
        &sha(&f.misbehave),
        "    settings:\n      okLabel: unsigned\n",
    );
    let SwapResult::Rejected(message) = f.configure(&entry).await? else {
        panic!("an unsigned entry must be refused");
    };
    assert!(
        message.contains("--plugin-signatures=required") && message.contains("oci://"),
        "{message}"
    );
    assert_eq!(f.decision(), "true");
    assert_eq!(f.status().await?["lastError"], json!(message));
    Ok(())
}

/// A shadow that decides differently on every call: each call and difference is counted in the
/// plugin's status with the last difference as JSON pointers (not two whole outcomes), and the
/// log gets at most one line per period however many differ.
#[tokio::test]
async fn a_shadow_differing_on_every_call_is_counted_in_the_status_and_logged_once_a_period()
-> anyhow::Result<()> {
    use odh_model_controller::dispatch;
    let f = fixture("swap-shadow-stats").await?;
    f.put_component("misbehave-plugin", &f.misbehave).await?;
    let digest = sha(&f.misbehave);
    let entry = f.entry(
        "configmap://misbehave-plugin/plugin.wasm.gz",
        &digest,
        "    mode: shadow\n    settings:\n      okLabel: shadowed\n",
    );
    assert_eq!(f.configure(&entry).await?, SwapResult::Shadowed(digest));
    const CALLS: u64 = 40;
    for i in 0..CALLS {
        let input = odh_test_support::host::admission(
            "/mutate-misbehave",
            Operation::Create,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": format!("c{i}"), "namespace": "ns"}}),
        );
        let (_, decided) = dispatch::admit(
            &f.slot,
            WebhookType::Mutating,
            input,
            CallEnv::live(Arc::new(NoCluster)),
        )
        .await;
        decided?;
    }
    let (_, stats) = f.slot.shadow_with_stats().expect("a shadow runs");
    odh_test_support::eventually(
        "every shadow call is counted",
        odh_test_support::Timing::default(),
        || async {
            let s = stats.snapshot();
            anyhow::ensure!(s.calls == CALLS && s.differing == CALLS, "{s:?}");
            Ok(())
        },
    )
    .await?;
    f.registry.report_shadows().await;
    let status = f.status().await?;
    let shadow = &status["shadow"];
    assert_eq!(shadow["calls"], json!(CALLS), "{status}");
    assert_eq!(shadow["differing"], json!(CALLS), "{status}");
    assert_eq!(
        shadow["logged"],
        json!(1),
        "one log line for {CALLS} differences: {status}"
    );
    let last = shadow["lastDifference"].as_str().unwrap_or_default();
    assert!(
        last.starts_with("mutate ns/c") && last.contains("misbehave~1ok") && last.len() < 400,
        "a difference, as pointers: {last}"
    );
    assert!(
        shadow["since"].as_str().is_some_and(|s| s.ends_with('Z')),
        "{status}"
    );
    Ok(())
}
