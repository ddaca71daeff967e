//! The `llm-gateway` plugin's `gateway-auth-bootstrap` controller on the real apiserver
//! (docs/plugins/llm-gateway.md, "Gateway controller `gateway-auth-bootstrap`"; scenarios
//! GC-01..GC-26, and the acceptance of issue 14: the default gateway gets its three objects with no
//! LLMInferenceService, opting out deletes only what we manage). One host runs the built
//! `target/plugins/llm-gateway.wasm` for the whole binary, with `podNamespace` set to a system
//! namespace of its own; each test works in namespaces of its own. The Gateway, EnvoyFilter,
//! AuthPolicy, PodMonitor, Kuadrant and Authorino CRDs come from `tests/crds` (no Kuadrant or
//! Authorino object: Kuadrant namespace `kuadrant-system`, Authorino TLS on, as the spec's
//! fixture).

use std::sync::OnceLock;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use odh_model_controller::plugin::record::Recorder;
use odh_test_support::host::{
    RunningControllers, controllers_running, load_with, quiet, reconciled_names, record_every_call,
};
use odh_test_support::namespace::unique_name;
use odh_test_support::{TestContext, Timing, absent, consistently, eventually, exists};
use serde_json::{Value, json};

const MANAGED: &str = "opendatahub.io/managed";
const BOOTSTRAP: &str = "security.opendatahub.io/authorino-tls-bootstrap";
const STOP: &str = "serving.kserve.io/stop";
const SCRAPE: &str = "monitoring.opendatahub.io/scrape";
const DEFAULT_NS: &str = "openshift-ingress";
const DEFAULT_GW: &str = "openshift-ai-inference";

/// The controllers' system namespace (`podNamespace`), made by the first test that needs it.
fn system_ns() -> &'static str {
    static NS: OnceLock<String> = OnceLock::new();
    NS.get_or_init(|| unique_name("gw-system"))
}

/// The controllers, once per test binary. Called after the test's `TestContext` exists, so the
/// CRDs it installs are served before the host first resolves their kinds.
fn start() -> &'static RunningControllers {
    controllers_running(
        || {
            vec![load_with("llm-gateway", |r| {
                r.settings(json!({"podNamespace": system_ns()}))
            })]
        },
        2,
    )
}

fn api(
    t: &TestContext,
    ns: &str,
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
) -> Api<DynamicObject> {
    let resource = kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk(group, version, kind),
        plural,
    );
    Api::namespaced_with(t.client.clone(), ns, &resource)
}

fn gateways(t: &TestContext, ns: &str) -> Api<DynamicObject> {
    api(
        t,
        ns,
        "gateway.networking.k8s.io",
        "v1",
        "Gateway",
        "gateways",
    )
}

fn filters(t: &TestContext, ns: &str) -> Api<DynamicObject> {
    api(
        t,
        ns,
        "networking.istio.io",
        "v1alpha3",
        "EnvoyFilter",
        "envoyfilters",
    )
}

fn policies(t: &TestContext, ns: &str) -> Api<DynamicObject> {
    api(t, ns, "kuadrant.io", "v1", "AuthPolicy", "authpolicies")
}

fn monitors(t: &TestContext, ns: &str) -> Api<DynamicObject> {
    api(
        t,
        ns,
        "monitoring.coreos.com",
        "v1",
        "PodMonitor",
        "podmonitors",
    )
}

fn services(t: &TestContext, ns: &str) -> Api<DynamicObject> {
    api(
        t,
        ns,
        "serving.kserve.io",
        "v1alpha2",
        "LLMInferenceService",
        "llminferenceservices",
    )
}

fn short() -> Timing {
    Timing::within(Duration::from_secs(2))
}

async fn create_namespace(t: &TestContext, name: &str, labels: Value) -> anyhow::Result<()> {
    let ns: Namespace =
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}}))?;
    match Api::<Namespace>::all(t.client.clone())
        .create(&PostParams::default(), &ns)
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// A Gateway with one HTTP listener `http` :80, `from` its allowedRoutes namespaces (none:
/// no allowedRoutes), and these labels, annotations and owner references.
async fn create_gateway(
    t: &TestContext,
    ns: &str,
    name: &str,
    from: Option<Value>,
    metadata: Value,
) -> anyhow::Result<DynamicObject> {
    let mut listener = json!({"name": "http", "port": 80, "protocol": "HTTP"});
    if let Some(namespaces) = from {
        listener["allowedRoutes"] = json!({ "namespaces": namespaces });
    }
    let mut meta = metadata;
    meta["name"] = name.into();
    let gw = json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": meta,
                    "spec": {"gatewayClassName": "openshift-default", "listeners": [listener]}});
    Ok(gateways(t, ns)
        .create(&PostParams::default(), &serde_json::from_value(gw)?)
        .await?)
}

/// An LLMInferenceService with gateway refs `(namespace, name)`.
async fn create_service(
    t: &TestContext,
    ns: &str,
    name: &str,
    refs: &[(&str, &str)],
) -> anyhow::Result<()> {
    let mut spec = json!({"model": {"uri": "hf://facebook/opt-125m"}});
    if !refs.is_empty() {
        let refs: Vec<Value> = refs
            .iter()
            .map(|(n, g)| json!({"name": g, "namespace": n}))
            .collect();
        spec["router"] = json!({"gateway": {"refs": refs}});
    }
    let svc = json!({"apiVersion": "serving.kserve.io/v1alpha2", "kind": "LLMInferenceService",
                     "metadata": {"name": name}, "spec": spec});
    services(t, ns)
        .create(&PostParams::default(), &serde_json::from_value(svc)?)
        .await?;
    Ok(())
}

