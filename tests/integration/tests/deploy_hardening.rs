//! The pods `deploy/` runs, as each overlay renders them (docs/security.md T15, T16):
//!
//! * T15: every container runs non-root, without capabilities or privilege escalation, under
//!   the RuntimeDefault seccomp profile, on a read-only root file system; every path the binary
//!   writes with the Deployment's arguments (parsed by the binary's own command line) is a
//!   writable `emptyDir`, every certificate directory it reads is mounted;
//! * T16: a NetworkPolicy in the Deployment's namespace selects its pods for Ingress, and each
//!   container port is admitted from exactly the intended sources: the controller's webhook
//!   port from the apiserver only (OpenShift: the host-network namespace; xKS: the admin's
//!   ipBlock), metrics from the monitoring stack only, the health port from nowhere (the
//!   kubelet probes from the pod's own node, which NetworkPolicy always admits);
//!   model-serving-api's HTTPS port from anyone (bearer-token authenticated), its metrics from
//!   the monitoring stack only;
//! * the checks themselves fail on a loosened manifest (`- {}` added to a policy's ingress, a
//!   wider source, an unselected pod, a writable root, …).
//!
//! The overlays are rendered here (resources, patches, namespace, the parameters ConfigMap and
//! its replacements: what the tests read); one test checks that `kubectl kustomize` renders the
//! same Deployments and NetworkPolicies (and fails without kubectl: `make test-deps` installs
//! one).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail, ensure};
use clap::Parser;
use odh_model_controller::cli::{Cli, Command as CliCommand};
use odh_test_support::workspace_root;
use serde_json::{Value, json};

fn deploy_dir() -> PathBuf {
    workspace_root().join("deploy")
}

const OVERLAYS: [&str; 2] = ["openshift", "xks"];

// ---------------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------------

/// Kinds the namespace of a kustomization does not apply to.
const CLUSTER_SCOPED: [&str; 6] = [
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
    "Namespace",
];

fn documents(path: &Path) -> anyhow::Result<Vec<Value>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    odh_test_support::dev::yaml_documents(&text).with_context(|| path.display().to_string())
}

/// What kustomize makes of `dir` for the fields these tests read: `resources` (files and
/// kustomization directories, recursively), `patches` (JSON 6902 operations, inline or from a
/// file, by target kind and name; strategic-merge `$patch: delete`) and `namespace`. `images`
/// (the container image) and `labels` without `includeSelectors`/`includeTemplates` (object
/// metadata only) change nothing read here. Any other field, or patch form, is refused: this
/// renderer must never disagree with kustomize silently.
fn render(dir: &Path) -> anyhow::Result<Vec<Value>> {
    let path = dir.join("kustomization.yaml");
    let kustomization = documents(&path)?
        .into_iter()
        .next()
        .with_context(|| format!("{} is empty", path.display()))?;
    let fields = kustomization
        .as_object()
        .with_context(|| format!("{}: not a mapping", path.display()))?;
    for key in fields.keys() {
        ensure!(
            [
                "apiVersion",
                "kind",
                "namespace",
                "resources",
                "patches",
                "images",
                "labels",
                "configMapGenerator",
                "generatorOptions",
                "replacements"
            ]
            .contains(&key.as_str()),
            "{}: `{key}` is not understood by this test's renderer: teach it, or render with kubectl",
            path.display()
        );
    }
    for label in fields
        .get("labels")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for flag in ["includeSelectors", "includeTemplates"] {
            ensure!(
                label.get(flag).and_then(Value::as_bool) != Some(true),
                "{}: labels with {flag} change selectors or pod templates: teach the renderer",
                path.display()
            );
        }
    }
    let mut objects = Vec::new();
    for resource in fields
        .get("resources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = resource.as_str().context("a resource that is not a path")?;
        let target = dir.join(name);
        if target.is_dir() {
            objects.extend(render(&target)?);
        } else {
            objects.extend(documents(&target)?);
        }
    }
    if let Some(generators) = fields.get("configMapGenerator") {
        ensure!(
            fields["generatorOptions"]["disableNameSuffixHash"] == true,
            "{}: a generated name with a hash suffix: teach the renderer",
            path.display()
        );
        generate_config_maps(dir, generators, &mut objects)
            .with_context(|| format!("{}", path.display()))?;
    }
    for patch in fields
        .get("patches")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        apply_patch(dir, patch, &mut objects).with_context(|| format!("{}", path.display()))?;
    }
    if let Some(namespace) = fields.get("namespace").and_then(Value::as_str) {
        for object in &mut objects {
            let kind = object["kind"].as_str().unwrap_or_default();
            if !CLUSTER_SCOPED.contains(&kind) {
                object["metadata"]["namespace"] = json!(namespace);
            }
        }
    }
    for entry in fields
        .get("replacements")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let file = entry["path"]
            .as_str()
            .context("a replacement that is not a `path` to a file: teach the renderer")?;
        for replacement in documents(&dir.join(file))?
            .into_iter()
            .flat_map(|d| d.as_array().cloned().unwrap_or_default())
        {
            replace(&replacement, &mut objects)
                .with_context(|| format!("{}: {file}", path.display()))?;
        }
    }
    Ok(objects)
}

