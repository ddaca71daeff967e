//! `deploy/` against the real apiserver (issue #16):
//!
//! * the generated RBAC and webhook configurations are current with the built-in plugins'
//!   manifests;
//! * THE PROOF: the ServiceAccount and the full profile's RBAC from `deploy/` are created, a
//!   token is issued for the ServiceAccount through the TokenRequest API, the real host binary
//!   runs with that identity (`--leader-elect`, every default built-in plugin) and the
//!   generated webhook configurations pointed at it; each controller and webhook is driven
//!   once; the host's log has no `forbidden`, and requests outside the RBAC are refused;
//! * every overlay passes server-side dry-run (rendered with `kubectl kustomize`), its
//!   NetworkPolicies included.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod, Secret};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleBinding};
use kube::api::{
    Api, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
};
use kube::discovery::{Scope, pinned_kind};
use kube::{Client, ResourceExt};
use odh_test_support::namespace::unique_name;
use odh_test_support::net::free_port;
use odh_test_support::{TestContext, Timing, eventually, workspace_root};
use serde_json::{Value, json};

const FIELD_MANAGER: &str = "deploy-rbac-test";

fn deploy_dir() -> PathBuf {
    workspace_root().join("deploy")
}

fn slow() -> Timing {
    Timing::within(Duration::from_secs(180))
}

/// `deploy/generated` is what `odh-model-controller deploy-manifests` makes of the built-in
/// plugins registered now: a plugin added, or a manifest changed, without regenerating fails.
#[test]
fn deploy_generated_is_current_with_the_plugins_manifests() {
    if let Err(e) = odh_model_controller::deploy_manifests::run(&deploy_dir(), true) {
        panic!("{e:#}");
    }
}

/// Server-side apply of a JSON object with the admin client (kind resolved by discovery).
async fn apply(client: &Client, object: &Value) -> anyhow::Result<()> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let (resource, caps) =
        pinned_kind(client, &GroupVersionKind::gvk(group, version, kind)).await?;
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let api: Api<DynamicObject> = match (caps.scope, object["metadata"]["namespace"].as_str()) {
        (Scope::Namespaced, Some(ns)) => Api::namespaced_with(client.clone(), ns, &resource),
        _ => Api::all_with(client.clone(), &resource),
    };
    api.patch(
        name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(object),
    )
    .await
    .map_err(|e| anyhow::anyhow!("applying {kind} {name}: {e}"))?;
    Ok(())
}

fn documents(path: &Path) -> anyhow::Result<Vec<Value>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
    odh_test_support::dev::yaml_documents(&text)
}

/// The ServiceAccount and the full profile's RBAC, moved into `namespace`; cluster-scoped
/// objects get `-<namespace>` appended to their names (the test apiserver is shared).
/// deploy/base/params.env as its configMapGenerator makes the ConfigMap's data.
fn params() -> anyhow::Result<serde_json::Map<String, Value>> {
    let text = std::fs::read_to_string(deploy_dir().join("base/params.env"))?;
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (k, v) = l
                .split_once('=')
                .ok_or_else(|| anyhow::anyhow!("params.env: {l}"))?;
            Ok((k.to_string(), json!(v)))
        })
        .collect()
}

fn rbac_objects(profile: &str, namespace: &str) -> anyhow::Result<Vec<Value>> {
    let dir = deploy_dir();
    let mut objects = documents(&dir.join("base/service-account.yaml"))?;
    objects.extend(documents(
        &dir.join(format!("generated/{profile}/rbac.yaml")),
    )?);
    for o in &mut objects {
        let kind = o["kind"].as_str().unwrap_or_default().to_string();
        if o["metadata"]["namespace"].is_string() {
            o["metadata"]["namespace"] = json!(namespace);
        }
        if kind.starts_with("Cluster") {
            let name = format!("{}-{namespace}", o["metadata"]["name"].as_str().unwrap());
            o["metadata"]["name"] = json!(name);
        }
        if kind == "ClusterRoleBinding" {
            let role = format!("{}-{namespace}", o["roleRef"]["name"].as_str().unwrap());
            o["roleRef"]["name"] = json!(role);
        }
        if let Some(subjects) = o.get_mut("subjects").and_then(Value::as_array_mut) {
            for s in subjects {
                s["namespace"] = json!(namespace);
            }
        }
    }
    Ok(objects)
}

