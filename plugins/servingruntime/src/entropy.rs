//! Where the guest's keys come from: the host's `keys` import (docs/decisions.md, "Keys are made
//! by the host"), which generates RSA-4096 keys and signs natively, and WASI random for serial
//! numbers. Both need the `secureRandom` grant; the host refuses `keys` without it (and serves
//! WASI random as a fixed pattern), so no key is ever made from a predictable source.

use odh_plugin_sdk::Error;
use odh_plugin_sdk::keys::{self, KeyAlgorithm};

use crate::certs::{KeySource, NewKey};

/// What a reconcile that needs a key says when the grant is missing.
pub const NOT_GRANTED: &str = "Ray TLS keys need real randomness: grant the servingruntime plugin secureRandom (plugins ConfigMap grants.secureRandom: true)";

/// Keys and signatures from the host. A key is asked for before any random number, so a
/// plugin without the grant is refused before it could read the fixed pattern.
#[derive(Default)]
pub struct SystemKeys;

fn host_error(e: Error) -> String {
    match e {
        Error::Denied(m) => format!("{NOT_GRANTED} ({m})"),
        other => other.to_string(),
    }
}

impl KeySource for SystemKeys {
    fn key(&mut self) -> Result<NewKey, String> {
        let pair = keys::generate(KeyAlgorithm::Rsa4096).map_err(host_error)?;
        Ok(NewKey {
            pkcs8_pem: pair.private_key_pem,
            spki_der: pair.public_key_der,
        })
    }

    fn sign(&mut self, key_pkcs8_pem: &str, data: &[u8]) -> Result<Vec<u8>, String> {
        keys::sign(key_pkcs8_pem, data).map_err(host_error)
    }

    fn random_u64(&mut self) -> Result<u64, String> {
        getrandom::u64().map_err(|e| format!("reading random bytes for a serial number: {e}"))
    }
}

/// A failure to make a key or certificate as the reconcile reports it: a missing grant is a
/// policy refusal (no fast retry), anything else is retried.
pub fn key_error(context: &str, message: String) -> Error {
    if message.contains(NOT_GRANTED) {
        Error::denied(message)
    } else {
        Error::transient(format!("{context}: {message}"))
    }
}
