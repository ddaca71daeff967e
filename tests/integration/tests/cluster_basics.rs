//! The foundation: CRDs install on the real apiserver, watches see changes, server-side apply
//! round-trips with a field manager.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::watcher::{self, Event};
use odh_crd_types::account::{Account, AccountSpec};
use odh_test_support::{TestContext, Timing, consistently, eventually};
use serde_json::json;

fn account(name: &str) -> Account {
    Account::new(
        name,
        AccountSpec {
            api_key_secret: ObjectReference {
                name: Some("ngc-key".into()),
                ..Default::default()
            },
            model_list_config: None,
            validation_refresh_rate: "12h".into(),
            nim_config_refresh_rate: "24h".into(),
        },
    )
}

#[tokio::test]
async fn account_crd_is_served_with_defaults_and_status_subresource() -> anyhow::Result<()> {
    let t = TestContext::new("account-crd").await?;
    let api: Api<Account> = t.api();
    // Defaulting happens server-side: omit the rates entirely in a raw create.
    let raw = json!({
        "apiVersion": "nim.opendatahub.io/v1", "kind": "Account",
        "metadata": {"name": "defaults"},
        "spec": {"apiKeySecret": {"name": "ngc-key"}}
    });
    let created: Account = api
        .create(&PostParams::default(), &serde_json::from_value(raw)?)
        .await?;
    assert_eq!(created.spec.validation_refresh_rate, "24h");
    assert_eq!(created.spec.nim_config_refresh_rate, "24h");

    // Status is a subresource: a main-resource update ignores it, a status patch sets it.
    let status = json!({"status": {"lastAccountCheck": "2026-01-02T03:04:05Z"}});
    api.patch_status("defaults", &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    let got = api.get("defaults").await?;
    assert_eq!(
        got.status
            .and_then(|s| s.last_account_check)
            .map(|t| t.0.to_string()),
        Some("2026-01-02T03:04:05Z".to_string())
    );
    Ok(())
}

#[tokio::test]
async fn watch_sees_an_update_of_an_account() -> anyhow::Result<()> {
    let t = TestContext::new("account-watch").await?;
    let api: Api<Account> = t.api();
    api.create(&PostParams::default(), &account("watched"))
        .await?;

    let mut stream = watcher::watcher(
        api.clone(),
        watcher::Config::default().fields("metadata.name=watched"),
    )
    .boxed();
    // Wait until the initial list is delivered, then change the object.
    loop {
        match tokio::time::timeout(Duration::from_secs(30), stream.next()).await? {
            Some(Ok(Event::InitDone)) => break,
            Some(Err(e)) => return Err(e.into()),
            _ => {}
        }
    }
    let patch = json!({"spec": {"validationRefreshRate": "1h"}});
    api.patch("watched", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    let seen = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(event) = stream.next().await {
            if let Event::Apply(obj) = event?
                && obj.spec.validation_refresh_rate == "1h"
            {
                return Ok::<_, anyhow::Error>(obj);
            }
        }
        anyhow::bail!("watch ended")
    })
    .await??;
    assert_eq!(seen.metadata.name.as_deref(), Some("watched"));
    Ok(())
}

#[tokio::test]
async fn test_crd_objects_round_trip_through_a_watch() -> anyhow::Result<()> {
    let t = TestContext::new("isvc-watch").await?;
    let gvk = GroupVersionKind::gvk("serving.kserve.io", "v1beta1", "InferenceService");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "inferenceservices");
    let api: Api<DynamicObject> = Api::namespaced_with(t.client.clone(), &t.namespace, &ar);
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
        "metadata": {"name": "model"},
        "spec": {"predictor": {"model": {"modelFormat": {"name": "onnx"}, "unknownField": 7}}}
    }))?;
    api.create(&PostParams::default(), &obj).await?;

    let mut stream = watcher::watcher(api.clone(), watcher::Config::default()).boxed();
    let patch = json!({"metadata": {"labels": {"touched": "yes"}}});
    let mut patched = false;
    let seen = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(event) = stream.next().await {
            match event? {
                Event::InitDone if !patched => {
                    api.patch("model", &PatchParams::default(), &Patch::Merge(&patch))
                        .await?;
                    patched = true;
                }
                Event::Apply(o) if o.labels().get("touched").is_some() => {
                    return Ok::<_, anyhow::Error>(o);
                }
                _ => {}
            }
        }
        anyhow::bail!("watch ended")
    })
    .await??;
    // preserve-unknown-fields keeps what we do not model.
    assert_eq!(seen.data["spec"]["predictor"]["model"]["unknownField"], 7);
    Ok(())
}

use kube::ResourceExt;

#[tokio::test]
async fn server_side_apply_round_trips_and_an_identical_apply_is_a_no_op() -> anyhow::Result<()> {
    let t = TestContext::new("ssa").await?;
    let api: Api<ConfigMap> = t.api();
    let params = PatchParams::apply("odh-model-controller");
    let desired = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "applied", "labels": {"app": "x"}},
        "data": {"k": "v"}
    });
    let first = api
        .patch("applied", &params, &Patch::Apply(&desired))
        .await?;
    assert_eq!(first.data.as_ref().unwrap()["k"], "v");
    let managers: Vec<String> = first
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.manager.clone())
        .collect();
    assert_eq!(managers, vec!["odh-model-controller".to_string()]);

    let second = api
        .patch("applied", &params, &Patch::Apply(&desired))
        .await?;
    assert_eq!(
        first.resource_version(),
        second.resource_version(),
        "an identical apply must not write"
    );

    consistently(
        "nothing else changes the object",
        Timing::within(Duration::from_millis(500)),
        || async {
            let now = api.get("applied").await?;
            anyhow::ensure!(
                now.resource_version() == first.resource_version(),
                "resourceVersion moved"
            );
            Ok(())
        },
    )
    .await?;

    // A changed apply does write, and removes fields the manager stopped declaring.
    let changed = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "applied"},
        "data": {"k": "v2"}
    });
    let third = api
        .patch("applied", &params, &Patch::Apply(&changed))
        .await?;
    assert_ne!(third.resource_version(), first.resource_version());
    assert!(
        third.labels().get("app").is_none(),
        "a field no longer applied is removed"
    );
    eventually("the new value is visible", Timing::default(), || async {
        let now = api.get("applied").await?;
        anyhow::ensure!(now.data.unwrap_or_default()["k"] == "v2");
        Ok(())
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn every_shipped_crd_is_established() -> anyhow::Result<()> {
    let t = TestContext::new("crds").await?;
    let expected: usize = odh_test_support::crd_dirs()
        .iter()
        .map(|d| odh_test_support::crds::load_dir(d).map(|c| c.len()))
        .sum::<anyhow::Result<usize>>()?;
    assert!(
        expected >= 21,
        "deploy/crds + tests/crds hold {expected} CRDs"
    );
    // Installing again is idempotent and waits for Established on every one.
    let names = odh_test_support::crds::install(&t.client, &odh_test_support::crd_dirs()).await?;
    assert_eq!(names.len(), expected);
    assert!(names.contains(&"accounts.nim.opendatahub.io".to_string()));
    assert!(names.contains(&"inferenceservices.serving.kserve.io".to_string()));
    Ok(())
}
