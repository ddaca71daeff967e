//! `make deploy` over an upstream install (issue #32 item 5), on the real test apiserver.
//!
//! An upstream install leaves the model-serving-api Deployment and Service as `kubectl apply`
//! (client-side: the last-applied annotation, field manager `kubectl-client-side-apply`) made
//! them, and the parameters ConfigMap as the platform operator's server-side apply (its own
//! field manager) made it. The test makes those objects, upstream-shaped (selector, volume
//! names, image, a parameter value of its own), in one namespace, runs `make deploy`'s command
//! (`kubectl kustomize deploy/overlays/openshift | kubectl apply --server-side
//! --field-manager=odh-model-controller-deploy --force-conflicts`) on the namespaced objects of
//! the overlay, and asserts: it succeeds; the selector is unchanged; no field upstream's objects
//! carried and ours do not want is left (the `tls-certs` volume and mount, the Go server image);
//! and each object equals what the same command makes in an empty namespace.
//!
//! Only the namespaced objects of the overlay are applied (into test namespaces): the
//! cluster-scoped ones are shared by every test run, and `deploy_rbac.rs` applies them.

use std::io::Write as _;
use std::process::{Command, Stdio};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::PostParams;
use odh_test_support::namespace::unique_name;
use odh_test_support::{TestContext, workspace_root};
use serde_json::{Value, json};

/// The field manager `make deploy` applies with.
const DEPLOY_MANAGER: &str = "odh-model-controller-deploy";

fn kubectl() -> String {
    odh_test_support::dev::kubectl().expect("kubectl")
}

/// Runs kubectl against the test apiserver with `input` on stdin.
fn run_kubectl(args: &[&str], input: &str) -> anyhow::Result<String> {
    let kubeconfig = odh_test_support::cluster()?.kubeconfig.clone();
    let mut child = Command::new(kubectl())
        .arg(format!("--kubeconfig={}", kubeconfig.display()))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    child.stdin.take().unwrap().write_all(input.as_bytes())?;
    let out = child.wait_with_output()?;
    anyhow::ensure!(
        out.status.success(),
        "kubectl {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The namespaced objects of the OpenShift overlay this test applies, moved to `namespace`.
fn overlay_objects(namespace: &str) -> anyhow::Result<Vec<Value>> {
    let out = Command::new(kubectl())
        .arg("kustomize")
        .arg(workspace_root().join("deploy/overlays/openshift"))
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "kubectl kustomize: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut objects = odh_test_support::dev::yaml_documents(&String::from_utf8_lossy(&out.stdout))?;
    objects.retain(|o| {
        matches!(
            (o["kind"].as_str(), o["metadata"]["name"].as_str()),
            (Some("Deployment"), Some("model-serving-api"))
                | (Some("Service"), Some("model-serving-api"))
                | (Some("ConfigMap"), Some("odh-model-controller-parameters"))
        )
    });
    anyhow::ensure!(
        objects.len() == 3,
        "the overlay lacks an object: {objects:?}"
    );
    for o in &mut objects {
        o["metadata"]["namespace"] = json!(namespace);
    }
    Ok(objects)
}

/// `make deploy`'s apply of `objects`.
fn deploy(objects: &[Value]) -> anyhow::Result<String> {
    let yaml = objects
        .iter()
        .map(serde_yaml::to_string)
        .collect::<Result<Vec<_>, _>>()?
        .join("---\n");
    run_kubectl(
        &[
            "apply",
            "--server-side",
            &format!("--field-manager={DEPLOY_MANAGER}"),
            "--force-conflicts",
            "-f",
            "-",
        ],
        &yaml,
    )
}

const UPSTREAM_LABELS: &str = r#"{"app": "model-serving-api",
    "app.kubernetes.io/name": "model-serving-api",
    "app.kubernetes.io/component": "server",
    "app.kubernetes.io/part-of": "odh-model-controller"}"#;

/// Upstream's rendered model-serving-api Deployment and Service (config/server with its
/// kustomization's labels), as `kubectl apply` leaves them.
fn upstream_server(namespace: &str) -> anyhow::Result<Vec<Value>> {
    let labels: Value = serde_json::from_str(UPSTREAM_LABELS)?;
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "model-serving-api", "namespace": namespace, "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": "model-serving-api",
                    "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [{
                        "name": "server",
                        "image": "quay.io/opendatahub/odh-model-serving-api:odh-incubating",
                        "env": [{"name": "TLS_CERT_DIR", "value": "/tls"},
                                {"name": "GATEWAY_LABEL_SELECTOR", "value": ""}],
                        "volumeMounts": [{"name": "tls-certs", "mountPath": "/tls", "readOnly": true}],
                        "ports": [{"containerPort": 8443, "name": "https", "protocol": "TCP"},
                                  {"containerPort": 8080, "name": "metrics", "protocol": "TCP"}],
                        "resources": {"limits": {"cpu": "500m", "memory": "1Gi"},
                                      "requests": {"cpu": "50m", "memory": "64Mi"}},
                    }],
                    "volumes": [{"name": "tls-certs", "secret": {"secretName": "model-serving-api-tls"}}],
                },
            },
        },
    });
    let service = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "model-serving-api", "namespace": namespace, "labels": labels,
            "annotations": {"service.beta.openshift.io/serving-cert-secret-name": "model-serving-api-tls"}},
        "spec": {
            "selector": labels,
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 8443},
                      {"name": "metrics", "port": 8080, "protocol": "TCP", "targetPort": 8080}],
        },
    });
    Ok(vec![deployment, service])
}

