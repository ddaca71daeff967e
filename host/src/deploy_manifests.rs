//! `odh-model-controller deploy-manifests`: the parts of `deploy/` that follow from the plugins,
//! generated from their manifests so a new plugin is picked up by running this again.
//!
//! Per profile (`full`, and `xks` = the webhook-only profile) one directory
//! `deploy/generated/<profile>/` with:
//! * `rbac.yaml`: the ClusterRole `odh-model-controller-role` (every kind a plugin reads,
//!   writes, reconciles, owns or watches; the primaries' `status` and `finalizers`; the
//!   bindings and role rules plugins hand out) plus the host's own needs (Events cluster-wide;
//!   in its own namespace the Lease, the plugins ConfigMap and its status ConfigMap), each rule
//!   commented with the reasons it exists;
//! * `webhooks.yaml`: the Mutating/ValidatingWebhookConfigurations of the webhooks the profile
//!   serves, with upstream's names, side effects and object selectors ([`UPSTREAM_WEBHOOKS`]:
//!   the manifests carry paths, kinds and operations, not these);
//! * `kustomization.yaml` listing them.
//!
//! The manifests do not say which roles the objects a plugin writes bind or grant: the
//! apiserver refuses a RoleBinding to a role whose permissions the writer lacks unless it may
//! `bind` that role, and a Role with rules the writer does not hold. [`PLUGIN_RBAC_NEEDS`]
//! names those per plugin; the RBAC test (`tests/integration/tests/deploy_rbac.rs`) proves the
//! whole set by running the host under it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use anyhow::Context;
use kube::api::{ApiResource, GroupVersionKind};

use crate::builtins::{self, Builtin};
use crate::gvk::Gvk;
use crate::label_selector::LabelSelector;
use crate::plugin::wire::{Manifest, WebhookType};
use crate::plugin::{EngineOptions, LoadRequest, LoadedPlugin, PluginEngine, Source};
use crate::registry::config::CONFIGMAP_NAME;
use crate::registry::swap::STATUS_CONFIGMAP_NAME;

/// The namespace the manifests name (kustomize's `namespace:` moves everything elsewhere).
pub const NAMESPACE: &str = "opendatahub";
pub const SERVICE_ACCOUNT: &str = "odh-model-controller";
pub const CLUSTER_ROLE: &str = "odh-model-controller-role";
pub const CLUSTER_ROLE_BINDING: &str = "odh-model-controller-rolebinding-opendatahub";
pub const ROLE: &str = "leader-election-role";
pub const ROLE_BINDING: &str = "leader-election-rolebinding";
pub const WEBHOOK_SERVICE: &str = "odh-model-controller-webhook-service";
pub const MUTATING_CONFIGURATION: &str = "mutating.odh-model-controller.opendatahub.io";
pub const VALIDATING_CONFIGURATION: &str = "validating.odh-model-controller.opendatahub.io";

/// Upstream's registration of one webhook path (its kustomize output, spec nim-process §3.4).
pub struct UpstreamWebhook {
    pub path: &'static str,
    pub name: &'static str,
    pub side_effects: &'static str,
}

pub const UPSTREAM_WEBHOOKS: &[UpstreamWebhook] = &[
    UpstreamWebhook {
        path: "/mutate--v1-pod",
        name: "mutating.pod.odh-model-controller.opendatahub.io",
        side_effects: "None",
    },
    UpstreamWebhook {
        path: "/mutate-serving-kserve-io-v1alpha1-inferencegraph",
        name: "minferencegraph-v1alpha1.odh-model-controller.opendatahub.io",
        side_effects: "None",
    },
    UpstreamWebhook {
        path: "/mutate-serving-kserve-io-v1alpha1-llminferenceservice",
        name: "connection-llmisvc-v1alpha1.odh-model-controller.opendatahub.io",
        side_effects: "NoneOnDryRun",
    },
    UpstreamWebhook {
        path: "/mutate-serving-kserve-io-v1alpha2-llminferenceservice",
        name: "connection-llmisvc-v1alpha2.odh-model-controller.opendatahub.io",
        side_effects: "NoneOnDryRun",
    },
    UpstreamWebhook {
        path: "/mutate-serving-kserve-io-v1beta1-inferenceservice",
        name: "minferenceservice-v1beta1.odh-model-controller.opendatahub.io",
        side_effects: "NoneOnDryRun",
    },
    UpstreamWebhook {
        path: "/validate-nim-opendatahub-io-v1-account",
        name: "validating.nim.account.odh-model-controller.opendatahub.io",
        side_effects: "None",
    },
    UpstreamWebhook {
        path: "/validate-serving-kserve-io-v1alpha1-inferencegraph",
        name: "vinferencegraph-v1alpha1.odh-model-controller.opendatahub.io",
        side_effects: "None",
    },
    UpstreamWebhook {
        path: "/validate-serving-kserve-io-v1beta1-inferenceservice",
        name: "validating.isvc.odh-model-controller.opendatahub.io",
        side_effects: "None",
    },
];