async fn merge(api: &Api<DynamicObject>, name: &str, patch: Value) -> anyhow::Result<()> {
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await?;
    Ok(())
}

/// Exactly one owner reference: the Gateway, as controller.
fn assert_owned_by(object: &DynamicObject, gateway: &DynamicObject) {
    let owners = object.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(owners.len(), 1, "{owners:?}");
    let owner = &owners[0];
    assert_eq!(owner.api_version, "gateway.networking.k8s.io/v1");
    assert_eq!(owner.kind, "Gateway");
    assert_eq!(Some(&owner.name), gateway.metadata.name.as_ref());
    assert_eq!(Some(&owner.uid), gateway.metadata.uid.as_ref());
    assert_eq!(owner.controller, Some(true));
    assert_eq!(owner.block_owner_deletion, Some(true));
}

/// Stays absent for a while (the controller had the chance to make it).
async fn stays_absent(api: &Api<DynamicObject>, name: &str) -> anyhow::Result<()> {
    consistently(&format!("{name} stays absent"), short(), || async {
        anyhow::ensure!(api.get_opt(name).await?.is_none(), "{name} exists");
        Ok(())
    })
    .await
}

async fn stays_present(api: &Api<DynamicObject>, name: &str) -> anyhow::Result<()> {
    consistently(&format!("{name} stays"), short(), || async {
        anyhow::ensure!(api.get_opt(name).await?.is_some(), "{name} is gone");
        Ok(())
    })
    .await
}

/// Waits until `name` exists again with another uid than `old`.
async fn recreated(
    api: &Api<DynamicObject>,
    name: &str,
    old: Option<String>,
) -> anyhow::Result<DynamicObject> {
    eventually(
        &format!("{name} is made again"),
        Timing::default(),
        || async {
            match api.get_opt(name).await? {
                Some(o) if o.metadata.uid != old && o.metadata.deletion_timestamp.is_none() => {
                    Ok(o)
                }
                _ => anyhow::bail!("not yet"),
            }
        },
    )
    .await
}

/// The spec's "referenced GW": managed gateway `test-gateway` (listener without allowedRoutes)
/// in the test namespace and `test-llmisvc` referencing it; EF and AP exist.
async fn referenced_gateway(t: &TestContext) -> anyhow::Result<DynamicObject> {
    let ns = t.namespace.as_str();
    let gw = create_gateway(t, ns, "test-gateway", None, json!({})).await?;
    create_service(t, ns, "test-llmisvc", &[(ns, "test-gateway")]).await?;
    exists(&filters(t, ns), "test-gateway-authn-ssl").await?;
    exists(&policies(t, ns), "test-gateway-authn").await?;
    Ok(gw)
}

