//! A controller's primary label selector, on the real apiserver with the `owner` test plugin: a
//! primary that loses the label is reconciled once more, as gone, so the plugin removes what it
//! made, and the host lets go of the controller's finalizer on it; the same whether the shared
//! cache holds every ConfigMap (the plugin also owns ConfigMaps) or only the selected ones
//! (the selector is the cache's filter, and the object leaving it is reported deleted).

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use odh_model_controller::cache::CacheFilters;
use odh_model_controller::gvk::Gvk;
use odh_test_support::host::{load, start_controllers, start_controllers_with};
use odh_test_support::{TestContext, Timing, absent, eventually, exists};
use serde_json::json;
use tokio_util::sync::CancellationToken;

mod common;
use common::owner_primary;

const FINALIZER: &str = "odh-test.opendatahub.io/cleanup";
const LABEL: &str = "odh-test/primary";

/// The controllers watch every namespace: two tests of this binary running at once would each
/// reconcile the other's primaries (and could pass on the other's cache).
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn set_label(cms: &Api<ConfigMap>, name: &str, value: Option<&str>) -> anyhow::Result<()> {
    let patch = json!({"metadata": {"labels": {LABEL: value}}});
    cms.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

async fn finalized(cms: &Api<ConfigMap>, name: &str, want: bool) -> anyhow::Result<()> {
    let what = if want {
        format!("{name} carries the finalizer")
    } else {
        format!("{name} is released from the finalizer")
    };
    eventually(&what, Timing::default(), || async {
        let has = cms
            .get(name)
            .await?
            .finalizers()
            .iter()
            .any(|f| f == FINALIZER);
        anyhow::ensure!(has == want, "finalizer present: {has}");
        Ok(())
    })
    .await
}

/// Creates a primary, takes its label away twice (putting it back in between) and checks each
/// time that its owned ConfigMap goes and the finalizer is released; then deletes it.
async fn leave_the_selector(t: &TestContext) -> anyhow::Result<()> {
    let cms: Api<ConfigMap> = t.api();
    cms.create(&PostParams::default(), &owner_primary("p", "v1"))
        .await?;
    exists(&cms, "p-owned").await?;
    finalized(&cms, "p", true).await?;

    for _ in 0..2 {
        set_label(&cms, "p", None).await?;
        // Only a reconcile after the label went deletes it: nothing else removes it (the test
        // apiserver has no garbage collector, and the primary still exists anyway).
        absent(&cms, "p-owned").await?;
        finalized(&cms, "p", false).await?;

        set_label(&cms, "p", Some("true")).await?;
        exists(&cms, "p-owned").await?;
        finalized(&cms, "p", true).await?;
    }

    set_label(&cms, "p", None).await?;
    finalized(&cms, "p", false).await?;
    cms.delete("p", &DeleteParams::default()).await?;
    absent(&cms, "p").await?;
    Ok(())
}

fn config_map() -> Gvk {
    Gvk::new("", "v1", "ConfigMap")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_primary_that_loses_its_label_is_reconciled_as_gone_and_released() -> anyhow::Result<()> {
    let _serial = ONE_AT_A_TIME.lock().await;
    let t = TestContext::new("selector-leave").await?;
    let shutdown = CancellationToken::new();
    let started =
        start_controllers(t.client.clone(), vec![load("owner")], 1, shutdown.clone()).await?;
    let cache = started
        .ctx
        .caches
        .get(&config_map())
        .expect("ConfigMaps cached");
    assert!(
        cache.filter.is_none(),
        "owned ConfigMaps make the cache whole"
    );

    leave_the_selector(&t).await?;
    shutdown.cancel();
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_primary_that_leaves_a_label_filtered_cache_is_reconciled_as_gone_and_released()
-> anyhow::Result<()> {
    let _serial = ONE_AT_A_TIME.lock().await;
    let t = TestContext::new("selector-leave-filtered").await?;
    let owner = load("owner");
    // As the caches would be if the plugin declared only its primary: ConfigMaps cached with
    // the primary's selector.
    let mut primary_only = owner.manifest().clone();
    primary_only.controllers[0].owns.clear();
    let filters = CacheFilters::from_manifests([&primary_only]);
    let shutdown = CancellationToken::new();
    let started =
        start_controllers_with(t.client.clone(), vec![owner], filters, 1, shutdown.clone()).await?;
    let cache = started
        .ctx
        .caches
        .get(&config_map())
        .expect("ConfigMaps cached");
    assert_eq!(
        cache.filter.as_ref().map(|f| f.to_string()),
        Some(format!("{LABEL}=true"))
    );

    leave_the_selector(&t).await?;
    shutdown.cancel();
    Ok(())
}
