//! The `isvc` plugin's controller on the real apiserver (docs/plugins/isvc.md, "Controller
//! `inferenceservice`", and its scenarios): one host controller for the whole test binary, running
//! the built `target/plugins/isvc.wasm`, reconciling InferenceServices the tests create.
//!
//! The test apiserver has no garbage collector (like envtest): where upstream relies on GC,
//! the tests assert the controller owner reference that makes GC remove the object.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, Role, RoleBinding};
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use odh_test_support::cluster_checks::refuse_writes;
use odh_test_support::{TestContext, Timing, consistently, eventually};
use serde_json::{Value, json};

mod common;
use odh_test_fixtures as fixtures;
use odh_test_support::host::load;

const FINALIZER: &str = "odh.inferenceservice.finalizers";
const KEDA: &str = "inference-prometheus-auth";

/// The isvc controllers, once per test binary (4 workers), on a runtime of their own.
fn controller_running() -> &'static odh_test_support::host::RunningControllers {
    odh_test_support::host::controllers_running(|| vec![load("isvc")], 4)
}

/// A test namespace, with the controller running.
async fn setup(prefix: &str) -> anyhow::Result<TestContext> {
    let t = TestContext::new(prefix).await?;
    controller_running();
    Ok(t)
}

fn dynamic(
    t: &TestContext,
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
) -> Api<DynamicObject> {
    let ar =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
    Api::namespaced_with(t.client.clone(), &t.namespace, &ar)
}

fn isvcs(t: &TestContext) -> Api<DynamicObject> {
    dynamic(
        t,
        "serving.kserve.io",
        "v1beta1",
        "InferenceService",
        "inferenceservices",
    )
}
fn runtimes(t: &TestContext) -> Api<DynamicObject> {
    dynamic(
        t,
        "serving.kserve.io",
        "v1alpha1",
        "ServingRuntime",
        "servingruntimes",
    )
}
fn routes(t: &TestContext) -> Api<DynamicObject> {
    dynamic(t, "route.openshift.io", "v1", "Route", "routes")
}
fn service_monitors(t: &TestContext) -> Api<DynamicObject> {
    dynamic(
        t,
        "monitoring.coreos.com",
        "v1",
        "ServiceMonitor",
        "servicemonitors",
    )
}
fn trigger_auths(t: &TestContext) -> Api<DynamicObject> {
    dynamic(
        t,
        "keda.sh",
        "v1alpha1",
        "TriggerAuthentication",
        "triggerauthentications",
    )
}

/// Creates a fixture object through `api`, in the API's namespace (a fixture names its own
/// namespace and uid; a client sends neither).
async fn create(api: &Api<DynamicObject>, mut object: Value) -> anyhow::Result<DynamicObject> {
    if let Some(metadata) = object["metadata"].as_object_mut() {
        metadata.remove("namespace");
        metadata.remove("uid");
    }
    Ok(api
        .create(&PostParams::default(), &serde_json::from_value(object)?)
        .await?)
}

/// The predictor Service KServe would create: `http` 8888 → `http`.
async fn predictor_service(t: &TestContext, isvc: &str) -> anyhow::Result<()> {
    let services = t.dynamic("", "v1", "Service", "services");
    create(&services, fixtures::predictor_service(isvc).build()).await?;
    Ok(())
}

/// The object, or an error saying it is not there (yet). The future owns its inputs, so
/// callers may pass temporaries.
fn exists<K>(api: &Api<K>, name: &str) -> impl Future<Output = anyhow::Result<K>> + use<K>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug + 'static,
{
    let (api, name) = (api.clone(), name.to_string());
    async move {
        api.get_opt(&name)
            .await?
            .ok_or_else(|| anyhow::anyhow!("{name} does not exist (yet)"))
    }
}

fn absent<K>(api: &Api<K>, name: &str) -> impl Future<Output = anyhow::Result<()>> + use<K>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug + 'static,
{
    let (api, name) = (api.clone(), name.to_string());
    async move {
        match api.get_opt(&name).await? {
            None => Ok(()),
            Some(_) => anyhow::bail!("{name} still exists"),
        }
    }
}