/// GC-01, GC-16, GC-21, GC-22 (and LC-05, which expects the same): a referenced gateway's
/// EnvoyFilter, AuthPolicy and PodMonitor, each with exactly one owner reference, the Gateway as
/// controller.
#[tokio::test]
async fn gc_01_gc_16_gc_21_gc_22_referenced_gateway_objects() -> anyhow::Result<()> {
    let t = TestContext::new("gw-gc01").await?;
    start();
    let ns = t.namespace.clone();
    let gw = referenced_gateway(&t).await?;
    let filter = exists(&filters(&t, &ns), "test-gateway-authn-ssl").await?;
    let policy = exists(&policies(&t, &ns), "test-gateway-authn").await?;
    let monitor = exists(&monitors(&t, &ns), "test-gateway-metrics").await?;
    for object in [&filter, &policy, &monitor] {
        assert_owned_by(object, &gw);
        assert_eq!(
            object.metadata.labels.as_ref().unwrap()["app.kubernetes.io/managed-by"],
            "odh-model-controller"
        );
    }
    assert_eq!(
        policy.data["spec"]["targetRef"],
        json!({"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "test-gateway"})
    );
    assert_eq!(
        policy.data["spec"]["rules"]["authentication"]["kubernetes-user"]["kubernetesTokenReview"]
            ["audiences"],
        json!(["https://kubernetes.default.svc"])
    );
    assert_eq!(
        filter.data["spec"]["configPatches"][0]["match"]["cluster"]["service"],
        "authorino-authorino-authorization.kuadrant-system.svc.cluster.local"
    );
    assert_eq!(
        monitor.data["spec"]["selector"]["matchLabels"]["gateway.networking.k8s.io/gateway-name"],
        "test-gateway"
    );
    Ok(())
}

/// GC-02, GC-23: a managed gateway nobody references never gets an EF, AP or PM.
#[tokio::test]
async fn gc_02_gc_23_unreferenced_gateway_gets_nothing() -> anyhow::Result<()> {
    let t = TestContext::new("gw-gc02").await?;
    start();
    let ns = t.namespace.clone();
    create_gateway(&t, &ns, "lonely", None, json!({})).await?;
    stays_absent(&filters(&t, &ns), "lonely-authn-ssl").await?;
    stays_absent(&policies(&t, &ns), "lonely-authn").await?;
    stays_absent(&monitors(&t, &ns), "lonely-metrics").await
}

fn gateway_config_owner() -> Value {
    json!([{"apiVersion": "services.platform.opendatahub.io/v1alpha1", "kind": "GatewayConfig",
            "name": "default-gateway", "uid": "6f0c1b8e-0000-4000-8000-000000000001", "controller": true}])
}

/// GC-03, GC-04, GC-05, GC-06: unmanaged or platform-owned gateways get nothing unless the
/// bootstrap annotation asks for the EnvoyFilter, which then comes alone.
#[tokio::test]
async fn gc_03_to_gc_06_unmanaged_platform_owned_and_bootstrap() -> anyhow::Result<()> {
    let t = TestContext::new("gw-gc03").await?;
    start();
    let ns = t.namespace.clone();
    let unmanaged = json!({"labels": {MANAGED: "false"}});
    let owned = json!({"ownerReferences": gateway_config_owner()});
    create_gateway(&t, &ns, "gc03", None, unmanaged.clone()).await?;
    create_gateway(&t, &ns, "gc04", None, owned.clone()).await?;
    let mut bootstrap_unmanaged = unmanaged;
    bootstrap_unmanaged["annotations"] = json!({BOOTSTRAP: "true"});
    create_gateway(&t, &ns, "gc05", None, bootstrap_unmanaged).await?;
    let mut bootstrap_owned = owned;
    bootstrap_owned["annotations"] = json!({BOOTSTRAP: "true"});
    create_gateway(&t, &ns, "gc06", None, bootstrap_owned).await?;
    exists(&filters(&t, &ns), "gc05-authn-ssl").await?;
    exists(&filters(&t, &ns), "gc06-authn-ssl").await?;
    for gw in ["gc03", "gc04"] {
        stays_absent(&filters(&t, &ns), &format!("{gw}-authn-ssl")).await?;
    }
    for gw in ["gc03", "gc04", "gc05", "gc06"] {
        stays_absent(&policies(&t, &ns), &format!("{gw}-authn")).await?;
        stays_absent(&monitors(&t, &ns), &format!("{gw}-metrics")).await?;
    }
    Ok(())
}

/// GC-07: the bootstrap annotation removed from an unmanaged gateway: its EnvoyFilter goes.
#[tokio::test]
async fn gc_07_bootstrap_removed_deletes_the_filter() -> anyhow::Result<()> {
    let t = TestContext::new("gw-gc07").await?;
    start();
    let ns = t.namespace.clone();
    let meta = json!({"labels": {MANAGED: "false"}, "annotations": {BOOTSTRAP: "true"}});
    create_gateway(&t, &ns, "boot", None, meta).await?;
    exists(&filters(&t, &ns), "boot-authn-ssl").await?;
    merge(
        &gateways(&t, &ns),
        "boot",
        json!({"metadata": {"annotations": {BOOTSTRAP: null}}}),
    )
    .await?;
    absent(&filters(&t, &ns), "boot-authn-ssl").await
}

/// GC-08 (LC-01 expects the same AuthPolicy), the acceptance and the ConfigMap watch, on the one
/// default gateway (one test, so no other test sees it opted out): with no LLMInferenceService it
/// gets its EF, AP and PM; a routing header set in `inferenceservice-config` reaches its
/// AuthPolicy; labelled `opendatahub.io/managed=false` it loses only what we manage (EF, and AP
/// unless the user opted that out), the PodMonitor staying (still referenced;
/// docs/plugins/llm-gateway.md, "Gateway controller `gateway-auth-bootstrap`", Wants).
#[tokio::test]
async fn gc_08_default_gateway_and_opting_out() -> anyhow::Result<()> {
    let t = TestContext::new("gw-gc08").await?;
    start();
    create_namespace(&t, DEFAULT_NS, json!({})).await?;
    create_namespace(&t, system_ns(), json!({})).await?;
    let gws = gateways(&t, DEFAULT_NS);
    if gws.get_opt(DEFAULT_GW).await?.is_none() {
        create_gateway(&t, DEFAULT_NS, DEFAULT_GW, None, json!({})).await?;
    }
    // A clean start on a shared apiserver: the gateway managed again, our objects as we make
    // them.
    merge(
        &gws,
        DEFAULT_GW,
        json!({"metadata": {"labels": {MANAGED: null}}}),
    )
    .await?;
    let gw = gws.get(DEFAULT_GW).await?;
    let (ef, ap, pm) = (
        filters(&t, DEFAULT_NS),
        policies(&t, DEFAULT_NS),
        monitors(&t, DEFAULT_NS),
    );
    let ap_name = "openshift-ai-inference-authn";
    if ap.get_opt(ap_name).await?.is_some() {
        merge(
            &ap,
            ap_name,
            json!({"metadata": {"labels": {MANAGED: null}}}),
        )
        .await?;
    }
    for object in [
        exists(&ef, "openshift-ai-inference-authn-ssl").await?,
        exists(&ap, ap_name).await?,
        exists(&pm, "openshift-ai-inference-metrics").await?,
    ] {
        assert_owned_by(&object, &gw);
    }

    // The ConfigMap watch: a routing header in the system namespace's ingress config.
    let config: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "inferenceservice-config", "namespace": system_ns()},
        "data": {"ingress": json!({"kserveIngressGateway": "openshift-ingress/openshift-ai-inference",
                                   "modelBasedRoutingHeaderName": "X-Tenant-Model"}).to_string()},
    }))?;
    let configs: Api<ConfigMap> = Api::namespaced(t.client.clone(), system_ns());
    configs
        .patch(
            "inferenceservice-config",
            &PatchParams::apply("test").force(),
            &Patch::Apply(&config),
        )
        .await?;
    eventually("the header reaches the deny rule", Timing::default(), || async {
        let policy = ap.get(ap_name).await?;
        let when = &policy.data["spec"]["rules"]["authorization"]["deny-misrouted-model-header"]["when"];
        anyhow::ensure!(
            when[2]["predicate"] == "'x-tenant-model' in request.headers && request.headers['x-tenant-model'].matches('^publishers/[^/]+/models/.+$')",
            "{when}"
        );
        Ok(())
    })
    .await?;

    // Opting out: our EF and AP go, the PodMonitor stays.
    merge(
        &gws,
        DEFAULT_GW,
        json!({"metadata": {"labels": {MANAGED: "false"}}}),
    )
    .await?;
    absent(&ef, "openshift-ai-inference-authn-ssl").await?;
    absent(&ap, ap_name).await?;
    stays_present(&pm, "openshift-ai-inference-metrics").await?;

    // Managed again, with the user's own opt-out on the AuthPolicy: opting the gateway out
    // once more deletes only the filter.
    merge(
        &gws,
        DEFAULT_GW,
        json!({"metadata": {"labels": {MANAGED: null}}}),
    )
    .await?;
    exists(&ef, "openshift-ai-inference-authn-ssl").await?;
    exists(&ap, ap_name).await?;
    merge(
        &ap,
        ap_name,
        json!({"metadata": {"labels": {MANAGED: "false"}}}),
    )
    .await?;
    // The controller must have seen the user's opt-out before the gateway's: a delete planned
    // on a cache that does not show the label yet removes the AuthPolicy (CI of 2026-12-04;
    // the host's delete is not conditional on the version the plugin read, issue #33).
    stays_present(&ap, ap_name).await?;
    merge(
        &gws,
        DEFAULT_GW,
        json!({"metadata": {"labels": {MANAGED: "false"}}}),
    )
    .await?;
    absent(&ef, "openshift-ai-inference-authn-ssl").await?;
    stays_present(&ap, ap_name).await?;
    stays_present(&pm, "openshift-ai-inference-metrics").await?;

    // Leave the default gateway as found: managed, its objects ours.
    merge(
        &gws,
        DEFAULT_GW,
        json!({"metadata": {"labels": {MANAGED: null}}}),
    )
    .await?;
    merge(
        &ap,
        ap_name,
        json!({"metadata": {"labels": {MANAGED: null}}}),
    )
    .await?;
    configs
        .delete("inferenceservice-config", &DeleteParams::default())
        .await?;
    exists(&ef, "openshift-ai-inference-authn-ssl").await?;
    Ok(())
}

