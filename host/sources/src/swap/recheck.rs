//! Trust that ends: a serving version admitted by its signature is verified again, offline
//! (the payload and signature it was admitted with are kept), against the keys its entry
//! trusts now, at every retry tick. A key removed from the entry's key source, or from the
//! cluster admin's `--plugin-trusted-keys`, un-trusts what it signed without a restart.

use super::*;
use crate::fetch::KeysError;
use crate::oci;

impl Registry {
    /// One check of every serving signed version. One that no longer verifies stops serving
    /// (a built-in goes back to its own version, any other plugin is removed) and is reported
    /// as a rejected candidate, tried again with back-off (the key may come back). Keys that
    /// cannot be read (the API failing) change nothing.
    pub async fn recheck_signatures(&self) -> BTreeMap<String, SwapResult> {
        let Some(config) = self.last_config.lock().expect("config lock").clone() else {
            return BTreeMap::new();
        };
        let origins = self.active_origins.lock().expect("origins lock").clone();
        let mut results = BTreeMap::new();
        for (name, origin) in origins {
            let (Some(verified), Some(entry)) = (&origin.signature, config.plugins.get(&name))
            else {
                continue;
            };
            let (Some(policy), Source::Oci(text)) = (&entry.signature, &entry.source) else {
                continue;
            };
            let Ok(reference) = oci::Reference::parse(text) else {
                continue;
            };
            let pinned = &self.ceiling.trusted_keys;
            let reason =
                match fetch::trusted_keys(&self.client, &self.namespace, policy, pinned).await {
                    Ok(keys) => match oci::cosign::verify(
                        &keys,
                        &verified.payload,
                        &verified.signature,
                        &origin.digest,
                        &reference.name(),
                    ) {
                        Ok(_) => continue,
                        Err(reason) => reason,
                    },
                    Err(KeysError::Unavailable(m)) => {
                        tracing::warn!(
                            plugin = name,
                            "the signature keys could not be read, the serving version stays: {m}"
                        );
                        continue;
                    }
                    Err(KeysError::Untrusted(m)) => m,
                };
            let message = format!(
                "the serving version ({}, signed by {}) is no longer trusted: {reason}; it stopped serving",
                origin.digest, verified.signed_by
            );
            let result = self.retire(&name).await;
            self.set_active_origin(&name, None);
            self.rejected
                .lock()
                .expect("rejected lock")
                .entry(name.clone())
                .or_insert(Backoff { wait: 1, next: 2 });
            self.report_rejection(&name, entry, &Rejection::new(&message, None))
                .await;
            if let Some(result) = result {
                results.insert(name, result);
            }
        }
        results
    }
}
