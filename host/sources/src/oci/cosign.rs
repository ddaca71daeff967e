//! Cosign-compatible signatures of OCI artifacts, verified offline against public keys the
//! admin lists. The format is cosign's "simple signing" one: beside the artifact, the tag
//! `sha256-<hex>.sig` holds a manifest whose layers (media type [`SIGNATURE_MEDIA_TYPE`]) are
//! payloads naming the signed manifest digest, each with its base64 signature in the
//! annotation [`SIGNATURE_ANNOTATION`]. Keys: ECDSA P-256 (cosign's default, ASN.1 signatures
//! over SHA-256) and Ed25519, as PEM `PUBLIC KEY` (SubjectPublicKeyInfo).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use odh_crypto::signature::{self, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{PrivatePkcs8KeyDer, SubjectPublicKeyInfoDer};

pub const SIGNATURE_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
const PAYLOAD_TYPE: &str = "cosign container image signature";

/// SubjectPublicKeyInfo DER up to the key bits: id-ecPublicKey with prime256v1.
const P256_SPKI_PREFIX: &[u8] = &[
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];
/// SubjectPublicKeyInfo DER up to the key bits: id-Ed25519.
const ED25519_SPKI_PREFIX: &[u8] = &[
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

/// The tag cosign stores the signatures of `digest` (`sha256:<hex>`) under.
pub fn signature_tag(digest: &str) -> String {
    format!("{}.sig", digest.replacen(':', "-", 1))
}

/// The simple-signing payload for `digest` of `repository` (`<registry>/<repository>`).
pub fn payload(repository: &str, digest: &str) -> Vec<u8> {
    serde_json::json!({
        "critical": {
            "identity": {"docker-reference": repository},
            "image": {"docker-manifest-digest": digest},
            "type": PAYLOAD_TYPE,
        },
        "optional": null,
    })
    .to_string()
    .into_bytes()
}

/// Checks a payload names `digest` of `repository` (`<registry>/<repository>`): a signature
/// made for one repository does not vouch for the same bytes pushed to another.
pub fn check_payload(payload: &[u8], digest: &str, repository: &str) -> Result<(), String> {
    let value: serde_json::Value = serde_json::from_slice(payload)
        .map_err(|e| format!("the signed payload is not JSON: {e}"))?;
    let critical = &value["critical"];
    if critical["type"].as_str() != Some(PAYLOAD_TYPE) {
        return Err(format!(
            "the signed payload's type is {}, not {PAYLOAD_TYPE:?}",
            critical["type"]
        ));
    }
    match critical["image"]["docker-manifest-digest"].as_str() {
        Some(signed) if signed == digest => {}
        Some(signed) => return Err(format!("it signs {signed}, not {digest}")),
        None => return Err("the signed payload names no digest".into()),
    }
    match critical["identity"]["docker-reference"].as_str() {
        Some(signed) if same_repository(signed, repository) => Ok(()),
        Some(signed) => Err(format!(
            "it signs {digest} of repository {signed}, not of {repository}"
        )),
        None => Err("the signed payload names no repository".into()),
    }
}

/// Whether two `<registry>/<repository>` names are the same repository (Docker Hub has several
/// names; a tag or digest, which cosign leaves out, is ignored).
fn same_repository(a: &str, b: &str) -> bool {
    fn normalized(name: &str) -> String {
        let name = name.split('@').next().unwrap_or(name);
        let name = match name.rsplit_once(':') {
            Some((repo, tag)) if !tag.contains('/') => repo,
            _ => name,
        };
        let name = name.to_ascii_lowercase();
        for hub in ["index.docker.io/", "registry-1.docker.io/"] {
            if let Some(rest) = name.strip_prefix(hub) {
                return format!("docker.io/{rest}");
            }
        }
        name
    }
    normalized(a) == normalized(b)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Algorithm {
    P256,
    Ed25519,
}

/// A trusted public key and the name the admin gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    pub name: String,
    algorithm: Algorithm,
    /// The raw key (an uncompressed point for P-256).
    key: Vec<u8>,
    spki: Vec<u8>,
}

impl PublicKey {
    /// Every `PUBLIC KEY` block in `pem`, named `name` (with `#2`, `#3`… after the first).
    pub fn parse_all(name: &str, pem: &[u8]) -> Result<Vec<Self>, String> {
        let mut keys = Vec::new();
        for (i, spki) in SubjectPublicKeyInfoDer::pem_slice_iter(pem).enumerate() {
            let spki = spki.map_err(|e| format!("{name}: not a PEM public key: {e}"))?;
            let name = if i == 0 {
                name.to_string()
            } else {
                format!("{name}#{}", i + 1)
            };
            keys.push(Self::from_spki(name, spki.as_ref())?);
        }
        if keys.is_empty() {
            return Err(format!("{name}: no PEM PUBLIC KEY block"));
        }
        Ok(keys)
    }

    fn from_spki(name: String, spki: &[u8]) -> Result<Self, String> {
        let (algorithm, key) = if let Some(point) = spki.strip_prefix(P256_SPKI_PREFIX) {
            (Algorithm::P256, point)
        } else if let Some(key) = spki.strip_prefix(ED25519_SPKI_PREFIX) {
            (Algorithm::Ed25519, key)
        } else {
            return Err(format!(
                "{name}: unsupported public key (ECDSA P-256 and Ed25519 keys are)"
            ));
        };
        Ok(Self {
            name,
            algorithm,
            key: key.to_vec(),
            spki: spki.to_vec(),
        })
    }

    /// Whether `signature` is this key's over `payload`.
    pub fn verifies(&self, payload: &[u8], signature: &[u8]) -> bool {
        let algorithm: &'static dyn signature::VerificationAlgorithm = match self.algorithm {
            Algorithm::P256 => &signature::ECDSA_P256_SHA256_ASN1,
            Algorithm::Ed25519 => &signature::ED25519,
        };
        signature::verifies(algorithm, &self.key, payload, signature)
    }

    /// The first 16 hex digits of the sha256 of the key's SubjectPublicKeyInfo.
    pub fn fingerprint(&self) -> String {
        hex::encode(&odh_crypto::sha256(&self.spki)[..8])
    }

    pub fn to_pem(&self) -> String {
        pem_block("PUBLIC KEY", &self.spki)
    }
}

