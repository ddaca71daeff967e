//! The random source of key generation: WASI random, refused when the host serves it
//! deterministically (a plugin without the `secureRandom` grant gets a fixed byte pattern,
//! which would make every key the same, and predictable).

use getrandom::SysRng;
use odh_plugin_sdk::Error;
use rsa::PrivateKey;

use crate::certs::{Generated, KeySource};

/// What a reconcile that needs a key says when the grant is missing.
pub const NOT_GRANTED: &str = "Ray TLS keys need real randomness: grant the servingruntime plugin secureRandom (plugins ConfigMap grants.secureRandom: true)";

/// The system random source, once it has shown it is not a fixed pattern.
pub fn secure_rng() -> Result<SysRng, Error> {
    let mut probe = [0u8; 64];
    getrandom::fill(&mut probe)
        .map_err(|e| Error::transient(format!("reading random bytes: {e}")))?;
    if looks_fixed(&probe) {
        return Err(Error::denied(NOT_GRANTED));
    }
    Ok(SysRng)
}

/// Keys from the system random source, which is checked on first use only: a reconcile that
/// needs no key works without the grant.
#[derive(Default)]
pub struct SystemKeys(Option<Generated<SysRng>>);

impl SystemKeys {
    fn source(&mut self) -> Result<&mut Generated<SysRng>, String> {
        if self.0.is_none() {
            self.0 = Some(Generated(
                secure_rng().map_err(|e| e.message().to_string())?,
            ));
        }
        Ok(self.0.as_mut().expect("set above"))
    }
}

impl KeySource for SystemKeys {
    fn key(&mut self) -> Result<PrivateKey, String> {
        self.source()?.key()
    }

    fn random_u64(&mut self) -> Result<u64, String> {
        self.source()?.random_u64()
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

/// A deterministic WASI random source repeats a short seed; 64 real random bytes never have
/// a period of 32 or less (probability 2^-256).
fn looks_fixed(bytes: &[u8]) -> bool {
    (1..=bytes.len() / 2).any(|period| bytes.iter().skip(period).zip(bytes).all(|(a, b)| a == b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeating_pattern_is_refused_and_real_randomness_is_not() {
        assert!(looks_fixed(&[0x5a; 64]));
        let cycle: Vec<u8> = (0..64).map(|i| (i % 7) as u8).collect();
        assert!(looks_fixed(&cycle));
        assert!(secure_rng().is_ok(), "the OS random source passes natively");
    }
}