/// The generated webhook configurations, calling `https://127.0.0.1:<port>` (trusting
/// `ca_pem`) for objects in `namespace` only, renamed after it.
fn webhook_objects(
    profile: &str,
    port: u16,
    ca_pem: &str,
    namespace: &str,
) -> anyhow::Result<Vec<Value>> {
    let ca_bundle = serde_json::to_value(k8s_openapi::ByteString(ca_pem.as_bytes().to_vec()))?;
    let mut objects = documents(&deploy_dir().join(format!("generated/{profile}/webhooks.yaml")))?;
    for o in &mut objects {
        let name = format!("{}-{namespace}", o["metadata"]["name"].as_str().unwrap());
        o["metadata"]["name"] = json!(name);
        for w in o["webhooks"].as_array_mut().into_iter().flatten() {
            let path = w["clientConfig"]["service"]["path"]
                .as_str()
                .unwrap()
                .to_string();
            w["clientConfig"] = json!({
                "url": format!("https://127.0.0.1:{port}{path}"),
                "caBundle": ca_bundle,
            });
            w["namespaceSelector"] = json!({"matchExpressions": [{
                "key": "kubernetes.io/metadata.name", "operator": "In", "values": [namespace]}]});
        }
    }
    Ok(objects)
}

/// A kubeconfig (JSON) for the test cluster that authenticates with `token` only.
/// A self-signed serving certificate for 127.0.0.1 (`tls.crt`, `tls.key`) in `dir`.
fn serving_cert(dir: &Path) -> anyhow::Result<String> {
    std::fs::create_dir_all(dir)?;
    let out = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1"])
        .arg("-keyout")
        .arg(dir.join("tls.key"))
        .arg("-out")
        .arg(dir.join("tls.crt"))
        .output()
        .map_err(|e| anyhow::anyhow!("running openssl (needed for a serving certificate): {e}"))?;
    anyhow::ensure!(
        out.status.success(),
        "openssl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(std::fs::read_to_string(dir.join("tls.crt"))?)
}

/// The host binary, built if needed (cargo skips the work when it is current). The selection is
/// `make test`'s (the workspace with its tests): a narrower one resolves other dependency
/// features and would build wasmtime and the host a second time in the middle of the test run.
fn host_binary() -> anyhow::Result<PathBuf> {
    let root = workspace_root();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(&root)
        .args(["build", "-q", "--workspace", "--bins", "--tests"])
        .status()?;
    anyhow::ensure!(status.success(), "building odh-model-controller failed");
    // Where cargo put it (CARGO_TARGET_DIR may name another target directory).
    Ok(odh_test_support::binary::host())
}

/// The host process, killed when dropped.
struct Host {
    child: Child,
    log: PathBuf,
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Host {
    /// Kills the process and waits for it, so it writes nothing more.
    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// `GET /readyz` answers 200.
async fn ready(port: u16) -> anyhow::Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    s.write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await?;
    let mut out = String::new();
    s.read_to_string(&mut out).await?;
    anyhow::ensure!(out.starts_with("HTTP/1.1 200"), "{out}");
    Ok(())
}

fn dynamic(
    client: &Client,
    ns: &str,
    group: &str,
    version: &str,
    kind: &str,
) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(group, version, kind);
    Api::namespaced_with(client.clone(), ns, &kube::api::ApiResource::from_gvk(&gvk))
}

async fn exists<K>(api: &Api<K>, name: &str) -> anyhow::Result<K>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.get_opt(name)
        .await?
        .ok_or_else(|| anyhow::anyhow!("{name} does not exist (yet)"))
}

/// Everything the test made in the cluster that outlives it (cluster-scoped).
struct ClusterScoped {
    client: Client,
    objects: Vec<Value>,
}

