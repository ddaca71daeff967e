//! The `servingruntime` plugin's controllers on the real apiserver (docs/plugins/servingruntime.md;
//! scenarios SR-1..SR-6, PC-16, X-9): one host running the built
//! `target/plugins/servingruntime.wasm` for the whole test binary, each test in a namespace of
//! its own; the controller namespace (where `ray-ca-tls` lives) is this binary's own.
//!
//! The plugin is loaded as the host serves the built-in: `secureRandom` granted (its keys come
//! from the host's `keys` import, which needs it) and the built-in's limits.
//!
//! Certificates are checked with the `openssl` command (`openssl verify` against the CA the
//! cluster holds, and the SANs).

use std::sync::OnceLock;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Pod, Secret};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use odh_model_controller::plugin::{Grants, Limits};
use odh_test_support::host::{Setup, controllers_running_with, load_with};
use odh_test_support::namespace::unique_name;
use odh_test_support::{TestContext, Timing, absent, consistently, eventually, exists};
use serde_json::json;

const CA: &str = "ray-ca-tls";
const RAY_TLS: &str = "ray-tls";
const MULTI_NODE: &str = "vllm-multinode-runtime";

/// A new CA is fanned out as `{ca.crt}` alone, dropping every per-pod entry (upstream's
/// behaviour): SR-4 replaces the CA only while no pod test is waiting for its entries.
static CA_CHANGE: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// Long enough for a few RSA-4096 key generations on a busy machine: prime search is
/// heavy-tailed (a fraction of a second of CPU natively, docs/performance.md, seconds of wall
/// time on two loaded cores) and PC-16 makes three at once, retrying on conflicts, while other
/// test binaries run. A bound for polling, not a speed check.
fn slow() -> Timing {
    Timing::within(Duration::from_secs(300))
}

/// The built-in's limits (host/app/src/builtins/list.rs): on a machine loaded by a whole test
/// run, the plugin's own share of a reconcile (building and verifying certificates) can take
/// more wall time than the 2 s default.
fn builtin_limits() -> Limits {
    Limits {
        reconcile_timeout_ms: 60_000,
        reconcile_budget_ms: 120_000,
        ..Limits::default()
    }
}

/// The namespaces the controllers run with.
struct Namespaces {
    /// `podNamespace`: where `ray-ca-tls` lives.
    controller: String,
    /// `monitoringNamespace`.
    monitoring: String,
}

/// Creates the namespace `name` (one of the controllers', not a test's).
async fn create_namespace(client: Client, name: String) {
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    Api::<Namespace>::all(client)
        .create(&PostParams::default(), &namespace)
        .await
        .expect("a namespace of the controllers");
}

/// The controllers, once per test binary (4 workers), on a runtime of their own.
fn running() -> &'static Namespaces {
    static NAMESPACES: OnceLock<Namespaces> = OnceLock::new();
    let namespaces = NAMESPACES.get_or_init(|| Namespaces {
        controller: unique_name("sr-controller"),
        monitoring: unique_name("sr-monitoring"),
    });
    let (ns, mon) = (namespaces.controller.clone(), namespaces.monitoring.clone());
    controllers_running_with(|client| async move {
        create_namespace(client.clone(), ns.clone()).await;
        let plugin = load_with("servingruntime", |r| {
            r.settings(json!({"podNamespace": ns, "monitoringNamespace": mon}))
                .grants(Grants {
                    secure_random: true,
                    ..Grants::default()
                })
                .limits(builtin_limits())
        });
        // Made once they watch: a watched change maps to its request (at start-up the whole
        // list is replayed, which a busy shared apiserver can make overflow).
        Setup::new(client.clone(), vec![plugin], 4).after_start(create_namespace(client, mon))
    });
    namespaces
}

/// The controller namespace, with the controllers running.
fn controllers() -> &'static str {
    &running().controller
}

async fn setup(prefix: &str) -> anyhow::Result<(TestContext, &'static str)> {
    let t = TestContext::new(prefix).await?;
    let controller_ns = controllers();
    Ok((t, controller_ns))
}