/// `configMapGenerator` entries with `envs` (`key=value` lines), created or merged
/// (`behavior: merge`) into a ConfigMap of the resources.
fn generate_config_maps(
    dir: &Path,
    generators: &Value,
    objects: &mut Vec<Value>,
) -> anyhow::Result<()> {
    for generator in generators
        .as_array()
        .context("configMapGenerator: not a list")?
    {
        for key in generator.as_object().into_iter().flat_map(|g| g.keys()) {
            ensure!(
                ["name", "envs", "behavior"].contains(&key.as_str()),
                "a configMapGenerator `{key}`: teach the renderer"
            );
        }
        let name = generator["name"].as_str().context("a generator's name")?;
        let mut data = serde_json::Map::new();
        for env in generator["envs"].as_array().into_iter().flatten() {
            let file = dir.join(env.as_str().context("an env file")?);
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            for line in text.lines().map(str::trim) {
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let (k, v) = line.split_once('=').context("an env line without `=`")?;
                data.insert(k.to_string(), json!(v));
            }
        }
        let existing = objects
            .iter_mut()
            .find(|o| o["kind"] == "ConfigMap" && o["metadata"]["name"] == name);
        match (generator["behavior"].as_str(), existing) {
            (Some("merge"), Some(config_map)) => {
                let into = config_map["data"]
                    .as_object_mut()
                    .context("a ConfigMap without data")?;
                into.extend(data);
            }
            (None | Some("create"), None) => objects.push(json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name},
                "data": data,
            })),
            (behavior, existing) => bail!(
                "generator {name}: behavior {behavior:?} with the ConfigMap {}",
                if existing.is_some() {
                    "present"
                } else {
                    "absent"
                }
            ),
        }
    }
    Ok(())
}

/// One kustomize replacement: a ConfigMap's `data.<key>` into the selected objects' field
/// paths (dot-separated; `[name=x]` picks a list element by name, a number by index). A
/// target matching no object is no error (as kustomize); a path that does not resolve is.
fn replace(replacement: &Value, objects: &mut [Value]) -> anyhow::Result<()> {
    let source = &replacement["source"];
    ensure!(
        source["kind"] == "ConfigMap",
        "a replacement source other than a ConfigMap: teach the renderer"
    );
    let key = source["fieldPath"]
        .as_str()
        .and_then(|f| f.strip_prefix("data."))
        .context("a source fieldPath other than data.<key>: teach the renderer")?;
    let value = objects
        .iter()
        .find(|o| o["kind"] == "ConfigMap" && o["metadata"]["name"] == source["name"])
        .and_then(|o| o["data"].get(key))
        .cloned()
        .with_context(|| format!("source {source} not found"))?;
    for target in replacement["targets"].as_array().into_iter().flatten() {
        let select = &target["select"];
        for object in objects
            .iter_mut()
            .filter(|o| o["kind"] == select["kind"] && o["metadata"]["name"] == select["name"])
        {
            for field_path in target["fieldPaths"].as_array().into_iter().flatten() {
                let field_path = field_path.as_str().context("a fieldPath")?;
                let mut at = &mut *object;
                for segment in field_path.split('.') {
                    at = if let Some(selector) =
                        segment.strip_prefix('[').and_then(|s| s.strip_suffix(']'))
                    {
                        let (k, v) = selector.split_once('=').context("a list selector")?;
                        at.as_array_mut()
                            .and_then(|items| items.iter_mut().find(|i| i[k] == v))
                            .with_context(|| format!("{field_path}: no element {selector}"))?
                    } else if let Ok(index) = segment.parse::<usize>() {
                        at.get_mut(index)
                            .with_context(|| format!("{field_path}: no element {index}"))?
                    } else {
                        at.get_mut(segment)
                            .with_context(|| format!("{field_path}: no field {segment}"))?
                    };
                }
                *at = value.clone();
            }
        }
    }
    Ok(())
}

