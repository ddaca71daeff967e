//! Reads the host's caches cannot answer go to the API server (spec: connection Secrets,
//! HardwareProfiles and DSCInitializations are read live upstream): a kind no cache was started
//! for, or what a label-filtered cache does not hold; scoped to the asked namespace and
//! selector, shaped like cached objects; an unserved kind fails with the apiserver's "no
//! matches" wording.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::PostParams;
use odh_model_controller::cache::{CacheFilters, Caches};
use odh_model_controller::gvk::Gvk;
use odh_model_controller::label_selector::LabelSelector;
use odh_model_controller::plugin::ClusterView;
use odh_model_controller::plugin::wire::{ControllerSpec, Manifest, Mapping, Watch};
use odh_test_support::TestContext;
use serde_json::{Value, json};

const WITHIN: Duration = Duration::from_secs(10);

async fn config_maps(t: &TestContext, other: &TestContext) -> anyhow::Result<()> {
    for (ctx, name, team) in [(t, "a", "x"), (t, "b", "y"), (other, "c", "x")] {
        let cm: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"team": team}}, "data": {"k": "v"}}))?;
        ctx.api::<ConfigMap>()
            .create(&PostParams::default(), &cm)
            .await?;
    }
    Ok(())
}

fn names(listed: anyhow::Result<Vec<String>>) -> anyhow::Result<Vec<String>> {
    let mut names: Vec<String> = listed?
        .iter()
        .map(|s| serde_json::from_str::<Value>(s))
        .map(|v| {
            v.map(|v| {
                v["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
        })
        .collect::<Result<_, _>>()?;
    names.sort();
    Ok(names)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uncached_kinds_are_read_from_the_apiserver() -> anyhow::Result<()> {
    let t = TestContext::new("direct-reads").await?;
    let other = TestContext::new("direct-reads-other").await?;
    config_maps(&t, &other).await?;
    let caches = Caches::new(t.client.clone(), CacheFilters::default());
    let ns = t.namespace.clone();
    let (listed, got, unserved) = tokio::task::spawn_blocking(move || {
        let cm = Gvk::from_api_version("v1", "ConfigMap");
        let listed = caches.list(
            &cm,
            Some(&ns),
            &LabelSelector::parse("team=x").unwrap(),
            WITHIN,
        );
        let got = ClusterView::get(&*caches, &cm, Some(&ns), "b", WITHIN);
        let unserved = ClusterView::get(
            &*caches,
            &Gvk::from_api_version("example.com/v1", "Nothing"),
            Some(&ns),
            "x",
            WITHIN,
        );
        (listed, got, unserved)
    })
    .await?;
    let listed: Vec<Value> = listed?
        .iter()
        .map(|s| serde_json::from_str(s))
        .collect::<Result<_, _>>()?;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["metadata"]["name"], "a");
    assert_eq!(
        (listed[0]["apiVersion"].as_str(), listed[0]["kind"].as_str()),
        (Some("v1"), Some("ConfigMap"))
    );
    assert!(no_managed_fields(&listed[0]));
    let got: Value = serde_json::from_str(&got?.expect("b exists"))?;
    assert_eq!(got["metadata"]["labels"]["team"], "y");
    assert!(no_managed_fields(&got));
    let err = unserved.expect_err("an unserved kind").to_string();
    assert_eq!(
        err,
        "no matches for kind \"Nothing\" in version \"example.com/v1\""
    );
    Ok(())
}

/// A cache holds only what the plugins watch (here ConfigMaps labelled `team=x`); a plugin's
/// read is still complete: what the cache covers comes from it, the rest from the apiserver.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filtered_cache_answers_only_what_it_covers() -> anyhow::Result<()> {
    let t = TestContext::new("filtered-reads").await?;
    let other = TestContext::new("filtered-reads-other").await?;
    config_maps(&t, &other).await?;
    let cm = Gvk::from_api_version("v1", "ConfigMap");
    let manifest = Manifest {
        name: "p".into(),
        version: "0.1.0".into(),
        description: String::new(),
        controllers: vec![ControllerSpec {
            name: "p".into(),
            primary: Gvk::from_api_version("v1", "Namespace"),
            primary_label_selector: None,
            owns: vec![],
            watches: vec![Watch {
                gvk: cm.clone(),
                mapping: Mapping::Custom,
                label_selector: Some("team=x".into()),
                optional: false,
            }],
            finalizer: None,
            filters: Vec::new(),
        }],
        webhooks: vec![],
        reads: vec![cm.clone()],
        writes: vec![],
        http_hosts: vec![],
    };
    let caches = Caches::new(t.client.clone(), CacheFilters::from_manifests([&manifest]));
    let cache = caches.ensure(&cm).await?.expect("ConfigMaps are served");
    cache.wait_synced().await;
    let held: Vec<String> = cache.list().iter().map(|o| o.name().to_string()).collect();
    assert!(
        held.contains(&"a".to_string()) && held.contains(&"c".to_string()),
        "{held:?}"
    );
    assert!(!held.contains(&"b".to_string()), "filtered out: {held:?}");

    let ns = t.namespace.clone();
    let view: Arc<dyn ClusterView> = caches.clone();
    let (x, y, all, b) = tokio::task::spawn_blocking(move || {
        let select = |s: &str| LabelSelector::parse(s).unwrap();
        (
            view.list(&cm, Some(&ns), &select("team=x"), WITHIN),
            view.list(&cm, Some(&ns), &select("team=y"), WITHIN),
            view.list(&cm, Some(&ns), &LabelSelector::everything(), WITHIN),
            view.get(&cm, Some(&ns), "b", WITHIN),
        )
    })
    .await?;
    assert_eq!(names(x)?, ["a"], "covered by the cache");
    assert_eq!(names(y)?, ["b"], "outside the cache's filter: read live");
    assert_eq!(names(all)?, ["a", "b"], "wider than the filter: read live");
    assert!(b?.is_some(), "a get of an object the cache does not hold");
    Ok(())
}

/// As in the caches: managedFields emptied (the field may remain as `[]`).
fn no_managed_fields(object: &Value) -> bool {
    object["metadata"]
        .get("managedFields")
        .is_none_or(|m| m.as_array().is_some_and(Vec::is_empty))
}
