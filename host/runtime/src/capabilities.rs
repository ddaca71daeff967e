//! What a plugin may do: the intersection of what it declares and what the admin grants.
//! Deny by default: anything not in both is refused by the host, whatever the plugin tries.
//!
//! This is the one grants rule: a grant *narrows* a manifest (kinds by equality, HTTP hosts by
//! pattern coverage) and never widens it. A candidate declaring more than its grant is loaded
//! with the narrower capabilities, and [`Capabilities::withheld`] says what it was denied.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::gvk::Gvk;
use crate::wire::Manifest;

/// An admin's grant for one plugin. `None` means "whatever the plugin declares" (the default
/// for built-in plugins, which ship with the host); `Some` narrows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Grants {
    #[serde(default)]
    pub reads: Option<BTreeSet<Gvk>>,
    #[serde(default)]
    pub writes: Option<BTreeSet<Gvk>>,
    #[serde(default)]
    pub http_hosts: Option<BTreeSet<String>>,
    /// Real randomness from the OS for `wasi:random/random`; otherwise it is deterministic.
    #[serde(default)]
    pub secure_random: bool,
    /// Namespaces whose Services may receive the controller's ServiceAccount token when the
    /// plugin asks for it ([`crate::identity`]). Granted only: a manifest cannot ask for more.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub service_account_namespaces: BTreeSet<String>,
    /// Kinds whose objects the plugin may change whoever manages them (`writes`
    /// `delete-unmanaged` and `patch-metadata`), among those it may write. Granted only.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub foreign_writes: BTreeSet<Gvk>,
}

impl Grants {
    /// Grants nothing at all.
    pub fn none() -> Self {
        Self {
            reads: Some(BTreeSet::new()),
            writes: Some(BTreeSet::new()),
            http_hosts: Some(BTreeSet::new()),
            secure_random: false,
            service_account_namespaces: BTreeSet::new(),
            foreign_writes: BTreeSet::new(),
        }
    }
}

/// The effective capabilities of one loaded plugin.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capabilities {
    pub reads: BTreeSet<Gvk>,
    pub writes: BTreeSet<Gvk>,
    pub http_hosts: BTreeSet<String>,
    pub secure_random: bool,
    pub service_account_namespaces: BTreeSet<String>,
    pub foreign_writes: BTreeSet<Gvk>,
}

fn narrow<T: Ord + Clone>(declared: &[T], granted: &Option<BTreeSet<T>>) -> BTreeSet<T> {
    declared
        .iter()
        .filter(|d| granted.as_ref().is_none_or(|g| g.contains(*d)))
        .cloned()
        .collect()
}

/// Host patterns narrow by coverage, not equality: a declared `*` admits a granted
/// `*.svc.cluster.local`, a declared `host` a granted `host:8443`.
fn narrow_hosts(declared: &[String], granted: &Option<BTreeSet<String>>) -> BTreeSet<String> {
    match granted {
        None => declared.iter().cloned().collect(),
        Some(granted) => granted
            .iter()
            .filter(|g| declared.iter().any(|d| covers(d, g)))
            .cloned()
            .collect(),
    }
}

/// Whether every authority the pattern `inner` admits is admitted by `outer`.
fn covers(outer: &str, inner: &str) -> bool {
    let (outer, inner) = (outer.to_ascii_lowercase(), inner.to_ascii_lowercase());
    if outer == "*" || outer == inner {
        return true;
    }
    if inner == "*" {
        return false;
    }
    let inner_host = host_of(&inner).trim_start_matches("*.");
    match outer.strip_prefix("*.") {
        Some(suffix) => inner_host.ends_with(&format!(".{suffix}")),
        None => !has_port(&outer) && !inner.starts_with("*.") && host_of(&inner) == outer,
    }
}

impl Capabilities {
    pub fn new(manifest: &Manifest, grants: &Grants) -> Self {
        let writes = narrow(&manifest.writes, &grants.writes);
        Self {
            reads: narrow(&manifest.reads, &grants.reads),
            foreign_writes: grants
                .foreign_writes
                .iter()
                .filter(|k| writes.contains(*k))
                .cloned()
                .collect(),
            writes,
            http_hosts: narrow_hosts(&manifest.http_hosts, &grants.http_hosts),
            secure_random: grants.secure_random,
            service_account_namespaces: grants.service_account_namespaces.clone(),
        }
    }

    /// Whether the controller's identity may go to `authority`: a Service, by its cluster DNS
    /// name, of a namespace these capabilities name; else why not, for the plugin and the log.
    pub fn may_send_identity_to(&self, authority: &str) -> Result<(), String> {
        let granted = || {
            self.service_account_namespaces
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        };
        match crate::identity::service_of(authority) {
            Some((_, namespace)) if self.service_account_namespaces.contains(&namespace) => Ok(()),
            Some((service, namespace)) => Err(format!(
                "the controller's identity was not sent to the Service {service} of namespace {namespace}: the plugin may send it only to Services of the namespaces it is granted (grants.serviceAccountNamespaces: [{}])",
                granted()
            )),
            None => Err(format!(
                "the controller's identity was not sent to {authority}: only a Service of the cluster, named <service>.<namespace>.svc, in a namespace the plugin is granted (grants.serviceAccountNamespaces: [{}]) receives it; an address taken from an object does not",
                granted()
            )),
        }
    }

