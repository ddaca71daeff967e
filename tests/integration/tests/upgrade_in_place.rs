//! Upgrading in place from the Go controller: objects written as it writes them (Update
//! requests under its field manager `manager`) are taken over on the first reconcile, so a
//! field it set and we no longer declare goes away, a binding it created is deleted when auth
//! is off, and a user's own fields survive.

use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use odh_test_fixtures as fixtures;
use odh_test_support::host::{load, start_controllers};
use odh_test_support::{TestContext, Timing, absent, eventually};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The Go controller's field manager (controller-runtime's default: the binary's name).
const GO_MANAGER: &str = "manager";

fn as_client_sends(mut object: Value) -> Value {
    if let Some(metadata) = object["metadata"].as_object_mut() {
        metadata.remove("namespace");
        metadata.remove("uid");
    }
    object
}

async fn create_as(
    api: &Api<DynamicObject>,
    manager: &str,
    object: Value,
) -> anyhow::Result<DynamicObject> {
    let params = PostParams {
        field_manager: Some(manager.into()),
        ..Default::default()
    };
    Ok(api
        .create(&params, &serde_json::from_value(as_client_sends(object))?)
        .await?)
}

fn managers(object: &DynamicObject) -> Vec<String> {
    object
        .managed_fields()
        .iter()
        .filter_map(|m| m.manager.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_of_the_go_controller_are_taken_over() -> anyhow::Result<()> {
    let t = TestContext::new("upgrade").await?;
    let ns = t.namespace.clone();
    let isvcs = t.dynamic(
        "serving.kserve.io",
        "v1beta1",
        "InferenceService",
        "inferenceservices",
    );
    let routes = t.dynamic("route.openshift.io", "v1", "Route", "routes");
    let services = t.dynamic("", "v1", "Service", "services");
    let runtimes = t.dynamic(
        "serving.kserve.io",
        "v1alpha1",
        "ServingRuntime",
        "servingruntimes",
    );

    // The cluster as the Go controller left it: an exposed InferenceService with a canary,
    // its Route with the canary's backend, and a binding of the namespace's default
    // ServiceAccount (auth was on once; it is off now).
    create_as(&runtimes, "kubectl", fixtures::ovms_runtime().build()).await?;
    create_as(
        &services,
        "kubectl",
        fixtures::predictor_service("m").build(),
    )
    .await?;
    create_as(
        &services,
        "kubectl",
        fixtures::service(
            "m-v2-predictor",
            "m",
            "predictor",
            json!([{"name": "http", "port": 8888, "targetPort": "http"}]),
        )
        .build(),
    )
    .await?;
    let mut isvc = fixtures::isvc("m").exposed().build();
    isvc["spec"]["canary"] = json!([{"trafficPercent": 20, "predictor": {"name": "v2"}}]);
    isvc["metadata"]["finalizers"] = json!(["odh.inferenceservice.finalizers"]);
    let isvc = create_as(&isvcs, GO_MANAGER, isvc).await?;
    let owner = json!({"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
        "name": "m", "uid": isvc.uid(), "controller": true, "blockOwnerDeletion": true});
    create_as(
        &routes,
        GO_MANAGER,
        json!({
            "apiVersion": "route.openshift.io/v1", "kind": "Route",
            "metadata": {"name": "m", "labels": {"inferenceservice-name": "m"},
                         "annotations": {"haproxy.router.openshift.io/timeout": "30s"},
                         "ownerReferences": [owner]},
            "spec": {
                "to": {"kind": "Service", "name": "m-predictor", "weight": 80},
                "alternateBackends": [{"kind": "Service", "name": "m-v2-predictor", "weight": 20}],
                "port": {"targetPort": "http"},
                "tls": {"termination": "edge", "insecureEdgeTerminationPolicy": "Redirect"},
                "wildcardPolicy": "None",
            },
        }),
    )
    .await?;
    // A user's own label on the Route, under the user's field manager.
    routes
        .patch(
            "m",
            &PatchParams {
                field_manager: Some("kubectl-label".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({"metadata": {"labels": {"team": "fraud"}}})),
        )
        .await?;
    let binding = format!("{ns}-default-auth-delegator");
    let bindings: Api<ClusterRoleBinding> = Api::all(t.client.clone());
    let crb: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": binding},
        "subjects": [{"kind": "ServiceAccount", "namespace": ns, "name": "default"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:auth-delegator"},
    }))?;
    bindings
        .create(
            &PostParams {
                field_manager: Some(GO_MANAGER.into()),
                ..Default::default()
            },
            &crb,
        )
        .await?;

    // Our controller starts.
    let shutdown = CancellationToken::new();
    let _controllers =
        start_controllers(t.client.clone(), vec![load("isvc")], 1, shutdown.clone()).await?;

    // The binding the Go controller made for auth that is off now is deleted.
    absent(&bindings, &binding).await?;
    // The Route is taken over: the Go controller's manager is gone from it.
    eventually("the Route is taken over", Timing::default(), || async {
        let route = routes.get("m").await?;
        anyhow::ensure!(
            !managers(&route).iter().any(|m| m == GO_MANAGER),
            "managers {:?}",
            managers(&route)
        );
        Ok(())
    })
    .await?;

    // Canaries removed: the backend the Go controller wrote goes with them.
    isvcs
        .patch(
            "m",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"canary": null}})),
        )
        .await?;
    eventually(
        "the canary backend is removed",
        Timing::default(),
        || async {
            let route = routes.get("m").await?;
            let spec = &route.data["spec"];
            anyhow::ensure!(spec.get("alternateBackends").is_none(), "{spec}");
            anyhow::ensure!(spec["to"]["weight"] == 100, "{spec}");
            Ok(())
        },
    )
    .await?;
    let route = routes.get("m").await?;
    assert_eq!(
        route.labels().get("team").map(String::as_str),
        Some("fraud"),
        "the user's own label survives"
    );
    shutdown.cancel();
    Ok(())
}