impl ClusterScoped {
    async fn delete(&self) {
        for o in &self.objects {
            let api_version = o["apiVersion"].as_str().unwrap_or_default();
            let kind = o["kind"].as_str().unwrap_or_default();
            let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
            let gvk = GroupVersionKind::gvk(group, version, kind);
            if let Ok((resource, caps)) = pinned_kind(&self.client, &gvk).await
                && caps.scope == Scope::Cluster
            {
                let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
                let name = o["metadata"]["name"].as_str().unwrap_or_default();
                let _ = api.delete(name, &DeleteParams::default()).await;
            }
        }
    }
}

/// The host binary running under the ServiceAccount and the `profile` RBAC of `deploy/`, in a
/// controller namespace of its own, with the profile's webhook configurations pointed at it
/// for the test's namespace.
struct Deployed {
    host: Host,
    kubeconfig: PathBuf,
    controller_ns: String,
    webhooks: Vec<Value>,
    health_port: u16,
    cluster_scoped: ClusterScoped,
}

async fn deploy_host(
    t: &TestContext,
    profile: &str,
    env: &[(&str, &str)],
) -> anyhow::Result<Deployed> {
    let admin = t.client.clone();
    let controller_ns = unique_name("deploy-rbac-ctl");
    Api::<Namespace>::all(admin.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": controller_ns}}))?,
        )
        .await?;

    // The ServiceAccount and RBAC of deploy/, and a token for the ServiceAccount.
    let rbac = rbac_objects(profile, &controller_ns)?;
    for o in &rbac {
        apply(&admin, o).await?;
    }
    let token =
        odh_test_support::service_account::token(&admin, &controller_ns, "odh-model-controller")
            .await?;
    let work = std::env::temp_dir().join(unique_name("deploy-rbac"));
    std::fs::create_dir_all(&work)?;
    let kubeconfig = work.join("kubeconfig");
    odh_test_support::service_account::token_kubeconfig(&token, &kubeconfig)?;
    let ca_pem = serving_cert(&work.join("certs"))?;

    // What the pod webhook reads: the parameters ConfigMap deploy/ generates from params.env,
    // in the controller's namespace.
    Api::<ConfigMap>::namespaced(admin.clone(), &controller_ns)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "odh-model-controller-parameters"},
                "data": params()?,
            }))?,
        )
        .await?;

    let webhook_port = free_port();
    let health_port = free_port();
    let log = work.join("host.log");
    let log_file = std::fs::File::create(&log)?;
    let mut command = Command::new(host_binary()?);
    command
        .args([
            "run",
            "--zap-devel=false",
            "--metrics-bind-address=0",
            "--leader-elect",
        ])
        .arg(format!("--kubeconfig={}", kubeconfig.display()))
        .arg(format!(
            "--webhook-cert-dir={}",
            work.join("certs").display()
        ))
        .arg(format!("--webhook-bind-address=127.0.0.1:{webhook_port}"))
        .arg(format!(
            "--health-probe-bind-address=127.0.0.1:{health_port}"
        ))
        // As the Deployment syncs the webhook entries (the caBundle injected there, here
        // written by the test), pointed at this process instead of the Service.
        .args(["--sync-webhook-configurations", "--webhook-ca-injected"])
        .arg(format!("--webhook-url=https://127.0.0.1:{webhook_port}"))
        .env("POD_NAMESPACE", &controller_ns)
        .env_remove("KUBECONFIG")
        .env_remove("ODH_PLATFORM_TYPE")
        .env_remove("ENABLE_WEBHOOKS")
        .env_remove("MODELREGISTRY_STATE")
        .stdin(Stdio::null())
        .stdout(log_file.try_clone()?)
        .stderr(log_file);
    for (k, v) in env {
        command.env(k, v);
    }
    let host = Host {
        child: command.spawn()?,
        log,
    };
    let webhooks = webhook_objects(profile, webhook_port, &ca_pem, &t.namespace)?;
    let cluster_scoped = ClusterScoped {
        client: admin.clone(),
        objects: rbac.iter().chain(&webhooks).cloned().collect(),
    };
    Ok(Deployed {
        host,
        kubeconfig,
        controller_ns,
        webhooks,
        health_port,
        cluster_scoped,
    })
}