/// GC-09, GC-10, GC-25: a deleted AP, EF or PM of a referenced gateway is made again.
#[tokio::test]
async fn gc_09_gc_10_gc_25_deleted_objects_come_back() -> anyhow::Result<()> {
    let t = TestContext::new("gw-gc09").await?;
    start();
    let ns = t.namespace.clone();
    referenced_gateway(&t).await?;
    let pm = exists(&monitors(&t, &ns), "test-gateway-metrics").await?;
    for (api, name) in [
        (policies(&t, &ns), "test-gateway-authn"),
        (filters(&t, &ns), "test-gateway-authn-ssl"),
        (monitors(&t, &ns), "test-gateway-metrics"),
    ] {
        let old = api.get(name).await?.metadata.uid;
        api.delete(name, &DeleteParams::default()).await?;
        recreated(&api, name, old).await?;
    }
    assert!(pm.metadata.uid.is_some());
    Ok(())
}

/// GC-11, GC-12: a changed targetRef (AP) or targetRefs[0] (EF) is restored.
#[tokio::test]
async fn gc_11_gc_12_target_refs_are_restored() -> anyhow::Result<()> {
    let t = TestContext::new("gw-gc11").await?;
    start();
    let ns = t.namespace.clone();
    referenced_gateway(&t).await?;
    let (ap, ef) = (policies(&t, &ns), filters(&t, &ns));
    merge(
        &ap,
        "test-gateway-authn",
        json!({"spec": {"targetRef": {"name": "modified-gateway"}}}),
    )
    .await?;
    let mut filter = ef.get("test-gateway-authn-ssl").await?;
    filter.data["spec"]["targetRefs"][0]["name"] = "modified-gateway".into();
    ef.replace("test-gateway-authn-ssl", &PostParams::default(), &filter)
        .await?;
    eventually("the targets are restored", Timing::default(), || async {
        let policy = ap.get("test-gateway-authn").await?;
        let filter = ef.get("test-gateway-authn-ssl").await?;
        anyhow::ensure!(
            policy.data["spec"]["targetRef"]["name"] == "test-gateway",
            "AP {}",
            policy.data["spec"]["targetRef"]
        );
        anyhow::ensure!(
            filter.data["spec"]["targetRefs"][0]["name"] == "test-gateway",
            "EF {}",
            filter.data["spec"]["targetRefs"]
        );
        Ok(())
    })
    .await
}

/// GC-13: the referenced gateway labelled unmanaged loses its EF and AP.
#[tokio::test]
async fn gc_13_unmanaged_label_deletes_ef_and_ap() -> anyhow::Result<()> {
    let t = TestContext::new("gw-gc13").await?;
    start();
    let ns = t.namespace.clone();
    referenced_gateway(&t).await?;
    merge(
        &gateways(&t, &ns),
        "test-gateway",
        json!({"metadata": {"labels": {MANAGED: "false"}}}),
    )
    .await?;
    absent(&filters(&t, &ns), "test-gateway-authn-ssl").await?;
    absent(&policies(&t, &ns), "test-gateway-authn").await?;
    stays_present(&monitors(&t, &ns), "test-gateway-metrics").await
}

