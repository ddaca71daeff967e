//! What `make run` does to a cluster besides running the host (there is no kubectl on a fresh
//! machine): namespaces, applying sample files, and showing what the controller made of them.
//! (The host registers its own webhooks: `--sync-webhook-configurations`.)

use std::path::Path;

use anyhow::Context;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::discovery::{Scope, pinned_kind};
use kube::{Client, ResourceExt};
use serde::Deserialize;
use serde_json::{Value, json};

const FIELD_MANAGER: &str = "odh-dev";

/// Creates namespace `name` unless it exists.
pub async fn ensure_namespace(client: &Client, name: &str) -> anyhow::Result<()> {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
    Api::<Namespace>::all(client.clone())
        .patch(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&ns),
        )
        .await
        .with_context(|| format!("creating namespace {name}"))?;
    Ok(())
}

/// The resource of a kind, from discovery.
async fn resource(
    client: &Client,
    api_version: &str,
    kind: &str,
) -> anyhow::Result<(ApiResource, bool)> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let (resource, caps) = pinned_kind(client, &GroupVersionKind::gvk(group, version, kind))
        .await
        .with_context(|| format!("the cluster does not serve {kind} {api_version}"))?;
    Ok((resource, caps.scope == Scope::Namespaced))
}

/// Applies every object of a YAML file (server-side apply), in `namespace` unless an object
/// names its own; returns `kind/name` of each.
pub async fn apply_file(
    client: &Client,
    path: &Path,
    namespace: &str,
) -> anyhow::Result<Vec<String>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut applied = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(&text) {
        let object =
            Value::deserialize(doc).with_context(|| format!("parsing {}", path.display()))?;
        if object.is_null() {
            continue;
        }
        let (api_version, kind) = (
            object["apiVersion"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            object["kind"].as_str().unwrap_or_default().to_string(),
        );
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let (resource, namespaced) = resource(client, &api_version, &kind).await?;
        let api: Api<DynamicObject> = if namespaced {
            let ns = object["metadata"]["namespace"]
                .as_str()
                .unwrap_or(namespace);
            Api::namespaced_with(client.clone(), ns, &resource)
        } else {
            Api::all_with(client.clone(), &resource)
        };
        api.patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&object),
        )
        .await
        .with_context(|| format!("applying {kind} {name}"))?;
        applied.push(format!("{kind}/{name}"));
    }
    Ok(applied)
}

/// Waits (at most a minute) until `kind` `name` exists in `namespace`.
pub async fn wait_for(
    client: &Client,
    namespace: &str,
    api_version: &str,
    kind: &str,
    name: &str,
) -> anyhow::Result<()> {
    let (resource, _) = resource(client, api_version, kind).await?;
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
    crate::eventually(
        &format!("{kind} {namespace}/{name} exists"),
        crate::Timing::within(std::time::Duration::from_secs(60)),
        || async {
            api.get_opt(name)
                .await?
                .map(|_| ())
                .ok_or_else(|| anyhow::anyhow!("not yet"))
        },
    )
    .await
}

/// `kind/name` of the objects of these kinds in `namespace`, with the finalizers of each.
pub async fn show(
    client: &Client,
    namespace: &str,
    kinds: &[(&str, &str)],
) -> anyhow::Result<Vec<String>> {
    let mut lines = Vec::new();
    for (api_version, kind) in kinds {
        let Ok((resource, _)) = resource(client, api_version, kind).await else {
            continue;
        };
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
        for o in api.list(&Default::default()).await?.items {
            let finalizers = o.finalizers().join(",");
            lines.push(if finalizers.is_empty() {
                format!("{kind}/{}", o.name_any())
            } else {
                format!("{kind}/{} (finalizers: {finalizers})", o.name_any())
            });
        }
    }
    Ok(lines)
}

/// The documents of a multi-document YAML text as JSON values (empty documents skipped).
pub fn yaml_documents(text: &str) -> anyhow::Result<Vec<Value>> {
    let mut out = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(text) {
        let value = Value::deserialize(doc).context("parsing YAML")?;
        if !value.is_null() {
            out.push(value);
        }
    }
    Ok(out)
}

/// `kubectl apply --server-side --dry-run=server` of the YAML `manifests` against the cluster
/// of `kubeconfig`; kubectl's output (one `<kind>/<name> serverside-applied (server dry run)`
/// line per object), or why the apiserver refused, with `what` naming the manifests.
pub fn dry_run_apply(
    kubectl: &str,
    kubeconfig: &std::path::Path,
    manifests: &[u8],
    what: &str,
) -> anyhow::Result<String> {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let mut apply = Command::new(kubectl)
        .arg(format!("--kubeconfig={}", kubeconfig.display()))
        .args([
            "apply",
            "--server-side",
            "--dry-run=server",
            "--field-manager=dry-run",
            "-f",
            "-",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    apply
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(manifests)?;
    let out = apply.wait_with_output()?;
    anyhow::ensure!(
        out.status.success(),
        "{what} refused by server-side dry-run:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The kubectl the tests that render the deploy overlays run: `$KUBECTL`, else `kubectl` on
/// PATH, else the one `make test-deps` builds into `target/tools/kubectl` when the machine has
/// none; an error saying so when there is none at all (those tests fail rather than pass
/// unchecked).
pub fn kubectl() -> anyhow::Result<String> {
    let works = |program: &str| {
        std::process::Command::new(program)
            .args(["version", "--client"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if let Ok(program) = std::env::var("KUBECTL") {
        anyhow::ensure!(works(&program), "KUBECTL={program} does not run");
        return Ok(program);
    }
    if works("kubectl") {
        return Ok("kubectl".into());
    }
    let built = crate::workspace_root().join("target/tools/kubectl");
    let built = built.to_string_lossy().into_owned();
    anyhow::ensure!(
        works(&built),
        "no kubectl on PATH nor at {built}: `make test-deps` installs one"
    );
    Ok(built)
}
