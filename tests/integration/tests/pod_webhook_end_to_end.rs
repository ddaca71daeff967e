//! The Pod mutating webhook (built-in `pod-mutator`, docs/plugins/pod-mutator.md, "Webhook")
//! through the real apiserver and the real binary: `odh-model-controller run` with its default
//! plugins serves `/mutate--v1-pod`, registered as upstream's kustomize output registers it (CREATE
//! of pods, failurePolicy Fail, the object selector `serving.kserve.io/inferenceservice` Exists and
//! `control-plane` DoesNotExist). Scenarios PW-1..PW-3 and X-11 as a client sees them.

use std::sync::atomic::{AtomicU32, Ordering};

use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::api::{Api, DeleteParams, PostParams};
use odh_model_controller::builtins;
use odh_model_controller::plugin::wire::Operation;
use odh_model_controller::plugin::{LoadRequest, LoadedPlugin, Source};
use odh_model_controller::profile::Profile;
use odh_model_controller::webhook::WebhookTable;
use odh_test_support::host::webhook_kinds;
use odh_test_support::process::ServingHost;
use odh_test_support::{TestContext, Timing, eventually};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const WEBHOOK: &str = "mutating.pod.odh-model-controller.opendatahub.io";
const PARAMS: &str = "odh-model-controller-parameters";
const IMAGE: &str = "registry.redhat.io/ubi9/ubi-minimal:latest";
/// SHA-256 of upstream's init script (`pod_webhook.go` at the spec's snapshot).
const SCRIPT_SHA256: &str = "60f07b79337bcfcb4ad453fb2a74427430e57f0bd845fd6130f99b89758f02ad";

/// Upstream's webhook entry, with the test's URL, CA and namespace scope.
fn pod_webhook(host: &ServingHost, namespace: &str) -> Value {
    json!({
        "name": WEBHOOK,
        "clientConfig": host.client_config("/mutate--v1-pod"),
        "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"],
                   "operations": ["CREATE"]}],
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "objectSelector": {"matchExpressions": [
            {"key": "serving.kserve.io/inferenceservice", "operator": "Exists"},
            {"key": "control-plane", "operator": "DoesNotExist"},
        ]},
        "namespaceSelector": {"matchExpressions": [{
            "key": "kubernetes.io/metadata.name", "operator": "In", "values": [namespace],
        }]},
        "timeoutSeconds": 10,
    })
}

/// A predictor Pod of a multi-node Ray runtime as KServe creates it: `kserve-container` with
/// `RAY_USE_TLS` set to `ray_use_tls`.
fn ray_pod(name: &str, ray_use_tls: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {
            "serving.kserve.io/inferenceservice": "vllm", "component": "predictor"}},
        "spec": {"containers": [
            {"name": "kserve-container", "image": "vllm",
             "env": [{"name": "RAY_USE_TLS", "value": ray_use_tls}]},
            {"name": "worker-container", "image": "vllm",
             "env": [{"name": "RAY_USE_TLS", "value": ray_use_tls}]},
        ]},
    }))
    .expect("a Pod")
}

fn params(data: Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": PARAMS}, "data": data}))
        .expect("a ConfigMap")
}

fn untouched(pod: &Pod) -> bool {
    let spec = pod.spec.as_ref().expect("a spec");
    spec.init_containers.is_none()
        && spec.volumes.is_none()
        && spec.containers.iter().all(|c| c.volume_mounts.is_none())
}

/// Creates Pods named `<prefix>-<n>` until the webhook denies one (a Pod admitted before the
/// apiserver calls the webhook is deleted again); returns the denial. A denial with the message
/// `before` is the webhook's answer from before the test's last change, which its cache has not
/// seen yet: it is retried too.
async fn denial(
    pods: &Api<Pod>,
    prefix: &str,
    what: &str,
    counter: &AtomicU32,
    before: Option<&str>,
) -> anyhow::Result<kube::core::Status> {
    eventually(what, Timing::default(), || async {
        let name = format!("{prefix}-{}", counter.fetch_add(1, Ordering::Relaxed));
        match pods
            .create(&PostParams::default(), &ray_pod(&name, "1"))
            .await
        {
            Err(kube::Error::Api(s)) if Some(s.message.as_str()) == before => {
                anyhow::bail!("still denied as before the change: {}", s.message)
            }
            Err(kube::Error::Api(s)) => Ok(s),
            Ok(pod) => {
                pods.delete(&name, &DeleteParams::default()).await?;
                anyhow::bail!("admitted (untouched: {})", untouched(&pod))
            }
            Err(e) => Err(e.into()),
        }
    })
    .await
    .map(|s| *s)
}

