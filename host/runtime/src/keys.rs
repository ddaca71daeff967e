//! The `keys` import (WIT 0.1.3): key pairs and signatures computed natively for plugins
//! (docs/decisions.md, "Keys are made by the host"). An RSA-4096 key costs a fraction of a second
//! here and seconds inside a component.
//!
//! Stateless: the private key goes to the plugin, which stores it; `sign` takes it back. Nothing
//! here knows about certificates.

use aws_lc_rs::encoding::{AsDer, PublicKeyX509Der};
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::{KeyPair as RsaKeyPair, KeySize};
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair as _, RSA_PKCS1_SHA256,
};
use base64::Engine as _;

/// The algorithms a plugin may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    Rsa2048,
    Rsa4096,
    EcdsaP256,
}

/// A new key pair: the private key as PKCS#8 PEM, the public key as a DER SubjectPublicKeyInfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    pub private_key_pem: String,
    pub public_key_der: Vec<u8>,
}

/// Why a call failed: the plugin's input (`Invalid`) or the crypto library (`Failed`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Failed(String),
}

const PKCS8_LABEL: &str = "PRIVATE KEY";

pub fn generate(algorithm: Algorithm) -> Result<Generated, KeyError> {
    let failed = |what: &str| KeyError::Failed(format!("generating a {what} key failed"));
    let (pkcs8, spki) = match algorithm {
        Algorithm::Rsa2048 | Algorithm::Rsa4096 => {
            let (size, name) = if algorithm == Algorithm::Rsa2048 {
                (KeySize::Rsa2048, "RSA-2048")
            } else {
                (KeySize::Rsa4096, "RSA-4096")
            };
            let pair = RsaKeyPair::generate(size).map_err(|_| failed(name))?;
            let pkcs8 = pair.as_der().map_err(|_| failed(name))?.as_ref().to_vec();
            let spki: PublicKeyX509Der<'_> =
                pair.public_key().as_der().map_err(|_| failed(name))?;
            (pkcs8, spki.as_ref().to_vec())
        }
        Algorithm::EcdsaP256 => {
            let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_ASN1_SIGNING)
                .map_err(|_| failed("P-256"))?;
            let pkcs8 = pair.to_pkcs8v1().map_err(|_| failed("P-256"))?;
            let spki: PublicKeyX509Der<'_> =
                pair.public_key().as_der().map_err(|_| failed("P-256"))?;
            (pkcs8.as_ref().to_vec(), spki.as_ref().to_vec())
        }
    };
    Ok(Generated {
        private_key_pem: pem_encode(PKCS8_LABEL, &pkcs8),
        public_key_der: spki,
    })
}

/// Signs `data` with a PKCS#8 PEM key: PKCS #1 v1.5 SHA-256 for RSA, ECDSA SHA-256 (DER) for
/// P-256.
pub fn sign(private_key_pem: &str, data: &[u8]) -> Result<Vec<u8>, KeyError> {
    let der = pem_decode(private_key_pem, PKCS8_LABEL)?;
    let rng = SystemRandom::new();
    if let Ok(rsa) = RsaKeyPair::from_pkcs8(&der) {
        let mut signature = vec![0; rsa.public_modulus_len()];
        rsa.sign(&RSA_PKCS1_SHA256, &rng, data, &mut signature)
            .map_err(|_| KeyError::Failed("signing with the RSA key failed".into()))?;
        return Ok(signature);
    }
    match EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &der) {
        Ok(ec) => ec
            .sign(&rng, data)
            .map(|s| s.as_ref().to_vec())
            .map_err(|_| KeyError::Failed("signing with the P-256 key failed".into())),
        Err(_) => Err(KeyError::Invalid(
            "the private key is neither an RSA nor a P-256 PKCS#8 key".into(),
        )),
    }
}

fn pem_encode(label: &str, der: &[u8]) -> String {
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// The DER of a single PEM block with this label (surrounding text and CRLF tolerated).
fn pem_decode(pem: &str, label: &str) -> Result<Vec<u8>, KeyError> {
    let (begin, end) = (
        format!("-----BEGIN {label}-----"),
        format!("-----END {label}-----"),
    );
    let invalid =
        |why: &str| KeyError::Invalid(format!("the private key is not a PKCS#8 PEM ({why})"));
    let start = pem
        .find(&begin)
        .ok_or_else(|| invalid("no BEGIN PRIVATE KEY line"))?
        + begin.len();
    let stop = pem[start..]
        .find(&end)
        .ok_or_else(|| invalid("no END PRIVATE KEY line"))?
        + start;
    let body: String = pem[start..stop]
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .map_err(|_| invalid("its body is not base64"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_lc_rs::signature::{
        ECDSA_P256_SHA256_ASN1, RSA_PKCS1_2048_8192_SHA256, UnparsedPublicKey,
    };

    /// aws-lc-rs reads a SubjectPublicKeyInfo for both kinds, as a certificate verifier would.
    fn spki_verify(
        spki: &[u8],
        alg: &'static dyn aws_lc_rs::signature::VerificationAlgorithm,
        data: &[u8],
        sig: &[u8],
    ) -> bool {
        UnparsedPublicKey::new(alg, spki).verify(data, sig).is_ok()
    }

    #[test]
    fn an_rsa_key_signs_what_its_public_key_verifies() {
        let pair = generate(Algorithm::Rsa2048).expect("a key");
        assert!(
            pair.private_key_pem
                .starts_with("-----BEGIN PRIVATE KEY-----\n")
        );
        let signature = sign(&pair.private_key_pem, b"tbs").expect("a signature");
        assert_eq!(signature.len(), 256);
        let public =
            RsaKeyPair::from_pkcs8(&pem_decode(&pair.private_key_pem, PKCS8_LABEL).unwrap())
                .unwrap();
        let public_der: PublicKeyX509Der<'_> = public.public_key().as_der().unwrap();
        assert_eq!(
            public_der.as_ref(),
            pair.public_key_der,
            "the SPKI is the key's"
        );
        assert!(spki_verify(
            &pair.public_key_der,
            &RSA_PKCS1_2048_8192_SHA256,
            b"tbs",
            &signature
        ));
        assert!(!spki_verify(
            &pair.public_key_der,
            &RSA_PKCS1_2048_8192_SHA256,
            b"other",
            &signature
        ));
        let again = generate(Algorithm::Rsa2048).unwrap();
        assert_ne!(
            again.private_key_pem, pair.private_key_pem,
            "keys are random"
        );
    }

    #[test]
    fn a_p256_key_signs_and_a_bad_key_is_invalid() {
        let pair = generate(Algorithm::EcdsaP256).expect("a key");
        let signature = sign(&pair.private_key_pem, b"tbs").expect("a signature");
        assert!(spki_verify(
            &pair.public_key_der,
            &ECDSA_P256_SHA256_ASN1,
            b"tbs",
            &signature
        ));
        assert!(matches!(sign("not a key", b"x"), Err(KeyError::Invalid(_))));
        let garbage = pem_encode(PKCS8_LABEL, b"\x30\x03\x02\x01\x00");
        assert!(matches!(sign(&garbage, b"x"), Err(KeyError::Invalid(_))));
        let crlf = pair.private_key_pem.replace('\n', "\r\n");
        assert!(sign(&crlf, b"tbs").is_ok(), "CRLF line ends are tolerated");
    }
}
