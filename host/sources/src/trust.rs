//! Grants that cannot widen silently. A candidate from outside the host (not built-in) gets, for
//! each kind of grant the admin's entry leaves out, no more than the version it replaces held;
//! a plugin new to the host no more than its controllers' primary and owned kinds (reads), its
//! owned kinds (writes) and no HTTP host. A candidate declaring more is refused until the admin
//! grants it explicitly; what an explicit grant adds beyond that baseline is reported.

use std::collections::BTreeSet;

use odh_plugin_runtime::gvk::Gvk;
use odh_plugin_runtime::wire::Manifest;
use odh_plugin_runtime::{Capabilities, Grants, LoadedPlugin};

/// What a candidate may hold without an explicit grant.
pub fn baseline(predecessor: Option<&LoadedPlugin>, manifest: &Manifest) -> Capabilities {
    match predecessor {
        Some(p) => p.capabilities().clone(),
        None => {
            let owned: BTreeSet<Gvk> = manifest
                .controllers
                .iter()
                .flat_map(|c| c.owns.iter().cloned())
                .filter(|k| !is_sensitive(k))
                .collect();
            let mut reads = owned.clone();
            reads.extend(
                manifest
                    .controllers
                    .iter()
                    .map(|c| c.primary.clone())
                    .filter(|k| !is_sensitive(k)),
            );
            Capabilities {
                reads,
                writes: owned,
                http_hosts: BTreeSet::new(),
                secure_random: false,
                service_account_namespaces: BTreeSet::new(),
                foreign_writes: BTreeSet::new(),
            }
        }
    }
}