    /// What `manifest` declares that these capabilities do not allow, for messages
    /// (`reads Secret`, `HTTP host *`).
    pub fn withheld(&self, manifest: &Manifest) -> Vec<String> {
        let kinds = |verb: &str, declared: &[Gvk], allowed: &BTreeSet<Gvk>| {
            declared
                .iter()
                .filter(|k| !allowed.contains(*k))
                .map(|k| format!("{verb} {k}"))
                .collect::<Vec<_>>()
        };
        let mut out = kinds("reads", &manifest.reads, &self.reads);
        out.extend(kinds("writes", &manifest.writes, &self.writes));
        out.extend(
            manifest
                .http_hosts
                .iter()
                .filter(|h| !self.http_hosts.contains(*h))
                .map(|h| format!("HTTP host {h}")),
        );
        out
    }

    /// Whether the host pattern `pattern` admits nothing these capabilities do not.
    pub fn covers_host_pattern(&self, pattern: &str) -> bool {
        self.http_hosts.iter().any(|h| covers(h, pattern))
    }

    pub fn may_read(&self, gvk: &Gvk) -> bool {
        self.reads.contains(gvk)
    }

    pub fn may_write(&self, gvk: &Gvk) -> bool {
        self.writes.contains(gvk)
    }

    /// Whether the plugin may change objects of `gvk` it does not manage.
    pub fn may_write_foreign(&self, gvk: &Gvk) -> bool {
        self.foreign_writes.contains(gvk)
    }

    /// Whether a grant names `host` itself (with or without a port), not through a wildcard:
    /// what a request needs to reach a reserved address such as loopback.
    pub fn grants_exactly(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        self.http_hosts.iter().any(|granted| {
            host_of(&granted.to_ascii_lowercase())
                .trim_start_matches('[')
                .trim_end_matches(']')
                == host
        })
    }

    /// Whether an outgoing request to `authority` (`host` or `host:port`) is allowed. A granted
    /// `host` allows any port on it; a granted `host:port` allows that port only; `*.suffix`
    /// allows every host under `suffix` and `*` any host (for services whose address is only
    /// known at run time, such as a Model Registry found in the cluster).
    pub fn may_connect(&self, authority: &str) -> bool {
        if authority.contains('@') {
            // Grants name hosts: a `user@host` authority is never granted (its user part could
            // read as a granted name to one parser and not to another).
            return false;
        }
        let authority = authority.to_ascii_lowercase();
        let host = host_of(&authority);
        self.http_hosts.iter().any(|granted| {
            let granted = granted.to_ascii_lowercase();
            if granted == "*" {
                true
            } else if let Some(suffix) = granted.strip_prefix("*.") {
                host.len() > suffix.len() + 1
                    && host.ends_with(suffix)
                    && host.as_bytes()[host.len() - suffix.len() - 1] == b'.'
            } else if has_port(&granted) {
                granted == authority
            } else {
                granted == host
            }
        })
    }
}

fn has_port(authority: &str) -> bool {
    match authority.rsplit_once(':') {
        // `[::1]` has colons but no port; `[::1]:80` and `h:80` have one.
        Some((h, p)) => {
            !p.is_empty()
                && p.chars().all(|c| c.is_ascii_digit())
                && (!h.contains(':') || h.ends_with(']'))
        }
        None => false,
    }
}