/// Deletes an InferenceService and waits until the finalizer let it go.
async fn delete_isvc(t: &TestContext, name: &str) -> anyhow::Result<()> {
    let api = isvcs(t);
    api.delete(name, &DeleteParams::default()).await?;
    eventually(
        &format!("InferenceService {name} is gone"),
        Timing::default(),
        || absent(&api, name),
    )
    .await
}

fn controlled_by(object: &impl ResourceExt, uid: &str) -> bool {
    object
        .owner_references()
        .iter()
        .any(|r| r.uid == uid && r.controller == Some(true) && r.kind == "InferenceService")
}

fn owner_uids(object: &impl ResourceExt) -> Vec<String> {
    object
        .owner_references()
        .iter()
        .map(|r| r.uid.clone())
        .collect()
}

fn short() -> Timing {
    Timing::within(Duration::from_secs(3))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_01_c_10_c_11_d_16_owned_objects_follow_the_inference_service() -> anyhow::Result<()> {
    let t = setup("isvc-c01").await?;
    create(&runtimes(&t), fixtures::ovms_runtime().build()).await?;
    let created = create(&isvcs(&t), fixtures::isvc("example-onnx-mnist").build()).await?;
    let uid = created.uid().unwrap();

    // D-16: the finalizer is added.
    eventually("the finalizer is added", Timing::default(), || async {
        let o = isvcs(&t).get("example-onnx-mnist").await?;
        anyhow::ensure!(
            o.finalizers().iter().any(|f| f == FINALIZER),
            "{:?}",
            o.finalizers()
        );
        Ok(())
    })
    .await?;
    // C-01: the dashboard ConfigMap (OVMS without a runtime-type annotation: unsupported),
    // controlled by the InferenceService so that GC removes it with it.
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = t.api();
    let cm = eventually("the dashboard ConfigMap exists", Timing::default(), || {
        exists(&cms, "example-onnx-mnist-metrics-dashboard")
    })
    .await?;
    assert_eq!(cm.data.as_ref().unwrap()["supported"], "false");
    assert!(controlled_by(&cm, &uid));
    // C-11: the metrics Service and ServiceMonitor are controlled too; none without suffix.
    let svc = eventually("the metrics Service exists", Timing::default(), || {
        exists(&t.api::<Service>(), "example-onnx-mnist-metrics")
    })
    .await?;
    assert!(controlled_by(&svc, &uid));
    // Applied in the same wave as the Service, concurrently: it may land a moment later.
    let sm = eventually("the ServiceMonitor exists", Timing::default(), || {
        exists(&service_monitors(&t), "example-onnx-mnist-metrics")
    })
    .await?;
    assert!(controlled_by(&sm, &uid));
    absent(&t.api::<Service>(), "example-onnx-mnist").await?;
    // C-10: not exposed, so no Route.
    absent(&routes(&t), "example-onnx-mnist").await?;

    delete_isvc(&t, "example-onnx-mnist").await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_02_c_03_auth_delegator_bindings() -> anyhow::Result<()> {
    let t = setup("isvc-c02").await?;
    let crbs = Api::<ClusterRoleBinding>::all(t.client.clone());
    create(&runtimes(&t), fixtures::ovms_runtime().build()).await?;
    create(
        &isvcs(&t),
        fixtures::isvc("default-sa").with_auth(None).build(),
    )
    .await?;
    create(
        &isvcs(&t),
        fixtures::isvc("custom")
            .with_auth(Some("custom-sa"))
            .build(),
    )
    .await?;
    let ns = &t.namespace;
    let default = eventually("C-02 default-SA binding", Timing::default(), || {
        exists(&crbs, &format!("{ns}-default-auth-delegator"))
    })
    .await?;
    assert_eq!(default.role_ref.name, "system:auth-delegator");
    let subjects = default.subjects.unwrap();
    assert_eq!(
        (subjects[0].kind.as_str(), subjects[0].name.as_str()),
        ("ServiceAccount", "default")
    );
    assert_eq!(subjects[0].namespace.as_deref(), Some(ns.as_str()));
    eventually("C-03 custom-SA binding", Timing::default(), || {
        exists(&crbs, &format!("{ns}-custom-sa-auth-delegator"))
    })
    .await?;
    // C-02 (weak upstream): no Route without the exposed label.
    absent(&routes(&t), "default-sa").await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_13_an_inference_service_without_auth_has_no_binding_before_or_after_deletion()
-> anyhow::Result<()> {
    // A namespace of its own: no other InferenceService may ask for the default binding.
    let t = setup("isvc-c13").await?;
    let crbs = Api::<ClusterRoleBinding>::all(t.client.clone());
    let binding = format!("{}-default-auth-delegator", t.namespace);
    create(&runtimes(&t), fixtures::ovms_runtime().build()).await?;
    create(&isvcs(&t), fixtures::isvc("no-auth").build()).await?;
    eventually("no-auth is reconciled", Timing::default(), || async {
        let o = isvcs(&t).get("no-auth").await?;
        anyhow::ensure!(!o.finalizers().is_empty(), "no finalizer yet");
        Ok(())
    })
    .await?;
    consistently("C-13: no binding while it lives", short(), || {
        absent(&crbs, &binding)
    })
    .await?;
    delete_isvc(&t, "no-auth").await?;
    consistently("C-13: NotFound after deletion", short(), || {
        absent(&crbs, &binding)
    })
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_04_c_12_d_13_shared_bindings_live_as_long_as_an_inference_service_uses_them()
-> anyhow::Result<()> {
    let t = setup("isvc-c12").await?;
    let ns = t.namespace.clone();
    let crbs = Api::<ClusterRoleBinding>::all(t.client.clone());
    let default_crb = format!("{ns}-default-auth-delegator");
    let custom_crb = format!("{ns}-custom-sa-auth-delegator");
    create(&runtimes(&t), fixtures::ovms_runtime().build()).await?;
    for (name, sa) in [
        ("default-1", None),
        ("default-2", None),
        ("custom-1", Some("custom-sa")),
        ("custom-2", Some("custom-sa")),
    ] {
        create(&isvcs(&t), fixtures::isvc(name).with_auth(sa).build()).await?;
    }
    // C-04: an InferenceService without auth on the same ServiceAccount does not remove it.
    let mut no_auth = fixtures::isvc("isvc-without-auth").build();
    no_auth["spec"]["predictor"]["serviceAccountName"] = json!("custom-sa");
    create(&isvcs(&t), no_auth).await?;
    for name in [&default_crb, &custom_crb] {
        eventually("both bindings exist", Timing::default(), || {
            exists(&crbs, name)
        })
        .await?;
    }
    delete_isvc(&t, "default-1").await?;
    delete_isvc(&t, "custom-1").await?;
    consistently(
        "C-12: both bindings remain while others use them",
        short(),
        || async {
            exists(&crbs, &default_crb).await?;
            exists(&crbs, &custom_crb).await?;
            Ok(())
        },
    )
    .await?;
    delete_isvc(&t, "default-2").await?;
    delete_isvc(&t, "custom-2").await?;
    for name in [&default_crb, &custom_crb] {
        eventually(
            "C-12: the bindings go with their last user",
            Timing::default(),
            || absent(&crbs, name),
        )
        .await?;
    }
    // D-13: turning auth off on a custom ServiceAccount removes its binding.
    create(
        &isvcs(&t),
        fixtures::isvc("toggle")
            .with_auth(Some("toggle-sa"))
            .build(),
    )
    .await?;
    let toggle_crb = format!("{ns}-toggle-sa-auth-delegator");
    eventually("the toggle binding exists", Timing::default(), || {
        exists(&crbs, &toggle_crb)
    })
    .await?;
    isvcs(&t)
        .patch(
            "toggle",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"security.opendatahub.io/enable-auth": "false"}}})),
        )
        .await?;
    eventually(
        "D-13: auth off removes the binding",
        Timing::default(),
        || absent(&crbs, &toggle_crb),
    )
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_05_c_06_d_07_routes_follow_exposure_and_timeouts() -> anyhow::Result<()> {
    let t = setup("isvc-c05").await?;
    create(&runtimes(&t), fixtures::ovms_runtime().build()).await?;
    predictor_service(&t, "example-onnx-mnist").await?;
    let mut v = fixtures::isvc("example-onnx-mnist").exposed().build();
    for component in ["predictor", "transformer", "explainer"] {
        if component != "predictor" {
            v["spec"][component] = json!({"containers": [{"name": "c", "image": "x"}]});
        }
        v["spec"][component]["timeout"] = json!(45);
    }
    let created = create(&isvcs(&t), v).await?;
    let route = eventually("C-05: the Route exists", Timing::default(), || {
        exists(&routes(&t), "example-onnx-mnist")
    })
    .await?;
    assert!(controlled_by(&route, &created.uid().unwrap()));
    assert_eq!(
        route.data["spec"]["to"]["name"],
        "example-onnx-mnist-predictor"
    );
    assert_eq!(route.data["spec"]["port"]["targetPort"], "http");
    assert_eq!(route.data["spec"]["tls"]["termination"], "edge");
    assert_eq!(
        route.annotations()["haproxy.router.openshift.io/timeout"],
        "135s",
        "C-06"
    );
    isvcs(&t)
        .patch(
            "example-onnx-mnist",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"annotations": {"haproxy.router.openshift.io/timeout": "1m"}}}),
            ),
        )
        .await?;
    eventually(
        "C-06: the annotation is copied",
        Timing::default(),
        || async {
            let r = routes(&t).get("example-onnx-mnist").await?;
            anyhow::ensure!(r.annotations()["haproxy.router.openshift.io/timeout"] == "1m");
            Ok(())
        },
    )
    .await?;
    // D-07: dropping the exposed label removes the Route.
    isvcs(&t)
        .patch(
            "example-onnx-mnist",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"labels": {"networking.kserve.io/visibility": null}}}),
            ),
        )
        .await?;
    eventually("D-07: the Route is removed", Timing::default(), || {
        absent(&routes(&t), "example-onnx-mnist")
    })
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_07_d_04_default_timeouts_and_canaries_removed() -> anyhow::Result<()> {
    let t = setup("isvc-c07").await?;
    create(&runtimes(&t), fixtures::ovms_runtime().build()).await?;
    predictor_service(&t, "m").await?;
    let canary_svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "m-v2-predictor"},
        "spec": {"ports": [{"name": "http", "port": 80}]},
    }))?;
    t.api::<Service>()
        .create(&PostParams::default(), &canary_svc)
        .await?;
    let mut v = fixtures::isvc("m").exposed().build();
    v["spec"]["transformer"] = json!({"containers": [{"name": "c", "image": "x"}]});
    v["spec"]["explainer"] = json!({"containers": [{"name": "c", "image": "x"}]});
    v["spec"]["canary"] = json!([{"trafficPercent": 20, "predictor": {"name": "v2"}}]);
    create(&isvcs(&t), v).await?;
    let route = eventually("the canary Route exists", Timing::default(), || {
        exists(&routes(&t), "m")
    })
    .await?;
    assert_eq!(
        route.annotations()["haproxy.router.openshift.io/timeout"],
        "90s",
        "C-07"
    );
    assert_eq!(route.data["spec"]["to"]["weight"], 80);
    assert_eq!(
        route.data["spec"]["alternateBackends"],
        json!([{"kind": "Service", "name": "m-v2-predictor", "weight": 20}])
    );
    // D-04: canaries removed ⇒ weight 100 and no alternate backends (apply drops the field).
    isvcs(&t)
        .patch(
            "m",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"canary": null}})),
        )
        .await?;
    eventually(
        "D-04: the Route loses its canaries",
        Timing::default(),
        || async {
            let r = routes(&t).get("m").await?;
            anyhow::ensure!(r.data["spec"]["to"]["weight"] == 100, "{}", r.data["spec"]);
            anyhow::ensure!(
                r.data["spec"].get("alternateBackends").is_none(),
                "{}",
                r.data["spec"]
            );
            Ok(())
        },
    )
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_08_a_user_route_named_like_an_unexposed_inference_service_survives() -> anyhow::Result<()>
{
    let t = setup("isvc-c08").await?;
    create(&runtimes(&t), fixtures::ovms_runtime().build()).await?;
    predictor_service(&t, "example-onnx-mnist").await?;
    create(
        &routes(&t),
        json!({"apiVersion": "route.openshift.io/v1", "kind": "Route",
               "metadata": {"name": "example-onnx-mnist"},
               "spec": {"to": {"kind": "Service", "name": "example-onnx-mnist-predictor"}}}),
    )
    .await?;
    create(&isvcs(&t), fixtures::isvc("example-onnx-mnist").build()).await?;
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = t.api();
    eventually(
        "the InferenceService is reconciled",
        Timing::default(),
        || exists(&cms, "example-onnx-mnist-metrics-dashboard"),
    )
    .await?;
    // Upstream deletes it (no ownership check); we leave what we do not manage.
    consistently("the user's Route survives", short(), || {
        let route = exists(&routes(&t), "example-onnx-mnist");
        async move { route.await.map(|_| ()) }
    })
    .await?;
    delete_isvc(&t, "example-onnx-mnist").await?;
    exists(&routes(&t), "example-onnx-mnist").await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_09_d_18_metrics_objects_appear_when_the_runtime_does() -> anyhow::Result<()> {
    let t = setup("isvc-c09").await?;
    // The runtime declares no metrics port at first: the InferenceService reconciles
    // successfully (nothing retries it) without a metrics Service. Only the ServingRuntime
    // watch (D-18) can then bring the reconcile that creates the metrics objects.
    let mut runtime = fixtures::ovms_runtime().build();
    let annotations = runtime["spec"]
        .as_object_mut()
        .unwrap()
        .remove("annotations")
        .expect("the fixture declares its metrics port");
    create(&runtimes(&t), runtime).await?;
    create(&isvcs(&t), fixtures::isvc("example-onnx-mnist").build()).await?;
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = t.api();
    eventually("reconciled without metrics", Timing::default(), || async {
        let dashboard = exists(&cms, "example-onnx-mnist-metrics-dashboard").await?;
        anyhow::ensure!(
            dashboard
                .data
                .as_ref()
                .and_then(|d| d.get("supported"))
                .map(String::as_str)
                == Some("false"),
            "{:?}",
            dashboard.data
        );
        Ok(())
    })
    .await?;
    absent(&t.api::<Service>(), "example-onnx-mnist-metrics").await?;
    // Nothing queued may be left to run after the patch: a reconcile of the service still
    // pending (its own objects' events) would see the patched runtime and hide a broken watch.
    odh_test_support::host::quiet(
        &controller_running().ctx,
        Timing::within(Duration::from_secs(60)),
    )
    .await?;
    absent(&t.api::<Service>(), "example-onnx-mnist-metrics").await?;
    runtimes(&t)
        .patch(
            "kserve-ovms",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"annotations": annotations}})),
        )
        .await?;
    let svc = eventually(
        "C-09: the metrics Service exists",
        Timing::default(),
        || exists(&t.api::<Service>(), "example-onnx-mnist-metrics"),
    )
    .await?;
    let port = &svc.spec.as_ref().unwrap().ports.as_ref().unwrap()[0];
    assert_eq!(
        (port.name.as_deref(), port.port),
        (Some("kserve-ovms-metrics"), 8888)
    );
    let sm = eventually("C-09: the ServiceMonitor exists", Timing::default(), || {
        exists(&service_monitors(&t), "example-onnx-mnist-metrics")
    })
    .await?;
    assert_eq!(
        sm.data["spec"]["selector"]["matchLabels"]["name"],
        "example-onnx-mnist-metrics"
    );
    assert_eq!(sm.data["spec"]["endpoints"][0]["path"], "/metrics");
    Ok(())
}

