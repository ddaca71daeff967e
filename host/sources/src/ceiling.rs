//! The ceiling: the most an entry of the plugins ConfigMap may grant, set by a cluster admin in
//! the Deployment's flags (`--plugin-grantable-*`, `--plugin-signatures`,
//! `--plugin-trusted-keys`). Whoever edits that ConfigMap (a namespace-level right) can swap
//! versions and grant within the ceiling; reaching past it needs the Deployment (docs/security.md,
//! docs/decisions.md "The grant ceiling"). A candidate whose grants reach past it is refused
//! whole, never loaded narrowed: a narrowed plugin would serve and then fail on every call.

use std::collections::BTreeSet;

use odh_plugin_runtime::Capabilities;
use odh_plugin_runtime::gvk::Gvk;
use odh_plugin_runtime::wire::Manifest;

use crate::trust;

/// Kinds a ceiling admits: every ordinary (not [`trust::SENSITIVE_KINDS`]) kind with `*`, every
/// kind of a group with `*.group`, one kind with `Kind` (core) or `Kind.group`. A sensitive kind
/// is admitted only by naming it or its group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindCeiling {
    any_ordinary: bool,
    groups: BTreeSet<String>,
    kinds: BTreeSet<(String, String)>,
}

impl KindCeiling {
    /// Every ordinary kind: the default.
    pub fn ordinary() -> Self {
        Self::parse(&["*".to_string()]).expect("`*` parses")
    }

    /// `items` as the flag gives them (an empty list admits no kind).
    pub fn parse(items: &[String]) -> Result<Self, String> {
        let mut ceiling = Self {
            any_ordinary: false,
            groups: BTreeSet::new(),
            kinds: BTreeSet::new(),
        };
        for item in items.iter().map(|i| i.trim()).filter(|i| !i.is_empty()) {
            if item == "*" {
                ceiling.any_ordinary = true;
                continue;
            }
            let (kind, group) = item.split_once('.').unwrap_or((item, ""));
            let valid_kind = kind == "*"
                || kind.starts_with(|c: char| c.is_ascii_uppercase())
                    && kind.chars().all(|c| c.is_ascii_alphanumeric());
            if !valid_kind || group.contains(|c: char| c.is_whitespace() || c == '/') {
                return Err(format!(
                    "{item:?} is not `*`, `Kind`, `Kind.group` or `*.group`"
                ));
            }
            if kind == "*" {
                ceiling.groups.insert(group.to_string());
            } else {
                ceiling.kinds.insert((group.to_string(), kind.to_string()));
            }
        }
        Ok(ceiling)
    }

    pub fn admits(&self, kind: &Gvk) -> bool {
        (self.any_ordinary && !trust::is_sensitive(kind))
            || self.groups.contains(&kind.group)
            || self
                .kinds
                .contains(&(kind.group.clone(), kind.kind.clone()))
    }
}

/// Whether an entry from outside the host must be a signed `oci://` artifact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SignatureRequirement {
    /// A sha256 pin or a signature, as the entry says.
    #[default]
    Optional,
    /// A signature by a trusted key; a sha256 pin alone is refused.
    Required,
}

impl std::str::FromStr for SignatureRequirement {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "optional" => Ok(Self::Optional),
            "required" => Ok(Self::Required),
            other => Err(format!("{other:?} is not `optional` or `required`")),
        }
    }
}

/// The most an entry may grant; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ceiling {
    /// Kinds an entry may grant reads of beyond its baseline.
    pub reads: KindCeiling,
    /// Kinds an entry may grant writes of beyond its baseline.
    pub writes: KindCeiling,
    /// Kinds a plugin may intercept with webhooks the version it replaces did not have.
    pub webhook_kinds: KindCeiling,
    /// Host patterns an entry may grant HTTP to (`*`: any host the address checks allow).
    pub http_hosts: Capabilities,
    /// Namespaces an entry may add to where the controller's identity goes.
    pub identity_namespaces: BTreeSet<String>,
    pub signatures: SignatureRequirement,
    /// Fingerprints (`plugin keygen`/`plugin inspect` print them) of the only keys whose
    /// signatures count; empty: any key of the entry's key source.
    pub trusted_keys: BTreeSet<String>,
}

