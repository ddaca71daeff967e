//! `odh-model-controller run` with its default plugins (the built-in `isvc`) against the real
//! apiserver: the apiserver calls our HTTPS webhooks, the controller reconciles, the Model
//! Registry sync talks to a small local stand-in for the Model Registry REST API (as the
//! controller's ServiceAccount, whose token only the host holds), and the settings come from
//! upstream's environment variables (`POD_NAMESPACE`, `MODELREGISTRY_STATE`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, Service, ServiceAccount};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use kube::{Client, ResourceExt};
use odh_model_controller::builtins;
use odh_model_controller::plugin::{LoadRequest, LoadedPlugin, Source};
use odh_model_controller::profile::Profile;
use odh_model_controller::webhook::WebhookTable;
use odh_test_support::cluster_checks::{event_with, refuse_writes};
use odh_test_support::host::webhook_kinds;
use odh_test_support::process::ServingHost;
use odh_test_support::{TestContext, Timing, eventually};
use serde_json::{Value, json};

const VALIDATING: &str = "validating.isvc.odh-model-controller.opendatahub.io";
const MUTATING: &str = "minferenceservice-v1beta1.odh-model-controller.opendatahub.io";
const VALIDATING_GRAPH: &str = "vinferencegraph-v1alpha1.odh-model-controller.opendatahub.io";

/// M-01, MAIN-2: the exact webhook kinds of each profile, in upstream's order.
#[test]
fn m_01_default_plugins_register_the_inference_service_webhooks_except_in_xks() {
    let engine = odh_test_support::host::engine();
    let plugins: Vec<LoadedPlugin> = builtins::defaults()
        .map(|b| {
            let bytes = builtins::component(b.name).unwrap();
            LoadedPlugin::load(
                &engine,
                LoadRequest::new(Source::Builtin(b.name.into()), bytes),
            )
            .unwrap()
        })
        .collect();
    let table = WebhookTable::new(plugins.iter()).unwrap();
    // The spec's lists, in upstream's registration order: every kind is served by a default
    // plugin (`pod-mutator`, `nim-account`, `isvc`, `llm-gateway`), so each profile registers
    // exactly its list, in order, and nothing else.
    assert_eq!(
        webhook_kinds(&Profile::Full.webhooks(table.clone())),
        [
            "Pod",
            "NIMAccount",
            "InferenceService",
            "InferenceGraph",
            "LLMInferenceService",
        ],
        "full profile"
    );
    assert_eq!(
        webhook_kinds(&Profile::WebhookOnly.webhooks(table)),
        ["LLMInferenceService"],
        "xKS profile"
    );
}

/// A Model Registry REST stand-in: serving environments and inference services in memory.
#[derive(Default)]
struct Registry {
    environments: BTreeMap<String, Value>,
    services: BTreeMap<String, Value>,
    next_id: u64,
    /// The `Authorization` header of every request, in order ("" when absent).
    authorizations: Vec<String>,
}

type Shared = Arc<Mutex<Registry>>;

fn id(r: &mut Registry) -> String {
    r.next_id += 1;
    r.next_id.to_string()
}

/// The Model Registry Service's name and its `http-api` port, as the Model Registry operator
/// makes them.
const MR_SERVICE: &str = "model-registry";
const MR_PORT: u16 = 8080;