fn keda_apis(
    t: &TestContext,
) -> (
    Api<ServiceAccount>,
    Api<Role>,
    Api<RoleBinding>,
    Api<DynamicObject>,
) {
    (t.api(), t.api(), t.api(), trigger_auths(t))
}

/// The owner uids of the five KEDA objects; each reference must be upstream's plain owner
/// reference (D11: `controller: false, blockOwnerDeletion: true`).
async fn keda_owners(t: &TestContext) -> anyhow::Result<Vec<Vec<String>>> {
    let (sas, roles, rbs, tas) = keda_apis(t);
    let shared = |object: &dyn ResourceExtRefs| -> anyhow::Result<Vec<String>> {
        for r in object.refs() {
            anyhow::ensure!(
                r.controller == Some(false) && r.block_owner_deletion == Some(true),
                "not a plain blocking owner reference: {r:?}"
            );
        }
        Ok(object.refs().iter().map(|r| r.uid.clone()).collect())
    };
    Ok(vec![
        shared(&exists(&sas, KEDA).await?)?,
        shared(&exists(&roles, KEDA).await?)?,
        shared(&exists(&rbs, KEDA).await?)?,
        shared(&exists(&tas, KEDA).await?)?,
        shared(&exists(&t.api::<k8s_openapi::api::core::v1::Secret>(), KEDA).await?)?,
    ])
}

