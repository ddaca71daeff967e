//! Signature checks and signing (cosign-compatible plugin signatures): ring's, or the FIPS
//! module's in the FIPS build. aws-lc-rs keeps ring's interface, so callers name the types here
//! and work with both.

pub use crate::backend::error::KeyRejected;
pub use crate::backend::rand::SystemRandom;
pub use crate::backend::signature::{
    ECDSA_P256_SHA256_ASN1, ECDSA_P256_SHA256_ASN1_SIGNING, ED25519, EcdsaKeyPair,
    EcdsaSigningAlgorithm, Ed25519KeyPair, KeyPair, UnparsedPublicKey, VerificationAlgorithm,
};

/// An ECDSA key pair from PKCS#8 DER (ring wants a random source here, aws-lc-rs does not).
pub fn ecdsa_from_pkcs8(
    algorithm: &'static EcdsaSigningAlgorithm,
    pkcs8: &[u8],
) -> Result<EcdsaKeyPair, KeyRejected> {
    #[cfg(feature = "fips")]
    {
        EcdsaKeyPair::from_pkcs8(algorithm, pkcs8)
    }
    #[cfg(not(feature = "fips"))]
    {
        EcdsaKeyPair::from_pkcs8(algorithm, pkcs8, &SystemRandom::new())
    }
}

/// Whether `signature` over `message` verifies with `public_key` (raw: an uncompressed point for
/// ECDSA, 32 bytes for Ed25519) under `algorithm`.
pub fn verifies(
    algorithm: &'static dyn VerificationAlgorithm,
    public_key: &[u8],
    message: &[u8],
    signature: &[u8],
) -> bool {
    UnparsedPublicKey::new(algorithm, public_key)
        .verify(message, signature)
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p256_signs_and_verifies_and_rejects_a_changed_message() {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).unwrap();
        let pair = ecdsa_from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref()).unwrap();
        let sig = pair.sign(&rng, b"payload").unwrap();
        let public = pair.public_key().as_ref();
        assert!(verifies(
            &ECDSA_P256_SHA256_ASN1,
            public,
            b"payload",
            sig.as_ref()
        ));
        assert!(!verifies(
            &ECDSA_P256_SHA256_ASN1,
            public,
            b"payload!",
            sig.as_ref()
        ));
    }
}