impl Default for Ceiling {
    /// Ordinary kinds, any host, no identity namespace beyond the built-ins' own, signatures
    /// as each entry says.
    fn default() -> Self {
        Self {
            reads: KindCeiling::ordinary(),
            writes: KindCeiling::ordinary(),
            webhook_kinds: KindCeiling::ordinary(),
            http_hosts: hosts(["*"]),
            identity_namespaces: BTreeSet::new(),
            signatures: SignatureRequirement::Optional,
            trusted_keys: BTreeSet::new(),
        }
    }
}

/// Capabilities holding `patterns` as HTTP hosts only: what [`Capabilities::covers_host_pattern`]
/// checks a grant against.
pub fn hosts<S: Into<String>>(patterns: impl IntoIterator<Item = S>) -> Capabilities {
    Capabilities {
        http_hosts: patterns.into_iter().map(Into::into).collect(),
        ..Default::default()
    }
}

impl Ceiling {
    /// What a candidate declaring `manifest` and granted `granted` over `baseline` holds past
    /// this ceiling: kinds and hosts its entry added beyond the baseline, identity namespaces
    /// beyond `identity_baseline` (the built-in's own), kinds its webhooks intercept that
    /// `predecessor` (the manifest of the version it replaces) did not. Empty: within it.
    pub fn exceeded(
        &self,
        manifest: &Manifest,
        granted: &Capabilities,
        baseline: &Capabilities,
        identity_baseline: &BTreeSet<String>,
        predecessor: Option<&Manifest>,
    ) -> Vec<String> {
        let mut out: Vec<String> = granted
            .reads
            .difference(&baseline.reads)
            .filter(|k| !self.reads.admits(k))
            .map(|k| format!("reads {k}"))
            .collect();
        out.extend(
            granted
                .writes
                .difference(&baseline.writes)
                .filter(|k| !self.writes.admits(k))
                .map(|k| format!("writes {k}")),
        );
        out.extend(
            granted
                .http_hosts
                .iter()
                .filter(|h| !baseline.covers_host_pattern(h))
                .filter(|h| !self.http_hosts.covers_host_pattern(h))
                .map(|h| format!("HTTP host {h}")),
        );
        out.extend(
            granted
                .foreign_writes
                .difference(&baseline.foreign_writes)
                .filter(|k| !self.writes.admits(k))
                .map(|k| format!("changes to {k} objects it does not manage")),
        );
        out.extend(
            granted
                .service_account_namespaces
                .difference(identity_baseline)
                .filter(|ns| !self.identity_namespaces.contains(*ns))
                .map(|ns| format!("the controller's identity towards namespace {ns}")),
        );
        out.extend(
            new_webhook_kinds(manifest, predecessor)
                .filter(|k| !self.webhook_kinds.admits(k))
                .map(|k| format!("a webhook on {k}")),
        );
        out
    }
}