fn runtimes(t: &TestContext) -> Api<DynamicObject> {
    t.dynamic(
        "serving.kserve.io",
        "v1alpha1",
        "ServingRuntime",
        "servingruntimes",
    )
}

/// A ServingRuntime, with a `workerSpec` when `multi_node`.
async fn create_runtime(t: &TestContext, name: &str, multi_node: bool) -> anyhow::Result<()> {
    let mut spec = json!({
        "supportedModelFormats": [{"name": "vLLM", "autoSelect": true}],
        "containers": [{"name": "kserve-container", "image": "quay.io/example/vllm:latest"}],
    });
    if multi_node {
        spec["workerSpec"] = json!({"containers": [{"name": "worker-container", "image": "quay.io/example/vllm:latest"}]});
    }
    t.create(
        &runtimes(t),
        json!({"apiVersion": "serving.kserve.io/v1alpha1", "kind": "ServingRuntime",
               "metadata": {"name": name}, "spec": spec}),
    )
    .await?;
    Ok(())
}

fn text(secret: &Secret, key: &str) -> Option<String> {
    let value = secret.data.as_ref()?.get(key)?;
    Some(String::from_utf8_lossy(&value.0).into_owned())
}

/// The CA certificate the cluster holds now.
async fn ca_cert(client: &Client, controller_ns: &str) -> anyhow::Result<String> {
    let api: Api<Secret> = Api::namespaced(client.clone(), controller_ns);
    let ca = api.get(CA).await?;
    text(&ca, "tls.crt").ok_or_else(|| anyhow::anyhow!("{CA} has no tls.crt"))
}

/// Waits until `ray-tls.data["ca.crt"]` in the test namespace is the CA's certificate.
async fn ray_tls_holds_the_ca(t: &TestContext, controller_ns: &str) -> anyhow::Result<Secret> {
    let secrets: Api<Secret> = t.api();
    eventually("ray-tls holds the CA certificate", slow(), || async {
        let ca = ca_cert(&t.client, controller_ns).await?;
        let tls = secrets.get(RAY_TLS).await?;
        anyhow::ensure!(
            text(&tls, "ca.crt").as_deref() == Some(ca.as_str()),
            "ca.crt differs"
        );
        Ok(tls)
    })
    .await
}

/// A namespace with a multi-node runtime and its `ray-tls`.
async fn multi_node_namespace(prefix: &str) -> anyhow::Result<(TestContext, &'static str)> {
    let (t, controller_ns) = setup(prefix).await?;
    create_runtime(&t, MULTI_NODE, true).await?;
    ray_tls_holds_the_ca(&t, controller_ns).await?;
    Ok((t, controller_ns))
}

/// SR-1: a single-node runtime gets no `ray-tls` (3 s).
#[tokio::test]
async fn sr_1_single_node_runtime_gets_no_ray_tls() -> anyhow::Result<()> {
    let (t, controller_ns) = setup("sr-1").await?;
    create_runtime(&t, "kserve-ovms", false).await?;
    let cas: Api<Secret> = Api::namespaced(t.client.clone(), controller_ns);
    exists(&cas, CA).await?;
    let secrets: Api<Secret> = t.api();
    consistently(
        "no ray-tls",
        Timing::within(Duration::from_secs(3)),
        || async {
            anyhow::ensure!(
                secrets.get_opt(RAY_TLS).await?.is_none(),
                "ray-tls appeared"
            );
            Ok(())
        },
    )
    .await
}