/// Kinds no plugin from outside the host holds by declaring them its primary or owned kinds:
/// credentials, what runs code (Pods and the workloads that make them, ServiceAccounts they
/// run as), who may do what (RBAC), what intercepts every write (webhooks, admission
/// policies) and the API itself (CRDs). Only the admin's explicit grant gives them.
pub const SENSITIVE_KINDS: &[(&str, &str)] = &[
    ("", "Secret"),
    ("", "ServiceAccount"),
    ("", "Pod"),
    ("apps", "Deployment"),
    ("apps", "DaemonSet"),
    ("apps", "StatefulSet"),
    ("apps", "ReplicaSet"),
    ("batch", "Job"),
    ("batch", "CronJob"),
    ("rbac.authorization.k8s.io", "Role"),
    ("rbac.authorization.k8s.io", "RoleBinding"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    (
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
    ),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "MutatingAdmissionPolicyBinding",
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
];

/// Whether `kind` is one of [`SENSITIVE_KINDS`] (any version).
pub fn is_sensitive(kind: &Gvk) -> bool {
    SENSITIVE_KINDS
        .iter()
        .any(|(group, name)| kind.group == *group && kind.kind == *name)
}

/// What `manifest` declares beyond `baseline` in the kinds of grant `grants` leaves out (those
/// the admin lists are the admin's decision), as `reads Secret/v1`, `HTTP host *`.
pub fn beyond_baseline(
    manifest: &Manifest,
    grants: &Grants,
    baseline: &Capabilities,
) -> Vec<String> {
    let mut out = Vec::new();
    if grants.reads.is_none() {
        out.extend(
            manifest
                .reads
                .iter()
                .filter(|k| !baseline.reads.contains(*k))
                .map(|k| format!("reads {k}")),
        );
    }
    if grants.writes.is_none() {
        out.extend(
            manifest
                .writes
                .iter()
                .filter(|k| !baseline.writes.contains(*k))
                .map(|k| format!("writes {k}")),
        );
    }
    if grants.http_hosts.is_none() {
        out.extend(
            manifest
                .http_hosts
                .iter()
                .filter(|h| !baseline.covers_host_pattern(h))
                .map(|h| format!("HTTP host {h}")),
        );
    }
    out
}

/// What the capabilities a candidate got hold beyond `baseline`: for the status, so an admin
/// sees what their grant widened.
pub fn widened(granted: &Capabilities, baseline: &Capabilities) -> Vec<String> {
    let mut out: Vec<String> = granted
        .reads
        .difference(&baseline.reads)
        .map(|k| format!("reads {k}"))
        .collect();
    out.extend(
        granted
            .writes
            .difference(&baseline.writes)
            .map(|k| format!("writes {k}")),
    );
    out.extend(
        granted
            .http_hosts
            .iter()
            .filter(|h| !baseline.covers_host_pattern(h))
            .map(|h| format!("HTTP host {h}")),
    );
    if granted.secure_random && !baseline.secure_random {
        out.push("secure randomness".into());
    }
    out.extend(
        granted
            .service_account_namespaces
            .difference(&baseline.service_account_namespaces)
            .map(|ns| format!("the controller's identity to Services of {ns}")),
    );
    out.extend(
        granted
            .foreign_writes
            .difference(&baseline.foreign_writes)
            .map(|k| format!("changes to {k} objects it does not manage")),
    );
    out
}

/// How an entry's grants cut into what a candidate declares.
#[derive(Debug, Default, PartialEq)]
pub struct Narrowing {
    /// Withheld asks that refuse the candidate: kinds its own controllers cannot run without,
    /// and anything the version it replaces did not declare (a pinned grant is the admin's
    /// "no more than this": a candidate asking for more would go live and fail on it).
    pub refusing: Vec<String>,
    /// Withheld asks the candidate loads without: an admin's deliberate narrowing of what the
    /// plugin (or the version it replaces) declared, e.g. a built-in's `*` HTTP host cut to
    /// one registry.
    pub narrowed: Vec<String>,
}

pub fn narrowing(
    manifest: &Manifest,
    granted: &Capabilities,
    predecessor: Option<&Manifest>,
) -> Narrowing {
    let mut needed_reads = BTreeSet::new();
    let mut needed_writes = BTreeSet::new();
    for c in &manifest.controllers {
        needed_reads.insert(format!("reads {}", c.primary));
        needed_reads.extend(c.watches.iter().map(|w| format!("reads {}", w.gvk)));
        needed_reads.extend(c.owns.iter().map(|k| format!("reads {k}")));
        needed_writes.extend(c.owns.iter().map(|k| format!("writes {k}")));
    }
    let new_asks: BTreeSet<String> = match predecessor {
        Some(p) => Capabilities::new(p, &Grants::default())
            .withheld(manifest)
            .into_iter()
            .collect(),
        None => BTreeSet::new(),
    };
    let mut out = Narrowing::default();
    for ask in granted.withheld(manifest) {
        let needed = needed_reads.contains(&ask) || needed_writes.contains(&ask);
        if needed || new_asks.contains(&ask) {
            out.refusing.push(ask);
        } else {
            out.narrowed.push(ask);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use odh_plugin_runtime::wire::ControllerSpec;

    fn gvk(kind: &str) -> Gvk {
        Gvk::new("", "v1", kind)
    }

    fn manifest(reads: &[&str], writes: &[&str], hosts: &[&str]) -> Manifest {
        Manifest {
            name: "vendor".into(),
            version: "1.0.0".into(),
            description: String::new(),
            controllers: vec![ControllerSpec {
                name: "vendor".into(),
                primary: gvk("ConfigMap"),
                primary_label_selector: None,
                owns: vec![gvk("Service")],
                watches: vec![],
                finalizer: None,
                filters: Vec::new(),
            }],
            webhooks: vec![],
            reads: reads.iter().map(|k| gvk(k)).collect(),
            writes: writes.iter().map(|k| gvk(k)).collect(),
            http_hosts: hosts.iter().map(|h| h.to_string()).collect(),
        }
    }

    #[test]
    fn a_new_plugin_gets_its_primary_and_owned_kinds_and_nothing_else_without_a_grant() {
        let within = manifest(&["ConfigMap", "Service"], &["Service"], &[]);
        let base = baseline(None, &within);
        assert!(beyond_baseline(&within, &Grants::default(), &base).is_empty());
        let wider = manifest(
            &["ConfigMap", "Service", "Secret"],
            &["Service", "Pod"],
            &["*"],
        );
        assert_eq!(
            beyond_baseline(&wider, &Grants::default(), &base),
            ["reads Secret/v1", "writes Pod/v1", "HTTP host *"]
        );
        // An explicit grant of a kind is the admin's decision: not counted against the baseline.
        let reads_granted = Grants {
            reads: Some([gvk("Secret")].into()),
            ..Default::default()
        };
        assert_eq!(
            beyond_baseline(&wider, &reads_granted, &base),
            ["writes Pod/v1", "HTTP host *"]
        );
        // What the plugin then holds beyond the baseline, granted or as declared.
        let granted = Capabilities::new(&wider, &reads_granted);
        assert_eq!(
            widened(&granted, &base),
            ["reads Secret/v1", "writes Pod/v1", "HTTP host *"]
        );
    }

    #[test]
    fn a_sensitive_owned_kind_needs_an_explicit_grant() {
        let mut m = manifest(&["ConfigMap", "Secret"], &["Secret", "Service"], &[]);
        m.controllers[0].owns.push(gvk("Secret"));
        m.controllers[0]
            .owns
            .push(Gvk::new("rbac.authorization.k8s.io", "v1", "RoleBinding"));
        m.writes
            .push(Gvk::new("rbac.authorization.k8s.io", "v1", "RoleBinding"));
        let base = baseline(None, &m);
        assert!(!base.writes.contains(&gvk("Secret")) && !base.reads.contains(&gvk("Secret")));
        assert!(
            base.writes.contains(&gvk("Service")),
            "other owned kinds stay"
        );
        assert_eq!(
            beyond_baseline(&m, &Grants::default(), &base),
            [
                "reads Secret/v1",
                "writes Secret/v1",
                "writes RoleBinding.rbac.authorization.k8s.io/v1"
            ]
        );
        let granted = Grants {
            reads: Some([gvk("ConfigMap"), gvk("Secret")].into()),
            writes: Some(
                [
                    gvk("Secret"),
                    gvk("Service"),
                    Gvk::new("rbac.authorization.k8s.io", "v1", "RoleBinding"),
                ]
                .into(),
            ),
            ..Default::default()
        };
        assert!(beyond_baseline(&m, &granted, &base).is_empty());
        // A sensitive primary is not read without a grant either.
        let mut pods = manifest(&["Pod"], &[], &[]);
        pods.controllers[0].primary = gvk("Pod");
        assert!(!baseline(None, &pods).reads.contains(&gvk("Pod")));
    }

    #[test]
    fn host_patterns_are_compared_by_coverage() {
        let base = Capabilities {
            http_hosts: ["*.example.com".to_string()].into(),
            ..Default::default()
        };
        let m = manifest(
            &[],
            &[],
            &["api.example.com", "*.example.com", "example.org"],
        );
        assert_eq!(
            beyond_baseline(&m, &Grants::default(), &base),
            ["HTTP host example.org"]
        );
    }

    #[test]
    fn a_candidate_asking_past_pinned_grants_is_refused_and_an_old_ask_narrowed() {
        let old = manifest(&["ConfigMap", "Service"], &["Service"], &["*"]);
        let pinned = Grants {
            reads: Some([gvk("ConfigMap"), gvk("Service")].into()),
            writes: Some([gvk("Service")].into()),
            http_hosts: Some(["api.vendor.example".to_string()].into()),
            ..Default::default()
        };
        // The admin cut the declared `*` to one host: the version loads without it.
        let same = narrowing(&old, &Capabilities::new(&old, &pinned), Some(&old));
        assert_eq!(same.narrowed, ["HTTP host *"]);
        assert!(same.refusing.is_empty());
        // A later version asks for Secrets: the pinned grant withholds them, so it is refused.
        let grown = manifest(&["ConfigMap", "Service", "Secret"], &["Service"], &["*"]);
        let next = narrowing(&grown, &Capabilities::new(&grown, &pinned), Some(&old));
        assert_eq!(next.refusing, ["reads Secret/v1"]);
        assert_eq!(next.narrowed, ["HTTP host *"]);
        // A new plugin has nothing to compare with: narrowed, unless it cannot work.
        let first = narrowing(&grown, &Capabilities::new(&grown, &pinned), None);
        assert!(first.refusing.is_empty());
        assert_eq!(first.narrowed, ["reads Secret/v1", "HTTP host *"]);
        let no_owned_writes = Grants {
            writes: Some(BTreeSet::new()),
            ..pinned.clone()
        };
        let broken = narrowing(&old, &Capabilities::new(&old, &no_owned_writes), None);
        assert_eq!(broken.refusing, ["writes Service/v1"]);
    }
}