/// The kinds `manifest`'s webhooks intercept that `predecessor`'s did not.
fn new_webhook_kinds<'m>(
    manifest: &'m Manifest,
    predecessor: Option<&'m Manifest>,
) -> impl Iterator<Item = &'m Gvk> {
    let before: BTreeSet<&Gvk> = predecessor
        .map(|p| p.webhooks.iter().map(|w| &w.gvk).collect())
        .unwrap_or_default();
    let mut seen = BTreeSet::new();
    manifest
        .webhooks
        .iter()
        .map(|w| &w.gvk)
        .filter(move |k| !before.contains(k) && seen.insert(*k))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(items: &[&str]) -> KindCeiling {
        KindCeiling::parse(&items.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn kind_ceilings_admit_ordinary_kinds_and_sensitive_ones_only_by_name() {
        let cm = Gvk::new("", "v1", "ConfigMap");
        let secret = Gvk::new("", "v1", "Secret");
        let role = Gvk::new("rbac.authorization.k8s.io", "v1", "Role");
        let sr = Gvk::new("serving.kserve.io", "v1alpha1", "ServingRuntime");

        let default = KindCeiling::ordinary();
        assert!(default.admits(&cm) && default.admits(&sr));
        assert!(!default.admits(&secret) && !default.admits(&role));

        let named = kinds(&["*", "Secret"]);
        assert!(named.admits(&secret) && named.admits(&cm));
        assert!(!named.admits(&role));

        let group = kinds(&["*.rbac.authorization.k8s.io"]);
        assert!(group.admits(&role) && !group.admits(&cm));

        let exact = kinds(&["ServingRuntime.serving.kserve.io"]);
        assert!(exact.admits(&sr) && !exact.admits(&cm));
        assert!(
            !exact.admits(&Gvk::new(
                "serving.kserve.io",
                "v1beta1",
                "InferenceService"
            )),
            "one kind names no other of its group"
        );

        assert!(!kinds(&[]).admits(&cm), "an empty ceiling admits nothing");
        for bad in ["secret", "Secret/v1", "Kind. group", "*x"] {
            assert!(
                KindCeiling::parse(&[bad.to_string()]).is_err(),
                "{bad:?} must be refused"
            );
        }
    }

    fn manifest(webhook_kinds: &[Gvk]) -> Manifest {
        use odh_plugin_runtime::wire::{Operation, Webhook, WebhookType};
        Manifest {
            name: "p".into(),
            version: "0.1.0".into(),
            description: String::new(),
            controllers: vec![],
            webhooks: webhook_kinds
                .iter()
                .map(|k| Webhook {
                    path: format!("/mutate-{}", k.kind.to_ascii_lowercase()),
                    type_: WebhookType::Mutating,
                    gvk: k.clone(),
                    operations: vec![Operation::Create],
                    object_selector: None,
                    namespace_selector: None,
                })
                .collect(),
            reads: vec![],
            writes: vec![],
            http_hosts: vec![],
        }
    }

    /// Only what the entry adds beyond the baseline meets the ceiling: kinds, hosts, identity
    /// namespaces and webhook kinds the replaced version lacked.
    #[test]
    fn only_what_an_entry_adds_meets_the_ceiling() {
        let cm = Gvk::new("", "v1", "ConfigMap");
        let secret = Gvk::new("", "v1", "Secret");
        let pod = Gvk::new("", "v1", "Pod");
        let ceiling = Ceiling {
            http_hosts: hosts(["*.example.com"]),
            identity_namespaces: ["registries".to_string()].into(),
            ..Ceiling::default()
        };
        let granted = Capabilities {
            reads: [cm.clone(), secret.clone()].into(),
            writes: [secret.clone()].into(),
            http_hosts: ["api.example.com".into(), "10.0.0.1".into()].into(),
            secure_random: true,
            service_account_namespaces: ["registries".into(), "tenant".into()].into(),
            foreign_writes: Default::default(),
        };
        let none = Capabilities::default();
        let with_pods = manifest(&[pod.clone(), cm.clone()]);
        assert_eq!(
            ceiling.exceeded(&with_pods, &granted, &none, &BTreeSet::new(), None),
            vec![
                "reads Secret/v1",
                "writes Secret/v1",
                "HTTP host 10.0.0.1",
                "the controller's identity towards namespace tenant",
                "a webhook on Pod/v1",
            ]
        );
        // What the replaced version held, or its webhooks intercepted, is not the entry's to
        // grant.
        let held = Capabilities {
            reads: [secret.clone()].into(),
            writes: [secret.clone()].into(),
            http_hosts: ["10.0.0.1".into()].into(),
            ..Capabilities::default()
        };
        let builtin_identity: BTreeSet<String> = ["tenant".to_string()].into();
        assert!(
            ceiling
                .exceeded(
                    &with_pods,
                    &granted,
                    &held,
                    &builtin_identity,
                    Some(&manifest(&[pod]))
                )
                .is_empty()
        );
    }

    #[test]
    fn signature_requirements_parse() {
        assert_eq!("required".parse(), Ok(SignatureRequirement::Required));
        assert_eq!("optional".parse(), Ok(SignatureRequirement::Optional));
        assert!("yes".parse::<SignatureRequirement>().is_err());
    }
}