/// What a plugin's writes need beyond the kinds themselves.
pub struct PluginRbacNeeds {
    pub plugin: &'static str,
    /// Roles its RoleBindings/ClusterRoleBindings refer to, as (kind, name): granted `bind`
    /// on exactly these names (the roles may be defined by someone else, with any rules).
    pub binds: &'static [(&'static str, &'static str)],
    /// Rules of the Roles it writes, as (group, resources, verbs), with the reason: the host
    /// must hold them to create such a Role.
    pub holds: &'static [(
        &'static str,
        &'static [&'static str],
        &'static [&'static str],
        &'static str,
    )],
}

pub const PLUGIN_RBAC_NEEDS: &[PluginRbacNeeds] = &[
    PluginRbacNeeds {
        plugin: "isvc",
        binds: &[("ClusterRole", "system:auth-delegator")],
        holds: &[
            (
                "",
                &["pods"],
                &["get"],
                "the KEDA Role inference-prometheus-auth",
            ),
            (
                "metrics.k8s.io",
                &["nodes", "pods"],
                &["get", "list", "watch"],
                "the KEDA Role inference-prometheus-auth",
            ),
        ],
    },
    PluginRbacNeeds {
        plugin: "servingruntime",
        binds: &[("ClusterRole", "prometheus-ns-access")],
        holds: &[],
    },
];

/// Which webhooks and controllers a deployment profile runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeployProfile {
    Full,
    /// `ODH_PLATFORM_TYPE=xKS`: no controllers, only the webhook-only kinds' webhooks.
    Xks,
}

impl DeployProfile {
    pub const ALL: [DeployProfile; 2] = [DeployProfile::Full, DeployProfile::Xks];

    pub fn dir(self) -> &'static str {
        match self {
            DeployProfile::Full => "generated/full",
            DeployProfile::Xks => "generated/xks",
        }
    }
}

/// A built-in plugin's registration and its manifest.
pub struct PluginInfo {
    pub builtin: &'static Builtin,
    pub manifest: Manifest,
}

/// The manifests of every default built-in plugin, loaded as the host loads them.
pub fn builtin_plugins() -> anyhow::Result<Vec<PluginInfo>> {
    let engine = PluginEngine::new(EngineOptions::default())?;
    builtins::defaults()
        .map(|b| {
            let bytes = builtins::component(b.name)
                .with_context(|| format!("built-in plugin {} is not embedded", b.name))?;
            let plugin = LoadedPlugin::load(
                &engine,
                LoadRequest::new(Source::Builtin(b.name.into()), bytes),
            )
            .with_context(|| format!("loading built-in plugin {}", b.name))?;
            Ok(PluginInfo {
                builtin: b,
                manifest: plugin.manifest().clone(),
            })
        })
        .collect()
}

