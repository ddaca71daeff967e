//! The Ray TLS certificates (docs/plugins/servingruntime.md, "Certificates"): a self-signed
//! RSA-4096 CA whose key is PKCS#1 DER under a `PRIVATE KEY` PEM header (upstream's encoding, read
//! and written as is), and per-pod server certificates it signs, whose keys are PKCS#8.
//!
//! Everything here is pure: the clock and the key source are arguments, so native tests pin
//! them and the guest passes the host's `keys` import (docs/decisions.md, "Keys are made by the
//! host"). Keys are generated and every signature is computed there, natively; what runs here is
//! DER encoding, and the verification of a per-pod certificate (a cheap public-key operation).

use std::net::IpAddr;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use der::asn1::{AnyRef, BitString, OctetStringRef};
use der::asn1::{Ia5String, OctetString};
use der::pem::LineEnding;
use der::{Decode, DecodePem, Encode, EncodePem};
use pkcs8::{PrivateKeyInfoRef, spki::AlgorithmIdentifier};
use rsa::pkcs1v15::{Signature, VerifyingKey};
use rsa::signature::{Keypair, Verifier};
use rsa::{PrivateKey, PublicKey};
use sha1::{Digest, Sha1};
use sha2::Sha256;
use spki::{AlgorithmIdentifierOwned, DynSignatureAlgorithmIdentifier, EncodePublicKey};
use x509_cert::Certificate;
use x509_cert::builder::profile::BuilderProfile;
use x509_cert::builder::{Builder, CertificateBuilder};
use x509_cert::certificate::TbsCertificate;
use x509_cert::ext::Extension;
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::ext::pkix::{
    AuthorityKeyIdentifier, BasicConstraints, ExtendedKeyUsage, KeyUsage, KeyUsages,
    SubjectAltName, SubjectKeyIdentifier,
};
use x509_cert::name::Name;
use x509_cert::serial_number::SerialNumber;
use x509_cert::spki::{SubjectPublicKeyInfoOwned, SubjectPublicKeyInfoRef};
use x509_cert::time::{Time, Validity};

/// RSA modulus size of every key (upstream's).
pub const KEY_BITS: usize = 4096;
const DAY: u64 = 24 * 60 * 60;
/// The CA lives 5×365 days, a per-pod certificate 3×365 days.
pub const CA_LIFETIME: Duration = Duration::from_secs(5 * 365 * DAY);
pub const SERVER_LIFETIME: Duration = Duration::from_secs(3 * 365 * DAY);

pub const CA_SUBJECT: &str = "CN=self-signed-ca-cert,O=opendatahub-self-signed";
pub const SERVER_SUBJECT: &str = "CN=self-signed-cert,O=opendatahub-self-signed";
/// `id-kp-serverAuth`.
const SERVER_AUTH: der::asn1::ObjectIdentifier =
    der::asn1::ObjectIdentifier::new_unwrap("1.3.6.1.5.5.7.3.1");

/// A PEM certificate and its PEM key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    pub cert_pem: String,
    pub key_pem: String,
}

/// The CA as read back from `ray-ca-tls`: what signing a per-pod certificate needs.
pub struct Ca {
    pub cert: Certificate,
    key: CaKey,
}

/// The CA's key as stored (PKCS#1 DER), its PKCS#8 PEM (what the host signs with) and its
/// public half (what per-pod certificates are verified with).
pub struct CaKey {
    pkcs8_pem: String,
    public: PublicKey,
}

/// Never prints the key.
impl std::fmt::Debug for CaKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CaKey { .. }")
    }
}

/// `rsaEncryption`, the algorithm of an RSA key in PKCS#8.
const RSA_ENCRYPTION: der::asn1::ObjectIdentifier =
    der::asn1::ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
/// `sha256WithRSAEncryption`, every signature's algorithm (Go's for an RSA key).
const SHA256_WITH_RSA: der::asn1::ObjectIdentifier =
    der::asn1::ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.11");

/// Subject and issuer as given, no extensions of the builder's own: every extension is
/// added explicitly, as Go's template lists them.
struct Plain {
    subject: Name,
    issuer: Name,
}

impl BuilderProfile for Plain {
    fn get_issuer(&self, _subject: &Name) -> Name {
        self.issuer.clone()
    }