/// What must be equal between the in-place and the fresh install: the spec (a Service's
/// allocated addresses aside), data, labels, and annotations but kubectl's last-applied one
/// (see the test: it stays, naming the old configuration; nothing reads it after a
/// server-side apply).
fn comparable(mut object: Value) -> Value {
    if let Some(spec) = object["spec"].as_object_mut() {
        for field in ["clusterIP", "clusterIPs"] {
            spec.remove(field);
        }
    }
    let mut annotations = object["metadata"]["annotations"].clone();
    if let Some(a) = annotations.as_object_mut() {
        a.remove("kubectl.kubernetes.io/last-applied-configuration");
        a.remove("deployment.kubernetes.io/revision");
    }
    json!({
        "spec": object["spec"],
        "data": object["data"],
        "labels": object["metadata"]["labels"],
        "annotations": annotations,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn make_deploy_over_an_upstream_install_equals_a_fresh_install() -> anyhow::Result<()> {
    odh_test_support::dev::kubectl()?;
    let t = TestContext::new("deploy-in-place").await?;
    let namespaces: Api<Namespace> = Api::all(t.client.clone());
    let in_place = unique_name("deploy-in-place");
    let fresh = unique_name("deploy-fresh");
    for ns in [&in_place, &fresh] {
        namespaces
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": ns}}))?,
            )
            .await?;
    }

    // The upstream install: kubectl client-side apply of the server objects, the operator's
    // server-side apply of the parameters (upstream's keys, one value of its own).
    let yaml = upstream_server(&in_place)?
        .iter()
        .map(serde_yaml::to_string)
        .collect::<Result<Vec<_>, _>>()?
        .join("---\n");
    run_kubectl(&["apply", "-f", "-"], &yaml)?;
    let mut operator_params = overlay_objects(&in_place)?
        .into_iter()
        .find(|o| o["kind"] == "ConfigMap")
        .unwrap();
    operator_params["data"]["odh-model-controller"] =
        json!("quay.io/opendatahub/odh-model-controller:fast");
    run_kubectl(
        &[
            "apply",
            "--server-side",
            "--field-manager=opendatahub-operator",
            "-f",
            "-",
        ],
        &serde_yaml::to_string(&operator_params)?,
    )?;
    let deployments: Api<Deployment> = Api::namespaced(t.client.clone(), &in_place);
    let before = deployments.get("model-serving-api").await?;

    // make deploy, over it and into the empty namespace.
    deploy(&overlay_objects(&in_place)?)?;
    deploy(&overlay_objects(&fresh)?)?;

    let after = deployments.get("model-serving-api").await?;
    anyhow::ensure!(
        before.spec.as_ref().map(|s| &s.selector) == after.spec.as_ref().map(|s| &s.selector),
        "the selector changed: {:?} -> {:?}",
        before.spec.map(|s| s.selector),
        after.spec.map(|s| s.selector)
    );
    let pod = serde_json::to_value(&after.spec.as_ref().unwrap().template.spec)?;
    let text = pod.to_string();
    for stale in ["tls-certs", "odh-model-serving-api"] {
        anyhow::ensure!(
            !text.contains(stale),
            "upstream's {stale:?} is left in the pod template: {pod:#}"
        );
    }

    for (kind, name) in [
        ("Deployment", "model-serving-api"),
        ("Service", "model-serving-api"),
        ("ConfigMap", "odh-model-controller-parameters"),
    ] {
        let get = |ns: &str| -> anyhow::Result<Value> {
            Ok(serde_json::from_str(&run_kubectl(
                &["get", "-n", ns, kind, name, "-o", "json"],
                "",
            )?)?)
        };
        let (a, b) = (comparable(get(&in_place)?), comparable(get(&fresh)?));
        anyhow::ensure!(
            a == b,
            "{kind} {name}: the in-place install differs from a fresh one:\n{a:#}\n{b:#}"
        );
    }

    for ns in [&in_place, &fresh] {
        let _ = namespaces.delete(ns, &Default::default()).await;
    }
    Ok(())
}