/// GC-14, GC-15: a service in another namespace references the gateway only through a listener
/// that allows it.
#[tokio::test]
async fn gc_14_gc_15_cross_namespace_refs() -> anyhow::Result<()> {
    let t = TestContext::new("gw-gc14").await?;
    start();
    let gw_ns = t.namespace.clone();
    let svc_ns = unique_name("gw-gc14-svc");
    create_namespace(&t, &svc_ns, json!({})).await?;
    create_gateway(&t, &gw_ns, "same", None, json!({})).await?;
    create_gateway(&t, &gw_ns, "open", Some(json!({"from": "All"})), json!({})).await?;
    create_service(
        &t,
        &svc_ns,
        "test-llmisvc",
        &[(&gw_ns, "same"), (&gw_ns, "open")],
    )
    .await?;
    exists(&filters(&t, &gw_ns), "open-authn-ssl").await?;
    exists(&policies(&t, &gw_ns), "open-authn").await?;
    stays_absent(&filters(&t, &gw_ns), "same-authn-ssl").await?;
    stays_absent(&policies(&t, &gw_ns), "same-authn").await
}

/// A `Selector` listener: the service's namespace gets the label, and the Namespace watch brings
/// the gateway its objects.
#[tokio::test]
async fn namespace_labels_open_a_selector_listener() -> anyhow::Result<()> {
    let t = TestContext::new("gw-sel").await?;
    start();
    let gw_ns = t.namespace.clone();
    let svc_ns = unique_name("gw-sel-svc");
    create_namespace(&t, &svc_ns, json!({})).await?;
    let from = json!({"from": "Selector", "selector": {"matchLabels": {"env": "prod"}}});
    create_gateway(&t, &gw_ns, "sel", Some(from), json!({})).await?;
    create_service(&t, &svc_ns, "test-llmisvc", &[(&gw_ns, "sel")]).await?;
    stays_absent(&filters(&t, &gw_ns), "sel-authn-ssl").await?;
    let namespaces = Api::<Namespace>::all(t.client.clone());
    namespaces
        .patch(
            &svc_ns,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"env": "prod"}}})),
        )
        .await?;
    exists(&filters(&t, &gw_ns), "sel-authn-ssl").await?;
    exists(&policies(&t, &gw_ns), "sel-authn").await?;
    Ok(())
}

/// GC-17, GC-18, GC-24: stopping the only service deletes EF, AP and PM; starting it again
/// makes them again.
#[tokio::test]
async fn gc_17_gc_18_gc_24_stop_and_start() -> anyhow::Result<()> {
    let t = TestContext::new("gw-gc17").await?;
    start();
    let ns = t.namespace.clone();
    referenced_gateway(&t).await?;
    exists(&monitors(&t, &ns), "test-gateway-metrics").await?;
    let svc = services(&t, &ns);
    merge(
        &svc,
        "test-llmisvc",
        json!({"metadata": {"annotations": {STOP: "true"}}}),
    )
    .await?;
    absent(&filters(&t, &ns), "test-gateway-authn-ssl").await?;
    absent(&policies(&t, &ns), "test-gateway-authn").await?;
    absent(&monitors(&t, &ns), "test-gateway-metrics").await?;
    merge(
        &svc,
        "test-llmisvc",
        json!({"metadata": {"annotations": {STOP: null}}}),
    )
    .await?;
    exists(&filters(&t, &ns), "test-gateway-authn-ssl").await?;
    exists(&policies(&t, &ns), "test-gateway-authn").await?;
    exists(&monitors(&t, &ns), "test-gateway-metrics").await?;
    Ok(())
}

/// GC-19: a ref added to an existing service brings the gateway its objects; the ref removed
/// again takes them away (the service's old refs are mapped as well as its new ones).
#[tokio::test]
async fn gc_19_ref_added_later_and_removed() -> anyhow::Result<()> {
    let t = TestContext::new("gw-gc19").await?;
    start();
    let ns = t.namespace.clone();
    create_gateway(&t, &ns, "later", None, json!({})).await?;
    create_service(&t, &ns, "test-llmisvc", &[]).await?;
    stays_absent(&filters(&t, &ns), "later-authn-ssl").await?;
    let svc = services(&t, &ns);
    merge(
        &svc,
        "test-llmisvc",
        json!({"spec": {"router": {"gateway": {"refs": [{"name": "later", "namespace": ns}]}}}}),
    )
    .await?;
    exists(&filters(&t, &ns), "later-authn-ssl").await?;
    exists(&policies(&t, &ns), "later-authn").await?;
    merge(&svc, "test-llmisvc", json!({"spec": {"router": null}})).await?;
    absent(&filters(&t, &ns), "later-authn-ssl").await?;
    absent(&policies(&t, &ns), "later-authn").await
}

/// A recorder of every call of the plugin, set on its slot by the first caller.
fn recorded_calls() -> &'static Recorder {
    static RECORDER: OnceLock<std::sync::Arc<Recorder>> = OnceLock::new();
    RECORDER.get_or_init(|| record_every_call(&start().slots[0]))
}

/// Reconciles of the Gateway `ns/name` recorded so far.
fn gateway_reconciles(ns: &str, name: &str) -> usize {
    reconciled_names(recorded_calls(), "gateway-auth-bootstrap", ns)
        .iter()
        .filter(|n| *n == name)
        .count()
}