/// Every generated file as (path under `deploy/`, content).
pub fn generate(plugins: &[PluginInfo]) -> anyhow::Result<Vec<(String, String)>> {
    let mut files = Vec::new();
    for profile in DeployProfile::ALL {
        let dir = profile.dir();
        let webhooks = webhooks_yaml(plugins, profile)?;
        let mut resources = vec!["rbac.yaml"];
        files.push((format!("{dir}/rbac.yaml"), rbac_yaml(plugins, profile)));
        if let Some(webhooks) = webhooks {
            files.push((format!("{dir}/webhooks.yaml"), webhooks));
            resources.push("webhooks.yaml");
        }
        let mut k = String::from(HEADER);
        k.push_str(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n",
        );
        for r in resources {
            let _ = writeln!(k, "  - {r}");
        }
        files.push((format!("{dir}/kustomization.yaml"), k));
    }
    Ok(files)
}

const HEADER: &str = "# GENERATED by `odh-model-controller deploy-manifests` (make deploy-manifests) from the\n\
# built-in plugins' manifests: do not edit; a test fails when this is stale.\n";

/// A rule key: API group, resource (with subresource), resource names (empty: all).
type RuleKey = (String, String, Vec<String>);

#[derive(Default)]
struct Rules(BTreeMap<RuleKey, (BTreeSet<&'static str>, BTreeSet<String>)>);

impl Rules {
    fn add(
        &mut self,
        group: &str,
        resource: &str,
        names: &[&str],
        verbs: &[&'static str],
        why: String,
    ) {
        let key = (
            group.to_string(),
            resource.to_string(),
            names.iter().map(|s| s.to_string()).collect(),
        );
        let entry = self.0.entry(key).or_default();
        entry.0.extend(verbs.iter().copied());
        entry.1.insert(why);
    }

    fn add_kind(&mut self, gvk: &Gvk, sub: Option<&str>, verbs: &[&'static str], why: String) {
        let resource = plural(gvk);
        let resource = match sub {
            Some(s) => format!("{resource}/{s}"),
            None => resource,
        };
        self.add(&gvk.group, &resource, &[], verbs, why);
    }

    fn yaml(&self, out: &mut String) {
        if self.0.is_empty() {
            let _ = writeln!(out, "rules: []");
            return;
        }
        let _ = writeln!(out, "rules:");
        for ((group, resource, names), (verbs, whys)) in &self.0 {
            for why in whys {
                let _ = writeln!(out, "  # {why}");
            }
            let _ = writeln!(out, "  - apiGroups: [{}]", quote(group));
            let _ = writeln!(out, "    resources: [{}]", quote(resource));
            if !names.is_empty() {
                let names: Vec<String> = names.iter().map(|n| quote(n)).collect();
                let _ = writeln!(out, "    resourceNames: [{}]", names.join(", "));
            }
            let verbs: Vec<&str> = verbs.iter().copied().collect();
            let _ = writeln!(out, "    verbs: [{}]", verbs.join(", "));
        }
    }
}

/// The resource name of a kind, as kube derives it (the apiserver's convention for CRDs;
/// irregular built-ins such as `endpoints` included).
pub fn plural(gvk: &Gvk) -> String {
    ApiResource::from_gvk(&GroupVersionKind::gvk(&gvk.group, &gvk.version, &gvk.kind)).plural
}

fn quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '/' | '_'))
        && !matches!(s, "true" | "false" | "null" | "yes" | "no" | "on" | "off");
    if plain {
        s.to_string()
    } else {
        format!("\"{s}\"")
    }
}

const READ: &[&str] = &["get", "list", "watch"];
/// Server-side apply and merge patches (`patch`), side effects created when absent
/// (`create`), deletes after a `get` of the current object.
const WRITE: &[&str] = &["create", "delete", "get", "patch"];

fn cluster_rules(plugins: &[PluginInfo], profile: DeployProfile) -> Rules {
    let mut rules = Rules::default();
    let mut any_controller = false;
    for p in plugins.iter().filter(|p| serves_anything(p, profile)) {
        let m = &p.manifest;
        let name = &m.name;
        for gvk in &m.reads {
            rules.add_kind(gvk, None, READ, format!("{name}: reads {}", gvk.kind));
        }
        for gvk in &m.writes {
            rules.add_kind(gvk, None, WRITE, format!("{name}: writes {}", gvk.kind));
        }
        if profile == DeployProfile::Full {
            for c in &m.controllers {
                any_controller = true;
                let who = format!("{name}/{}", c.name);
                let primary = &c.primary;
                rules.add_kind(
                    primary,
                    None,
                    READ,
                    format!("{who}: reconciles {}", primary.kind),
                );
                rules.add_kind(
                    primary,
                    None,
                    &["patch"],
                    format!("{who}: finalizer and metadata of its {}", primary.kind),
                );
                if !primary.group.is_empty() {
                    rules.add_kind(
                        primary,
                        Some("status"),
                        &["get", "patch"],
                        format!("{who}: status of its {}", primary.kind),
                    );
                }
                rules.add_kind(
                    primary,
                    Some("finalizers"),
                    &["update"],
                    format!(
                        "{who}: owner references (blockOwnerDeletion) to its {}",
                        primary.kind
                    ),
                );
                for gvk in &c.owns {
                    rules.add_kind(gvk, None, READ, format!("{who}: owns {}", gvk.kind));
                }
                for w in &c.watches {
                    rules.add_kind(&w.gvk, None, READ, format!("{who}: watches {}", w.gvk.kind));
                }
            }
        }
        for needs in PLUGIN_RBAC_NEEDS
            .iter()
            .filter(|n| n.plugin == name.as_str())
        {
            if m.writes.is_empty() {
                continue;
            }
            for (kind, role) in needs.binds {
                let resource = if *kind == "ClusterRole" {
                    "clusterroles"
                } else {
                    "roles"
                };
                rules.add(
                    "rbac.authorization.k8s.io",
                    resource,
                    &[role],
                    &["bind"],
                    format!("{name}: binds {kind} {role}"),
                );
            }
            for (group, resources, verbs, why) in needs.holds {
                for r in *resources {
                    rules.add(group, r, &[], verbs, format!("{name}: {why}"));
                }
            }
        }
    }
    let serves_webhooks = plugins.iter().any(|p| {
        p.manifest.webhooks.iter().any(|w| {
            profile == DeployProfile::Full
                || p.builtin.webhook_only_kinds.contains(&w.gvk.kind.as_str())
        })
    });
    if serves_webhooks {
        for (resource, name) in [
            ("mutatingwebhookconfigurations", MUTATING_CONFIGURATION),
            ("validatingwebhookconfigurations", VALIDATING_CONFIGURATION),
        ] {
            rules.add(
                "admissionregistration.k8s.io",
                resource,
                &[name],
                &["get", "patch"],
                "host: keeps its entries of the webhook configuration in step with the plugins served (--sync-webhook-configurations); get: whether it exists yet".into(),
            );
        }
    }
    if any_controller {
        rules.add(
            "events.k8s.io",
            "events",
            &[],
            &["create", "patch"],
            "host: Events about reconciled objects".into(),
        );
    }
    rules
}

fn serves_anything(p: &PluginInfo, profile: DeployProfile) -> bool {
    match profile {
        DeployProfile::Full => true,
        DeployProfile::Xks => p
            .manifest
            .webhooks
            .iter()
            .any(|w| p.builtin.webhook_only_kinds.contains(&w.gvk.kind.as_str())),
    }
}

fn own_namespace_rules(plugins: &[PluginInfo], profile: DeployProfile) -> Rules {
    let mut rules = Rules::default();
    let controllers = profile == DeployProfile::Full
        && plugins.iter().any(|p| !p.manifest.controllers.is_empty());
    if controllers {
        rules.add(
            "coordination.k8s.io",
            "leases",
            &[builtins::LEASE_NAME],
            &["get", "update"],
            "host: leader election".into(),
        );
        rules.add(
            "coordination.k8s.io",
            "leases",
            &[],
            &["create"],
            "host: leader election (the first replica creates the Lease)".into(),
        );
    }
    rules.add(
        "",
        "configmaps",
        &[],
        READ,
        format!("host: the plugins ConfigMap {CONFIGMAP_NAME} and ConfigMap plugin sources"),
    );
    rules.add(
        "",
        "configmaps",
        &[STATUS_CONFIGMAP_NAME],
        &["patch"],
        "host: plugin status (server-side apply)".into(),
    );
    rules.add(
        "",
        "configmaps",
        &[],
        &["create"],
        format!("host: plugin status (the first apply creates {STATUS_CONFIGMAP_NAME})"),
    );
    rules.add(
        "events.k8s.io",
        "events",
        &[],
        &["create"],
        "host: Warning Events about the plugins ConfigMap".into(),
    );
    rules
}

fn rbac_yaml(plugins: &[PluginInfo], profile: DeployProfile) -> String {
    let mut out = String::from(HEADER);
    let names: Vec<&str> = plugins
        .iter()
        .filter(|p| serves_anything(p, profile))
        .map(|p| p.manifest.name.as_str())
        .collect();
    let _ = writeln!(out, "# Plugins: {}", names.join(", "));
    let _ = write!(
        out,
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {CLUSTER_ROLE}\n"
    );
    cluster_rules(plugins, profile).yaml(&mut out);
    let _ = write!(
        out,
        "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: {CLUSTER_ROLE_BINDING}\n\
roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: {CLUSTER_ROLE}\n\
subjects:\n  - kind: ServiceAccount\n    name: {SERVICE_ACCOUNT}\n    namespace: {NAMESPACE}\n"
    );
    let _ = write!(
        out,
        "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: {ROLE}\n  namespace: {NAMESPACE}\n"
    );
    own_namespace_rules(plugins, profile).yaml(&mut out);
    let _ = write!(
        out,
        "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: {ROLE_BINDING}\n  namespace: {NAMESPACE}\n\
roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: {ROLE}\n\
subjects:\n  - kind: ServiceAccount\n    name: {SERVICE_ACCOUNT}\n    namespace: {NAMESPACE}\n"
    );
    out
}

/// A webhook's `objectSelector`/`namespaceSelector` from the manifest's string form.
fn selector_yaml(field: &str, selector: &str) -> anyhow::Result<String> {
    let parsed = LabelSelector::parse(selector)?;
    let mut out = format!("    {field}:\n      matchExpressions:\n");
    for e in parsed.match_expressions() {
        let text = |k: &str| e[k].as_str().unwrap_or_default().to_string();
        let _ = writeln!(
            out,
            "        - key: {}\n          operator: {}",
            quote(&text("key")),
            text("operator")
        );
        if let Some(values) = e["values"].as_array() {
            let values: Vec<String> = values
                .iter()
                .map(|v| quote(v.as_str().unwrap_or_default()))
                .collect();
            let _ = writeln!(out, "          values: [{}]", values.join(", "));
        }
    }
    Ok(out)
}

/// The webhook configurations of a profile; none when it serves no webhook.
fn webhooks_yaml(plugins: &[PluginInfo], profile: DeployProfile) -> anyhow::Result<Option<String>> {
    let mut mutating = String::new();
    let mut validating = String::new();
    for p in plugins {
        for w in &p.manifest.webhooks {
            if profile == DeployProfile::Xks
                && !p.builtin.webhook_only_kinds.contains(&w.gvk.kind.as_str())
            {
                continue;
            }
            let upstream = UPSTREAM_WEBHOOKS
                .iter()
                .find(|u| u.path == w.path)
                .with_context(|| {
                    format!(
                        "plugin {}'s webhook {} has no name: add upstream's registration to UPSTREAM_WEBHOOKS in host/src/deploy_manifests.rs",
                        p.manifest.name, w.path
                    )
                })?;
            let out = match w.type_ {
                WebhookType::Mutating => &mut mutating,
                WebhookType::Validating => &mut validating,
            };
            let ops: Vec<String> = w
                .operations
                .iter()
                .map(|o| {
                    serde_json::to_value(o)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default()
                })
                .collect();
            let _ = write!(
                out,
                "  # plugin {}\n  - name: {}\n    admissionReviewVersions: [v1]\n    clientConfig:\n      service:\n        name: {WEBHOOK_SERVICE}\n        namespace: {NAMESPACE}\n        path: {}\n",
                p.manifest.name, upstream.name, w.path
            );
            let _ = write!(
                out,
                "    failurePolicy: Fail\n    sideEffects: {}\n    rules:\n      - apiGroups: [{}]\n        apiVersions: [{}]\n        operations: [{}]\n        resources: [{}]\n",
                upstream.side_effects,
                quote(&w.gvk.group),
                quote(&w.gvk.version),
                ops.join(", "),
                plural(&w.gvk)
            );
            for (field, selector) in [
                ("objectSelector", &w.object_selector),
                ("namespaceSelector", &w.namespace_selector),
            ] {
                let Some(selector) = selector else { continue };
                let _ = write!(out, "{}", selector_yaml(field, selector)?);
            }
        }
    }
    if mutating.is_empty() && validating.is_empty() {
        return Ok(None);
    }
    let mut out = String::from(HEADER);
    let mut first = true;
    for (kind, name, body) in [
        (
            "MutatingWebhookConfiguration",
            MUTATING_CONFIGURATION,
            mutating,
        ),
        (
            "ValidatingWebhookConfiguration",
            VALIDATING_CONFIGURATION,
            validating,
        ),
    ] {
        if body.is_empty() {
            continue;
        }
        if !first {
            out.push_str("---\n");
        }
        first = false;
        let _ = write!(
            out,
            "apiVersion: admissionregistration.k8s.io/v1\nkind: {kind}\nmetadata:\n  name: {name}\nwebhooks:\n{body}"
        );
    }
    Ok(Some(out))
}

/// `deploy-manifests`: write the files under `deploy_dir`, or with `check` compare them and
/// fail naming every stale one.
pub fn run(deploy_dir: &std::path::Path, check: bool) -> anyhow::Result<()> {
    let files = generate(&builtin_plugins()?)?;
    let mut stale = Vec::new();
    for (path, content) in &files {
        let full = deploy_dir.join(path);
        if check {
            if std::fs::read_to_string(&full).ok().as_deref() != Some(content.as_str()) {
                stale.push(path.clone());
            }
        } else {
            if let Some(parent) = full.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&full, content)
                .with_context(|| format!("writing {}", full.display()))?;
        }
    }
    // A profile that stops serving webhooks must not leave its old file behind.
    for profile in DeployProfile::ALL {
        let path = format!("{}/webhooks.yaml", profile.dir());
        if !files.iter().any(|(p, _)| *p == path) && deploy_dir.join(&path).exists() {
            if check {
                stale.push(path);
            } else {
                std::fs::remove_file(deploy_dir.join(&path))?;
            }
        }
    }
    anyhow::ensure!(
        stale.is_empty(),
        "deploy/ is stale against the plugins' manifests ({}): run `make deploy-manifests`",
        stale.join(", ")
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_follow_the_apiserver_convention() {
        let p = |g: &str, k: &str| plural(&Gvk::new(g, "v1", k));
        assert_eq!(p("networking.k8s.io", "NetworkPolicy"), "networkpolicies");
        assert_eq!(p("", "Endpoints"), "endpoints");
        assert_eq!(
            p("serving.kserve.io", "InferenceService"),
            "inferenceservices"
        );
        assert_eq!(p("kuadrant.io", "AuthPolicy"), "authpolicies");
        assert_eq!(
            p("dscinitialization.opendatahub.io", "DSCInitialization"),
            "dscinitializations"
        );
    }

    #[test]
    fn every_upstream_webhook_path_is_named_once() {
        let paths: BTreeSet<&str> = UPSTREAM_WEBHOOKS.iter().map(|w| w.path).collect();
        assert_eq!(paths.len(), UPSTREAM_WEBHOOKS.len());
        for w in UPSTREAM_WEBHOOKS {
            assert!(
                w.name.ends_with(".odh-model-controller.opendatahub.io"),
                "{}",
                w.name
            );
            assert!(matches!(w.side_effects, "None" | "NoneOnDryRun"));
        }
    }

    #[test]
    fn yaml_scalars_that_need_it_are_quoted() {
        assert_eq!(quote(""), "\"\"");
        assert_eq!(quote("true"), "\"true\"");
        assert_eq!(quote("system:auth-delegator"), "\"system:auth-delegator\"");
        assert_eq!(quote("serving.kserve.io"), "serving.kserve.io");
    }
}