async fn model_registry() -> (u16, Shared) {
    let state = Shared::default();
    let base = "/api/model_registry/v1alpha3";
    let app = Router::new()
        .route(
            &format!("{base}/serving_environment"),
            get(
                |State(s): State<Shared>, Query(q): Query<BTreeMap<String, String>>| async move {
                    let r = s.lock().unwrap();
                    match r.environments.get(&q["name"]) {
                        Some(e) => Ok(Json(e.clone())),
                        None => Err(StatusCode::NOT_FOUND),
                    }
                },
            ),
        )
        .route(
            &format!("{base}/serving_environments"),
            axum::routing::post(|State(s): State<Shared>, Json(mut body): Json<Value>| async move {
                let mut r = s.lock().unwrap();
                body["id"] = json!(id(&mut r));
                let name = body["name"].as_str().unwrap_or_default().to_string();
                r.environments.insert(name, body.clone());
                (StatusCode::CREATED, Json(body))
            }),
        )
        .route(
            &format!("{base}/inference_service"),
            get(
                |State(s): State<Shared>, Query(q): Query<BTreeMap<String, String>>| async move {
                    let r = s.lock().unwrap();
                    r.services
                        .values()
                        .find(|v| v["name"] == q["name"].as_str())
                        .map(|v| Json(v.clone()))
                        .ok_or(StatusCode::NOT_FOUND)
                },
            ),
        )
        .route(
            &format!("{base}/inference_services"),
            axum::routing::post(|State(s): State<Shared>, Json(mut body): Json<Value>| async move {
                let mut r = s.lock().unwrap();
                let new_id = id(&mut r);
                body["id"] = json!(new_id);
                r.services.insert(new_id, body.clone());
                (StatusCode::CREATED, Json(body))
            }),
        )
        .route(
            &format!("{base}/inference_services/{{id}}"),
            get(|State(s): State<Shared>, Path(id): Path<String>| async move {
                let r = s.lock().unwrap();
                r.services.get(&id).map(|v| Json(v.clone())).ok_or(StatusCode::NOT_FOUND)
            })
            .patch(
                |State(s): State<Shared>, Path(id): Path<String>, Json(patch): Json<Value>| async move {
                    let mut r = s.lock().unwrap();
                    let Some(v) = r.services.get_mut(&id) else {
                        return Err(StatusCode::NOT_FOUND);
                    };
                    for (k, val) in patch.as_object().cloned().unwrap_or_default() {
                        v[k] = val;
                    }
                    Ok(Json(v.clone()))
                },
            ),
        )
        .with_state(state.clone());
    let seen = state.clone();
    let app = app.layer(axum::middleware::from_fn(
        move |request: axum::extract::Request, next: axum::middleware::Next| {
            let authorization = request
                .headers()
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string();
            seen.lock().unwrap().authorizations.push(authorization);
            next.run(request)
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (port, state)
}

/// A webhook entry for InferenceGraphs (upstream's rules: CREATE and UPDATE of v1alpha1).
fn graph_entry(mut entry: Value) -> Value {
    entry["rules"] = json!([{"apiGroups": ["serving.kserve.io"], "apiVersions": ["v1alpha1"],
                             "resources": ["inferencegraphs"], "operations": ["CREATE", "UPDATE"]}]);
    entry
}

fn webhook_entry(host: &ServingHost, name: &str, path: &str, namespaces: &[&str]) -> Value {
    json!({
        "name": name,
        "clientConfig": host.client_config(path),
        "rules": [{"apiGroups": ["serving.kserve.io"], "apiVersions": ["v1beta1"],
                   "resources": ["inferenceservices"], "operations": ["CREATE", "UPDATE"]}],
        "failurePolicy": "Fail",
        "sideEffects": if name == MUTATING { "NoneOnDryRun" } else { "None" },
        "admissionReviewVersions": ["v1"],
        "namespaceSelector": {"matchExpressions": [{
            "key": "kubernetes.io/metadata.name", "operator": "In", "values": namespaces,
        }]},
        "timeoutSeconds": 10,
    })
}

/// A fixture InferenceService as a client creates it (no namespace: the API's; no uid), its
/// model without storage.
fn isvc(name: &str) -> Value {
    odh_test_fixtures::isvc(name)
        .remove("/metadata/namespace")
        .remove("/metadata/uid")
        .remove("/spec/predictor/model/storage")
        .build()
}

fn dynamic(client: &Client, ns: &str, gvk: (&str, &str, &str), plural: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(gvk.0, gvk.1, gvk.2), plural);
    Api::namespaced_with(client.clone(), ns, &ar)
}

async fn create(api: &Api<DynamicObject>, v: Value) -> Result<DynamicObject, kube::Error> {
    api.create(&PostParams::default(), &serde_json::from_value(v).unwrap())
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_controller_and_model_registry_through_the_real_binary() -> anyhow::Result<()> {
    let t = TestContext::new("isvc-e2e").await?;
    let ns = t.namespace.clone();
    let client = t.client.clone();
    // The protected (application) namespace is POD_NAMESPACE.
    let protected = odh_test_support::namespace::unique_name("isvc-e2e-app");
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": protected}}))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await?;

    // The Model Registry lives in its own namespace (the DataScienceCluster's
    // registriesNamespace), behind its Service; the tenant's namespace has a server of the
    // tenant's.
    let registries = odh_test_support::namespace::unique_name("isvc-e2e-mr");
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": registries}}))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await?;
    let service: Service = serde_json::from_value(json!({
        "metadata": {"name": MR_SERVICE, "labels": {"component": "model-registry"}},
        "spec": {"ports": [{"name": "http-api", "port": MR_PORT}]},
    }))?;
    Api::<Service>::namespaced(client.clone(), &registries)
        .create(&PostParams::default(), &service)
        .await?;
    let (mr_port, registry) = model_registry().await;
    let (tenant_port, tenant_server) = model_registry().await;
    let dscs = Api::<DynamicObject>::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(
                "datasciencecluster.opendatahub.io",
                "v1",
                "DataScienceCluster",
            ),
            "datascienceclusters",
        ),
    );
    // This test is the only user of DataScienceClusters in the shared apiserver: one left by
    // an earlier run that failed half-way would make every lookup fail.
    dscs.delete_collection(&DeleteParams::default(), &Default::default())
        .await?;
    let dsc_name = format!("dsc-{ns}");
    dscs.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "apiVersion": "datasciencecluster.opendatahub.io/v1", "kind": "DataScienceCluster",
            "metadata": {"name": dsc_name},
            "spec": {"components": {"modelregistry": {"registriesNamespace": registries}}},
        }))?,
    )
    .await?;

    // The host runs as a ServiceAccount with a real token (bound to cluster-admin here), and
    // the admin grants the isvc plugin the registries' namespace for the controller's identity.
    let sa: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "odh-model-controller"}}))?;
    Api::<ServiceAccount>::namespaced(client.clone(), &protected)
        .create(&PostParams::default(), &sa)
        .await?;
    let binding_name = format!("isvc-e2e-{ns}");
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": binding_name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "odh-model-controller", "namespace": protected}],
    }))?;
    let bindings = Api::<ClusterRoleBinding>::all(client.clone());
    bindings.create(&PostParams::default(), &binding).await?;
    let token =
        odh_test_support::service_account::token(&client, &protected, "odh-model-controller")
            .await?;
    let work = std::env::temp_dir().join(odh_test_support::namespace::unique_name("isvc-e2e"));
    std::fs::create_dir_all(&work)?;
    let kubeconfig = work.join("kubeconfig");
    odh_test_support::service_account::token_kubeconfig(&token, &kubeconfig)?;
    let plugins: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "odh-model-controller-plugins"},
        "data": {"plugins.yaml": format!(
            "plugins:\n  isvc:\n    source: builtin\n    grants: {{serviceAccountNamespaces: [{registries}]}}\n"
        )},
    }))?;
    Api::<ConfigMap>::namespaced(client.clone(), &protected)
        .create(&PostParams::default(), &plugins)
        .await?;

    // Services are reached by their cluster names, as in a cluster: a granted name that
    // resolves to loopback is refused, so the names go to the local servers through the test
    // override.
    let tenant_url = format!("http://mine.{ns}.svc.cluster.local:{MR_PORT}");
    let resolve = format!(
        "{MR_SERVICE}.{registries}.svc.cluster.local:{MR_PORT}=127.0.0.1:{mr_port},\
         mine.{ns}.svc.cluster.local:{MR_PORT}=127.0.0.1:{tenant_port}"
    );
    // The cluster admin's ceiling lets the ConfigMap send the identity there (T15: without it
    // the entry is refused).
    let ceiling = format!("--plugin-grantable-identity-namespaces={registries}");
    let host = ServingHost::start_as_with_args(
        &kubeconfig,
        "isvc-e2e",
        false,
        &[ceiling.as_str()],
        &[
            ("POD_NAMESPACE", protected.as_str()),
            ("MODELREGISTRY_STATE", "managed"),
            ("ODH_TEST_HTTP_RESOLVE", resolve.as_str()),
        ],
    )
    .await?;

    let scope = [ns.as_str(), protected.as_str()];
    let validating: ValidatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": format!("isvc-e2e-{ns}")},
        "webhooks": [
            webhook_entry(&host, VALIDATING, "/validate-serving-kserve-io-v1beta1-inferenceservice", &scope),
            graph_entry(webhook_entry(&host, VALIDATING_GRAPH, "/validate-serving-kserve-io-v1alpha1-inferencegraph", &scope)),
        ],
    }))?;
    let mutating: MutatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": format!("isvc-e2e-{ns}")},
        "webhooks": [webhook_entry(&host, MUTATING, "/mutate-serving-kserve-io-v1beta1-inferenceservice", &scope)],
    }))?;
    let vwcs = Api::<ValidatingWebhookConfiguration>::all(client.clone());
    let mwcs = Api::<MutatingWebhookConfiguration>::all(client.clone());
    vwcs.create(&PostParams::default(), &validating).await?;
    mwcs.create(&PostParams::default(), &mutating).await?;

    let isvcs = dynamic(
        &client,
        &ns,
        ("serving.kserve.io", "v1beta1", "InferenceService"),
        "inferenceservices",
    );
    let runtimes = dynamic(
        &client,
        &ns,
        ("serving.kserve.io", "v1alpha1", "ServingRuntime"),
        "servingruntimes",
    );
    create(
        &runtimes,
        json!({"apiVersion": "serving.kserve.io/v1alpha1", "kind": "ServingRuntime",
               "metadata": {"name": "kserve-ovms"},
               "spec": {"annotations": {"prometheus.io/port": "8888"},
                        "containers": [{"name": "kserve-container", "image": "ovms"}]}}),
    )
    .await?;
    // W-V03 through the apiserver, once the webhook configuration is active.
    let long = format!("test-isvc-{}", "x".repeat(44));
    let denial = eventually(
        "W-V03: a 54-character name is denied",
        Timing::default(),
        || async {
            match create(&isvcs, isvc(&long)).await {
                Err(kube::Error::Api(s)) => Ok(s),
                Ok(_) => {
                    isvcs.delete(&long, &DeleteParams::default()).await?;
                    anyhow::bail!("admitted (webhook not active yet)")
                }
                Err(e) => Err(e.into()),
            }
        },
    )
    .await?;
    assert_eq!(denial.code, 422);
    // D12: upstream's `Invalid` status, with the offending field as a cause.
    assert_eq!(denial.reason, "Invalid");
    let details = denial.details.as_ref().expect("status.details");
    assert_eq!(
        (
            details.kind.as_str(),
            details.group.as_str(),
            details.name.as_str()
        ),
        ("InferenceService", "serving.kserve.io", long.as_str())
    );
    assert_eq!(details.causes.len(), 1);
    assert_eq!(details.causes[0].field, "metadata.name");
    assert_eq!(details.causes[0].reason, "FieldValueInvalid");
    assert_eq!(
        denial.message,
        format!(
            "admission webhook \"{VALIDATING}\" denied the request: InferenceService.serving.kserve.io \"{long}\" is invalid: metadata.name: Invalid value: \"{long}\": InferenceService name is too long. The name exceeds the maximum length of 53 characters (current length: 54)"
        )
    );
    // W-V02: the application namespace (POD_NAMESPACE) is protected.
    let in_protected = dynamic(
        &client,
        &protected,
        ("serving.kserve.io", "v1beta1", "InferenceService"),
        "inferenceservices",
    );
    match create(&in_protected, isvc("m")).await {
        Err(kube::Error::Api(s)) => assert!(
            s.message.ends_with("specified namespace is protected"),
            "{}",
            s.message
        ),
        other => panic!("W-V02: expected a denial, got {other:?}"),
    }

    // An InferenceGraph is validated on create (docs/plugins/isvc.md, "Webhooks"; IG-7 and IG-3
    // through the apiserver): a public serviceUrl is an `Invalid` denial naming the step's field.
    let graphs = dynamic(
        &client,
        &ns,
        ("serving.kserve.io", "v1alpha1", "InferenceGraph"),
        "inferencegraphs",
    );
    let graph = |name: &str, url: &str| {
        json!({"apiVersion": "serving.kserve.io/v1alpha1", "kind": "InferenceGraph",
               "metadata": {"name": name},
               "spec": {"nodes": {"root": {"routerType": "Sequence",
                                           "steps": [{"name": "first", "serviceUrl": url}]}}}})
    };
    match create(&graphs, graph("public", "https://example.com")).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(
                s.message,
                format!(
                    "admission webhook \"{VALIDATING_GRAPH}\" denied the request: InferenceGraph.serving.kserve.io \"public\" is invalid: spec.nodes[root].steps[0].serviceUrl: Invalid value: \"https://example.com\": using public hostnames is not allowed"
                )
            );
            assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
            let causes = &s.details.expect("status.details").causes;
            assert_eq!(causes[0].field, "spec.nodes[root].steps[0].serviceUrl");
        }
        other => panic!("IG-7: expected a denial, got {other:?}"),
    }
    create(
        &graphs,
        graph("local", &format!("http://isvc.{ns}.svc.cluster.local")),
    )
    .await?;

    // W-C06 through the apiserver: an S3 connection injects the ServiceAccount and storage,
    // and the `<secret>-sa` ServiceAccount is created as a side effect.
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "s3-secret", "annotations": {"opendatahub.io/connection-type-protocol": "s3"}},
        "stringData": {"AWS_ACCESS_KEY_ID": "k"},
    }))?;
    t.api::<Secret>()
        .create(&PostParams::default(), &secret)
        .await?;
    let mut v = isvc("with-s3");
    v["metadata"]["annotations"] = json!({
        "opendatahub.io/connections": "s3-secret",
        "opendatahub.io/connection-path": "models/v1",
    });
    let created = create(&isvcs, v).await?;
    assert_eq!(
        created.data["spec"]["predictor"]["serviceAccountName"],
        "s3-secret-sa"
    );
    assert_eq!(
        created.data["spec"]["predictor"]["model"]["storage"],
        json!({"key": "s3-secret", "path": "models/v1"})
    );
    let sa = t.api::<ServiceAccount>().get("s3-secret-sa").await?;
    assert_eq!(sa.secrets.unwrap()[0].name.as_deref(), Some("s3-secret"));

    // D7: a `<secret>-sa` the user made before keeps exactly its own fields (created if
    // absent, AlreadyExists is success, as upstream).
    let user_secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "user-s3", "annotations": {"opendatahub.io/connection-type-protocol": "s3"}},
        "stringData": {"AWS_ACCESS_KEY_ID": "k"},
    }))?;
    t.api::<Secret>()
        .create(&PostParams::default(), &user_secret)
        .await?;
    let own: ServiceAccount = serde_json::from_value(json!({
        "metadata": {"name": "user-s3-sa", "labels": {"team": "mine"}},
        "secrets": [{"name": "something-else"}],
    }))?;
    let own = t
        .api::<ServiceAccount>()
        .create(&PostParams::default(), &own)
        .await?;
    let mut v = isvc("with-user-sa");
    v["metadata"]["annotations"] = json!({"opendatahub.io/connections": "user-s3"});
    let created = create(&isvcs, v).await?;
    assert_eq!(
        created.data["spec"]["predictor"]["serviceAccountName"],
        "user-s3-sa"
    );
    let after = t.api::<ServiceAccount>().get("user-s3-sa").await?;
    assert_eq!(after.resource_version(), own.resource_version());
    assert_eq!(after.secrets, own.secrets);
    assert_eq!(after.managed_fields().len(), own.managed_fields().len());

    // The controller runs the default plugin: finalizer and dashboard ConfigMap.
    eventually(
        "the controller reconciles with-s3",
        Timing::default(),
        || async {
            let cm = t
                .api::<ConfigMap>()
                .get_opt("with-s3-metrics-dashboard")
                .await?;
            anyhow::ensure!(cm.is_some(), "no dashboard ConfigMap yet");
            let o = isvcs.get("with-s3").await?;
            anyhow::ensure!(
                o.finalizers()
                    .iter()
                    .any(|f| f == "odh.inferenceservice.finalizers")
            );
            Ok(())
        },
    )
    .await?;

    // E-02: registered model 1, version 2 ⇒ an MR InferenceService is created and its id
    // lands on the InferenceService, with the MR finalizer.
    let mut v = isvc("dummy-inference-service");
    v["metadata"]["labels"] = json!({
        "modelregistry.opendatahub.io/registered-model-id": "1",
        "modelregistry.opendatahub.io/model-version-id": "2",
    });
    create(&isvcs, v).await?;
    let registered = eventually(
        "E-02: the ISVC carries the MR id",
        Timing::default(),
        || async {
            let o = isvcs.get("dummy-inference-service").await?;
            let id = o
                .labels()
                .get("modelregistry.opendatahub.io/inference-service-id")
                .cloned();
            anyhow::ensure!(id.is_some(), "labels {:?}", o.labels());
            anyhow::ensure!(
                o.finalizers()
                    .iter()
                    .any(|f| f == "modelregistry.opendatahub.io/finalizer"),
                "{:?}",
                o.finalizers()
            );
            Ok((o, id.unwrap()))
        },
    )
    .await?;
    let (o, mr_id) = registered;
    {
        let r = registry.lock().unwrap();
        let mr = &r.services[&mr_id];
        assert!(
            mr["name"]
                .as_str()
                .unwrap()
                .starts_with("dummy-inference-service")
        );
        assert_eq!(
            (
                mr["registeredModelId"].as_str(),
                mr["modelVersionId"].as_str()
            ),
            (Some("1"), Some("2"))
        );
        assert_eq!(mr["servingEnvironmentId"], r.environments[&ns]["id"]);
        assert_eq!(mr["desiredState"], "DEPLOYED");
        // Managed: every call carried the controller's real token, added by the host.
        assert!(!r.authorizations.is_empty());
        assert!(
            r.authorizations
                .iter()
                .all(|a| *a == format!("Bearer {token}")),
            "{:?}",
            r.authorizations.iter().map(|a| a.len()).collect::<Vec<_>>()
        );
    }

    // A tenant points the Model Registry of their InferenceService at a server of theirs (a
    // Service of their own namespace): the host sends it nothing, the ISVC gets a Warning
    // Event saying why.
    let mut v = isvc("tenant-steered");
    v["metadata"]["labels"] = json!({
        "modelregistry.opendatahub.io/registered-model-id": "1",
        "modelregistry.opendatahub.io/model-version-id": "2",
    });
    v["metadata"]["annotations"] = json!({"modelregistry.opendatahub.io/url": tenant_url});
    create(&isvcs, v).await?;
    let events: Api<Event> = Api::namespaced(client.clone(), &ns);
    eventually(
        "the tenant-steered ISVC gets a Warning Event",
        Timing::default(),
        || async {
            event_with(
                &events,
                "ReconcileFailed",
                &format!(
                    "the controller's identity was not sent to the Service mine of namespace {ns}"
                ),
            )
            .await
        },
    )
    .await?;
    {
        let seen = tenant_server.lock().unwrap();
        assert!(
            seen.authorizations.is_empty(),
            "the tenant's server was called: {} requests",
            seen.authorizations.len()
        );
    }
    isvcs
        .delete("tenant-steered", &DeleteParams::default())
        .await?;
    assert!(
        o.finalizers()
            .iter()
            .any(|f| f == "odh.inferenceservice.finalizers")
    );

    // E-05: deleting it undeploys the MR InferenceService, and the ISVC goes.
    isvcs
        .delete("dummy-inference-service", &DeleteParams::default())
        .await?;
    eventually("E-05: undeployed and gone", Timing::default(), || async {
        let state = registry.lock().unwrap().services[&mr_id]["desiredState"].clone();
        anyhow::ensure!(state == "UNDEPLOYED", "desiredState {state}");
        anyhow::ensure!(
            isvcs.get_opt("dummy-inference-service").await?.is_none(),
            "still there"
        );
        Ok(())
    })
    .await?;

    // D2 / D5: the DataScienceCluster lookup fails (a second DSC: "only one
    // DataScienceCluster is allowed") while an MR-linked InferenceService is deleted. The ODH
    // finalizer goes anyway, as upstream's does; the MR finalizer stays while the lookup fails;
    // once it recovers, the object (now held only by the MR finalizer) is still reconciled and
    // goes away without manual help.
    let mut v = isvc("stuck-inference-service");
    v["metadata"]["labels"] = json!({
        "modelregistry.opendatahub.io/registered-model-id": "1",
        "modelregistry.opendatahub.io/model-version-id": "2",
    });
    create(&isvcs, v).await?;
    let stuck_id = eventually(
        "the second MR-linked ISVC carries both finalizers",
        Timing::default(),
        || async {
            let o = isvcs.get("stuck-inference-service").await?;
            // D20: in upstream's order, the ODH finalizer first.
            let f = o.finalizers();
            anyhow::ensure!(
                f == [
                    "odh.inferenceservice.finalizers",
                    "modelregistry.opendatahub.io/finalizer"
                ],
                "{f:?}"
            );
            o.labels()
                .get("modelregistry.opendatahub.io/inference-service-id")
                .cloned()
                .ok_or_else(|| anyhow::anyhow!("no MR id yet"))
        },
    )
    .await?;
    let second_dsc = format!("dsc-second-{ns}");
    dscs.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "apiVersion": "datasciencecluster.opendatahub.io/v1", "kind": "DataScienceCluster",
            "metadata": {"name": second_dsc},
            "spec": {"components": {"modelregistry": {"registriesNamespace": registries}}},
        }))?,
    )
    .await?;
    isvcs
        .delete("stuck-inference-service", &DeleteParams::default())
        .await?;
    eventually(
        "D5: the ODH finalizer goes although the MR step fails",
        Timing::default(),
        || async {
            let o = isvcs.get("stuck-inference-service").await?;
            anyhow::ensure!(
                o.finalizers() == ["modelregistry.opendatahub.io/finalizer"],
                "{:?}",
                o.finalizers()
            );
            Ok(())
        },
    )
    .await?;
    dscs.delete(&second_dsc, &DeleteParams::default()).await?;
    eventually(
        "D2: once the DSC lookup recovers, the MR step finishes and the ISVC goes",
        Timing::default(),
        || async {
            let state = registry.lock().unwrap().services[&stuck_id]["desiredState"].clone();
            anyhow::ensure!(state == "UNDEPLOYED", "desiredState {state}");
            anyhow::ensure!(
                isvcs.get_opt("stuck-inference-service").await?.is_none(),
                "still there"
            );
            Ok(())
        },
    )
    .await?;

    // D7: when the ServiceAccount cannot be created, the API server's own status is the
    // answer, as upstream's (here an admission policy refuses that ServiceAccount).
    let refusal = refuse_writes(&format!("no-blocked-sa-{ns}"), "", "v1", "serviceaccounts")
        .on(&["CREATE"])
        .unless("object.metadata.name != 'blocked-sa'", "no blocked-sa here")
        .reason("Forbidden")
        .in_namespace(&ns)
        .install(&client)
        .await?;
    let blocked: Secret = serde_json::from_value(json!({
        "metadata": {"name": "blocked", "annotations": {"opendatahub.io/connection-type-protocol": "s3"}},
        "stringData": {"AWS_ACCESS_KEY_ID": "k"},
    }))?;
    t.api::<Secret>()
        .create(&PostParams::default(), &blocked)
        .await?;
    let attempt = std::sync::atomic::AtomicU32::new(0);
    let status = eventually(
        "D7: the policy's refusal of the ServiceAccount is the answer",
        Timing::default(),
        || async {
            let name = format!(
                "blocked-{}",
                attempt.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            );
            let mut v = isvc(&name);
            v["metadata"]["annotations"] = json!({"opendatahub.io/connections": "blocked"});
            match create(&isvcs, v).await {
                Err(kube::Error::Api(s)) => Ok(s),
                Ok(_) => {
                    // The policy is not active yet: undo and try again.
                    isvcs.delete(&name, &DeleteParams::default()).await?;
                    t.api::<ServiceAccount>()
                        .delete("blocked-sa", &DeleteParams::default())
                        .await?;
                    anyhow::bail!("admitted (policy not active yet)")
                }
                Err(e) => Err(e.into()),
            }
        },
    )
    .await?;
    assert_eq!(
        (status.code, status.reason.as_str()),
        (403, "Forbidden"),
        "{status:?}"
    );
    assert!(
        status.message.starts_with(&format!(
            "admission webhook \"{MUTATING}\" denied the request: serviceaccounts \"blocked-sa\" is forbidden"
        )) && status.message.contains("no blocked-sa here")
            && !status.message.contains("failed to create ServiceAccount"),
        "{}",
        status.message
    );
    refusal.remove().await?;

    // The `servingruntime` built-in, as the binary serves it with no plugins ConfigMap, has
    // what its keys need (real randomness, a longer deadline): every ServingRuntime reconcile
    // ensures the Ray CA in POD_NAMESPACE, so the runtime created above brings `ray-ca-tls`.
    let secrets_in_protected = Api::<Secret>::namespaced(client.clone(), &protected);
    eventually(
        "ray-ca-tls made by the built-in servingruntime plugin",
        Timing::within(std::time::Duration::from_secs(180)),
        || async {
            let ca = secrets_in_protected.get("ray-ca-tls").await?;
            anyhow::ensure!(ca.type_.as_deref() == Some("kubernetes.io/tls"));
            Ok(())
        },
    )
    .await
    .map_err(|e| host.with_log(e))?;

    vwcs.delete(&format!("isvc-e2e-{ns}"), &DeleteParams::default())
        .await?;
    mwcs.delete(&format!("isvc-e2e-{ns}"), &DeleteParams::default())
        .await?;
    dscs.delete(&dsc_name, &DeleteParams::default()).await?;
    bindings
        .delete(&binding_name, &DeleteParams::default())
        .await?;
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}