/// A service's events reconcile the Gateways it names (before and after the change), not every
/// Gateway: a bystander in the same namespace is never reconciled by them, and an update that
/// changes no ref reconciles none (upstream's predicates and map functions, as event filters and
/// `map_change`).
#[tokio::test]
async fn service_events_reconcile_only_the_gateways_they_name() -> anyhow::Result<()> {
    let t = TestContext::new("gw-names").await?;
    let running = start();
    recorded_calls();
    let ns = t.namespace.clone();
    create_gateway(&t, &ns, "named", None, json!({})).await?;
    create_gateway(&t, &ns, "moved-to", None, json!({})).await?;
    create_gateway(&t, &ns, "bystander", None, json!({})).await?;
    create_service(&t, &ns, "svc", &[(&ns, "named")]).await?;
    exists(&filters(&t, &ns), "named-authn-ssl").await?;
    quiet(&running.ctx, Timing::default()).await?;
    let before = |name| gateway_reconciles(&ns, name);
    let (named, bystander) = (before("named"), before("bystander"));

    // Not a ref: filtered out, nothing reconciled.
    merge(
        &services(&t, &ns),
        "svc",
        json!({"metadata": {"labels": {"team": "a"}}}),
    )
    .await?;
    quiet(&running.ctx, Timing::default()).await?;
    assert_eq!(
        gateway_reconciles(&ns, "named"),
        named,
        "a label change maps nowhere"
    );

    // The ref moves: the gateway it left and the one it names now.
    let refs = json!([{"name": "moved-to", "namespace": ns}]);
    merge(
        &services(&t, &ns),
        "svc",
        json!({"spec": {"router": {"gateway": {"refs": refs}}}}),
    )
    .await?;
    absent(&filters(&t, &ns), "named-authn-ssl").await?;
    exists(&filters(&t, &ns), "moved-to-authn-ssl").await?;
    services(&t, &ns)
        .delete("svc", &DeleteParams::default())
        .await?;
    absent(&filters(&t, &ns), "moved-to-authn-ssl").await?;
    quiet(&running.ctx, Timing::default()).await?;
    assert!(gateway_reconciles(&ns, "named") > named);
    assert_eq!(
        gateway_reconciles(&ns, "bystander"),
        bystander,
        "the bystander was reconciled by another service's events"
    );
    Ok(())
}

/// GC-20: two referenced gateways keep their filters when the refs are reordered.
#[tokio::test]
async fn gc_20_reordered_refs() -> anyhow::Result<()> {
    let t = TestContext::new("gw-gc20").await?;
    start();
    let ns = t.namespace.clone();
    create_gateway(&t, &ns, "g1", None, json!({})).await?;
    create_gateway(&t, &ns, "g2", None, json!({})).await?;
    create_service(&t, &ns, "test-llmisvc", &[(&ns, "g1"), (&ns, "g2")]).await?;
    exists(&filters(&t, &ns), "g1-authn-ssl").await?;
    exists(&filters(&t, &ns), "g2-authn-ssl").await?;
    let refs = json!([{"name": "g2", "namespace": ns}, {"name": "g1", "namespace": ns}]);
    merge(
        &services(&t, &ns),
        "test-llmisvc",
        json!({"spec": {"router": {"gateway": {"refs": refs}}}}),
    )
    .await?;
    consistently("both filters stay", short(), || async {
        for name in ["g1-authn-ssl", "g2-authn-ssl"] {
            anyhow::ensure!(
                filters(&t, &ns).get_opt(name).await?.is_some(),
                "{name} is gone"
            );
        }
        Ok(())
    })
    .await
}

/// GC-26: `monitoring.opendatahub.io/scrape=false`: the EF, never a PM.
#[tokio::test]
async fn gc_26_scrape_false_means_no_pod_monitor() -> anyhow::Result<()> {
    let t = TestContext::new("gw-gc26").await?;
    start();
    let ns = t.namespace.clone();
    create_gateway(&t, &ns, "quiet", None, json!({"labels": {SCRAPE: "false"}})).await?;
    create_service(&t, &ns, "test-llmisvc", &[(&ns, "quiet")]).await?;
    exists(&filters(&t, &ns), "quiet-authn-ssl").await?;
    stays_absent(&monitors(&t, &ns), "quiet-metrics").await
}

// ---------------------------------------------------------------------------------------
// The EnvoyFilter store (RE-09..RE-16, upstream's unit tests of its CRUD on a fake client):
// here the same operations are the host's reads, applies and deletes for the controller, on the
// real apiserver. RE-12 (creating a duplicate fails), RE-13 (an update appending a second
// targetRef persists both) and RE-14 (updating a missing filter fails) are not applicable: the
// host has no separate create and update, only a server-side apply of the declared filter,
// which makes a missing one, and whose targetRefs are ours alone (a second one is undone:
// gc_11_gc_12_target_refs_are_restored).

const FILTER: &str = "test-gateway-authn-ssl";

/// Changes `test-gateway` with `patch` and waits until that reconcile, and whatever it caused,
/// has run.
async fn gateway_reconciled_after(
    t: &TestContext,
    running: &RunningControllers,
    patch: Value,
) -> anyhow::Result<()> {
    let before = running.ctx.reconcile_count();
    merge(&gateways(t, &t.namespace), "test-gateway", patch).await?;
    eventually("the gateway is reconciled", Timing::default(), || async {
        anyhow::ensure!(running.ctx.reconcile_count() > before, "no reconcile yet");
        Ok(())
    })
    .await?;
    quiet(&running.ctx, Timing::within(Duration::from_secs(60))).await
}

/// The Warnings of the namespace (`ReconcileError` from the plugin, `ApplyFailed` from the
/// host's writes), as `reason: note`.
async fn warnings(t: &TestContext) -> anyhow::Result<Vec<String>> {
    let events: Api<Event> = t.api();
    Ok(events
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .filter(|e| e.type_.as_deref() == Some("Warning"))
        .map(|e| format!("{:?}: {:?}", e.reason, e.note))
        .collect())
}

