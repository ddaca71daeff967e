//! Finalizers as upstream orders them (review D5): a deleting primary whose cleanup write fails
//! still loses the controller's finalizer and goes; the failure is reported, not swallowed. A
//! test binary of its own: the `owner` controllers of one binary see each other's primaries.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, PostParams};
use odh_test_support::cluster_checks::event_with;
use odh_test_support::host::{load, start_controllers};
use odh_test_support::{TestContext, Timing, eventually};
use tokio_util::sync::CancellationToken;

mod common;
use common::owner_primary;

const FINALIZER: &str = "odh-test.opendatahub.io/cleanup";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d5_a_failing_cleanup_write_does_not_keep_the_finalizer() -> anyhow::Result<()> {
    let t = TestContext::new("cleanup-failure").await?;
    let shutdown = CancellationToken::new();
    let started =
        start_controllers(t.client.clone(), vec![load("owner")], 2, shutdown.clone()).await?;
    let mut controllers = started.tasks;
    let cms: Api<ConfigMap> = t.api();
    // The cleanup writes a tombstone whose name the apiserver refuses: that write always fails.
    let mut cm = owner_primary("p", "v");
    cm.data
        .as_mut()
        .unwrap()
        .insert("tombstone".into(), "Not_A_Valid_Name".into());
    cms.create(&PostParams::default(), &cm).await?;
    eventually(
        "the primary carries the finalizer and its owned ConfigMap exists",
        Timing::default(),
        || async {
            let p = cms.get("p").await?;
            anyhow::ensure!(
                p.finalizers().iter().any(|f| f == FINALIZER),
                "{:?}",
                p.finalizers()
            );
            anyhow::ensure!(cms.get_opt("p-owned").await?.is_some(), "no owned object");
            Ok(())
        },
    )
    .await?;

    cms.delete("p", &DeleteParams::default()).await?;
    eventually(
        "the primary goes although its cleanup write fails",
        Timing::default(),
        || async {
            anyhow::ensure!(cms.get_opt("p").await?.is_none(), "still there");
            Ok(())
        },
    )
    .await?;
    // The other cleanup write (deleting the owned object) was not held back.
    assert!(cms.get_opt("p-owned").await?.is_none());
    let events: Api<k8s_openapi::api::events::v1::Event> = t.api();
    eventually(
        "the failed cleanup write is reported as an Event",
        Timing::default(),
        || event_with(&events, "ApplyFailed", "Not_A_Valid_Name"),
    )
    .await?;
    shutdown.cancel();
    while controllers.join_next().await.is_some() {}
    Ok(())
}