    fn get_subject(&self) -> Name {
        self.subject.clone()
    }

    fn build_extensions(
        &self,
        _spk: SubjectPublicKeyInfoRef<'_>,
        _issuer_spk: SubjectPublicKeyInfoRef<'_>,
        _tbs: &TbsCertificate,
    ) -> x509_cert::builder::Result<Vec<Extension>> {
        Ok(Vec::new())
    }
}

fn err(what: &str) -> impl Fn(String) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// A new key from a [`KeySource`]: the private key as PKCS#8 PEM and its public key as a DER
/// SubjectPublicKeyInfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewKey {
    pub pkcs8_pem: String,
    pub spki_der: Vec<u8>,
}

/// Where keys, signatures and serial numbers come from: the host's `keys` import in the guest
/// (entropy.rs), fixtures in native tests.
pub trait KeySource {
    /// A new RSA-4096 key.
    fn key(&mut self) -> Result<NewKey, String>;
    /// The `sha256WithRSAEncryption` signature of `data` by a PKCS#8 PEM RSA key.
    fn sign(&mut self, key_pkcs8_pem: &str, data: &[u8]) -> Result<Vec<u8>, String>;
    fn random_u64(&mut self) -> Result<u64, String>;
}

/// What the certificate builder needs of a signer (the issuer's public key and the signature
/// algorithm); the signature itself is the key source's.
struct Issuer {
    spki_der: Vec<u8>,
}

#[derive(Clone)]
struct IssuerKey(Vec<u8>);

impl EncodePublicKey for IssuerKey {
    fn to_public_key_der(&self) -> spki::Result<der::Document> {
        Ok(der::Document::try_from(self.0.as_slice())?)
    }
}

impl Keypair for Issuer {
    type VerifyingKey = IssuerKey;

    fn verifying_key(&self) -> IssuerKey {
        IssuerKey(self.spki_der.clone())
    }
}

impl DynSignatureAlgorithmIdentifier for Issuer {
    fn signature_algorithm_identifier(&self) -> spki::Result<AlgorithmIdentifierOwned> {
        Ok(AlgorithmIdentifierOwned {
            oid: SHA256_WITH_RSA,
            parameters: Some(der::asn1::Null.into()),
        })
    }
}

/// Signs the certificate `builder` describes with `key_pkcs8_pem` (whose public key is
/// `issuer_spki_der`) through the key source.
fn sign_certificate(
    builder: CertificateBuilder<Plain>,
    keys: &mut dyn KeySource,
    key_pkcs8_pem: &str,
    issuer_spki_der: Vec<u8>,
    what: &str,
) -> Result<Certificate, String> {
    let mut builder = builder;
    let issuer = Issuer {
        spki_der: issuer_spki_der,
    };
    let tbs = builder
        .finalize(&issuer)
        .map_err(|e| format!("signing the {what}: {e}"))?;
    let signature = keys.sign(key_pkcs8_pem, &tbs)?;
    let signature = BitString::from_bytes(&signature).map_err(|e| e.to_string())?;
    builder
        .assemble(signature, &issuer)
        .map_err(|e| format!("signing the {what}: {e}"))
}

/// The PKCS#1 DER inside an RSA key's PKCS#8 DER.
fn pkcs1_of_pkcs8(pkcs8_der: &[u8]) -> Result<Vec<u8>, String> {
    let info = PrivateKeyInfoRef::from_der(pkcs8_der).map_err(|e| e.to_string())?;
    if info.algorithm.oid != RSA_ENCRYPTION {
        return Err(format!("not an RSA key: {}", info.algorithm.oid));
    }
    Ok(info.private_key.as_bytes().to_vec())
}

/// An RSA key's PKCS#8 PEM from its PKCS#1 DER.
fn pkcs8_pem_of_pkcs1(pkcs1_der: &[u8]) -> Result<String, String> {
    let key = OctetStringRef::new(pkcs1_der).map_err(|e| e.to_string())?;
    let info = PrivateKeyInfoRef::new(
        AlgorithmIdentifier {
            oid: RSA_ENCRYPTION,
            parameters: Some(AnyRef::NULL),
        },
        key,
    );
    pem("PRIVATE KEY", &info.to_der().map_err(|e| e.to_string())?)
}