/// RE-09: get an existing filter returns it: the next reconcile keeps the object it made.
#[tokio::test]
async fn re_09_get_finds_the_existing_filter() -> anyhow::Result<()> {
    let t = TestContext::new("gw-re09").await?;
    let running = start();
    referenced_gateway(&t).await?;
    let made = exists(&filters(&t, &t.namespace), FILTER).await?;
    gateway_reconciled_after(
        &t,
        running,
        json!({"metadata": {"annotations": {"example.com/touched": "re-09"}}}),
    )
    .await?;
    let now = filters(&t, &t.namespace).get(FILTER).await?;
    assert_eq!(now.metadata.uid, made.metadata.uid);
    assert_eq!(now.data["spec"], made.data["spec"]);
    Ok(())
}

/// RE-10: get a missing filter (NotFound): it is made again, a new object.
#[tokio::test]
async fn re_10_a_missing_filter_is_made() -> anyhow::Result<()> {
    let t = TestContext::new("gw-re10").await?;
    start();
    referenced_gateway(&t).await?;
    let api = filters(&t, &t.namespace);
    let made = exists(&api, FILTER).await?;
    api.delete(FILTER, &DeleteParams::default()).await?;
    recreated(&api, FILTER, made.metadata.uid).await?;
    Ok(())
}

/// RE-11: create, then get succeeds: the filter is there, ours, owned by its gateway.
#[tokio::test]
async fn re_11_create_then_get() -> anyhow::Result<()> {
    let t = TestContext::new("gw-re11").await?;
    start();
    let gw = referenced_gateway(&t).await?;
    let filter = filters(&t, &t.namespace).get(FILTER).await?;
    assert_owned_by(&filter, &gw);
    assert_eq!(
        filter.metadata.labels.as_ref().unwrap()["app.kubernetes.io/managed-by"],
        "odh-model-controller"
    );
    Ok(())
}

/// RE-15: remove an existing filter, then get: NotFound (the gateway opted out).
#[tokio::test]
async fn re_15_remove_then_get_is_not_found() -> anyhow::Result<()> {
    let t = TestContext::new("gw-re15").await?;
    let running = start();
    referenced_gateway(&t).await?;
    gateway_reconciled_after(
        &t,
        running,
        json!({"metadata": {"labels": {MANAGED: "false"}}}),
    )
    .await?;
    anyhow::ensure!(
        filters(&t, &t.namespace).get_opt(FILTER).await?.is_none(),
        "the filter is still there"
    );
    Ok(())
}

/// RE-16: remove a missing filter: no error. The gateway opts out and, right after, the filter
/// is deleted by someone else: the controller's delete, asked from what its cache still shows,
/// finds nothing (or nothing is left to ask for), and no Warning is reported either way.
#[tokio::test]
async fn re_16_removing_a_missing_filter_is_no_error() -> anyhow::Result<()> {
    let t = TestContext::new("gw-re16").await?;
    let running = start();
    let ns = t.namespace.clone();
    referenced_gateway(&t).await?;
    quiet(&running.ctx, Timing::within(Duration::from_secs(60))).await?;
    let before = running.ctx.reconcile_count();
    merge(
        &gateways(&t, &ns),
        "test-gateway",
        json!({"metadata": {"labels": {MANAGED: "false"}}}),
    )
    .await?;
    filters(&t, &ns)
        .delete(FILTER, &DeleteParams::default())
        .await?;
    eventually("the gateway is reconciled", Timing::default(), || async {
        anyhow::ensure!(running.ctx.reconcile_count() > before, "no reconcile yet");
        Ok(())
    })
    .await?;
    quiet(&running.ctx, Timing::within(Duration::from_secs(60))).await?;
    absent(&policies(&t, &ns), "test-gateway-authn").await?;
    // The removal's own failure reads "deleting <kind> <name>"; an apply of a reconcile that
    // started before the opt-out may conflict with the test's delete and is retried: not RE-16.
    let found: Vec<_> = warnings(&t)
        .await?
        .into_iter()
        .filter(|w| w.contains("deleting"))
        .collect();
    anyhow::ensure!(found.is_empty(), "{found:?}");
    Ok(())
}

/// Touches `test-gateway` with annotation `mark` and waits until that reconcile, and whatever it
/// caused, has run.
async fn touched(t: &TestContext, running: &RunningControllers, mark: &str) -> anyhow::Result<()> {
    gateway_reconciled_after(
        t,
        running,
        json!({"metadata": {"annotations": {"example.com/touched": mark}}}),
    )
    .await
}

