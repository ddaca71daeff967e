//! Reads the host's caches cannot answer go to the API server (spec: connection Secrets,
//! HardwareProfiles and DSCInitializations are read live upstream): a kind no cache was started
//! for, scoped to the asked namespace and selector, shaped like cached objects; an unserved
//! kind fails with the apiserver's "no matches" wording.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::PostParams;
use odh_model_controller::cache::Caches;
use odh_model_controller::gvk::Gvk;
use odh_model_controller::label_selector::LabelSelector;
use odh_model_controller::plugin::ClusterView;
use odh_test_support::TestContext;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uncached_kinds_are_read_from_the_apiserver() -> anyhow::Result<()> {
    let t = TestContext::new("direct-reads").await?;
    let other = TestContext::new("direct-reads-other").await?;
    for (ctx, name, team) in [(&t, "a", "x"), (&t, "b", "y"), (&other, "c", "x")] {
        let cm: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"team": team}}, "data": {"k": "v"}}))?;
        ctx.api::<ConfigMap>()
            .create(&PostParams::default(), &cm)
            .await?;
    }
    let caches = Caches::new(t.client.clone());
    let ns = t.namespace.clone();
    let (listed, got, unserved) = tokio::task::spawn_blocking(move || {
        let cm = Gvk::from_api_version("v1", "ConfigMap");
        let listed = caches.list(&cm, Some(&ns), &LabelSelector::parse("team=x").unwrap());
        let got = ClusterView::get(&*caches, &cm, Some(&ns), "b");
        let unserved = ClusterView::get(
            &*caches,
            &Gvk::from_api_version("example.com/v1", "Nothing"),
            Some(&ns),
            "x",
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

/// As in the caches: managedFields emptied (the field may remain as `[]`).
fn no_managed_fields(object: &Value) -> bool {
    object["metadata"]
        .get("managedFields")
        .is_none_or(|m| m.as_array().is_some_and(Vec::is_empty))
}