/// SR-2: a multi-node runtime: `ray-ca-tls` (type `kubernetes.io/tls`, managed) in the
/// controller namespace and `ray-tls` (Opaque, managed) holding its certificate.
#[tokio::test]
async fn sr_2_multi_node_runtime_gets_the_ca_and_ray_tls() -> anyhow::Result<()> {
    let (t, controller_ns) = multi_node_namespace("sr-2").await?;
    let ca = Api::<Secret>::namespaced(t.client.clone(), controller_ns)
        .get(CA)
        .await?;
    assert_eq!(ca.type_.as_deref(), Some("kubernetes.io/tls"));
    assert_eq!(
        ca.labels()
            .get("opendatahub.io/managed")
            .map(String::as_str),
        Some("true")
    );
    assert!(
        text(&ca, "tls.key")
            .unwrap()
            .starts_with("-----BEGIN PRIVATE KEY-----")
    );
    let tls = t.api::<Secret>().get(RAY_TLS).await?;
    assert_eq!(tls.type_.as_deref(), Some("Opaque"));
    assert_eq!(
        tls.labels()
            .get("app.kubernetes.io/name")
            .map(String::as_str),
        Some("self-signed-ray-cert")
    );
    assert!(tls.owner_references().is_empty());
    Ok(())
}

/// SR-3: a user's wrong `ca.crt` is put back.
#[tokio::test]
async fn sr_3_wrong_ca_crt_is_corrected() -> anyhow::Result<()> {
    let (t, controller_ns) = multi_node_namespace("sr-3").await?;
    let secrets: Api<Secret> = t.api();
    let mut tls = secrets.get(RAY_TLS).await?;
    tls.data
        .get_or_insert_default()
        .insert("ca.crt".into(), ByteString(b"wrong-data".to_vec()));
    let written = secrets
        .replace(RAY_TLS, &PostParams::default(), &tls)
        .await?;
    assert_eq!(text(&written, "ca.crt").as_deref(), Some("wrong-data"));
    ray_tls_holds_the_ca(&t, controller_ns).await?;
    Ok(())
}

/// SR-4: `ray-ca-tls` deleted: a new CA, and `ray-tls` gets its certificate.
#[tokio::test]
async fn sr_4_deleted_ca_is_recreated_and_handed_out() -> anyhow::Result<()> {
    let _exclusive = CA_CHANGE.write().await;
    let (t, controller_ns) = multi_node_namespace("sr-4").await?;
    let cas: Api<Secret> = Api::namespaced(t.client.clone(), controller_ns);
    let old = cas.get(CA).await?;
    let old_crt = text(&old, "tls.crt").unwrap();
    cas.delete(CA, &DeleteParams::default()).await?;
    let new_crt = eventually("a new ray-ca-tls", slow(), || async {
        let ca = cas.get(CA).await?;
        anyhow::ensure!(ca.uid() != old.uid(), "still the old one");
        Ok(text(&ca, "tls.crt").unwrap())
    })
    .await?;
    assert_ne!(new_crt, old_crt, "a new key pair");
    ray_tls_holds_the_ca(&t, controller_ns).await?;
    Ok(())
}

/// SR-5: `ray-tls` deleted while the runtime remains: created again.
#[tokio::test]
async fn sr_5_deleted_ray_tls_is_recreated() -> anyhow::Result<()> {
    let (t, controller_ns) = multi_node_namespace("sr-5").await?;
    let secrets: Api<Secret> = t.api();
    let old = secrets.get(RAY_TLS).await?;
    secrets.delete(RAY_TLS, &DeleteParams::default()).await?;
    eventually("ray-tls re-created", slow(), || async {
        let tls = secrets.get(RAY_TLS).await?;
        anyhow::ensure!(tls.uid() != old.uid(), "still the old one");
        Ok(())
    })
    .await?;
    ray_tls_holds_the_ca(&t, controller_ns).await?;
    Ok(())
}

/// SR-6: the last multi-node runtime deleted: `ray-tls` goes.
#[tokio::test]
async fn sr_6_deleting_the_last_multi_node_runtime_deletes_ray_tls() -> anyhow::Result<()> {
    let (t, _) = multi_node_namespace("sr-6").await?;
    create_runtime(&t, "kserve-ovms", false).await?;
    runtimes(&t)
        .delete(MULTI_NODE, &DeleteParams::default())
        .await?;
    absent(&t.api::<Secret>(), RAY_TLS).await
}