fn apply_patch(dir: &Path, patch: &Value, objects: &mut Vec<Value>) -> anyhow::Result<()> {
    let text = match (patch.get("patch"), patch.get("path")) {
        (Some(inline), None) => inline
            .as_str()
            .context("`patch` is not a string")?
            .to_string(),
        (None, Some(file)) => {
            let file = dir.join(file.as_str().context("`path` is not a string")?);
            std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?
        }
        _ => bail!("a patch with neither or both of `patch` and `path`: {patch}"),
    };
    let body: Value = serde_yaml::from_str(&text).context("parsing a patch")?;
    if let Some(operations) = body.as_array() {
        let operations: Vec<json_patch::PatchOperation> =
            serde_json::from_value(Value::Array(operations.clone()))
                .context("a JSON 6902 patch")?;
        let target = patch
            .get("target")
            .context("a JSON 6902 patch without a target")?;
        for key in target.as_object().into_iter().flat_map(|t| t.keys()) {
            ensure!(
                ["kind", "name", "group", "version"].contains(&key.as_str()),
                "a patch target by `{key}`: teach the renderer"
            );
        }
        let matches = |o: &Value| {
            ["kind", "name"].iter().all(|k| {
                let want = &target[k];
                let have = if *k == "kind" {
                    &o["kind"]
                } else {
                    &o["metadata"]["name"]
                };
                want.is_null() || want == have
            })
        };
        // As kustomize, a target matching nothing is no error (xKS has no validating webhooks).
        for object in objects.iter_mut().filter(|o| matches(o)) {
            json_patch::patch(object, &operations).with_context(|| format!("patching {target}"))?;
        }
    } else if body["$patch"] == "delete" {
        ensure!(
            patch.get("target").is_none(),
            "a targeted delete: teach the renderer"
        );
        let before = objects.len();
        objects.retain(|o| {
            !(o["kind"] == body["kind"] && o["metadata"]["name"] == body["metadata"]["name"])
        });
        ensure!(objects.len() < before, "a delete matching nothing: {body}");
    } else {
        bail!("a strategic-merge patch other than `$patch: delete`: teach the renderer");
    }
    Ok(())
}

fn rendered(overlay: &str) -> Vec<Value> {
    render(&deploy_dir().join("overlays").join(overlay))
        .unwrap_or_else(|e| panic!("rendering overlay {overlay}: {e:#}"))
}

fn of_kind<'a>(objects: &'a [Value], kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    objects.iter().filter(move |o| o["kind"] == kind)
}

fn name(o: &Value) -> &str {
    o["metadata"]["name"].as_str().unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// T15: the pod's security context and what the binary writes
// ---------------------------------------------------------------------------------------------

/// The paths the binary writes (`--plugin-cache-dir`: compiled plugins, the only thing it
/// writes; engine.rs `write_cache`) and the certificate directories it reads, from the
/// container's arguments as the binary's own command line parses them (defaults included).
fn paths_of(container: &Value) -> anyhow::Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let command: Vec<&str> = container["command"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    ensure!(
        command == ["/manager"],
        "the container runs {command:?}, not the image's /manager"
    );
    let args = container["args"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| {
            a.as_str()
                .map(str::to_string)
                .context("a non-string argument")
        })
        .collect::<anyhow::Result<Vec<String>>>()?;
    let cli = Cli::try_parse_from(std::iter::once("/manager".to_string()).chain(args.clone()))
        .map_err(|e| {
            anyhow::anyhow!("the binary refuses the Deployment's arguments {args:?}: {e}")
        })?;
    let env = |key: &str| {
        container["env"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|e| e["name"] == key)
            .and_then(|e| e["value"].as_str())
            .map(PathBuf::from)
    };
    Ok(match cli.command {
        None => (
            cli.run.plugin_cache_dir.into_iter().collect(),
            vec![cli.run.webhook_cert_dir],
        ),
        Some(CliCommand::ModelServingApi(a)) => (
            a.plugin_cache_dir.into_iter().collect(),
            vec![env("TLS_CERT_DIR").context("model-serving-api without TLS_CERT_DIR")?],
        ),
        Some(other) => bail!("the container runs {other:?}"),
    })
}

/// The volume mounted at or above `path` (the innermost), with its mount.
fn mount_of<'a>(
    pod: &'a Value,
    container: &'a Value,
    path: &Path,
) -> Option<(&'a Value, &'a Value)> {
    let mount = container["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| {
            m["mountPath"]
                .as_str()
                .is_some_and(|at| path.starts_with(at))
        })
        .max_by_key(|m| m["mountPath"].as_str().unwrap_or_default().len())?;
    let volume = pod["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["name"] == mount["name"])?;
    Some((mount, volume))
}

