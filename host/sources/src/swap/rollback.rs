//! No silent rollback: a registry (or whoever can push to it) could move a tag back to an older
//! version, signed and all. A tag that resolves to a version this plugin served from that very
//! source before, and then left for another, is refused; the admin rolls back on purpose by
//! pinning the version (`@sha256:…` in the source, or the entry's `sha256`). The record lives
//! as long as the process (docs/security.md).

use super::*;

/// How many versions per plugin and source are remembered.
const HISTORY: usize = 32;

impl Registry {
    /// Refuses `digest` for `source` of plugin `name` when it is a version served before from
    /// that source and left since, unless the entry pins what it wants.
    pub(super) fn refuse_rollback(
        &self,
        name: &str,
        source: &str,
        sha256_pinned: bool,
        digest: &str,
    ) -> Result<(), String> {
        let pinned =
            sha256_pinned || crate::oci::Reference::parse(source).is_ok_and(|r| r.digest.is_some());
        if pinned {
            return Ok(());
        }
        let served = self.served.lock().expect("served lock");
        let Some(history) = served.get(&(name.to_string(), source.to_string())) else {
            return Ok(());
        };
        match (history.iter().position(|d| d == digest), history.last()) {
            (Some(at), Some(latest)) if at + 1 < history.len() => Err(format!(
                "{source} now resolves to {digest}, a version this plugin served from it before it moved on to {latest}: a tag moved back is refused as a rollback; to roll back on purpose, pin the version ({source}@{digest} or the entry's sha256)"
            )),
            _ => Ok(()),
        }
    }

    /// Remembers that `digest` serves for `source` of plugin `name` (what a tag resolved to: a
    /// pinned version is the admin's choice, not the registry's, and is not recorded).
    pub(super) fn record_served(&self, name: &str, source: &str, digest: &str) {
        if crate::oci::Reference::parse(source).is_ok_and(|r| r.digest.is_some()) {
            return;
        }
        let mut served = self.served.lock().expect("served lock");
        let history = served
            .entry((name.to_string(), source.to_string()))
            .or_default();
        if history.last().map(String::as_str) != Some(digest) {
            history.retain(|d| d != digest);
            history.push(digest.to_string());
            if history.len() > HISTORY {
                history.remove(0);
            }
        }
    }
}