/// A predictor pod running Ray with TLS.
async fn create_ray_pod(t: &TestContext, name: &str, ip: &str) -> anyhow::Result<()> {
    let pods: Api<Pod> = t.api();
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"component": "predictor"}},
        "spec": {"containers": [{"name": "kserve-container", "image": "quay.io/example/vllm:latest",
                                  "env": [{"name": "RAY_USE_TLS", "value": "1"}]}]},
    }))?;
    pods.create(&PostParams::default(), &pod).await?;
    // No kubelet here: the IP is set through the status subresource, as the kubelet does.
    pods.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"podIP": ip, "podIPs": [{"ip": ip}]}})),
    )
    .await?;
    Ok(())
}

fn openssl(args: &[&str], input_files: &[(&std::path::Path, &str)]) -> anyhow::Result<String> {
    for (path, content) in input_files {
        std::fs::write(path, content)?;
    }
    let out = std::process::Command::new("openssl")
        .args(args)
        .output()
        .map_err(|e| anyhow::anyhow!("running openssl (needed to check certificates): {e}"))?;
    anyhow::ensure!(
        out.status.success(),
        "openssl {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// the entry is a certificate the cluster's CA signed, for the pod IP and the
/// namespace's service domain, followed by its key.
fn check_pod_entry(entry: &str, ca: &str, ip: &str, namespace: &str) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(unique_name("sr-certs"));
    std::fs::create_dir_all(&dir)?;
    let (ca_file, entry_file) = (dir.join("ca.pem"), dir.join("entry.pem"));
    let files = [(ca_file.as_path(), ca), (entry_file.as_path(), entry)];
    let (ca_path, entry_path) = (ca_file.to_str().unwrap(), entry_file.to_str().unwrap());
    let verified = openssl(&["verify", "-CAfile", ca_path, entry_path], &files)?;
    anyhow::ensure!(
        verified.contains(": OK"),
        "not signed by the CA: {verified}"
    );
    let text = openssl(&["x509", "-in", entry_path, "-noout", "-text"], &[])?;
    let san = format!("IP Address:{ip}, IP Address:127.0.0.1");
    anyhow::ensure!(text.contains(&san), "SANs: {text}");
    let dns = format!("DNS:*.{namespace}.svc.cluster.local, DNS:localhost");
    anyhow::ensure!(text.contains(&dns), "SANs: {text}");
    openssl(&["pkey", "-in", entry_path, "-noout"], &[])?;
    anyhow::ensure!(entry.contains("-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\n"));
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}

/// X-9 and the end-to-end flow (docs/plugins/servingruntime.md, "The Ray TLS flow"): a Ray TLS
/// predictor pod that gets an IP gets `ray-tls[<ip>]`, signed by `ray-ca-tls`; `ca.crt` stays.
#[tokio::test]
async fn x_9_pod_with_an_ip_gets_its_certificate_in_ray_tls() -> anyhow::Result<()> {
    let _shared = CA_CHANGE.read().await;
    let (t, controller_ns) = multi_node_namespace("pc-x9").await?;
    create_ray_pod(&t, "head", "10.0.0.5").await?;
    let secrets: Api<Secret> = t.api();
    let tls = eventually("ray-tls[10.0.0.5]", slow(), || async {
        let tls = secrets.get(RAY_TLS).await?;
        text(&tls, "10.0.0.5").ok_or_else(|| anyhow::anyhow!("no entry yet"))?;
        Ok(tls)
    })
    .await?;
    let ca = ca_cert(&t.client, controller_ns).await?;
    assert_eq!(text(&tls, "ca.crt").as_deref(), Some(ca.as_str()));
    check_pod_entry(
        &text(&tls, "10.0.0.5").unwrap(),
        &ca,
        "10.0.0.5",
        &t.namespace,
    )?;
    Ok(())
}

/// PC-16 on the real apiserver: three Ray TLS pods get their IPs at once; their concurrent
/// writes of `ray-tls` (compare-and-swap on the resourceVersion) lose none: all three entries
/// end up there, each a certificate of the CA for its IP. (It once lost an entry under load: a
/// CA fan-out, delayed past the test that changed the CA, wiped the entries and nothing brought
/// them back: `core-pod` did not watch `ray-tls`. The next test pins that.)
#[tokio::test]
async fn pc_16_three_concurrent_pods_all_get_their_entry() -> anyhow::Result<()> {
    let _shared = CA_CHANGE.read().await;
    let (t, controller_ns) = multi_node_namespace("pc-16").await?;
    let ips = ["192.168.1.1", "192.168.1.2", "192.168.1.3"];
    let creates = ips
        .iter()
        .enumerate()
        .map(|(i, ip)| create_ray_pod(&t, ["pod-a", "pod-b", "pod-c"][i], ip));
    for created in futures::future::join_all(creates).await {
        created?;
    }
    let secrets: Api<Secret> = t.api();
    let tls = eventually("three entries in ray-tls", slow(), || async {
        let tls = secrets.get(RAY_TLS).await?;
        let missing: Vec<&str> = ips
            .iter()
            .copied()
            .filter(|ip| text(&tls, ip).is_none())
            .collect();
        anyhow::ensure!(missing.is_empty(), "missing {missing:?}");
        Ok(tls)
    })
    .await?;
    let ca = ca_cert(&t.client, controller_ns).await?;
    for ip in ips {
        check_pod_entry(&text(&tls, ip).unwrap(), &ca, ip, &t.namespace)?;
    }
    Ok(())
}

/// An entry a CA fan-out (or anything else) removed from `ray-tls` comes back at once: the
/// change re-reconciles the namespace's Ray TLS pods, where upstream waits for a pod-IP change
/// or a restart (docs/divergences.md). No pod event follows the removal here.
#[tokio::test]
async fn a_pod_entry_removed_from_ray_tls_comes_back() -> anyhow::Result<()> {
    let _shared = CA_CHANGE.read().await;
    let (t, controller_ns) = multi_node_namespace("pc-back").await?;
    create_ray_pod(&t, "head", "10.0.0.7").await?;
    let secrets: Api<Secret> = t.api();
    eventually("ray-tls[10.0.0.7]", slow(), || async {
        let tls = secrets.get(RAY_TLS).await?;
        text(&tls, "10.0.0.7").ok_or_else(|| anyhow::anyhow!("no entry yet"))
    })
    .await?;
    // What the fan-out writes: the CA certificate only.
    let mut tls = secrets.get(RAY_TLS).await?;
    let ca_only: std::collections::BTreeMap<String, ByteString> = tls
        .data
        .take()
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| k == "ca.crt")
        .collect();
    tls.data = Some(ca_only);
    secrets
        .replace(RAY_TLS, &PostParams::default(), &tls)
        .await?;
    let tls = eventually("ray-tls[10.0.0.7] back", slow(), || async {
        let tls = secrets.get(RAY_TLS).await?;
        text(&tls, "10.0.0.7").ok_or_else(|| anyhow::anyhow!("not back yet"))?;
        Ok(tls)
    })
    .await?;
    let ca = ca_cert(&t.client, controller_ns).await?;
    check_pod_entry(
        &text(&tls, "10.0.0.7").unwrap(),
        &ca,
        "10.0.0.7",
        &t.namespace,
    )
}