/// Owner references of any object (object-safe, unlike `ResourceExt`).
trait ResourceExtRefs {
    fn refs(&self) -> &[k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference];
}

impl<T: ResourceExt> ResourceExtRefs for T {
    fn refs(&self) -> &[k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference] {
        self.owner_references()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_14_to_c_21_keda_objects_are_shared_restored_released_and_cleaned_up()
-> anyhow::Result<()> {
    let t = setup("isvc-keda").await?;
    create(&runtimes(&t), fixtures::ovms_runtime().build()).await?;
    let uid1 = create(&isvcs(&t), fixtures::isvc("isvc1").keda().build())
        .await?
        .uid()
        .unwrap();
    let uid2 = create(&isvcs(&t), fixtures::isvc("isvc2").keda().build())
        .await?
        .uid()
        .unwrap();
    eventually(
        "C-14: all five objects carry both owners",
        Timing::default(),
        || async {
            for owners in keda_owners(&t).await? {
                anyhow::ensure!(
                    owners.contains(&uid1) && owners.contains(&uid2),
                    "{owners:?}"
                );
            }
            Ok(())
        },
    )
    .await?;
    // C-16: a drifted Role rule is put back.
    let roles: Api<Role> = t.api();
    roles
        .patch(
            KEDA,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"rules": [{"apiGroups": [""], "resources": ["fake"], "verbs": ["get"]}]}),
            ),
        )
        .await?;
    eventually(
        "C-16: the Role's rules are restored",
        Timing::default(),
        || async {
            let r = roles.get(KEDA).await?;
            let rules = r.rules.unwrap_or_default();
            anyhow::ensure!(
                rules.len() == 2 && rules[0].resources.as_ref().unwrap()[0] == "pods",
                "{rules:?}"
            );
            Ok(())
        },
    )
    .await?;
    // C-17: a changed ServiceAccount label is put back.
    let (sas, _, rbs, tas) = keda_apis(&t);
    let fake_label = json!({"metadata": {"labels": {"odh-model-controller": "fake"}}});
    sas.patch(KEDA, &PatchParams::default(), &Patch::Merge(&fake_label))
        .await?;
    eventually(
        "C-17: the ServiceAccount label is restored",
        Timing::default(),
        || async {
            let sa = sas.get(KEDA).await?;
            anyhow::ensure!(
                sa.labels()["odh-model-controller"] == "keda-reconciler",
                "{:?}",
                sa.labels()
            );
            Ok(())
        },
    )
    .await?;
    // C-18: a changed RoleBinding subject is put back.
    rbs.patch(
        KEDA,
        &PatchParams::default(),
        &Patch::Merge(json!({"subjects": [{"kind": "User", "name": "fake", "apiGroup": "rbac.authorization.k8s.io"}]})),
    )
    .await?;
    eventually(
        "C-18: the RoleBinding subject is restored",
        Timing::default(),
        || async {
            let rb = rbs.get(KEDA).await?;
            let subjects = rb.subjects.unwrap_or_default();
            anyhow::ensure!(
                subjects
                    .iter()
                    .any(|s| s.kind == "ServiceAccount" && s.name == KEDA)
                    && !subjects.iter().any(|s| s.kind == "User"),
                "{subjects:?}"
            );
            Ok(())
        },
    )
    .await?;
    // C-20: an emptied TriggerAuthentication secretTargetRef is put back.
    tas.patch(
        KEDA,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"secretTargetRef": []}})),
    )
    .await?;
    eventually(
        "C-20: the secretTargetRef is restored",
        Timing::default(),
        || async {
            let ta = tas.get(KEDA).await?;
            let refs = ta.data["spec"]["secretTargetRef"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            anyhow::ensure!(refs.len() == 2, "{refs:?}");
            Ok(())
        },
    )
    .await?;
    // C-19: a changed Secret label is put back at the next reconcile. Secrets outside
    // `opendatahub.io/managed=true` are not watched (upstream's cache filter), so the
    // InferenceService is touched to bring that reconcile.
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = t.api();
    secrets
        .patch(KEDA, &PatchParams::default(), &Patch::Merge(&fake_label))
        .await?;
    isvcs(&t)
        .patch(
            "isvc1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"touch": "1"}}})),
        )
        .await?;
    eventually(
        "C-19: the Secret label is restored",
        Timing::default(),
        || async {
            let secret = secrets.get(KEDA).await?;
            anyhow::ensure!(
                secret.labels()["odh-model-controller"] == "keda-reconciler",
                "{:?}",
                secret.labels()
            );
            Ok(())
        },
    )
    .await?;
    // C-15: deleting ISVC2 releases it; ISVC1 keeps the objects.
    delete_isvc(&t, "isvc2").await?;
    eventually(
        "C-15: only ISVC1 owns the objects",
        Timing::default(),
        || async {
            for owners in keda_owners(&t).await? {
                anyhow::ensure!(
                    owners.contains(&uid1) && !owners.contains(&uid2),
                    "{owners:?}"
                );
            }
            Ok(())
        },
    )
    .await?;
    // C-21: the last one gone, the objects go.
    delete_isvc(&t, "isvc1").await?;
    let (sas, roles, rbs, tas) = keda_apis(&t);
    eventually(
        "C-21: the KEDA objects are deleted",
        Timing::default(),
        || async {
            absent(&sas, KEDA).await?;
            absent(&roles, KEDA).await?;
            absent(&rbs, KEDA).await?;
            absent(&tas, KEDA).await?;
            absent(&t.api::<k8s_openapi::api::core::v1::Secret>(), KEDA).await
        },
    )
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_22_an_inference_service_dropping_keda_removes_the_objects() -> anyhow::Result<()> {
    let t = setup("isvc-c22").await?;
    create(&runtimes(&t), fixtures::ovms_runtime().build()).await?;
    create(&isvcs(&t), fixtures::isvc("isvc1").keda().build()).await?;
    eventually("the KEDA objects exist", Timing::default(), || {
        keda_owners(&t)
    })
    .await?;
    isvcs(&t)
        .patch(
            "isvc1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"predictor": {"autoScaling": null}}})),
        )
        .await?;
    let (sas, roles, rbs, tas) = keda_apis(&t);
    eventually(
        "C-22: the KEDA objects are deleted",
        Timing::default(),
        || async {
            absent(&sas, KEDA).await?;
            absent(&roles, KEDA).await?;
            absent(&rbs, KEDA).await?;
            absent(&tas, KEDA).await
        },
    )
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_23_c_25_c_26_foreign_owners_and_unowned_objects_are_respected() -> anyhow::Result<()> {
    let t = setup("isvc-c23").await?;
    create(&runtimes(&t), fixtures::ovms_runtime().build()).await?;
    // C-26: with no KEDA user, an unowned ServiceAccount of that name is left alone (upstream
    // deletes it; docs/divergences.md).
    let sas: Api<ServiceAccount> = t.api();
    let unowned: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": KEDA}}))?;
    sas.create(&PostParams::default(), &unowned).await?;
    let isvc1 = create(&isvcs(&t), fixtures::isvc("isvc1").build()).await?;
    let uid1 = isvc1.uid().unwrap();
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = t.api();
    eventually("isvc1 is reconciled", Timing::default(), || {
        exists(&cms, "isvc1-metrics-dashboard")
    })
    .await?;
    consistently(
        "C-26: the unowned ServiceAccount survives",
        short(),
        || async {
            anyhow::ensure!(owner_uids(&exists(&sas, KEDA).await?).is_empty());
            Ok(())
        },
    )
    .await?;
    // C-23: all five objects co-owned by isvc1 (not using KEDA) and a foreign owner, while
    // isvc2 uses KEDA: isvc1 lets go of each, the foreign owner stays on each.
    sas.delete(KEDA, &DeleteParams::default()).await?;
    let refs = json!([
        {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService", "name": "isvc1", "uid": uid1},
        {"apiVersion": "v1", "kind": "Pod", "name": "other-owner", "uid": "other-owner-uid"},
    ]);
    let metadata = json!({"name": KEDA, "ownerReferences": refs,
                          "labels": {"odh-model-controller": "keda-reconciler"}});
    let (sas, roles, rbs, tas) = keda_apis(&t);
    let object = |extra: Value| {
        let mut v = json!({"metadata": metadata});
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        v
    };
    // The Secret first: it is not watched (only managed Secrets are), so its creation does not
    // reconcile isvc1; the ServiceAccount's creation after it does, and that reconcile sees it.
    let mut secret = object(json!({"type": "kubernetes.io/service-account-token"}));
    secret["metadata"]["annotations"] = json!({"kubernetes.io/service-account.name": KEDA});
    t.api::<k8s_openapi::api::core::v1::Secret>()
        .create(&PostParams::default(), &serde_json::from_value(secret)?)
        .await?;
    sas.create(
        &PostParams::default(),
        &serde_json::from_value(object(json!({})))?,
    )
    .await?;
    roles
        .create(
            &PostParams::default(),
            &serde_json::from_value(object(json!({"rules": []})))?,
        )
        .await?;
    rbs.create(
        &PostParams::default(),
        &serde_json::from_value(object(json!({
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": KEDA},
        })))?,
    )
    .await?;
    tas.create(
        &PostParams::default(),
        &serde_json::from_value(object(json!({
            "apiVersion": "keda.sh/v1alpha1", "kind": "TriggerAuthentication", "spec": {},
        })))?,
    )
    .await?;
    create(&isvcs(&t), fixtures::isvc("isvc2").keda().build()).await?;
    eventually(
        "C-23: isvc1 lets go of all five, the foreign owner stays on each",
        Timing::default(),
        || async {
            let (sas, roles, rbs, tas) = keda_apis(&t);
            let secrets = t.api::<k8s_openapi::api::core::v1::Secret>();
            let all = [
                ("ServiceAccount", owner_uids(&exists(&sas, KEDA).await?)),
                ("Role", owner_uids(&exists(&roles, KEDA).await?)),
                ("RoleBinding", owner_uids(&exists(&rbs, KEDA).await?)),
                (
                    "TriggerAuthentication",
                    owner_uids(&exists(&tas, KEDA).await?),
                ),
                ("Secret", owner_uids(&exists(&secrets, KEDA).await?)),
            ];
            for (kind, owners) in all {
                anyhow::ensure!(
                    !owners.contains(&uid1) && owners.contains(&"other-owner-uid".to_string()),
                    "{kind}: {owners:?}"
                );
            }
            Ok(())
        },
    )
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d_16_a_failing_cleanup_delete_does_not_keep_the_finalizer() -> anyhow::Result<()> {
    let t = setup("isvc-d16").await?;
    let crbs = Api::<ClusterRoleBinding>::all(t.client.clone());
    let binding = format!("{}-default-auth-delegator", t.namespace);
    create(&runtimes(&t), fixtures::ovms_runtime().build()).await?;
    create(&isvcs(&t), fixtures::isvc("only").with_auth(None).build()).await?;
    eventually("the binding exists", Timing::default(), || {
        exists(&crbs, &binding)
    })
    .await?;
    // An admission policy refuses to delete this binding: the cleanup's Delete fails.
    let refusal = refuse_writes(
        &format!("keep-{binding}"),
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
    )
    .on(&["DELETE"])
    .unless(
        &format!("oldObject.metadata.name != '{binding}'"),
        "kept by the test",
    )
    .install(&t.client)
    .await?;
    let dry_run = DeleteParams {
        dry_run: true,
        ..DeleteParams::default()
    };
    eventually("the policy is active", Timing::default(), || async {
        match crbs.delete(&binding, &dry_run).await {
            Err(kube::Error::Api(s)) if s.message.contains("kept by the test") => Ok(()),
            other => anyhow::bail!("not refused yet: {other:?}"),
        }
    })
    .await?;

    // D-16: the InferenceService goes although its cleanup Delete keeps failing.
    delete_isvc(&t, "only").await?;
    exists(&crbs, &binding).await?;

    refusal.remove().await?;
    eventually("the binding can be removed", Timing::default(), || async {
        match crbs.delete(&binding, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
            Err(e) => anyhow::bail!("{e}"),
        }
    })
    .await?;
    Ok(())
}