/// Every check of T15 on one Deployment; the first failure.
fn check_hardening(deployment: &Value) -> anyhow::Result<()> {
    let pod = &deployment["spec"]["template"]["spec"];
    let what = format!("Deployment {}", name(deployment));
    ensure!(
        pod["securityContext"]["runAsNonRoot"] == true,
        "{what}: the pod is not runAsNonRoot"
    );
    ensure!(
        pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault",
        "{what}: the pod's seccomp profile is not RuntimeDefault"
    );
    for host in ["hostNetwork", "hostPID", "hostIPC"] {
        ensure!(pod[host] != true, "{what}: {host}");
    }
    for volume in pod["volumes"].as_array().into_iter().flatten() {
        ensure!(
            ["emptyDir", "secret", "configMap", "projected"]
                .iter()
                .any(|k| volume.get(k).is_some()),
            "{what}: volume {} is neither an emptyDir nor a Secret, ConfigMap or projected volume",
            volume["name"]
        );
    }
    let containers = pod["containers"].as_array().into_iter().flatten();
    let init = pod["initContainers"].as_array().into_iter().flatten();
    for container in containers.chain(init) {
        let what = format!("{what}, container {}", container["name"]);
        let sc = &container["securityContext"];
        ensure!(
            sc["readOnlyRootFilesystem"] == true,
            "{what}: the root file system is writable"
        );
        ensure!(
            sc["allowPrivilegeEscalation"] == false,
            "{what}: privilege escalation is allowed"
        );
        ensure!(sc["privileged"] != true, "{what}: privileged");
        ensure!(
            sc["runAsNonRoot"] != false,
            "{what}: runAsNonRoot overridden"
        );
        ensure!(
            sc["seccompProfile"].is_null() || sc["seccompProfile"]["type"] == "RuntimeDefault",
            "{what}: the seccomp profile is overridden"
        );
        let dropped: Vec<&str> = sc["capabilities"]["drop"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        ensure!(
            dropped.contains(&"ALL"),
            "{what}: capabilities not dropped (ALL)"
        );
        ensure!(
            sc["capabilities"]["add"]
                .as_array()
                .is_none_or(|a| a.is_empty()),
            "{what}: capabilities added"
        );
        let (writes, reads) = paths_of(container).with_context(|| what.clone())?;
        for path in &writes {
            let (mount, volume) = mount_of(pod, container, path).with_context(|| {
                format!(
                    "{what}: it writes {} on the read-only root file system",
                    path.display()
                )
            })?;
            ensure!(
                mount["readOnly"] != true && volume.get("emptyDir").is_some(),
                "{what}: it writes {}, on volume {} which is not a writable emptyDir",
                path.display(),
                volume["name"]
            );
        }
        for path in &reads {
            ensure!(
                mount_of(pod, container, path).is_some(),
                "{what}: it reads its certificate from {}, which no volume is mounted at",
                path.display()
            );
        }
    }
    Ok(())
}

#[test]
fn every_pod_is_read_only_non_root_without_capabilities_under_runtime_default_seccomp() {
    for overlay in OVERLAYS {
        let objects = rendered(overlay);
        let deployments: Vec<&Value> = of_kind(&objects, "Deployment").collect();
        ensure_names(
            overlay,
            &deployments,
            if overlay == "openshift" {
                &["model-serving-api", "odh-model-controller"]
            } else {
                &["odh-model-controller"]
            },
        );
        for deployment in deployments {
            if let Err(e) = check_hardening(deployment) {
                panic!("overlay {overlay}: {e:#}");
            }
        }
    }
}

fn ensure_names(overlay: &str, objects: &[&Value], want: &[&str]) {
    let have: BTreeSet<&str> = objects.iter().map(|o| name(o)).collect();
    let want: BTreeSet<&str> = want.iter().copied().collect();
    assert_eq!(have, want, "overlay {overlay}");
}

/// The checks of T15 fail on a loosened Deployment.
#[test]
fn the_hardening_checks_fail_on_a_loosened_deployment() {
    let objects = rendered("openshift");
    let controller = of_kind(&objects, "Deployment")
        .find(|d| name(d) == "odh-model-controller")
        .expect("the controller's Deployment")
        .clone();
    check_hardening(&controller).expect("the shipped Deployment passes");
    let container = "/spec/template/spec/containers/0";
    let cache_arg = controller["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .and_then(|a| {
            a.iter().position(|a| {
                a.as_str()
                    .is_some_and(|a| a.starts_with("--plugin-cache-dir"))
            })
        })
        .expect("the controller's --plugin-cache-dir");
    let loosened: [(&str, Value); 10] = [
        (
            "a writable root",
            json!([{"op": "replace", "path": format!("{container}/securityContext/readOnlyRootFilesystem"), "value": false}]),
        ),
        (
            "no seccomp profile",
            json!([{"op": "remove", "path": "/spec/template/spec/securityContext/seccompProfile"}]),
        ),
        (
            "an Unconfined container",
            json!([{"op": "add", "path": format!("{container}/securityContext/seccompProfile"), "value": {"type": "Unconfined"}}]),
        ),
        (
            "root allowed",
            json!([{"op": "remove", "path": "/spec/template/spec/securityContext/runAsNonRoot"}]),
        ),
        (
            "a capability kept",
            json!([{"op": "replace", "path": format!("{container}/securityContext/capabilities/drop"), "value": ["NET_RAW"]}]),
        ),
        (
            "a capability added",
            json!([{"op": "add", "path": format!("{container}/securityContext/capabilities/add"), "value": ["NET_ADMIN"]}]),
        ),
        (
            "privilege escalation",
            json!([{"op": "replace", "path": format!("{container}/securityContext/allowPrivilegeEscalation"), "value": true}]),
        ),
        (
            "the cache outside its volume",
            json!([{"op": "replace", "path": format!("{container}/args/{cache_arg}"), "value": "--plugin-cache-dir=/var/tmp/plugins"}]),
        ),
        (
            "the cache volume mounted read-only",
            json!([{"op": "add", "path": format!("{container}/volumeMounts/1/readOnly"), "value": true}]),
        ),
        (
            "a hostPath volume",
            json!([{"op": "add", "path": "/spec/template/spec/volumes/-", "value": {"name": "host", "hostPath": {"path": "/"}}}]),
        ),
    ];
    for (what, operations) in loosened {
        let mut deployment = controller.clone();
        let operations: Vec<json_patch::PatchOperation> =
            serde_json::from_value(operations).unwrap();
        json_patch::patch(&mut deployment, &operations).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(
            check_hardening(&deployment).is_err(),
            "the checks accept {what}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// T16: NetworkPolicies
// ---------------------------------------------------------------------------------------------

/// Who may connect: everyone (a rule without `from`), or one peer of a rule's `from`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Source {
    Anyone,
    Peer(String),
}

fn peer(value: Value) -> Source {
    Source::Peer(value.to_string())
}

/// OpenShift: host-network traffic, where the kube-apiserver's connections come from.
fn host_network() -> Source {
    peer(json!({
        "namespaceSelector": {"matchLabels": {"policy-group.network.openshift.io/host-network": ""}},
        "podSelector": {},
    }))
}

/// OpenShift: the platform's and the user workloads' Prometheus.
fn monitoring() -> Source {
    peer(json!({
        "namespaceSelector": {"matchLabels": {"network.openshift.io/policy-group": "monitoring"}},
    }))
}

fn selects(selector: &Value, labels: &Value) -> anyhow::Result<bool> {
    for (key, value) in selector["matchLabels"].as_object().into_iter().flatten() {
        if &labels[key] != value {
            return Ok(false);
        }
    }
    for expression in selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let have = labels[expression["key"].as_str().unwrap_or_default()].as_str();
        let values: Vec<&str> = expression["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let holds = match expression["operator"].as_str() {
            Some("In") => have.is_some_and(|h| values.contains(&h)),
            Some("NotIn") => have.is_none_or(|h| !values.contains(&h)),
            Some("Exists") => have.is_some(),
            Some("DoesNotExist") => have.is_none(),
            other => bail!("a selector operator {other:?}"),
        };
        if !holds {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A container port: number, name, protocol.
struct Port {
    number: i64,
    name: Option<String>,
    protocol: String,
}

fn rule_admits_port(rule: &Value, port: &Port) -> anyhow::Result<bool> {
    let Some(ports) = rule["ports"].as_array().filter(|p| !p.is_empty()) else {
        return Ok(true);
    };
    for p in ports {
        if p["protocol"].as_str().unwrap_or("TCP") != port.protocol {
            continue;
        }
        let hit = match &p["port"] {
            Value::Null => true,
            Value::Number(n) => {
                let from = n.as_i64().context("a port number")?;
                let to = p["endPort"].as_i64().unwrap_or(from);
                (from..=to).contains(&port.number)
            }
            Value::String(s) => port.name.as_deref() == Some(s.as_str()),
            other => bail!("a port {other}"),
        };
        if hit {
            return Ok(true);
        }
    }
    Ok(false)
}

/// For each container port of `deployment` (by number), who the NetworkPolicies admit;
/// fails when no policy in its namespace selects its pods for Ingress, or when a policy
/// selecting them names a port none of its containers has.
fn admitted(
    deployment: &Value,
    objects: &[Value],
) -> anyhow::Result<BTreeMap<i64, BTreeSet<Source>>> {
    let template = &deployment["spec"]["template"];
    let labels = &template["metadata"]["labels"];
    let namespace = &deployment["metadata"]["namespace"];
    let ports: Vec<Port> = template["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["ports"].as_array().into_iter().flatten())
        .map(|p| Port {
            number: p["containerPort"].as_i64().unwrap_or_default(),
            name: p["name"].as_str().map(str::to_string),
            protocol: p["protocol"].as_str().unwrap_or("TCP").to_string(),
        })
        .collect();
    let mut out: BTreeMap<i64, BTreeSet<Source>> =
        ports.iter().map(|p| (p.number, BTreeSet::new())).collect();
    let mut isolated = false;
    for policy in of_kind(objects, "NetworkPolicy") {
        let spec = &policy["spec"];
        if &policy["metadata"]["namespace"] != namespace || !selects(&spec["podSelector"], labels)?
        {
            continue;
        }
        let types: Vec<&str> = spec["policyTypes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        ensure!(
            types.contains(&"Ingress"),
            "NetworkPolicy {} selects the pods without policyTypes Ingress",
            name(policy)
        );
        isolated = true;
        for rule in spec["ingress"].as_array().into_iter().flatten() {
            let sources: Vec<Source> = match rule["from"].as_array() {
                None => vec![Source::Anyone],
                Some(peers) if peers.is_empty() => vec![Source::Anyone],
                Some(peers) => peers.iter().cloned().map(peer).collect(),
            };
            let mut any = false;
            for port in &ports {
                if rule_admits_port(rule, port)? {
                    any = true;
                    out.entry(port.number)
                        .or_default()
                        .extend(sources.iter().cloned());
                }
            }
            ensure!(
                any,
                "NetworkPolicy {} has a rule for no port of the pods: {rule}",
                name(policy)
            );
        }
    }
    ensure!(
        isolated,
        "no NetworkPolicy in {namespace} selects the pods of Deployment {} for Ingress",
        name(deployment)
    );
    Ok(out)
}

/// Each port of each Deployment of `overlay`, admitted from exactly its intended sources.
fn check_policies(overlay: &str, objects: &[Value]) -> anyhow::Result<()> {
    let anyone = || BTreeSet::from([Source::Anyone]);
    let none = BTreeSet::new;
    for deployment in of_kind(objects, "Deployment") {
        let have = admitted(deployment, objects)?;
        let want: BTreeMap<i64, BTreeSet<Source>> = match (overlay, name(deployment)) {
            ("openshift", "odh-model-controller") => BTreeMap::from([
                (9443, BTreeSet::from([host_network()])),
                (8080, BTreeSet::from([monitoring()])),
                (8081, none()),
            ]),
            ("openshift", "model-serving-api") => {
                BTreeMap::from([(8443, anyone()), (8080, BTreeSet::from([monitoring()]))])
            }
            ("xks", "odh-model-controller") => {
                // The admin's ipBlock (webhook-source.yaml): one block, never every address.
                let webhook = have.get(&9443).cloned().unwrap_or_default();
                let [Source::Peer(only)] = webhook.iter().collect::<Vec<_>>()[..] else {
                    bail!("xks: the webhook port is admitted from {webhook:?}, not one ipBlock");
                };
                let only: Value = serde_json::from_str(only)?;
                let cidr = only["ipBlock"]["cidr"].as_str().unwrap_or_default();
                ensure!(
                    only.as_object().is_some_and(|o| o.len() == 1)
                        && !cidr.is_empty()
                        && !cidr.ends_with("/0"),
                    "xks: the webhook port is admitted from {only}, not one narrow ipBlock"
                );
                BTreeMap::from([(9443, webhook), (8080, none()), (8081, none())])
            }
            (_, other) => bail!("overlay {overlay}: an unexpected Deployment {other}"),
        };
        ensure!(
            have == want,
            "overlay {overlay}, Deployment {}: the ports are admitted from\n{have:#?}\nnot from\n{want:#?}",
            name(deployment)
        );
    }
    Ok(())
}

/// THE PROOF of T16 (issue #31): a pod on the network cannot send the webhook a forged
/// AdmissionReview: only the apiserver's source reaches 9443; metrics only from monitoring;
/// every port of every Deployment by exactly its intended rule.
#[test]
fn each_port_is_admitted_only_from_its_intended_sources() {
    for overlay in OVERLAYS {
        let objects = rendered(overlay);
        let policies: Vec<&Value> = of_kind(&objects, "NetworkPolicy").collect();
        ensure_names(
            overlay,
            &policies,
            if overlay == "openshift" {
                &["model-serving-api", "odh-model-controller"]
            } else {
                &["odh-model-controller"]
            },
        );
        if let Err(e) = check_policies(overlay, &objects) {
            panic!("{e:#}");
        }
    }
}

/// The checks of T16 fail on a loosened policy.
#[test]
fn the_policy_checks_fail_on_a_loosened_policy() {
    for overlay in OVERLAYS {
        let objects = rendered(overlay);
        check_policies(overlay, &objects).expect("the shipped policies pass");
        let index = |policy: &str| {
            objects
                .iter()
                .position(|o| o["kind"] == "NetworkPolicy" && name(o) == policy)
                .unwrap_or_else(|| panic!("{overlay}: NetworkPolicy {policy}"))
        };
        let controller = index("odh-model-controller");
        let mut loosened: Vec<(&str, usize, Value)> = vec![
            (
                "an empty rule (`- {}`)",
                controller,
                json!([{"op": "add", "path": "/spec/ingress/-", "value": {}}]),
            ),
            (
                "the webhook port from anyone",
                controller,
                json!([{"op": "add", "path": "/spec/ingress/-", "value": {"ports": [{"port": 9443}]}}]),
            ),
            (
                "the webhook port by name from every namespace",
                controller,
                json!([{"op": "add", "path": "/spec/ingress/-", "value": {"ports": [{"port": "webhook-server"}], "from": [{"namespaceSelector": {}}]}}]),
            ),
            (
                "the webhook port from the pods of its namespace",
                controller,
                json!([{"op": "add", "path": "/spec/ingress/0/from/-", "value": {"podSelector": {}}}]),
            ),
            (
                "the webhook rule without `from`",
                controller,
                json!([{"op": "remove", "path": "/spec/ingress/0/from"}]),
            ),
            (
                "the webhook rule without `ports`",
                controller,
                json!([{"op": "remove", "path": "/spec/ingress/0/ports"}]),
            ),
            (
                "every port from every address",
                controller,
                json!([{"op": "add", "path": "/spec/ingress/-", "value": {"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}}]),
            ),
            (
                "the health port opened",
                controller,
                json!([{"op": "add", "path": "/spec/ingress/-", "value": {"ports": [{"port": 8081}]}}]),
            ),
            (
                "a policy selecting other pods",
                controller,
                json!([{"op": "replace", "path": "/spec/podSelector", "value": {"matchLabels": {"app": "other"}}}]),
            ),
            (
                "a policy in another namespace",
                controller,
                json!([{"op": "replace", "path": "/metadata/namespace", "value": "elsewhere"}]),
            ),
            (
                "a policy for Egress only",
                controller,
                json!([{"op": "replace", "path": "/spec/policyTypes", "value": ["Egress"]}]),
            ),
        ];
        if overlay == "openshift" {
            let server = index("model-serving-api");
            loosened.extend([
                (
                    "the controller's metrics from every namespace",
                    controller,
                    json!([{"op": "add", "path": "/spec/ingress/1/from/-", "value": {"namespaceSelector": {}}}]),
                ),
                (
                    "model-serving-api's metrics from anyone",
                    server,
                    json!([{"op": "remove", "path": "/spec/ingress/1/from"}]),
                ),
                (
                    "model-serving-api's HTTPS rule for every port",
                    server,
                    json!([{"op": "remove", "path": "/spec/ingress/0/ports"}]),
                ),
            ]);
        } else {
            loosened.push((
                "the webhook port from every address",
                controller,
                json!([{"op": "replace", "path": "/spec/ingress/0/from/0/ipBlock/cidr", "value": "0.0.0.0/0"}]),
            ));
        }
        for (what, at, operations) in loosened {
            let mut changed = objects.clone();
            let operations: Vec<json_patch::PatchOperation> =
                serde_json::from_value(operations).unwrap();
            json_patch::patch(&mut changed[at], &operations)
                .unwrap_or_else(|e| panic!("{overlay}, {what}: {e}"));
            assert!(
                check_policies(overlay, &changed).is_err(),
                "overlay {overlay}: the checks accept {what}"
            );
        }
        // A second policy admitting everything, as one made for the whole namespace may.
        let mut changed = objects.clone();
        changed.push(json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "allow-all", "namespace": "opendatahub"},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{}]},
        }));
        assert!(
            check_policies(overlay, &changed).is_err(),
            "overlay {overlay}: the checks accept a namespace-wide allow-all policy"
        );
    }
}

/// This test's renderer and `kubectl kustomize` agree on every Deployment (image aside:
/// `images` rewrites it) and NetworkPolicy of each overlay.
#[test]
fn the_renderer_agrees_with_kubectl_kustomize() {
    let kubectl = odh_test_support::dev::kubectl().expect("kubectl");
    let comparable = |objects: Vec<Value>| -> BTreeMap<(String, String), Value> {
        objects
            .into_iter()
            .filter(|o| o["kind"] == "Deployment" || o["kind"] == "NetworkPolicy")
            .map(|mut o| {
                for c in o["spec"]["template"]["spec"]["containers"]
                    .as_array_mut()
                    .into_iter()
                    .flatten()
                {
                    c["image"] = Value::Null;
                }
                let key = (
                    o["kind"].as_str().unwrap_or_default().to_string(),
                    name(&o).to_string(),
                );
                (
                    key,
                    json!({"namespace": o["metadata"]["namespace"], "spec": o["spec"]}),
                )
            })
            .collect()
    };
    for overlay in OVERLAYS {
        let dir = deploy_dir().join("overlays").join(overlay);
        let out = Command::new(&kubectl)
            .arg("kustomize")
            .arg(&dir)
            .output()
            .expect("running kubectl kustomize");
        assert!(
            out.status.success(),
            "kubectl kustomize {overlay}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let theirs = odh_test_support::dev::yaml_documents(&String::from_utf8_lossy(&out.stdout))
            .expect("kubectl's YAML");
        assert_eq!(
            comparable(rendered(overlay)),
            comparable(theirs),
            "overlay {overlay}: this test's renderer and kubectl kustomize disagree"
        );
    }
}
