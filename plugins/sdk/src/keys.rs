//! Key pairs and signatures made by the host (the WIT `keys` import, 0.1.3), natively: an
//! RSA-4096 key costs a fraction of a second there and seconds in a component. Both need the
//! admin's `secureRandom` grant; without it they fail with [`Error::Denied`] naming it.
//!
//! The private key comes back as PKCS#8 PEM and the public key as a DER SubjectPublicKeyInfo,
//! ready for a certificate; [`sign`] makes a certificate's signature over its `tbsCertificate`
//! (`sha256WithRSAEncryption` for an RSA key, `ecdsa-with-SHA256` for a P-256 key):
//!
//! ```no_run
//! use odh_plugin_sdk::keys::{self, KeyAlgorithm};
//!
//! # fn f(tbs_certificate_der: &[u8]) -> Result<(), odh_plugin_sdk::Error> {
//! let pair = keys::generate(KeyAlgorithm::Rsa4096)?;
//! let signature = keys::sign(&pair.private_key_pem, tbs_certificate_der)?;
//! # Ok(()) }
//! ```

use crate::Error;
pub use crate::bindings::odh::controller::keys::{KeyAlgorithm, KeyPair};

/// A new key pair from the host's system random source.
pub fn generate(algorithm: KeyAlgorithm) -> Result<KeyPair, Error> {
    #[cfg(target_arch = "wasm32")]
    return crate::bindings::odh::controller::keys::generate(algorithm);
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = algorithm;
        Err(outside_the_host())
    }
}

/// The signature of `data` by a PKCS#8 PEM private key ([`Error::Invalid`] for a key that does
/// not parse).
pub fn sign(private_key_pem: &str, data: &[u8]) -> Result<Vec<u8>, Error> {
    #[cfg(target_arch = "wasm32")]
    return crate::bindings::odh::controller::keys::sign(private_key_pem, data);
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = (private_key_pem, data);
        Err(outside_the_host())
    }
}

/// Off `wasm32` there is no host: native tests pass their own key source to the code under test.
#[cfg(not(target_arch = "wasm32"))]
fn outside_the_host() -> Error {
    Error::Transient("keys are only available inside the plugin host".into())
}
