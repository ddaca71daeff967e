//! The LLMInferenceService mutating webhooks (built-in `llm-gateway`, docs/plugins/llm-gateway.md,
//! "Webhooks") through the real apiserver and the real binary: `odh-model-controller run` with its
//! default plugins serves both paths, registered as upstream registers them (CREATE and UPDATE,
//! failurePolicy Fail, sideEffects NoneOnDryRun). A v1alpha2 object gets its model URI from a URI
//! connection and its resources from a HardwareProfile; a v1alpha1 one its pull secret from an OCI
//! connection; an S3 connection's ServiceAccount is created; a template without a `main` container
//! gets the ContainerNameMismatch Event; an empty `URI` is a clear denial
//! (docs/plugins/llm-gateway.md, "Divergences"). The webhook-only profile (xKS) keeps both paths.

use base64::Engine;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use kube::api::{Api, DynamicObject, PostParams};
use odh_model_controller::builtins;
use odh_model_controller::plugin::{LoadRequest, LoadedPlugin, Source};
use odh_model_controller::profile::Profile;
use odh_model_controller::webhook::WebhookTable;
use odh_test_support::process::ServingHost;
use odh_test_support::{TestContext, Timing, eventually};
use serde_json::{Value, json};

const V1ALPHA2: &str = "/mutate-serving-kserve-io-v1alpha2-llminferenceservice";
const V1ALPHA1: &str = "/mutate-serving-kserve-io-v1alpha1-llminferenceservice";

/// Upstream's entry for one version (docs/plugins/llm-gateway.md, "Webhooks"), with the test's URL,
/// CA and namespace scope.
fn entry(host: &ServingHost, version: &str, path: &str, namespace: &str) -> Value {
    json!({
        "name": format!("connection-llmisvc-{version}.odh-model-controller.opendatahub.io"),
        "clientConfig": host.client_config(path),
        "rules": [{"apiGroups": ["serving.kserve.io"], "apiVersions": [version],
                   "resources": ["llminferenceservices"], "operations": ["CREATE", "UPDATE"]}],
        "failurePolicy": "Fail",
        "sideEffects": "NoneOnDryRun",
        "admissionReviewVersions": ["v1"],
        "namespaceSelector": {"matchExpressions": [{
            "key": "kubernetes.io/metadata.name", "operator": "In", "values": [namespace],
        }]},
        "timeoutSeconds": 10,
    })
}

fn connection(name: &str, protocol: &str, data: &[(&str, &str)]) -> anyhow::Result<Secret> {
    let data: serde_json::Map<String, Value> = data
        .iter()
        .map(|(k, v)| {
            (
                k.to_string(),
                base64::engine::general_purpose::STANDARD.encode(v).into(),
            )
        })
        .collect();
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name,
                     "annotations": {"opendatahub.io/connection-type-protocol": protocol}},
        "data": data,
    }))?)
}

fn service(version: &str, name: &str, annotations: Value, template: Option<Value>) -> Value {
    let mut v = json!({
        "apiVersion": format!("serving.kserve.io/{version}"),
        "kind": "LLMInferenceService",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"model": {"uri": "hf://placeholder/model"}},
    });
    if let Some(template) = template {
        v["spec"]["template"] = template;
    }
    v
}