/// The host of `host[:port]` (an authority without a valid port is all host).
pub(crate) fn host_of(authority: &str) -> &str {
    if has_port(authority) {
        authority.rsplit_once(':').map_or(authority, |(h, _)| h)
    } else {
        authority
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(reads: &[Gvk], hosts: &[&str]) -> Manifest {
        Manifest {
            name: "p".into(),
            version: "0.1.0".into(),
            description: String::new(),
            controllers: vec![],
            webhooks: vec![],
            reads: reads.to_vec(),
            writes: vec![],
            http_hosts: hosts.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn grants_narrow_declarations_and_never_widen_them() {
        let cm = Gvk::new("", "v1", "ConfigMap");
        let secret = Gvk::new("", "v1", "Secret");
        let m = manifest(std::slice::from_ref(&cm), &[]);
        let everything_granted = Grants {
            reads: Some([cm.clone(), secret.clone()].into()),
            ..Default::default()
        };
        let caps = Capabilities::new(&m, &everything_granted);
        assert!(caps.may_read(&cm));
        assert!(
            !caps.may_read(&secret),
            "undeclared kinds stay denied even when granted"
        );
        assert!(!Capabilities::new(&m, &Grants::none()).may_read(&cm));
        assert!(Capabilities::new(&m, &Grants::default()).may_read(&cm));
    }

    #[test]
    fn the_identity_goes_only_to_services_of_granted_namespaces() {
        let caps = Capabilities::new(
            &manifest(&[], &["*"]),
            &Grants {
                service_account_namespaces: ["registries".to_string()].into(),
                ..Grants::default()
            },
        );
        assert_eq!(
            caps.may_send_identity_to("mr.registries.svc.cluster.local:8080"),
            Ok(())
        );
        assert_eq!(caps.may_send_identity_to("mr.registries.svc"), Ok(()));
        let other = caps
            .may_send_identity_to("mr.tenant.svc.cluster.local:8080")
            .unwrap_err();
        assert!(other.contains("Service mr of namespace tenant"), "{other}");
        assert!(other.contains("[registries]"), "{other}");
        let external = caps
            .may_send_identity_to("mr.tenant.example:443")
            .unwrap_err();
        assert!(external.contains("mr.tenant.example:443"), "{external}");
        let ungranted = Capabilities::new(&manifest(&[], &["*"]), &Grants::default());
        assert!(ungranted.may_send_identity_to("mr.registries.svc").is_err());
    }

    #[test]
    fn an_authority_with_credentials_is_never_granted() {
        let caps = Capabilities {
            http_hosts: ["*".to_string(), "api.example.com".to_string()].into(),
            ..Default::default()
        };
        assert!(caps.may_connect("api.example.com"));
        assert!(!caps.may_connect("api.example.com@127.0.0.1:8080"));
        assert!(!caps.may_connect("user:pw@api.example.com"));
    }

    #[test]
    fn http_hosts_match_with_and_without_ports() {
        let m = manifest(&[], &["api.ngc.nvidia.com", "127.0.0.1:8443", "[::1]"]);
        let caps = Capabilities::new(&m, &Grants::default());
        assert!(caps.may_connect("api.ngc.nvidia.com"));
        assert!(caps.may_connect("API.ngc.nvidia.com:443"));
        assert!(caps.may_connect("127.0.0.1:8443"));
        assert!(!caps.may_connect("127.0.0.1:8444"));
        assert!(!caps.may_connect("127.0.0.1"));
        assert!(caps.may_connect("[::1]:9000"));
        assert!(!caps.may_connect("evil.example.com"));
        assert!(!caps.may_connect("api.ngc.nvidia.com.evil.example.com"));
    }

    #[test]
    fn wildcard_grants_match_hosts_by_suffix_or_any() {
        let caps = Capabilities::new(
            &manifest(&[], &["*.svc.cluster.local", "exact.example"]),
            &Grants::default(),
        );
        assert!(caps.may_connect("mr.ns.svc.cluster.local:8080"));
        assert!(!caps.may_connect("svc.cluster.local"));
        assert!(!caps.may_connect("evilsvc.cluster.local"));
        assert!(caps.may_connect("exact.example"));
        let any = Capabilities::new(&manifest(&[], &["*"]), &Grants::default());
        assert!(any.may_connect("anything.example:443"));
        let narrowed = Capabilities::new(
            &manifest(&[], &["*"]),
            &Grants {
                http_hosts: Some(["mr.example".to_string()].into()),
                ..Grants::default()
            },
        );
        assert!(
            narrowed.may_connect("mr.example"),
            "a declared * admits a granted host"
        );
        let in_cluster = Capabilities::new(
            &manifest(&[], &["*"]),
            &Grants {
                http_hosts: Some(["*.svc.cluster.local".to_string()].into()),
                ..Grants::default()
            },
        );
        assert!(in_cluster.may_connect("mr.ns.svc.cluster.local:8080"));
        assert!(!in_cluster.may_connect("mr.example"));
        let widened = Capabilities::new(
            &manifest(&[], &["*.svc.cluster.local"]),
            &Grants {
                http_hosts: Some(["*".to_string(), "evil.example".to_string()].into()),
                ..Grants::default()
            },
        );
        assert!(
            widened.http_hosts.is_empty(),
            "a grant never widens: {:?}",
            widened.http_hosts
        );
    }

    #[test]
    fn withheld_names_what_a_grant_took_away() {
        let cm = Gvk::new("", "v1", "ConfigMap");
        let secret = Gvk::new("", "v1", "Secret");
        let m = manifest(&[cm.clone(), secret.clone()], &["*"]);
        let grants = Grants {
            reads: Some([cm].into()),
            http_hosts: Some(["*.svc.cluster.local".to_string()].into()),
            ..Default::default()
        };
        let caps = Capabilities::new(&m, &grants);
        assert_eq!(caps.withheld(&m), ["reads Secret/v1", "HTTP host *"]);
        assert!(
            Capabilities::new(&m, &Grants::default())
                .withheld(&m)
                .is_empty()
        );
    }

    #[test]
    fn host_patterns_cover_narrower_ones() {
        assert!(covers("*", "a.b"));
        assert!(covers("*.b", "a.b:80"));
        assert!(covers("*.b", "*.a.b"));
        assert!(!covers("*.a.b", "*.b"));
        assert!(covers("a.b", "a.b:8443"));
        assert!(!covers("a.b:8443", "a.b"));
        assert!(!covers("a.b", "*"));
    }
}