impl std::fmt::Display for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name, self.fingerprint())
    }
}

/// Verifies one signature layer: `signature_b64` over `payload` by one of `keys`, the payload
/// naming `digest` of `repository`. The key that signed, or why none did.
pub fn verify<'k>(
    keys: &'k [PublicKey],
    payload: &[u8],
    signature_b64: &str,
    digest: &str,
    repository: &str,
) -> Result<&'k PublicKey, String> {
    let signature = STANDARD
        .decode(signature_b64.trim())
        .map_err(|e| format!("the signature is not base64: {e}"))?;
    let key = keys
        .iter()
        .find(|k| k.verifies(payload, &signature))
        .ok_or("it is not by a trusted key")?;
    check_payload(payload, digest, repository)?;
    Ok(key)
}

fn pem_block(label: &str, der: &[u8]) -> String {
    let b64 = STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

enum Pair {
    P256(signature::EcdsaKeyPair),
    Ed25519(signature::Ed25519KeyPair),
}

/// A private key that signs payloads: PKCS#8 (`PRIVATE KEY` PEM), ECDSA P-256 or Ed25519.
pub struct SigningKey {
    pair: Pair,
    public: PublicKey,
}

impl SigningKey {
    pub fn from_pem(pem: &[u8]) -> Result<Self, String> {
        let der = PrivatePkcs8KeyDer::from_pem_slice(pem)
            .map_err(|e| format!("not a PKCS#8 PEM private key (BEGIN PRIVATE KEY): {e}"))?;
        let pair = match signature::ecdsa_from_pkcs8(
            &signature::ECDSA_P256_SHA256_ASN1_SIGNING,
            der.secret_pkcs8_der(),
        ) {
            Ok(p) => Pair::P256(p),
            Err(_) => Pair::Ed25519(
                signature::Ed25519KeyPair::from_pkcs8_maybe_unchecked(der.secret_pkcs8_der())
                    .map_err(|_| {
                        "unsupported private key (ECDSA P-256 and Ed25519 keys are)".to_string()
                    })?,
            ),
        };
        let spki = match &pair {
            Pair::P256(p) => [P256_SPKI_PREFIX, p.public_key().as_ref()].concat(),
            Pair::Ed25519(p) => [ED25519_SPKI_PREFIX, p.public_key().as_ref()].concat(),
        };
        let public = PublicKey::from_spki("signing key".into(), &spki)?;
        Ok(Self { pair, public })
    }

    /// A new ECDSA P-256 key: (PKCS#8 private key PEM, public key PEM).
    pub fn generate() -> Result<(String, String), String> {
        let rng = signature::SystemRandom::new();
        let pkcs8 = signature::EcdsaKeyPair::generate_pkcs8(
            &signature::ECDSA_P256_SHA256_ASN1_SIGNING,
            &rng,
        )
        .map_err(|e| format!("generating a key: {e}"))?;
        let private = pem_block("PRIVATE KEY", pkcs8.as_ref());
        let public = Self::from_pem(private.as_bytes())?.public.to_pem();
        Ok((private, public))
    }

    pub fn public_key(&self) -> &PublicKey {
        &self.public
    }

    /// The base64 signature of `payload`.
    pub fn sign(&self, payload: &[u8]) -> Result<String, String> {
        let rng = signature::SystemRandom::new();
        let signature = match &self.pair {
            Pair::P256(p) => p
                .sign(&rng, payload)
                .map_err(|e| format!("signing: {e}"))?
                .as_ref()
                .to_vec(),
            Pair::Ed25519(p) => p.sign(payload).as_ref().to_vec(),
        };
        Ok(STANDARD.encode(signature))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

    #[test]
    fn a_signature_verifies_with_its_key_only() {
        let (private, public) = SigningKey::generate().unwrap();
        let (_, other) = SigningKey::generate().unwrap();
        let key = SigningKey::from_pem(private.as_bytes()).unwrap();
        const REPO: &str = "127.0.0.1:5000/odh/p";
        let payload = payload(REPO, DIGEST);
        let sig = key.sign(&payload).unwrap();

        let trusted = PublicKey::parse_all("vendor.pub", public.as_bytes()).unwrap();
        assert_eq!(
            verify(&trusted, &payload, &sig, DIGEST, REPO).unwrap().name,
            "vendor.pub"
        );
        let stranger = PublicKey::parse_all("other.pub", other.as_bytes()).unwrap();
        assert!(
            verify(&stranger, &payload, &sig, DIGEST, REPO)
                .unwrap_err()
                .contains("not by a trusted key")
        );
        let elsewhere = DIGEST.replace('1', "2");
        assert!(
            verify(&trusted, &payload, &sig, &elsewhere, REPO)
                .unwrap_err()
                .contains("not sha256:2222")
        );
        let mut tampered = payload.clone();
        tampered[10] ^= 1;
        assert!(verify(&trusted, &tampered, &sig, DIGEST, REPO).is_err());
        assert!(
            verify(&trusted, &payload, &sig, DIGEST, "127.0.0.1:5000/odh/other")
                .unwrap_err()
                .contains("of repository 127.0.0.1:5000/odh/p, not of 127.0.0.1:5000/odh/other"),
            "a signature does not travel to another repository"
        );
    }

    #[test]
    fn several_keys_in_one_pem_and_bad_ones() {
        let (_, a) = SigningKey::generate().unwrap();
        let (_, b) = SigningKey::generate().unwrap();
        let keys = PublicKey::parse_all("team", format!("{a}{b}").as_bytes()).unwrap();
        assert_eq!(keys.len(), 2);
        assert_eq!(keys[1].name, "team#2");
        assert_ne!(keys[0].fingerprint(), keys[1].fingerprint());
        assert!(
            PublicKey::parse_all("empty", b"hello")
                .unwrap_err()
                .contains("no PEM PUBLIC KEY")
        );
        let rsa_like = pem_block("PUBLIC KEY", &[0x30, 0x03, 0x02, 0x01, 0x01]);
        assert!(
            PublicKey::parse_all("rsa", rsa_like.as_bytes())
                .unwrap_err()
                .contains("unsupported public key")
        );
    }

    #[test]
    fn ed25519_keys_sign_and_verify() {
        let rng = signature::SystemRandom::new();
        let pkcs8 = signature::Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
        let key =
            SigningKey::from_pem(pem_block("PRIVATE KEY", pkcs8.as_ref()).as_bytes()).unwrap();
        let payload = payload("r/p", DIGEST);
        let sig = key.sign(&payload).unwrap();
        let trusted = PublicKey::parse_all("ed", key.public_key().to_pem().as_bytes()).unwrap();
        assert!(verify(&trusted, &payload, &sig, DIGEST, "r/p").is_ok());
    }

    #[test]
    fn payloads_name_their_digest_and_type() {
        assert!(check_payload(&payload("r/p", DIGEST), DIGEST, "r/p").is_ok());
        assert!(
            check_payload(
                &payload("index.docker.io/odh/p", DIGEST),
                DIGEST,
                "docker.io/odh/p:v1"
            )
            .is_ok(),
            "Docker Hub's names are one registry; a tag is not part of the repository"
        );
        assert!(check_payload(&payload("r/p", DIGEST), DIGEST, "r/q").is_err());
        assert!(
            check_payload(br#"{"critical":{"type":"x"}}"#, DIGEST, "r/p")
                .unwrap_err()
                .contains("type")
        );
        assert_eq!(
            signature_tag(DIGEST),
            format!("sha256-{}.sig", "1".repeat(64))
        );
    }
}