/// CP-06..CP-10 (the EnvoyFilter comparator, docs/plugins/llm-gateway.md, "Writes: apply and
/// claim") as the apiserver decides them for our server-side apply, each after a reconcile known
/// to have run (the gateway touched, the controllers quiet since): CP-06 an identical filter is
/// not rewritten (its resourceVersion holds); CP-07 a templated label another writer changed is
/// restored; CP-08 with the labels agreeing the spec decides: the identical spec written again
/// by another field manager is equal (not rewritten), a spec value another changed is not (it
/// is restored) — our filter always carries its labels, so upstream's "no labels on either
/// side" has no other form here; CP-09 labels only the live filter has are no difference (not
/// rewritten, and they stay); CP-10 a templated label missing from the live filter is restored.
#[tokio::test]
async fn cp_06_to_cp_10_envoy_filter_comparison_on_the_cluster() -> anyhow::Result<()> {
    let t = TestContext::new("gw-cp").await?;
    let running = start();
    let api = filters(&t, &t.namespace);
    referenced_gateway(&t).await?;
    let version = |o: &DynamicObject| o.metadata.resource_version.clone();
    let label =
        |o: &DynamicObject, key: &str| o.metadata.labels.as_ref().and_then(|l| l.get(key).cloned());
    let name = "app.kubernetes.io/name";
    let part_of = "app.kubernetes.io/part-of";
    let other = PatchParams {
        field_manager: Some("cp-other-writer".into()),
        ..PatchParams::default()
    };

    touched(&t, running, "cp-06-a").await?;
    let settled = api.get(FILTER).await?;
    touched(&t, running, "cp-06-b").await?;
    assert_eq!(version(&api.get(FILTER).await?), version(&settled), "CP-06");

    api.patch(
        FILTER,
        &other,
        &Patch::Merge(json!({"metadata": {"labels": {name: "test"}}})),
    )
    .await?;
    touched(&t, running, "cp-07").await?;
    assert_eq!(
        label(&api.get(FILTER).await?, name).as_deref(),
        Some("llminferenceservice-auth"),
        "CP-07"
    );

    let ours = api.get(FILTER).await?;
    let rewritten = api
        .patch(
            FILTER,
            &other,
            &Patch::Merge(json!({"spec": ours.data["spec"].clone()})),
        )
        .await?;
    touched(&t, running, "cp-08-a").await?;
    assert_eq!(
        version(&api.get(FILTER).await?),
        version(&rewritten),
        "CP-08: the same spec from another writer is equal"
    );
    api.patch(
        FILTER,
        &other,
        &Patch::Merge(json!({"spec": {"priority": 5}})),
    )
    .await?;
    touched(&t, running, "cp-08-b").await?;
    assert_eq!(
        api.get(FILTER).await?.data["spec"]["priority"],
        -1,
        "CP-08: a spec that differs is restored"
    );

    let extra = api
        .patch(
            FILTER,
            &other,
            &Patch::Merge(json!({"metadata": {"labels": {
                "kubectl.kubernetes.io/last-applied-configuration": "x",
                "team": "a",
            }}})),
        )
        .await?;
    touched(&t, running, "cp-09").await?;
    let now = api.get(FILTER).await?;
    assert_eq!(version(&now), version(&extra), "CP-09: not rewritten");
    assert_eq!(label(&now, "team").as_deref(), Some("a"), "CP-09");

    api.patch(
        FILTER,
        &other,
        &Patch::Merge(json!({"metadata": {"labels": {part_of: null}}})),
    )
    .await?;
    touched(&t, running, "cp-10").await?;
    assert_eq!(
        label(&api.get(FILTER).await?, part_of).as_deref(),
        Some("llminferenceservice"),
        "CP-10"
    );
    Ok(())
}

/// Spec llm §5.3 step 5, §5.5 (issue #33): an EnvoyFilter create the API server refuses (a
/// ValidatingAdmissionPolicy) is that step's `ReconcileError` Event with upstream's text
/// (`Failed to reconcile EnvoyFilter: failed to create EnvoyFilter: <the API server's message>`)
/// and stops the later steps: no AuthPolicy and no PodMonitor while it fails. Once the create is
/// allowed again, the retry makes all three.
#[tokio::test]
async fn a_refused_envoy_filter_create_is_the_steps_event_and_stops() -> anyhow::Result<()> {
    let t = TestContext::new("gw-efdeny").await?;
    start();
    let ns = t.namespace.clone();
    let refusal = odh_test_support::refusal::Refusal::install(
        &t.client,
        &format!("{ns}-refuse-envoyfilters"),
        ("networking.istio.io", "envoyfilters", "CREATE"),
        &format!("object.metadata.namespace != '{ns}'"),
        "envoy filters are refused by the test",
    )
    .await?;
    let probe: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "networking.istio.io/v1alpha3", "kind": "EnvoyFilter",
        "metadata": {"name": "probe", "namespace": ns}, "spec": {}
    }))?;
    let dry_run = PostParams {
        dry_run: true,
        ..Default::default()
    };
    eventually(
        "the policy refuses EnvoyFilters",
        Timing::default(),
        || async {
            match filters(&t, &ns).create(&dry_run, &probe).await {
                Err(kube::Error::Api(s)) if s.message.contains("refused by the test") => Ok(()),
                other => anyhow::bail!("not refused yet: {:?}", other.map(|_| ())),
            }
        },
    )
    .await?;

    create_gateway(&t, &ns, "test-gateway", None, json!({})).await?;
    create_service(&t, &ns, "test-llmisvc", &[(&ns, "test-gateway")]).await?;
    eventually("the step's ReconcileError", Timing::default(), || async {
        let warnings = warnings(&t).await?;
        anyhow::ensure!(
            warnings
                .iter()
                .any(|w| w.starts_with("Some(\"ReconcileError\")")
                    && w.contains(
                        "Failed to reconcile EnvoyFilter: failed to create EnvoyFilter: "
                    )
                    && w.contains("envoy filters are refused by the test")),
            "{warnings:?}"
        );
        Ok(())
    })
    .await?;
    stays_absent(&policies(&t, &ns), "test-gateway-authn").await?;
    anyhow::ensure!(
        monitors(&t, &ns)
            .get_opt("test-gateway-metrics")
            .await?
            .is_none(),
        "the PodMonitor step ran after a failed EnvoyFilter step"
    );

    refusal.remove().await?;
    exists(&filters(&t, &ns), "test-gateway-authn-ssl").await?;
    exists(&policies(&t, &ns), "test-gateway-authn").await?;
    exists(&monitors(&t, &ns), "test-gateway-metrics").await?;
    Ok(())
}