/// MAIN-2 for the Pod: the default plugins serve `/mutate--v1-pod` (CREATE only), and the Pod
/// is the first kind in registration order; MAIN-1: the webhook-only profile (xKS) serves no
/// Pod webhook.
#[test]
fn main_1_main_2_the_pod_webhook_is_first_in_full_and_absent_in_xks() {
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
    let pod_route = |t: &WebhookTable| {
        t.routes().find(|r| r.path == "/mutate--v1-pod").map(|r| {
            (
                r.plugin.name().to_string(),
                r.gvk.kind.clone(),
                r.operations.clone(),
            )
        })
    };
    let full = Profile::Full.webhooks(table.clone());
    assert_eq!(
        pod_route(&full),
        Some(("pod-mutator".into(), "Pod".into(), vec![Operation::Create]))
    );
    assert_eq!(
        webhook_kinds(&full).first().map(String::as_str),
        Some("Pod")
    );
    let xks = Profile::WebhookOnly.webhooks(table);
    assert_eq!(pod_route(&xks), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_webhook_through_the_apiserver_and_the_real_binary() -> anyhow::Result<()> {
    let t = TestContext::new("pod-webhook").await?;
    let ns = t.namespace.clone();
    let client = t.client.clone();
    // The controller's namespace (POD_NAMESPACE), where the parameters ConfigMap lives.
    let controller_ns = odh_test_support::namespace::unique_name("pod-webhook-ctl");
    let namespace: Namespace =
        serde_json::from_value(json!({"metadata": {"name": controller_ns}}))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await?;

    let host = ServingHost::start(
        "pod-webhook-e2e",
        &[("POD_NAMESPACE", controller_ns.as_str())],
    )
    .await?;
    let with_log = |e: anyhow::Error| host.with_log(e);

    let configuration = format!("pod-webhook-e2e-{ns}");
    let mwcs = Api::<MutatingWebhookConfiguration>::all(client.clone());
    mwcs.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "metadata": {"name": configuration},
            "webhooks": [pod_webhook(&host, &ns)],
        }))?,
    )
    .await?;
    let pods = t.api::<Pod>();
    let counter = AtomicU32::new(0);

    // without the parameters ConfigMap the Pod is rejected with the cache's NotFound.
    let status = denial(
        &pods,
        "no-params",
        "X-11: a missing parameters ConfigMap rejects the Pod",
        &counter,
        None,
    )
    .await
    .map_err(with_log)?;
    assert_eq!(status.code, 404, "{status:?}");
    // Upstream passes the cache's NotFound status on whole: its reason and details too.
    assert_eq!(status.reason, "NotFound", "{status:?}");
    let details = status.details.as_ref().expect("status.details");
    assert_eq!(
        (details.kind.as_str(), details.name.as_str()),
        ("ConfigMap", PARAMS)
    );
    assert_eq!(
        status.message,
        format!(
            "admission webhook \"{WEBHOOK}\" denied the request: ConfigMap \"{PARAMS}\" not found"
        )
    );

    // the ConfigMap without the key denies the Pod (403, Forbidden).
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &controller_ns);
    configmaps
        .create(&PostParams::default(), &params(json!({"other": "x"})))
        .await?;
    let status = denial(
        &pods,
        "no-key",
        "X-11: a parameters ConfigMap without the key denies the Pod",
        &counter,
        Some(&status.message),
    )
    .await
    .map_err(with_log)?;
    assert_eq!(
        (status.code, status.reason.as_str(), status.message.as_str()),
        (
            403,
            "Forbidden",
            format!(
                "admission webhook \"{WEBHOOK}\" denied the request: ray-tls-generator-image key not found in ConfigMap"
            )
            .as_str()
        )
    );

    // PW-1 through the apiserver: with the image configured the Pod comes back mutated.
    configmaps
        .replace(PARAMS, &PostParams::default(), &{
            let mut cm = configmaps.get(PARAMS).await?;
            cm.data = params(json!({"ray-tls-generator-image": IMAGE})).data;
            cm
        })
        .await?;
    let created = eventually(
        "PW-1: a Ray TLS Pod is mutated",
        Timing::default(),
        || async {
            let name = format!("ray-{}", counter.fetch_add(1, Ordering::Relaxed));
            match pods
                .create(&PostParams::default(), &ray_pod(&name, "1"))
                .await
            {
                Ok(pod) => Ok(pod),
                Err(kube::Error::Api(s)) => anyhow::bail!("denied (cache not caught up?): {s:?}"),
                Err(e) => Err(e.into()),
            }
        },
    )
    .await
    .map_err(with_log)?;
    let spec = created.spec.clone().expect("a spec");
    let volumes = serde_json::to_value(&spec.volumes)?;
    assert_eq!(
        volumes,
        json!([{"name": "ray-tls", "emptyDir": {}},
               {"name": "ray-tls-secret", "secret": {"secretName": "ray-tls", "defaultMode": 420}}]),
        "the apiserver defaults the Secret volume's mode"
    );
    let mounts = |i: usize| serde_json::to_value(&spec.containers[i].volume_mounts).unwrap();
    assert_eq!(
        mounts(0),
        json!([{"name": "ray-tls", "mountPath": "/etc/ray/tls"}])
    );
    assert_eq!(mounts(1), Value::Null, "only the first Ray container");
    let init = spec.init_containers.as_ref().expect("init containers");
    assert_eq!(init.len(), 1);
    let generator = &init[0];
    assert_eq!(generator.name, "ray-tls-generator");
    assert_eq!(generator.image.as_deref(), Some(IMAGE));
    let command = generator.command.clone().unwrap_or_default();
    assert_eq!(command[..2], ["sh".to_string(), "-c".to_string()]);
    let digest: String = Sha256::digest(command[2].as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(digest, SCRIPT_SHA256, "the init script is upstream's");
    assert_eq!(
        generator.termination_message_policy.as_deref(),
        Some("FallbackToLogsOnError")
    );
    assert_eq!(
        serde_json::to_value(&generator.env)?,
        json!([{"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}}])
    );
    assert_eq!(
        serde_json::to_value(&generator.volume_mounts)?,
        json!([{"name": "ray-tls", "mountPath": "/etc/ray/tls"},
               {"name": "ray-tls-secret", "mountPath": "/etc/ray-secret"}])
    );

    // PW-2 through the apiserver: RAY_USE_TLS=0 leaves the Pod alone.
    let plain = pods
        .create(&PostParams::default(), &ray_pod("ray-off", "0"))
        .await?;
    assert!(untouched(&plain), "PW-2: {:?}", plain.spec);

    // The object selector: a `control-plane` Pod, or one without the InferenceService label,
    // is never sent to the webhook, whatever its env.
    let mut control_plane = ray_pod("control-plane", "1");
    control_plane
        .metadata
        .labels
        .get_or_insert_default()
        .insert("control-plane".into(), "kserve-controller-manager".into());
    let pod = pods.create(&PostParams::default(), &control_plane).await?;
    assert!(untouched(&pod), "control-plane: {:?}", pod.spec);
    let mut unlabelled = ray_pod("unlabelled", "1");
    unlabelled.metadata.labels = None;
    let pod = pods.create(&PostParams::default(), &unlabelled).await?;
    assert!(untouched(&pod), "no InferenceService label: {:?}", pod.spec);

    // a Pod that already has the init container is unchanged.
    let mut own: Value = serde_json::to_value(ray_pod("has-generator", "1"))?;
    own["spec"]["initContainers"] = json!([{"name": "ray-tls-generator", "image": "mine"}]);
    let pod = pods
        .create(&PostParams::default(), &serde_json::from_value(own)?)
        .await?;
    let spec = pod.spec.expect("a spec");
    assert_eq!(spec.init_containers.map(|c| c.len()), Some(1));
    assert!(spec.volumes.is_none(), "{:?}", spec.volumes);

    mwcs.delete(&configuration, &DeleteParams::default())
        .await?;
    Ok(())
}