impl Deployed {
    /// Stops the host, then removes the cluster-scoped objects (in this order: a host still
    /// running would be refused its next write once its ClusterRole is gone); fails with the
    /// log's tail when `result` did, and when any line of the host's log is a refusal.
    async fn finish(mut self, result: anyhow::Result<()>) -> anyhow::Result<()> {
        self.host.stop();
        self.cluster_scoped.delete().await;
        let output = self.host.output();
        let tail: Vec<&str> = output.lines().rev().take(40).collect::<Vec<_>>();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        result.map_err(|e| {
            anyhow::anyhow!(
                "{e:#}\n--- host log (last 40 lines) ---\n{}",
                tail.join("\n")
            )
        })?;
        let forbidden: Vec<&str> = output
            .lines()
            .filter(|l| l.to_ascii_lowercase().contains("forbidden"))
            .collect();
        anyhow::ensure!(
            forbidden.is_empty(),
            "the host was refused under the deployed RBAC:\n{}",
            forbidden[..forbidden.len().min(10)].join("\n")
        );
        Ok(())
    }
}

/// THE PROOF (issue #16): the host runs under the ServiceAccount and RBAC of `deploy/` with
/// every default built-in plugin; each controller and webhook does its work once; nothing in
/// its log is `forbidden`; what the RBAC does not allow is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_runs_under_the_deployed_service_account_and_rbac() -> anyhow::Result<()> {
    let t = TestContext::new("deploy-rbac").await?;
    // The workload namespace is the monitored one: its runtimes get the monitoring RoleBinding.
    let ns = t.namespace.clone();
    let d = deploy_host(&t, "full", &[("MONITORING_NAMESPACE", &ns)]).await?;
    let result = drive(
        &t,
        &d.host,
        &d.kubeconfig,
        &d.controller_ns,
        &ns,
        &d.webhooks,
        d.health_port,
    )
    .await;
    d.finish(result).await
}

/// The webhook-only profile (`ODH_PLATFORM_TYPE=xKS`) under the xKS overlay's own, smaller
/// RBAC: no Lease, no controller; an LLMInferenceService is admitted (through its webhooks once
/// the configuration is in effect); nothing in the log is `forbidden`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webhook_only_profile_runs_under_the_xks_rbac() -> anyhow::Result<()> {
    let t = TestContext::new("deploy-rbac-xks").await?;
    let d = deploy_host(&t, "xks", &[("ODH_PLATFORM_TYPE", "xKS")]).await?;
    let result = async {
        eventually("the host is ready", slow(), || ready(d.health_port)).await?;
        for w in &d.webhooks {
            apply(&t.client, w).await?;
        }
        let llm = dynamic(
            &t.client,
            &t.namespace,
            "serving.kserve.io",
            "v1alpha2",
            "LLMInferenceService",
        );
        llm.create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "serving.kserve.io/v1alpha2", "kind": "LLMInferenceService",
                "metadata": {"name": "llm"}, "spec": {"model": {"uri": "hf://example/model"}},
            }))?,
        )
        .await?;
        let leases: Api<Lease> = Api::namespaced(t.client.clone(), &d.controller_ns);
        anyhow::ensure!(
            leases.list(&ListParams::default()).await?.items.is_empty(),
            "the webhook-only profile took a Lease"
        );
        anyhow::ensure!(
            !d.host.output().contains("became the leader"),
            "the webhook-only profile ran controllers"
        );
        Ok(())
    }
    .await;
    d.finish(result).await
}