/// MAIN-1 for the LLMInferenceService: both versions' paths are served by `llm-gateway` in the
/// full profile and stay in the webhook-only one (xKS).
#[test]
fn main_1_llm_webhooks_in_full_and_xks() {
    let engine = odh_test_support::host::engine();
    let plugins: Vec<LoadedPlugin> = builtins::defaults()
        .map(|b| {
            let bytes = builtins::component(b.name).expect("embedded");
            LoadedPlugin::load(
                &engine,
                LoadRequest::new(Source::Builtin(b.name.into()), bytes),
            )
            .expect("loads")
        })
        .collect();
    let table = WebhookTable::new(plugins.iter()).expect("a table");
    let llm_paths = |t: &WebhookTable| -> Vec<(String, String, String)> {
        let mut paths: Vec<_> = t
            .routes()
            .filter(|r| r.gvk.kind == "LLMInferenceService")
            .map(|r| {
                (
                    r.path.clone(),
                    r.plugin.name().to_string(),
                    r.gvk.version.clone(),
                )
            })
            .collect();
        paths.sort();
        paths
    };
    // Sorted by path (the table's own order is not what this checks).
    let expected = vec![
        (
            V1ALPHA1.to_string(),
            "llm-gateway".to_string(),
            "v1alpha1".to_string(),
        ),
        (
            V1ALPHA2.to_string(),
            "llm-gateway".to_string(),
            "v1alpha2".to_string(),
        ),
    ];
    assert_eq!(llm_paths(&Profile::Full.webhooks(table.clone())), expected);
    let xks = Profile::WebhookOnly.webhooks(table);
    assert_eq!(llm_paths(&xks), expected);
    assert!(
        xks.routes().all(|r| r.gvk.kind == "LLMInferenceService"),
        "only the LLMInferenceService webhooks in xKS"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_webhooks_through_the_apiserver_and_the_real_binary() -> anyhow::Result<()> {
    let t = TestContext::new("llm-webhook").await?;
    let ns = t.namespace.clone();
    let client = t.client.clone();
    let host = ServingHost::start("llm-webhook-e2e", &[("POD_NAMESPACE", ns.as_str())]).await?;
    let with_log = |e: anyhow::Error| host.with_log(e);

    let secrets: Api<Secret> = t.api();
    for secret in [
        connection("uri-conn", "uri", &[("URI", "hf://meta-llama/Llama-4")])?,
        connection("empty-uri", "uri", &[("URI", "")])?,
        connection("oci-conn", "oci", &[])?,
        connection("s3-conn", "s3", &[("AWS_S3_BUCKET", "models")])?,
    ] {
        secrets.create(&PostParams::default(), &secret).await?;
    }
    let profiles = t.dynamic(
        "infrastructure.opendatahub.io",
        "v1",
        "HardwareProfile",
        "hardwareprofiles",
    );
    t.create(
        &profiles,
        json!({"apiVersion": "infrastructure.opendatahub.io/v1", "kind": "HardwareProfile",
               "metadata": {"name": "gpu"},
               "spec": {"identifiers": [{"identifier": "nvidia.com/gpu", "defaultCount": 1}],
                        "scheduling": {"node": {"nodeSelector": {"accelerator": "gpu"}}}}}),
    )
    .await?;

    let configuration = format!("llm-webhook-e2e-{ns}");
    Api::<MutatingWebhookConfiguration>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": configuration},
                "webhooks": [
                    entry(&host, "v1alpha2", V1ALPHA2, &ns),
                    entry(&host, "v1alpha1", V1ALPHA1, &ns),
                ],
            }))?,
        )
        .await?;
    let v1alpha2 = t.dynamic(
        "serving.kserve.io",
        "v1alpha2",
        "LLMInferenceService",
        "llminferenceservices",
    );
    let v1alpha1 = t.dynamic(
        "serving.kserve.io",
        "v1alpha1",
        "LLMInferenceService",
        "llminferenceservices",
    );

    // The configuration takes effect asynchronously: retry under fresh names until mutated.
    let mut attempt = 0;
    let created: DynamicObject = eventually(
        "a v1alpha2 object is mutated (URI connection, HardwareProfile)",
        Timing::default(),
        || {
            attempt += 1;
            let name = format!("uri-hwp-{attempt}");
            let v1alpha2 = v1alpha2.clone();
            let t = &t;
            async move {
                let object = service(
                    "v1alpha2",
                    &name,
                    json!({"opendatahub.io/connections": "uri-conn",
                           "opendatahub.io/hardware-profile-name": "gpu"}),
                    Some(json!({"containers": [{"name": "main", "image": "vllm"}]})),
                );
                let created = t.create(&v1alpha2, object).await?;
                anyhow::ensure!(
                    created.data["spec"]["model"]["uri"] == "hf://meta-llama/Llama-4",
                    "not mutated: {:?}",
                    created.data["spec"]
                );
                Ok(created)
            }
        },
    )
    .await
    .map_err(with_log)?;
    let template = &created.data["spec"]["template"];
    assert_eq!(
        template["containers"][0]["resources"],
        json!({"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}})
    );
    assert_eq!(template["nodeSelector"], json!({"accelerator": "gpu"}));
    assert_eq!(
        created.metadata.annotations.as_ref().unwrap()["opendatahub.io/hardware-profile-namespace"],
        ns
    );

    // v1alpha1 through its own path: the OCI pull secret.
    let created = t
        .create(
            &v1alpha1,
            service(
                "v1alpha1",
                "oci-v1alpha1",
                json!({"opendatahub.io/connections": "oci-conn"}),
                None,
            ),
        )
        .await
        .map_err(with_log)?;
    assert_eq!(
        created.data["spec"]["template"]["imagePullSecrets"],
        json!([{"name": "oci-conn"}])
    );

    // S3: the URI and the ServiceAccount made as a side effect.
    let created = t
        .create(
            &v1alpha2,
            service(
                "v1alpha2",
                "s3-svc",
                json!({"opendatahub.io/connections": "s3-conn",
                       "opendatahub.io/connection-path": "llama/v1"}),
                None,
            ),
        )
        .await?;
    assert_eq!(created.data["spec"]["model"]["uri"], "s3://models/llama/v1");
    assert_eq!(
        created.data["spec"]["template"]["serviceAccountName"],
        "s3-conn-sa"
    );
    let account = t.api::<ServiceAccount>().get("s3-conn-sa").await?;
    assert_eq!(
        account.secrets.unwrap_or_default()[0].name.as_deref(),
        Some("s3-conn")
    );

    // HardwareProfile (docs/plugins/llm-gateway.md, "Webhooks"): a template without a `main`
    // container gets nothing from the profile, but the ContainerNameMismatch Event is created.
    let created = t
        .create(
            &v1alpha2,
            service(
                "v1alpha2",
                "no-main",
                json!({"opendatahub.io/hardware-profile-name": "gpu"}),
                Some(json!({"containers": [{"name": "server", "image": "vllm"}]})),
            ),
        )
        .await?;
    assert_eq!(created.data["spec"]["template"].get("nodeSelector"), None);
    let event = t
        .api::<k8s_openapi::api::core::v1::Event>()
        .get("no-main.hwp-container-name-mismatch")
        .await?;
    assert_eq!(event.reason.as_deref(), Some("ContainerNameMismatch"));
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(event.involved_object.name.as_deref(), Some("no-main"));
    assert_eq!(
        event.involved_object.api_version.as_deref(),
        Some("serving.kserve.io/v1alpha2")
    );
    assert_eq!(
        event.involved_object.kind.as_deref(),
        Some("LLMInferenceService")
    );

    // An empty URI value is a clear 403, not a crash (docs/plugins/llm-gateway.md, "Divergences").
    let denied = t
        .create(
            &v1alpha2,
            service(
                "v1alpha2",
                "empty-uri",
                json!({"opendatahub.io/connections": "empty-uri"}),
                None,
            ),
        )
        .await;
    let status = match denied {
        Err(e) => match e.downcast::<kube::Error>()? {
            kube::Error::Api(status) => status,
            other => anyhow::bail!("unexpected error: {other}"),
        },
        Ok(o) => anyhow::bail!("admitted: {:?}", o.data),
    };
    assert_eq!(status.code, 403, "{status:?}");
    assert_eq!(
        status.message,
        "admission webhook \"connection-llmisvc-v1alpha2.odh-model-controller.opendatahub.io\" denied the request: invalid URI \"\" from secret empty-uri: the URI is empty"
    );

    refused_event_does_not_deny(&t, &v1alpha2).await?;

    Api::<MutatingWebhookConfiguration>::all(client)
        .delete(&configuration, &Default::default())
        .await?;
    Ok(())
}

/// The ContainerNameMismatch Event is best effort, as upstream's (it only logs a failed create):
/// with Event creates refused by a ValidatingAdmissionPolicy, the service is still admitted
/// (before: the refusal denied the request with its status).
async fn refused_event_does_not_deny(
    t: &TestContext,
    v1alpha2: &Api<DynamicObject>,
) -> anyhow::Result<()> {
    let ns = t.namespace.clone();
    let refusal = odh_test_support::refusal::Refusal::install(
        &t.client,
        &format!("{ns}-refuse-events"),
        ("", "events", "CREATE"),
        &format!("object.metadata.namespace != '{ns}'"),
        "events are refused by the test",
    )
    .await?;
    let events = t.api::<k8s_openapi::api::core::v1::Event>();
    let probe: k8s_openapi::api::core::v1::Event = serde_json::from_value(json!({
        "metadata": {"name": "probe"},
        "involvedObject": {"kind": "Pod", "name": "x", "namespace": ns},
    }))?;
    let dry_run = PostParams {
        dry_run: true,
        ..Default::default()
    };
    eventually("the policy refuses Events", Timing::default(), || async {
        match events.create(&dry_run, &probe).await {
            Err(kube::Error::Api(s)) if s.message.contains("refused by the test") => Ok(()),
            other => anyhow::bail!("not refused yet: {:?}", other.map(|_| ())),
        }
    })
    .await?;
    let admitted = t
        .create(
            v1alpha2,
            service(
                "v1alpha2",
                "no-main-refused",
                json!({"opendatahub.io/hardware-profile-name": "gpu"}),
                Some(json!({"containers": [{"name": "server", "image": "vllm"}]})),
            ),
        )
        .await;
    refusal.remove().await?;
    let admitted = admitted?;
    assert_eq!(admitted.metadata.name.as_deref(), Some("no-main-refused"));
    assert!(
        events
            .get_opt("no-main-refused.hwp-container-name-mismatch")
            .await?
            .is_none()
    );
    Ok(())
}
