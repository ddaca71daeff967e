//! `make deploy` of the OpenShift overlay into an empty cluster (issue #32): every object of the
//! overlay — CRD, RBAC, webhook configurations, Deployments, Services, monitors, NetworkPolicies,
//! the parameters ConfigMap and the 32 runtime Templates — is really applied, not dry-run, and a
//! second `make deploy` rewrites nothing. On an apiserver of this test's own: the webhook
//! configurations it registers would intercept every other test's requests on the shared one.
//!
//! The cluster has what an OpenShift AI cluster has before the controller is installed: the
//! namespace (the platform operator makes it) and the CRDs of the platform kinds the overlay
//! ships objects of (ServiceMonitor, Template).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use odh_test_support::{RestartableApiserver, workspace_root};
use serde_json::Value;

fn kubectl(kubeconfig: &Path) -> Command {
    let mut c = Command::new(std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".into()));
    c.env("KUBECONFIG", kubeconfig);
    c
}

/// Runs `command`; its stdout, or an error with everything it printed.
fn run(command: &mut Command) -> anyhow::Result<String> {
    let out = command.stdin(Stdio::null()).output()?;
    anyhow::ensure!(
        out.status.success(),
        "{command:?}: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `kind/namespace/name` → resourceVersion of every object the overlay names, as the cluster
/// holds them (`kubectl get -f` of the rendered overlay: a missing object fails it).
fn applied(kubeconfig: &Path, rendered: &Path) -> anyhow::Result<BTreeMap<String, String>> {
    let list: Value = serde_json::from_str(&run(kubectl(kubeconfig)
        .args(["get", "-o", "json", "-f"])
        .arg(rendered))?)?;
    let items = list["items"].as_array().cloned().unwrap_or_default();
    Ok(items
        .iter()
        .map(|o| {
            let m = &o["metadata"];
            (
                format!(
                    "{}/{}/{}",
                    o["kind"].as_str().unwrap_or_default(),
                    m["namespace"].as_str().unwrap_or_default(),
                    m["name"].as_str().unwrap_or_default()
                ),
                m["resourceVersion"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect())
}

#[test]
fn make_deploy_installs_the_whole_openshift_overlay_into_an_empty_cluster() -> anyhow::Result<()> {
    let root = workspace_root();
    let server = RestartableApiserver::start("deploy-fresh")?;
    let kubeconfig = server.kubeconfig.clone();

    let rendered_yaml = run(kubectl(&kubeconfig)
        .arg("kustomize")
        .arg(root.join("deploy/overlays/openshift")))?;
    let rendered: Vec<serde_yaml::Value> = serde_yaml::Deserializer::from_str(&rendered_yaml)
        .map(serde::Deserialize::deserialize)
        .collect::<Result<_, _>>()?;
    let namespace = rendered
        .iter()
        .find(|o| o["kind"].as_str() == Some("Deployment"))
        .and_then(|o| o["metadata"]["namespace"].as_str())
        .expect("the overlay's Deployments name their namespace")
        .to_string();
    let rendered_file = Path::new(&server.kubeconfig)
        .parent()
        .expect("the kubeconfig's directory")
        .join("overlay.yaml");
    std::fs::write(&rendered_file, &rendered_yaml)?;

    for crd in [
        "monitoring.coreos.com_servicemonitors.yaml",
        "template.openshift.io_templates.yaml",
    ] {
        run(kubectl(&kubeconfig)
            .args(["apply", "--server-side", "-f"])
            .arg(root.join("tests/crds").join(crd)))?;
    }
    run(kubectl(&kubeconfig).args([
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/servicemonitors.monitoring.coreos.com",
        "crd/templates.template.openshift.io",
    ]))?;
    run(kubectl(&kubeconfig).args(["create", "namespace", &namespace]))?;

    let make_deploy = || {
        run(Command::new("make")
            .current_dir(&root)
            .args(["--no-print-directory", "-s", "deploy"])
            .env("KUBECONFIG", &kubeconfig))
    };
    make_deploy()?;
    let first = applied(&kubeconfig, &rendered_file)?;
    assert_eq!(
        first.len(),
        rendered.len(),
        "every object of the overlay is in the cluster: {first:#?}"
    );
    let templates = first.keys().filter(|k| k.starts_with("Template/")).count();
    assert_eq!(templates, 32, "the runtime Templates");
    for kind in [
        "CustomResourceDefinition",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "ClusterRole",
        "Deployment",
        "ServiceMonitor",
        "NetworkPolicy",
        "ConfigMap",
    ] {
        assert!(
            first.keys().any(|k| k.starts_with(&format!("{kind}/"))),
            "no {kind} applied: {first:#?}"
        );
    }

    make_deploy()?;
    let second = applied(&kubeconfig, &rendered_file)?;
    let rewritten: Vec<&String> = first
        .iter()
        .filter(|(k, v)| second.get(*k) != Some(*v))
        .map(|(k, _)| k)
        .collect();
    assert!(
        rewritten.is_empty(),
        "a second make deploy rewrote {rewritten:?}"
    );
    Ok(())
}