async fn drive(
    t: &TestContext,
    host: &Host,
    kubeconfig: &Path,
    controller_ns: &str,
    monitoring_ns: &str,
    webhooks: &[Value],
    health_port: u16,
) -> anyhow::Result<()> {
    let admin = t.client.clone();
    let ns = t.namespace.as_str();
    eventually("the host is ready", slow(), || ready(health_port)).await?;
    // Leader election under the Role: the Lease is ours.
    let leases: Api<Lease> = Api::namespaced(admin.clone(), controller_ns);
    eventually("the host holds the Lease", slow(), || async {
        let lease = exists(&leases, "odh-model-controller.opendatahub.io").await?;
        anyhow::ensure!(lease.spec.and_then(|s| s.holder_identity).is_some());
        anyhow::ensure!(
            host.output().contains("became the leader"),
            "not leading yet"
        );
        Ok(())
    })
    .await?;
    for w in webhooks {
        apply(&admin, w).await?;
    }

    // servingruntime: a multi-node runtime gets ray-ca-tls (controller namespace) and ray-tls;
    // the monitoring RoleBinding binds prometheus-ns-access (a `bind` the RBAC grants by name).
    let runtimes = dynamic(
        &admin,
        ns,
        "serving.kserve.io",
        "v1alpha1",
        "ServingRuntime",
    );
    runtimes
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "serving.kserve.io/v1alpha1", "kind": "ServingRuntime",
                "metadata": {"name": "vllm-multinode-runtime"},
                "spec": {
                    "supportedModelFormats": [{"name": "vLLM", "autoSelect": true}],
                    "containers": [{"name": "kserve-container", "image": "quay.io/example/vllm:latest"}],
                    "workerSpec": {"containers": [{"name": "worker-container", "image": "quay.io/example/vllm:latest"}]},
                },
            }))?,
        )
        .await?;
    create_ovms_runtime(t).await?;
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), ns);
    let controller_secrets = Api::<Secret>::namespaced(admin.clone(), controller_ns);
    eventually("ray-ca-tls and ray-tls", slow(), || async {
        exists(&controller_secrets, "ray-ca-tls").await?;
        exists(&secrets, "ray-tls").await
    })
    .await?;
    let monitoring_bindings = Api::<RoleBinding>::namespaced(admin.clone(), monitoring_ns);
    eventually("the monitoring RoleBinding", slow(), || {
        exists(&monitoring_bindings, "prometheus-ns-access")
    })
    .await?;

    // pod-mutator (webhook) and servingruntime's core-pod controller: a Ray TLS predictor Pod
    // is mutated on create, and gets its ray-tls entry once it has an IP.
    let pods: Api<Pod> = Api::namespaced(admin.clone(), ns);
    let pod = pods
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "ray-head", "labels": {
                    "serving.kserve.io/inferenceservice": "vllm", "component": "predictor"}},
                "spec": {"containers": [{"name": "kserve-container", "image": "quay.io/example/vllm:latest",
                    "env": [{"name": "RAY_USE_TLS", "value": "1"}]}]},
            }))?,
        )
        .await?;
    let init = pod.spec.and_then(|s| s.init_containers).unwrap_or_default();
    let image = params()?["ray-tls-generator-image"].clone();
    anyhow::ensure!(
        init.iter()
            .any(|c| c.name == "ray-tls-generator" && c.image.as_deref() == image.as_str()),
        "the Pod webhook did not mutate the Pod with params.env's image {image}: {init:?}"
    );
    pods.patch_status(
        "ray-head",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"podIP": "10.1.2.3", "podIPs": [{"ip": "10.1.2.3"}]}})),
    )
    .await?;
    eventually("ray-tls gets the pod's entry", slow(), || async {
        let tls = exists(&secrets, "ray-tls").await?;
        anyhow::ensure!(
            tls.data
                .unwrap_or_default()
                .keys()
                .any(|k| k.contains("10.1.2.3")),
            "no entry yet"
        );
        Ok(())
    })
    .await?;

    // storage: a data connection makes storage-config; the trusted CA bundle makes
    // odh-kserve-custom-ca-bundle.
    let connection: Secret = serde_json::from_value(json!({
        "metadata": {"name": "minio",
            "labels": {"opendatahub.io/managed": "true", "opendatahub.io/dashboard": "true"},
            "annotations": {"opendatahub.io/connection-type": "s3"}},
        "stringData": {"AWS_ACCESS_KEY_ID": "admin", "AWS_SECRET_ACCESS_KEY": "password",
            "AWS_S3_ENDPOINT": "http://minio.minio.svc:9000", "AWS_S3_BUCKET": "models",
            "AWS_DEFAULT_REGION": "us-south"},
    }))?;
    secrets.create(&PostParams::default(), &connection).await?;
    let cms: Api<ConfigMap> = Api::namespaced(admin.clone(), ns);
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "odh-trusted-ca-bundle"},
            "data": {"ca-bundle.crt": "-----BEGIN CERTIFICATE-----\nQQ==\n-----END CERTIFICATE-----\n"}}))?,
    )
    .await?;
    eventually("storage-config and the CA bundle", slow(), || async {
        exists(&secrets, "storage-config").await?;
        exists(&cms, "odh-kserve-custom-ca-bundle").await
    })
    .await?;

    // isvc (webhooks and controller): an exposed, authenticated, KEDA-scaled InferenceService
    // gets its Route, auth-delegator binding (`bind` on system:auth-delegator), KEDA Role,
    // RoleBinding, Secret and TriggerAuthentication, metrics Service and ServiceMonitor.
    let services = dynamic(&admin, ns, "", "v1", "Service");
    let predictor = in_namespace(odh_test_fixtures::predictor_service("example").build(), ns);
    services
        .create(&PostParams::default(), &serde_json::from_value(predictor)?)
        .await?;
    let isvcs = dynamic(
        &admin,
        ns,
        "serving.kserve.io",
        "v1beta1",
        "InferenceService",
    );
    let isvc = odh_test_fixtures::isvc("example")
        .exposed()
        .with_auth(None)
        .keda()
        .build();
    let isvc = in_namespace(isvc, ns);
    isvcs
        .create(&PostParams::default(), &serde_json::from_value(isvc)?)
        .await?;
    let crbs: Api<ClusterRoleBinding> = Api::all(admin.clone());
    let routes = dynamic(&admin, ns, "route.openshift.io", "v1", "Route");
    let trigger_auths = dynamic(&admin, ns, "keda.sh", "v1alpha1", "TriggerAuthentication");
    let roles: Api<k8s_openapi::api::rbac::v1::Role> = Api::namespaced(admin.clone(), ns);
    let role_bindings: Api<RoleBinding> = Api::namespaced(admin.clone(), ns);
    let service_monitors = dynamic(&admin, ns, "monitoring.coreos.com", "v1", "ServiceMonitor");
    eventually("the InferenceService's objects", slow(), || async {
        exists(&crbs, &format!("{ns}-default-auth-delegator")).await?;
        exists(&routes, "example").await?;
        exists(&roles, "inference-prometheus-auth").await?;
        exists(&role_bindings, "inference-prometheus-auth").await?;
        exists(&trigger_auths, "inference-prometheus-auth").await?;
        exists(&service_monitors, "example-metrics").await?;
        let o = isvcs.get("example").await?;
        anyhow::ensure!(!o.finalizers().is_empty(), "no finalizer yet");
        Ok(())
    })
    .await?;
    // ... and its deletion: the finalizer is removed, the binding deleted.
    isvcs.delete("example", &DeleteParams::default()).await?;
    eventually("the InferenceService is gone", slow(), || async {
        anyhow::ensure!(isvcs.get_opt("example").await?.is_none(), "still there");
        anyhow::ensure!(
            crbs.get_opt(&format!("{ns}-default-auth-delegator"))
                .await?
                .is_none(),
            "binding still there"
        );
        Ok(())
    })
    .await?;

    // isvc's InferenceGraph webhooks: a graph is defaulted and validated on create.
    let graphs = dynamic(
        &admin,
        ns,
        "serving.kserve.io",
        "v1alpha1",
        "InferenceGraph",
    );
    let refused = graphs
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "serving.kserve.io/v1alpha1", "kind": "InferenceGraph",
                "metadata": {"name": "public"},
                "spec": {"nodes": {"root": {"routerType": "Sequence",
                    "steps": [{"name": "first", "serviceUrl": "https://example.com"}]}}},
            }))?,
        )
        .await;
    anyhow::ensure!(
        matches!(&refused, Err(kube::Error::Api(s)) if s.code == 422),
        "the InferenceGraph validator did not answer: {refused:?}"
    );

    // llm-gateway: an LLMInferenceService passes its mutating webhooks and is reconciled.
    let llm = dynamic(
        &admin,
        ns,
        "serving.kserve.io",
        "v1alpha2",
        "LLMInferenceService",
    );
    llm.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "apiVersion": "serving.kserve.io/v1alpha2", "kind": "LLMInferenceService",
            "metadata": {"name": "llm"}, "spec": {"model": {"uri": "hf://example/model"}},
        }))?,
    )
    .await?;

    // nim-account: an Account passes its validating webhook and the controller writes its
    // status (NGC is unreachable here: a failure condition is still a status write).
    secrets
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "ngc-api-key", "labels": {"opendatahub.io/managed": "true"}},
                "stringData": {"api_key": "not-a-real-key"},
            }))?,
        )
        .await?;
    let accounts = dynamic(&admin, ns, "nim.opendatahub.io", "v1", "Account");
    accounts
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "nim.opendatahub.io/v1", "kind": "Account",
                "metadata": {"name": "nim"}, "spec": {"apiKeySecret": {"name": "ngc-api-key"}},
            }))?,
        )
        .await?;
    eventually("the Account's status", slow(), || async {
        let account = accounts.get("nim").await?;
        anyhow::ensure!(
            account.data["status"]["conditions"]
                .as_array()
                .is_some_and(|c| !c.is_empty()),
            "no status yet"
        );
        Ok(())
    })
    .await?;

    // The plugins ConfigMap (the Role): one that does not parse is reported with a Warning
    // Event; a valid one swaps a plugin and records its status (created by the first apply).
    let controller_cms: Api<ConfigMap> = Api::namespaced(admin.clone(), controller_ns);
    let plugins_cm = |text: &str| -> anyhow::Result<ConfigMap> {
        Ok(serde_json::from_value(json!({
            "metadata": {"name": "odh-model-controller-plugins"},
            "data": {"plugins.yaml": text},
        }))?)
    };
    controller_cms
        .create(
            &PostParams::default(),
            &plugins_cm("plugins: [not, a, map]")?,
        )
        .await?;
    let events: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(admin.clone(), controller_ns);
    eventually("the InvalidPluginConfig Event", slow(), || async {
        let list = events.list(&ListParams::default()).await?;
        anyhow::ensure!(
            list.items
                .iter()
                .any(|e| e.reason.as_deref() == Some("InvalidPluginConfig")),
            "no Event yet"
        );
        Ok(())
    })
    .await?;
    controller_cms
        .replace(
            "odh-model-controller-plugins",
            &PostParams::default(),
            &ConfigMap {
                metadata: kube::api::ObjectMeta {
                    resource_version: controller_cms
                        .get("odh-model-controller-plugins")
                        .await?
                        .resource_version(),
                    ..plugins_cm("")?.metadata
                },
                ..plugins_cm("plugins:\n  storage:\n    source: builtin\n    settings: {}\n")?
            },
        )
        .await?;
    eventually("the plugin status ConfigMap", slow(), || {
        exists(&controller_cms, "odh-model-controller-plugins-status")
    })
    .await?;

    // Outside the RBAC: refused, for the host's own identity.
    let sa = Client::try_from(
        kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::read_from(kubeconfig)?,
            &Default::default(),
        )
        .await?,
    )?;
    let nodes = Api::<Node>::all(sa.clone())
        .list(&ListParams::default())
        .await;
    anyhow::ensure!(
        matches!(&nodes, Err(kube::Error::Api(s)) if s.code == 403),
        "listing Nodes was not refused: {:?}",
        nodes.map(|l| l.items.len())
    );
    let escalation: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": format!("{controller_ns}-escalation")},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "odh-model-controller", "namespace": controller_ns}],
    }))?;
    let bound = Api::<ClusterRoleBinding>::all(sa.clone())
        .create(&PostParams::default(), &escalation)
        .await;
    anyhow::ensure!(
        matches!(&bound, Err(kube::Error::Api(s)) if s.code == 403),
        "binding cluster-admin was not refused: {:?}",
        bound.map(|b| b.name_any())
    );
    let other_lease = Api::<Lease>::namespaced(sa, ns)
        .list(&ListParams::default())
        .await;
    anyhow::ensure!(
        matches!(&other_lease, Err(kube::Error::Api(s)) if s.code == 403),
        "Leases outside the controller's namespace were not refused"
    );
    Ok(())
}