/// a wrong `ca.crt` corrected through a user-namespace reconcile keeps the other keys.
#[tokio::test]
async fn x_4_corrected_ray_tls_keeps_its_other_keys() -> anyhow::Result<()> {
    let (t, controller_ns) = multi_node_namespace("sr-x4").await?;
    let secrets: Api<Secret> = t.api();
    let mut tls = secrets.get(RAY_TLS).await?;
    let data = tls.data.get_or_insert_default();
    data.insert("ca.crt".into(), ByteString(b"wrong-data".to_vec()));
    data.insert("extra".into(), ByteString(b"kept".to_vec()));
    secrets
        .replace(RAY_TLS, &PostParams::default(), &tls)
        .await?;
    let tls = ray_tls_holds_the_ca(&t, controller_ns).await?;
    assert_eq!(text(&tls, "extra").as_deref(), Some("kept"));
    Ok(())
}

/// SR-6 for a `ray-tls` the controller did not make (no managed label): upstream deletes it
/// by name, and so do we (claimed first).
#[tokio::test]
async fn sr_6_an_unlabelled_ray_tls_is_deleted_too() -> anyhow::Result<()> {
    let (t, _) = setup("sr-6u").await?;
    let secrets: Api<Secret> = t.api();
    let user: Secret = serde_json::from_value(json!({
        "metadata": {"name": RAY_TLS}, "stringData": {"ca.crt": "mine"},
    }))?;
    secrets.create(&PostParams::default(), &user).await?;
    create_runtime(&t, "kserve-ovms", false).await?;
    absent(&secrets, RAY_TLS).await
}

