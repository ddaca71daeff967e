//! The host's reconcile machinery on the real apiserver, driven by the `owner` test plugin:
//! owned objects with controller references, hand edits reverted, no writes for a no-op
//! reconcile, finalizers run on deletion.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use odh_test_support::host::{load, start_controllers};
use odh_test_support::{TestContext, Timing, consistently, eventually};
use serde_json::json;
use tokio_util::sync::CancellationToken;

mod common;
use common::owner_primary;

const FINALIZER: &str = "odh-test.opendatahub.io/cleanup";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owned_config_map_lifecycle() -> anyhow::Result<()> {
    let t = TestContext::new("reconcile").await?;
    let shutdown = CancellationToken::new();
    let started =
        start_controllers(t.client.clone(), vec![load("owner")], 2, shutdown.clone()).await?;
    let (shared, mut controllers) = (started.ctx, started.tasks);

    let cms: Api<ConfigMap> = t.api();
    let created = cms
        .create(&PostParams::default(), &owner_primary("p1", "v1"))
        .await?;
    let uid = created.uid().unwrap();

    // The owned object appears with a controller owner reference; the primary gets the finalizer.
    let owned = eventually("p1-owned exists", Timing::default(), || async {
        cms.get_opt("p1-owned")
            .await?
            .ok_or_else(|| anyhow::anyhow!("not yet"))
    })
    .await?;
    let refs = owned.owner_references();
    assert_eq!(refs.len(), 1);
    assert_eq!(
        (
            refs[0].uid.as_str(),
            refs[0].kind.as_str(),
            refs[0].controller
        ),
        (uid.as_str(), "ConfigMap", Some(true))
    );
    assert_eq!(owned.data.as_ref().unwrap()["value"], "v1");
    eventually(
        "the primary carries the finalizer",
        Timing::default(),
        || async {
            let p = cms.get("p1").await?;
            anyhow::ensure!(
                p.finalizers().iter().any(|f| f == FINALIZER),
                "finalizers: {:?}",
                p.finalizers()
            );
            Ok(())
        },
    )
    .await?;

    // A hand edit of the owned object is reverted.
    let edit = json!({"data": {"value": "hacked"}});
    cms.patch(
        "p1-owned",
        &PatchParams {
            field_manager: Some("kubectl-edit".into()),
            ..Default::default()
        },
        &Patch::Merge(&edit),
    )
    .await?;
    eventually("the hand edit is reverted", Timing::default(), || async {
        let o = cms.get("p1-owned").await?;
        anyhow::ensure!(
            o.data.as_ref().unwrap()["value"] == "v1",
            "value is {:?}",
            o.data
        );
        Ok(())
    })
    .await?;

    // Let the controller settle, then a reconcile of an unchanged object writes nothing.
    consistently(
        "the controller is idle",
        Timing::within(Duration::from_millis(500)),
        || async { Ok(()) },
    )
    .await?;
    let writes_before = shared.applier.write_count();
    let reconciles_before = shared.reconcile_count();
    let owned_rv = cms.get("p1-owned").await?.resource_version();
    let touch = json!({"metadata": {"annotations": {"touched": "yes"}}});
    cms.patch("p1", &PatchParams::default(), &Patch::Merge(&touch))
        .await?;
    eventually(
        "the touched primary is reconciled",
        Timing::default(),
        || async {
            anyhow::ensure!(
                shared.reconcile_count() > reconciles_before,
                "no reconcile yet"
            );
            Ok(())
        },
    )
    .await?;
    consistently(
        "a no-op reconcile makes no writes",
        Timing::within(Duration::from_secs(1)),
        || async {
            anyhow::ensure!(
                shared.applier.write_count() == writes_before,
                "{} writes",
                shared.applier.write_count() - writes_before
            );
            Ok(())
        },
    )
    .await?;
    assert_eq!(cms.get("p1-owned").await?.resource_version(), owned_rv);

    // A real change flows through.
    cms.patch(
        "p1",
        &PatchParams::default(),
        &Patch::Merge(&json!({"data": {"value": "v2"}})),
    )
    .await?;
    eventually(
        "the owned object follows the primary",
        Timing::default(),
        || async {
            let o = cms.get("p1-owned").await?;
            anyhow::ensure!(o.data.as_ref().unwrap()["value"] == "v2");
            Ok(())
        },
    )
    .await?;

    // Deleting the primary runs the plugin's cleanup and removes the finalizer: both objects go.
    cms.delete("p1", &DeleteParams::default()).await?;
    eventually(
        "the owned object is deleted by the finalizer",
        Timing::default(),
        || async {
            anyhow::ensure!(cms.get_opt("p1-owned").await?.is_none(), "still there");
            Ok(())
        },
    )
    .await?;
    eventually(
        "the primary is gone once its finalizer is removed",
        Timing::default(),
        || async {
            anyhow::ensure!(cms.get_opt("p1").await?.is_none(), "still there");
            Ok(())
        },
    )
    .await?;

    // Objects without the label are not the controller's business.
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "plain"}}))?,
    )
    .await?;
    consistently(
        "unlabelled ConfigMaps are ignored",
        Timing::within(Duration::from_secs(1)),
        || async {
            anyhow::ensure!(
                cms.get_opt("plain-owned").await?.is_none(),
                "reconciled an unlabelled ConfigMap"
            );
            Ok(())
        },
    )
    .await?;

    shutdown.cancel();
    while controllers.join_next().await.is_some() {}
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_object_keeps_one_owner_reference_per_primary() -> anyhow::Result<()> {
    let t = TestContext::new("shared-owner").await?;
    let shutdown = CancellationToken::new();
    let started =
        start_controllers(t.client.clone(), vec![load("owner")], 2, shutdown.clone()).await?;
    let mut controllers = started.tasks;
    let cms: Api<ConfigMap> = t.api();
    let mut uids = Vec::new();
    for name in ["s1", "s2", "s3"] {
        let mut cm = owner_primary(name, name);
        cm.data
            .as_mut()
            .unwrap()
            .insert("shared".into(), "common".into());
        uids.push(
            cms.create(&PostParams::default(), &cm)
                .await?
                .uid()
                .unwrap(),
        );
    }
    uids.sort();
    eventually(
        "the shared ConfigMap is owned by all three primaries",
        Timing::default(),
        || async {
            let common = cms
                .get_opt("common")
                .await?
                .ok_or_else(|| anyhow::anyhow!("not created yet"))?;
            let mut owners: Vec<String> = common
                .owner_references()
                .iter()
                .map(|r| r.uid.clone())
                .collect();
            owners.sort();
            anyhow::ensure!(owners == uids, "owners {owners:?}");
            anyhow::ensure!(
                common
                    .owner_references()
                    .iter()
                    .all(|r| r.controller == Some(false) && r.block_owner_deletion == Some(true)),
                "plain blocking owners only"
            );
            Ok(())
        },
    )
    .await?;
    shutdown.cancel();
    while controllers.join_next().await.is_some() {}
    Ok(())
}
