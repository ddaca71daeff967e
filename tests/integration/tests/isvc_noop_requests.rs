//! A no-op reconcile costs nothing: once an InferenceService's world is in place, reconciling
//! it again sends no write and no discovery request to the apiserver. Every request of the
//! controller goes through a counting proxy, so the test sees exactly what it asked for. (The
//! controller sees the InferenceServices other tests left in the shared apiserver too: writes
//! are counted for this test's namespace, discovery everywhere.)

use std::time::Duration;

use kube::Client;
use odh_test_fixtures::{isvc, ovms_runtime, predictor_service};
use odh_test_support::host::{load, start_controllers};
use odh_test_support::proxy::CountingProxy;
use odh_test_support::{TestContext, Timing, consistently, eventually, exists};
use tokio_util::sync::CancellationToken;

const FINALIZER: &str = "odh.inferenceservice.finalizers";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_no_op_reconcile_of_an_inference_service_sends_no_write_and_no_discovery()
-> anyhow::Result<()> {
    let t = TestContext::new("isvc-noop").await?;
    let proxy = CountingProxy::start(t.client.clone()).await?;
    let shutdown = CancellationToken::new();
    let started = start_controllers(
        Client::try_from(proxy.config())?,
        vec![load("isvc")],
        1,
        shutdown.clone(),
    )
    .await?;
    let ctx = started.ctx.clone();
    let in_test_ns = |v: serde_json::Value| {
        let mut v = v;
        v["metadata"]["namespace"] = t.namespace.clone().into();
        v["metadata"].as_object_mut().map(|m| m.remove("uid"));
        v
    };
    let runtimes = t.dynamic(
        "serving.kserve.io",
        "v1alpha1",
        "ServingRuntime",
        "servingruntimes",
    );
    let isvcs = t.dynamic(
        "serving.kserve.io",
        "v1beta1",
        "InferenceService",
        "inferenceservices",
    );
    let services = t.dynamic("", "v1", "Service", "services");
    t.create(&runtimes, in_test_ns(ovms_runtime().build()))
        .await?;
    t.create(&services, in_test_ns(predictor_service("noop").build()))
        .await?;
    // Both autoscale with KEDA, whose objects include a Secret outside the managed-Secret cache
    // filter: each reconcile checks it with a read, which shows the test it ran.
    t.create(
        &isvcs,
        in_test_ns(isvc("noop").exposed().with_auth(None).keda().build()),
    )
    .await?;
    t.create(
        &services,
        in_test_ns(predictor_service("noop-keda").build()),
    )
    .await?;
    t.create(&isvcs, in_test_ns(isvc("noop-keda").keda().build()))
        .await?;

    // Its world: the finalizer, a Route, the metrics Service and ServiceMonitor, the dashboard.
    eventually("the finalizer is set", Timing::default(), || async {
        let o = isvcs.get("noop").await?;
        anyhow::ensure!(
            o.metadata
                .finalizers
                .unwrap_or_default()
                .iter()
                .any(|f| f == FINALIZER),
            "no finalizer yet"
        );
        Ok(())
    })
    .await?;
    exists(
        &t.dynamic("route.openshift.io", "v1", "Route", "routes"),
        "noop",
    )
    .await?;
    exists(&services, "noop-metrics").await?;
    exists(
        &t.dynamic(
            "monitoring.coreos.com",
            "v1",
            "ServiceMonitor",
            "servicemonitors",
        ),
        "noop-metrics",
    )
    .await?;
    exists(
        &t.dynamic("", "v1", "ConfigMap", "configmaps"),
        "noop-metrics-dashboard",
    )
    .await?;
    eventually("the controller settles", Timing::default(), || async {
        let count = ctx.reconcile_count();
        consistently(
            "no reconcile for a second",
            Timing::within(Duration::from_secs(1)),
            || async {
                anyhow::ensure!(ctx.reconcile_count() == count, "still reconciling");
                Ok(())
            },
        )
        .await
    })
    .await?;

    // An annotation the plugin does not use: each InferenceService is reconciled with nothing
    // to do.
    let before = proxy.requests().len();
    let touch = serde_json::json!({"metadata": {"annotations": {"example.com/touched": "yes"}}});
    for name in ["noop", "noop-keda"] {
        isvcs
            .patch(name, &Default::default(), &kube::api::Patch::Merge(&touch))
            .await?;
    }
    let keda_secret = format!(
        "/namespaces/{}/secrets/inference-prometheus-auth",
        t.namespace
    );
    eventually(
        "both InferenceServices are reconciled again",
        Timing::default(),
        || async {
            let checks = proxy.requests()[before..]
                .iter()
                .filter(|r| r.path.contains(&keda_secret))
                .count();
            anyhow::ensure!(checks >= 2, "{checks} of 2");
            Ok(())
        },
    )
    .await?;
    consistently(
        "the reconciles have finished",
        Timing::within(Duration::from_secs(1)),
        || async { Ok(()) },
    )
    .await?;
    let after = proxy.requests().split_off(before);
    let writes: Vec<_> = after
        .iter()
        .filter(|r| r.is_write() && r.path.contains(&t.namespace))
        .collect();
    let discovery: Vec<_> = after.iter().filter(|r| r.is_discovery()).collect();
    println!(
        "after the touch: {} request(s), {} write(s) in the test's namespace, {} discovery",
        after.len(),
        writes.len(),
        discovery.len()
    );
    assert!(writes.is_empty(), "writes: {writes:?}");
    assert!(discovery.is_empty(), "discovery: {discovery:?}");
    shutdown.cancel();
    Ok(())
}