/// the monitoring RoleBinding in the monitoring namespace, as upstream makes it; a
/// change of its subjects is reverted, a deletion re-created; a plain namespace gets none.
#[tokio::test]
async fn x_1_monitoring_role_binding() -> anyhow::Result<()> {
    use k8s_openapi::api::rbac::v1::RoleBinding;
    let (t, _) = setup("sr-x1").await?;
    let mon = &running().monitoring;
    let bindings: Api<RoleBinding> = Api::namespaced(t.client.clone(), mon);
    let expected_subjects =
        json!([{"kind": "ServiceAccount", "name": "prometheus-custom", "namespace": mon}]);
    let as_expected = || async {
        let rb = bindings.get("prometheus-ns-access").await?;
        anyhow::ensure!(
            serde_json::to_value(&rb.subjects)? == expected_subjects,
            "subjects {:?}",
            rb.subjects
        );
        anyhow::ensure!(
            rb.labels()
                .get("opendatahub.io/managed")
                .map(String::as_str)
                == Some("true"),
            "labels {:?}",
            rb.labels()
        );
        anyhow::ensure!(
            rb.role_ref.kind == "ClusterRole" && rb.role_ref.name == "prometheus-ns-access"
        );
        Ok(rb)
    };
    let rb = eventually("the RoleBinding", slow(), as_expected).await?;
    let mut changed = rb.clone();
    changed.subjects.as_mut().unwrap()[0].name = "someone-else".into();
    bindings
        .replace("prometheus-ns-access", &PostParams::default(), &changed)
        .await?;
    eventually("the subjects reverted", slow(), as_expected).await?;
    let mut unlabelled = bindings.get("prometheus-ns-access").await?;
    unlabelled.metadata.labels = None;
    bindings
        .replace("prometheus-ns-access", &PostParams::default(), &unlabelled)
        .await?;
    eventually("the label restored", slow(), as_expected).await?;
    bindings
        .delete("prometheus-ns-access", &DeleteParams::default())
        .await?;
    eventually("the RoleBinding re-created", slow(), || async {
        let again = as_expected().await?;
        anyhow::ensure!(again.uid() != rb.uid(), "still the old one");
        Ok(())
    })
    .await?;
    let plain: Api<RoleBinding> = t.api();
    anyhow::ensure!(plain.get_opt("prometheus-ns-access").await?.is_none());
    Ok(())
}

/// The plugin in the host's Wasm runtime, on an in-memory cluster, with the default limits: a
/// controller-namespace reconcile that must create the CA (one RSA-4096 key, from the host).
fn reconcile_needing_a_key(grants: Grants) -> odh_model_controller::plugin::wire::Outcome {
    use odh_model_controller::plugin::wire::RequestKey;
    use odh_model_controller::plugin::{CallEnv, MemoryCluster, ReconcileInput};
    let plugin = load_with("servingruntime", |r| {
        r.settings(json!({"podNamespace": "odh"})).grants(grants)
    });
    let mut cluster = MemoryCluster::default();
    cluster
        .insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "odh"}}))
        .unwrap();
    let input = ReconcileInput {
        controller: "servingruntime".into(),
        key: RequestKey {
            namespace: Some("odh".into()),
            name: CA.into(),
        },
        object: None,
    };
    let started = std::time::Instant::now();
    let outcome = plugin
        .reconcile_blocking(&input, &CallEnv::live(std::sync::Arc::new(cluster)))
        .expect("an outcome");
    eprintln!("reconcile took {:?}", started.elapsed());
    outcome
}