/// Upstream's serial: a random integer in [0, now in Unix nanoseconds).
fn serial(keys: &mut dyn KeySource, now: SystemTime) -> Result<SerialNumber, String> {
    let bound = now
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(u64::MAX)
        .max(1);
    Ok(SerialNumber::from(keys.random_u64()? % bound))
}

fn validity(now: SystemTime, lifetime: Duration) -> Result<Validity, String> {
    let at = |t: SystemTime| Time::try_from(t).map_err(|e| format!("certificate validity: {e}"));
    Ok(Validity::new(at(now)?, at(now + lifetime)?))
}

fn name(rfc4514: &str) -> Name {
    Name::from_str(rfc4514).expect("a constant distinguished name")
}

fn spki_of(der: &[u8]) -> Result<SubjectPublicKeyInfoOwned, String> {
    SubjectPublicKeyInfoOwned::from_der(der).map_err(|e| format!("reading a public key: {e}"))
}

/// RFC 5280 method 1 (Go's for RSA): SHA-1 of the subjectPublicKey bits.
fn key_identifier(spki: &SubjectPublicKeyInfoOwned) -> Vec<u8> {
    Sha1::digest(spki.subject_public_key.raw_bytes()).to_vec()
}

fn cert_pem(cert: &Certificate) -> Result<String, String> {
    cert.to_pem(LineEnding::LF)
        .map_err(|e| format!("encoding a certificate: {e}"))
}

fn pem(label: &str, der: &[u8]) -> Result<String, String> {
    der::pem::encode_string(label, LineEnding::LF, der)
        .map_err(|e| format!("encoding {label}: {e}"))
}

/// A new self-signed CA (`ray-ca-tls`'s `tls.crt` and `tls.key`).
pub fn generate_ca(keys: &mut dyn KeySource, now: SystemTime) -> Result<Pair, String> {
    let key = keys.key()?;
    let spki = spki_of(&key.spki_der)?;
    let subject = name(CA_SUBJECT);
    let profile = Plain {
        subject: subject.clone(),
        issuer: subject,
    };
    let mut builder = CertificateBuilder::new(
        profile,
        serial(keys, now)?,
        validity(now, CA_LIFETIME)?,
        spki.clone(),
    )
    .map_err(|e| format!("building the CA certificate: {e}"))?;
    let ski = OctetString::new(key_identifier(&spki)).map_err(|e| e.to_string())?;
    add_extensions(
        &mut builder,
        KeyUsages::KeyEncipherment | KeyUsages::DigitalSignature | KeyUsages::KeyCertSign,
        true,
    )?;
    builder
        .add_extension(&ExtendedKeyUsage(vec![SERVER_AUTH]))
        .map_err(|e| format!("extended key usage: {e}"))?;
    builder
        .add_extension(&SubjectKeyIdentifier(ski))
        .map_err(|e| format!("subject key identifier: {e}"))?;
    let cert = sign_certificate(
        builder,
        keys,
        &key.pkcs8_pem,
        key.spki_der.clone(),
        "CA certificate",
    )?;
    let pkcs8 = upstream_pem_body(&key.pkcs8_pem)?;
    let pkcs1 = pkcs1_of_pkcs8(&pkcs8).map_err(|e| format!("encoding the CA key: {e}"))?;
    Ok(Pair {
        cert_pem: cert_pem(&cert)?,
        // Upstream's encoding: PKCS#1 bytes under the PKCS#8 label.
        key_pem: pem("PRIVATE KEY", &pkcs1)?,
    })
}

fn add_extensions(
    builder: &mut CertificateBuilder<Plain>,
    usages: impl Into<der::flagset::FlagSet<KeyUsages>>,
    ca: bool,
) -> Result<(), String> {
    builder
        .add_extension(&KeyUsage(usages.into()))
        .map_err(|e| format!("key usage: {e}"))?;
    builder
        .add_extension(&BasicConstraints {
            ca,
            path_len_constraint: None,
        })
        .map_err(|e| format!("basic constraints: {e}"))
}

