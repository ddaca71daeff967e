//! Installing CRDs from directories of YAML files, as envtest does.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde::Deserialize;

use crate::wait::{Timing, eventually};

const FIELD_MANAGER: &str = "odh-test-support";

/// Reads every CRD document from the `*.yaml`/`*.yml` files of `dir` (other kinds are skipped).
pub fn load_dir(dir: &Path) -> anyhow::Result<Vec<CustomResourceDefinition>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading CRD directory {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    let mut crds = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file)?;
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let value = serde_yaml::Value::deserialize(doc)
                .with_context(|| format!("parsing {}", file.display()))?;
            if value.get("kind").and_then(|k| k.as_str()) != Some("CustomResourceDefinition") {
                continue;
            }
            let crd: CustomResourceDefinition = serde_yaml::from_value(value)
                .with_context(|| format!("decoding a CRD in {}", file.display()))?;
            crds.push(crd);
        }
    }
    Ok(crds)
}

/// Server-side applies every CRD in `dirs` and waits until each is Established.
/// Returns the CRD names installed.
pub async fn install(client: &Client, dirs: &[impl AsRef<Path>]) -> anyhow::Result<Vec<String>> {
    install_where(client, dirs, |_| true).await
}

/// [`install`], only the CRDs whose names `wanted` accepts.
pub async fn install_where(
    client: &Client,
    dirs: &[impl AsRef<Path>],
    wanted: impl Fn(&str) -> bool,
) -> anyhow::Result<Vec<String>> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let mut names = Vec::new();
    for dir in dirs {
        for mut crd in load_dir(dir.as_ref())? {
            if !crd.metadata.name.as_deref().is_some_and(&wanted) {
                continue;
            }
            let name = crd
                .metadata
                .name
                .clone()
                .context("a CRD without metadata.name")?;
            crd.metadata.managed_fields = None;
            api.patch(&name, &params, &Patch::Apply(&crd))
                .await
                .with_context(|| format!("applying CRD {name}"))?;
            names.push(name);
        }
    }
    for name in &names {
        eventually(
            &format!("CRD {name} established"),
            Timing::within(Duration::from_secs(60)),
            || {
                let api = api.clone();
                async move {
                    let crd = api.get(name).await?;
                    let established = crd
                        .status
                        .and_then(|s| s.conditions)
                        .unwrap_or_default()
                        .iter()
                        .any(|c| c.type_ == "Established" && c.status == "True");
                    anyhow::ensure!(established, "not established yet");
                    Ok(())
                }
            },
        )
        .await?;
    }
    Ok(names)
}