/// Without the `secureRandom` grant the host refuses its `keys` import: the reconcile fails
/// `denied`, naming the grant, and writes nothing.
#[test]
fn without_secure_random_no_key_is_made() {
    let outcome = reconcile_needing_a_key(Grants::default());
    assert!(outcome.apply.is_empty(), "{:?}", outcome.apply);
    let error = outcome.error.expect("an error");
    assert_eq!(error.kind(), "denied");
    assert!(format!("{error:?}").contains("secureRandom"), "{error:?}");
}

/// With it, the CA is made through the host: a self-signed RSA-4096 certificate (checked by
/// `openssl`) whose key, stored PKCS#1 under upstream's `PRIVATE KEY` label, is the
/// certificate's.
#[test]
fn with_secure_random_the_ca_is_made() {
    let outcome = reconcile_needing_a_key(Grants {
        secure_random: true,
        ..Grants::default()
    });
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    let ca = &outcome.apply[0].object;
    assert_eq!(ca["metadata"]["name"], CA);
    assert_eq!(ca["type"], "kubernetes.io/tls");
    let decode = |key: &str| {
        use base64::Engine as _;
        let text = ca["data"][key].as_str().expect("a data entry");
        let der = base64::engine::general_purpose::STANDARD
            .decode(text)
            .expect("base64");
        String::from_utf8(der).expect("PEM text")
    };
    let (cert, key) = (decode("tls.crt"), decode("tls.key"));
    // PKCS#1 (upstream's encoding) under a PKCS#8 label: after the version comes the modulus (an
    // INTEGER), where PKCS#8 has an AlgorithmIdentifier (a SEQUENCE).
    let body: String = key.lines().filter(|l| !l.starts_with("-----")).collect();
    let der = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD
            .decode(body)
            .expect("base64")
    };
    assert!(key.starts_with("-----BEGIN PRIVATE KEY-----\n"), "{key}");
    assert_eq!(der[..2], [0x30, 0x82], "a long SEQUENCE");
    assert_eq!(
        der[4..8],
        [0x02, 0x01, 0x00, 0x02],
        "version 0, then the modulus: PKCS#1"
    );
    let dir = std::env::temp_dir().join(unique_name("sr-ca"));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert_file, key_file) = (dir.join("ca.crt"), dir.join("ca.key"));
    let (cert_path, key_path) = (cert_file.to_str().unwrap(), key_file.to_str().unwrap());
    // The stored key is PKCS#1 whatever its label says (upstream's encoding): read as such, its
    // modulus is the certificate's.
    let pkcs1 = key.replace("PRIVATE KEY", "RSA PRIVATE KEY");
    let files = [
        (cert_file.as_path(), cert.as_str()),
        (key_file.as_path(), pkcs1.as_str()),
    ];
    let verified = openssl(&["verify", "-CAfile", cert_path, cert_path], &files).unwrap();
    assert!(verified.contains(": OK"), "self-signed: {verified}");
    let text = openssl(&["x509", "-in", cert_path, "-noout", "-text"], &[]).unwrap();
    assert!(text.contains("Public-Key: (4096 bit)"), "{text}");
    assert_eq!(
        openssl(&["rsa", "-in", key_path, "-noout", "-modulus"], &[]).unwrap(),
        openssl(&["x509", "-in", cert_path, "-noout", "-modulus"], &[]).unwrap()
    );
    std::fs::remove_dir_all(&dir).ok();
}