/// Upstream's PEM reading: drop the `-----BEGIN`/`-----END` lines, join the rest and decode
/// it as base64 (so only single-block PEM works).
pub fn upstream_pem_body(pem: &str) -> Result<Vec<u8>, String> {
    // Go's base64 decoder skips carriage returns and newlines.
    let body: String = pem
        .lines()
        .filter(|l| !l.starts_with("-----BEGIN") && !l.starts_with("-----END"))
        .flat_map(|l| l.chars().filter(|c| *c != '\r'))
        .collect();
    odh_plugin_sdk::base64::decode(body.trim()).ok_or_else(|| "illegal base64 data".to_string())
}

/// Parses a certificate the way upstream reads `ray-ca-tls`'s `tls.crt`.
pub fn parse_certificate(pem: &str) -> Result<Certificate, String> {
    let der = upstream_pem_body(pem)?;
    Certificate::from_der(&der).map_err(|e| format!("x509: malformed certificate: {e}"))
}

/// Parses the CA key: PKCS#1 DER whatever the PEM label says (upstream's reading).
pub fn parse_ca_key(pem: &str) -> Result<CaKey, String> {
    let read = |der: Vec<u8>| -> Result<CaKey, String> {
        let key = pkcs1::RsaPrivateKeyRef::from_der(&der).map_err(|e| e.to_string())?;
        let public = PublicKey::try_from(pkcs1::RsaPublicKey {
            modulus: key.modulus,
            public_exponent: key.public_exponent,
        })
        .map_err(|e| e.to_string())?;
        Ok(CaKey {
            pkcs8_pem: pkcs8_pem_of_pkcs1(&der)?,
            public,
        })
    };
    upstream_pem_body(pem)
        .and_then(read)
        .map_err(err("failed to parse CA private key"))
}

impl Ca {
    /// The CA from `ray-ca-tls`'s `tls.crt` and `tls.key`.
    pub fn parse(cert_pem: &str, key_pem: &str) -> Result<Ca, String> {
        let cert = parse_certificate(cert_pem).map_err(err("failed to parse CA certificate"))?;
        let key = parse_ca_key(key_pem)?;
        Ok(Ca { cert, key })
    }

    fn subject_key_id(&self) -> Option<Vec<u8>> {
        extension::<SubjectKeyIdentifier>(&self.cert).map(|s| s.0.as_bytes().to_vec())
    }

    /// Whether `cert` was signed by this CA's key.
    pub fn signed(&self, cert: &Certificate) -> bool {
        let Ok(tbs) = cert.tbs_certificate().to_der() else {
            return false;
        };
        let Ok(signature) = Signature::try_from(cert.signature().raw_bytes()) else {
            return false;
        };
        cert.tbs_certificate().issuer() == self.cert.tbs_certificate().subject()
            && VerifyingKey::<Sha256>::new(self.key.public.clone())
                .verify(&tbs, &signature)
                .is_ok()
    }

    /// A new server certificate for `ips` (those that parse, then 127.0.0.1) and `dns_names`
    /// (then `localhost`), with a new key: the PEM certificate followed by the PKCS#8 PEM key,
    /// as stored under the pod IP in `ray-tls`.
    pub fn issue(
        &self,
        keys: &mut dyn KeySource,
        now: SystemTime,
        ips: &[&str],
        dns_names: &[String],
    ) -> Result<String, String> {
        let key = keys.key()?;
        let spki = spki_of(&key.spki_der)?;
        let profile = Plain {
            subject: name(SERVER_SUBJECT),
            issuer: self.cert.tbs_certificate().subject().clone(),
        };
        let mut builder = CertificateBuilder::new(
            profile,
            serial(keys, now)?,
            validity(now, SERVER_LIFETIME)?,
            spki,
        )
        .map_err(|e| format!("building the server certificate: {e}"))?;
        add_extensions(
            &mut builder,
            KeyUsages::KeyEncipherment | KeyUsages::DigitalSignature | KeyUsages::DataEncipherment,
            false,
        )?;
        if let Some(id) = self.subject_key_id() {
            let aki = AuthorityKeyIdentifier {
                key_identifier: Some(OctetString::new(id).map_err(|e| e.to_string())?),
                authority_cert_issuer: None,
                authority_cert_serial_number: None,
            };
            builder
                .add_extension(&aki)
                .map_err(|e| format!("authority key identifier: {e}"))?;
        }
        builder
            .add_extension(&SubjectAltName(alt_names(ips, dns_names)?))
            .map_err(|e| format!("subject alternative names: {e}"))?;
        let issuer_spki = self
            .key
            .public
            .to_public_key_der()
            .map_err(|e| format!("encoding the CA's public key: {e}"))?;
        let cert = sign_certificate(
            builder,
            keys,
            &self.key.pkcs8_pem,
            issuer_spki.as_bytes().to_vec(),
            "server certificate",
        )?;
        Ok(cert_pem(&cert)? + &key.pkcs8_pem)
    }