fn in_namespace(mut object: Value, namespace: &str) -> Value {
    object["metadata"]["namespace"] = json!(namespace);
    object
}

async fn create_ovms_runtime(t: &TestContext) -> anyhow::Result<()> {
    let runtimes = dynamic(
        &t.client,
        &t.namespace,
        "serving.kserve.io",
        "v1alpha1",
        "ServingRuntime",
    );
    runtimes
        .create(
            &PostParams::default(),
            &serde_json::from_value(in_namespace(
                odh_test_fixtures::ovms_runtime().build(),
                &t.namespace,
            ))?,
        )
        .await?;
    Ok(())
}

/// Every overlay renders (`kubectl kustomize`) and passes server-side dry-run on the test
/// apiserver (the namespace `opendatahub` is created for it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_overlay_passes_server_side_dry_run() -> anyhow::Result<()> {
    let t = TestContext::new("deploy-dry-run").await?;
    let kubectl = odh_test_support::dev::kubectl()?;
    let _ = Api::<Namespace>::all(t.client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "opendatahub"}}))?,
        )
        .await;
    let kubeconfig = odh_test_support::cluster()?.kubeconfig.clone();
    for overlay in ["openshift", "xks"] {
        let dir = deploy_dir().join("overlays").join(overlay);
        let rendered = Command::new(&kubectl).arg("kustomize").arg(&dir).output()?;
        anyhow::ensure!(
            rendered.status.success(),
            "kubectl kustomize {overlay}: {}",
            String::from_utf8_lossy(&rendered.stderr)
        );
        let text = odh_test_support::dev::dry_run_apply(
            &kubectl,
            &kubeconfig,
            &rendered.stdout,
            &format!("overlay {overlay}"),
        )?;
        for kind in [
            "deployment.apps/odh-model-controller",
            "clusterrole.rbac.authorization.k8s.io/odh-model-controller-role",
            // Its pods' NetworkPolicy (deploy_hardening.rs checks what it admits).
            "networkpolicy.networking.k8s.io/odh-model-controller",
            // The parameters the Pod webhook reads and the platform operator sets.
            "configmap/odh-model-controller-parameters",
        ]
        .into_iter()
        .chain(
            if overlay == "openshift" {
                // Upstream's roles and monitors of the OpenShift profile (issue #32).
                &[
                    "clusterrole.rbac.authorization.k8s.io/account-editor-role",
                    "clusterrole.rbac.authorization.k8s.io/account-viewer-role",
                    "clusterrole.rbac.authorization.k8s.io/kserve-prometheus-k8s",
                    "clusterrole.rbac.authorization.k8s.io/metrics-reader",
                    "clusterrole.rbac.authorization.k8s.io/proxy-role",
                    "clusterrolebinding.rbac.authorization.k8s.io/proxy-rolebinding",
                    "servicemonitor.monitoring.coreos.com/odh-model-controller-metrics-monitor",
                    "servicemonitor.monitoring.coreos.com/model-serving-api-metrics",
                ][..]
            } else {
                &[][..]
            }
            .iter()
            .copied(),
        ) {
            anyhow::ensure!(
                text.contains(kind),
                "{overlay}: {kind} missing from:\n{text}"
            );
        }
    }
    Ok(())
}
