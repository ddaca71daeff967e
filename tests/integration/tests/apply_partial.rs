//! A write that fails does not hold back the outcome's other writes, and the failure reaches
//! the object as a Warning Event (a test binary of its own: the `owner` controllers of one
//! binary see each other's primaries, and this primary keeps failing).

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use odh_test_support::cluster_checks::event_with;
use odh_test_support::host::{load, start_controllers};
use odh_test_support::{TestContext, Timing, eventually};
use tokio_util::sync::CancellationToken;

mod common;
use common::owner_primary;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_write_does_not_hold_back_the_others_and_is_reported() -> anyhow::Result<()> {
    let t = TestContext::new("apply-partial").await?;
    let shutdown = CancellationToken::new();
    let started =
        start_controllers(t.client.clone(), vec![load("owner")], 2, shutdown.clone()).await?;
    let mut controllers = started.tasks;
    let cms: Api<ConfigMap> = t.api();
    // The shared object (applied first) has a name the apiserver refuses.
    let mut cm = owner_primary("p", "v");
    cm.data
        .as_mut()
        .unwrap()
        .insert("shared".into(), "Not_A_Valid_Name".into());
    cms.create(&PostParams::default(), &cm).await?;
    eventually(
        "the owned ConfigMap is still applied",
        Timing::default(),
        || async {
            cms.get_opt("p-owned")
                .await?
                .map(|_| ())
                .ok_or_else(|| anyhow::anyhow!("not yet"))
        },
    )
    .await?;
    let events: Api<k8s_openapi::api::events::v1::Event> = t.api();
    eventually(
        "the failure is reported as an Event",
        Timing::default(),
        || event_with(&events, "ApplyFailed", "Not_A_Valid_Name"),
    )
    .await?;
    // Leave nothing that keeps failing for the `owner` controllers of later test binaries.
    cms.delete("p", &Default::default()).await?;
    eventually("the primary is gone", Timing::default(), || async {
        match cms.get_opt("p").await? {
            None => Ok(()),
            Some(_) => anyhow::bail!("still there"),
        }
    })
    .await?;
    shutdown.cancel();
    while controllers.join_next().await.is_some() {}
    Ok(())
}