    /// Whether `entry` (a `ray-tls` value) holds a certificate this CA signed for `ip` that is
    /// still valid at `now`, followed by a key.
    pub fn issued_for(&self, entry: &str, ip: &str, now: SystemTime) -> bool {
        let Some(cert) = first_certificate(entry) else {
            return false;
        };
        let Ok(ip) = IpAddr::from_str(ip) else {
            return false;
        };
        let names = extension::<SubjectAltName>(&cert)
            .map(|s| s.0)
            .unwrap_or_default();
        let for_ip = names.contains(&GeneralName::from(ip));
        let not_after = cert.tbs_certificate().validity().not_after.to_system_time();
        for_ip && now < not_after && entry.contains("PRIVATE KEY-----") && self.signed(&cert)
    }
}

fn alt_names(ips: &[&str], dns_names: &[String]) -> Result<Vec<GeneralName>, String> {
    let mut names = Vec::new();
    for ip in ips {
        if let Ok(ip) = IpAddr::from_str(ip) {
            names.push(GeneralName::from(ip));
        }
    }
    names.push(GeneralName::from(IpAddr::from([127, 0, 0, 1])));
    for dns in dns_names.iter().map(String::as_str).chain(["localhost"]) {
        let dns = Ia5String::new(dns).map_err(|e| format!("DNS name {dns:?}: {e}"))?;
        names.push(GeneralName::DnsName(dns));
    }
    Ok(names)
}

/// The first `CERTIFICATE` block of a PEM text (a `ray-tls` entry holds a key after it).
pub fn first_certificate(text: &str) -> Option<Certificate> {
    const END: &str = "-----END CERTIFICATE-----";
    let start = text.find("-----BEGIN CERTIFICATE-----")?;
    let end = text[start..].find(END)? + start + END.len();
    Certificate::from_pem(&text[start..end]).ok()
}

/// A certificate's extension of type `E`, decoded.
pub fn extension<E>(cert: &Certificate) -> Option<E>
where
    E: der::oid::AssociatedOid + for<'a> Decode<'a>,
{
    cert.tbs_certificate()
        .extensions()?
        .iter()
        .find(|e| e.extn_id == E::OID)
        .and_then(|e| E::from_der(e.extn_value.as_bytes()).ok())
}

/// Upstream's CA expiry: at NotAfter, or already two (calendar) years before it.
pub fn ca_expired(cert: &Certificate, now: SystemTime) -> bool {
    let not_after = cert.tbs_certificate().validity().not_after;
    now >= not_after.to_system_time() || now >= two_years_before(&not_after)
}

/// Go's `t.AddDate(-2, 0, 0)`: the same month, day and time two years earlier (29 February
/// normalised to 1 March in a common year).
fn two_years_before(t: &Time) -> SystemTime {
    let dt = t.to_date_time();
    let year = dt.year() - 2;
    let leap = (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400);
    let (month, day) = if dt.month() == 2 && dt.day() == 29 && !leap {
        (3, 1)
    } else {
        (dt.month(), dt.day())
    };
    der::DateTime::new(year, month, day, dt.hour(), dt.minutes(), dt.seconds())
        .map(|d| d.to_system_time())
        .unwrap_or(UNIX_EPOCH)
}

/// The public half of a key, for tests and the SKI check.
pub fn public_key_der(key: &PrivateKey) -> Result<Vec<u8>, String> {
    PublicKey::from(key)
        .to_public_key_der()
        .map(|d| d.as_bytes().to_vec())
        .map_err(|e| e.to_string())
}
