//! Certificate formats (docs/plugins/servingruntime.md, "Certificates"), parsed back with the
//! same crates.

mod common;

use std::net::IpAddr;
use std::time::{Duration, SystemTime};

use common::{CA_CRT, CA_KEY_PKCS1, FixtureKeys};
use der::{Decode, Encode};
use pkcs8::DecodePrivateKey;
use rsa::PrivateKey;
use rsa::pkcs1::DecodeRsaPrivateKey;
use rsa::traits::PublicKeyParts;
use servingruntime::certs::{self, Ca, extension, first_certificate, upstream_pem_body};
use sha1::{Digest, Sha1};
use x509_cert::Certificate;
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::ext::pkix::{
    AuthorityKeyIdentifier, BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectAltName,
    SubjectKeyIdentifier,
};

const DAY: u64 = 86_400;

fn rdn(cert_name: &x509_cert::name::Name) -> String {
    cert_name.to_string()
}

fn lifetime(cert: &Certificate) -> Duration {
    let v = cert.tbs_certificate().validity();
    v.not_after.to_unix_duration() - v.not_before.to_unix_duration()
}

fn key_of_pkcs8_block(entry: &str) -> PrivateKey {
    let start = entry
        .find("-----BEGIN PRIVATE KEY-----")
        .expect("a key block");
    let der = upstream_pem_body(&entry[start..]).expect("base64");
    PrivateKey::from_pkcs8_der(&der).expect("the per-pod key is PKCS#8")
}

/// The CA as `ray-ca-tls` holds it: self-signed RSA-4096, 5×365 days, CA usages, SKI, and
/// the key as PKCS#1 DER under a `PRIVATE KEY` header.
#[test]
fn ca_certificate_and_key_have_upstreams_format() {
    let now = SystemTime::now();
    let pair = certs::generate_ca(&mut FixtureKeys::default(), now).unwrap();
    let cert = certs::parse_certificate(&pair.cert_pem).unwrap();
    let tbs = cert.tbs_certificate();
    assert_eq!(
        rdn(tbs.subject()),
        "CN=self-signed-ca-cert,O=opendatahub-self-signed"
    );
    assert_eq!(tbs.issuer(), tbs.subject(), "self-signed");
    assert_eq!(lifetime(&cert), Duration::from_secs(5 * 365 * DAY));
    let usage = extension::<KeyUsage>(&cert).unwrap();
    assert!(usage.key_encipherment() && usage.digital_signature() && usage.key_cert_sign());
    assert!(!usage.data_encipherment());
    assert_eq!(
        extension::<ExtendedKeyUsage>(&cert).unwrap().0,
        vec![der::asn1::ObjectIdentifier::new_unwrap("1.3.6.1.5.5.7.3.1")]
    );
    assert!(extension::<BasicConstraints>(&cert).unwrap().ca);
    assert!(
        extension::<SubjectAltName>(&cert).is_none(),
        "no SANs on the CA"
    );
    let spki = &tbs.subject_public_key_info();
    let ski = extension::<SubjectKeyIdentifier>(&cert).unwrap();
    assert_eq!(
        ski.0.as_bytes(),
        Sha1::digest(spki.subject_public_key.raw_bytes()).as_slice()
    );
    assert_eq!(
        cert.signature_algorithm().oid.to_string(),
        "1.2.840.113549.1.1.11",
        "sha256WithRSA"
    );

    assert!(pair.key_pem.starts_with("-----BEGIN PRIVATE KEY-----\n"));
    assert!(pair.key_pem.ends_with("-----END PRIVATE KEY-----\n"));
    assert!(
        pair.key_pem.lines().all(|l| l.len() <= 64),
        "PEM wrapped at 64"
    );
    let body = upstream_pem_body(&pair.key_pem).unwrap();
    let key = PrivateKey::from_pkcs1_der(&body).expect("PKCS#1 bytes");
    assert!(PrivateKey::from_pkcs8_der(&body).is_err(), "not PKCS#8");
    assert_eq!(key.size() * 8, 4096);
    let ca = Ca::parse(&pair.cert_pem, &pair.key_pem).unwrap();
    assert!(ca.signed(&cert), "the CA verifies its own signature");
}

/// a per-pod certificate: signed by the CA, SAN IPs [pod IP, 127.0.0.1] and DNS
/// [*.<ns>.svc.cluster.local, localhost], server usages, 3×365 days, AKI = the CA's SKI, then
/// a PKCS#8 key that matches it.
#[test]
fn x_9_pod_certificate_is_signed_by_the_fixture_ca_with_upstreams_names() {
    let ca = Ca::parse(CA_CRT, CA_KEY_PKCS1).expect("the PKCS#1-under-PRIVATE-KEY fixture parses");
    let now = SystemTime::now();
    let entry = ca
        .issue(
            &mut FixtureKeys::default(),
            now,
            &["10.0.0.5"],
            &["*.ns1.svc.cluster.local".into()],
        )
        .unwrap();
    assert!(entry.starts_with("-----BEGIN CERTIFICATE-----\n"));
    let split = entry.find("-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\n");
    assert!(split.is_some(), "certificate block then key block: {entry}");
    let cert = first_certificate(&entry).unwrap();
    let tbs = cert.tbs_certificate();
    assert_eq!(
        rdn(tbs.subject()),
        "CN=self-signed-cert,O=opendatahub-self-signed"
    );
    assert_eq!(tbs.issuer(), ca.cert.tbs_certificate().subject());
    assert!(ca.signed(&cert));
    assert_eq!(lifetime(&cert), Duration::from_secs(3 * 365 * DAY));
    let san = extension::<SubjectAltName>(&cert).unwrap().0;
    let ip = |s: &str| GeneralName::from(s.parse::<IpAddr>().unwrap());
    let dns = |s: &str| GeneralName::DnsName(der::asn1::Ia5String::new(s).unwrap());
    assert_eq!(
        san,
        vec![
            ip("10.0.0.5"),
            ip("127.0.0.1"),
            dns("*.ns1.svc.cluster.local"),
            dns("localhost")
        ]
    );
    let usage = extension::<KeyUsage>(&cert).unwrap();
    assert!(usage.key_encipherment() && usage.digital_signature() && usage.data_encipherment());
    assert!(!usage.key_cert_sign());
    assert!(extension::<ExtendedKeyUsage>(&cert).is_none());
    assert!(!extension::<BasicConstraints>(&cert).unwrap().ca);
    let ca_ski = extension::<SubjectKeyIdentifier>(&ca.cert).unwrap();
    let aki = extension::<AuthorityKeyIdentifier>(&cert).unwrap();
    assert_eq!(aki.key_identifier.unwrap().as_bytes(), ca_ski.0.as_bytes());

    let key = key_of_pkcs8_block(&entry);
    assert_eq!(key.size() * 8, 4096);
    let public = certs::public_key_der(&key).unwrap();
    assert_eq!(
        tbs.subject_public_key_info().to_der().unwrap(),
        public,
        "the key matches the cert"
    );
    assert!(ca.issued_for(&entry, "10.0.0.5", now));
    assert!(
        !ca.issued_for(&entry, "10.0.0.6", now),
        "another IP needs its own"
    );
    assert!(!ca.issued_for(&entry, "10.0.0.5", now + Duration::from_secs(3 * 365 * DAY)));
}

/// A certificate another CA signed is not one of ours.
#[test]
fn a_certificate_of_another_ca_is_not_taken_for_ours() {
    let now = SystemTime::now();
    let other = certs::generate_ca(&mut FixtureKeys::default(), now).unwrap();
    let other = Ca::parse(&other.cert_pem, &other.key_pem).unwrap();
    let entry = other
        .issue(&mut FixtureKeys::default(), now, &["10.0.0.5"], &[])
        .unwrap();
    let ours = Ca::parse(CA_CRT, CA_KEY_PKCS1).unwrap();
    assert!(other.issued_for(&entry, "10.0.0.5", now));
    assert!(!ours.issued_for(&entry, "10.0.0.5", now));
}

/// Only PKCS#1 is a CA key, as upstream reads it.
#[test]
fn a_pkcs8_ca_key_fails_with_upstreams_message() {
    let pkcs8 = include_str!("fixtures/key1.pem"); // PKCS#1 with its own label: fine
    assert!(certs::parse_ca_key(pkcs8).is_ok());
    let entry = Ca::parse(CA_CRT, CA_KEY_PKCS1)
        .unwrap()
        .issue(
            &mut FixtureKeys::default(),
            SystemTime::now(),
            &["10.0.0.5"],
            &[],
        )
        .unwrap();
    let key_block = &entry[entry.find("-----BEGIN PRIVATE KEY-----").unwrap()..];
    let err = certs::parse_ca_key(key_block).unwrap_err();
    assert!(err.starts_with("failed to parse CA private key: "), "{err}");
}

/// the CA counts as expired two calendar years before NotAfter (3 years after issue).
#[test]
fn x_3_ca_expires_two_years_before_not_after() {
    let issued = SystemTime::now();
    let pair = certs::generate_ca(&mut FixtureKeys::default(), issued).unwrap();
    let cert = Certificate::from_der(&upstream_pem_body(&pair.cert_pem).unwrap()).unwrap();
    let after = |days: u64| issued + Duration::from_secs(days * DAY);
    assert!(!certs::ca_expired(&cert, after(0)));
    assert!(!certs::ca_expired(&cert, after(3 * 365 - 5)));
    assert!(certs::ca_expired(&cert, after(3 * 365 + 5)));
    assert!(certs::ca_expired(&cert, after(6 * 365)));
}

/// Upstream's PEM reading: one block, base64 between the markers; CRLF line ends are fine.
#[test]
fn unparsable_pem_is_an_error() {
    let crlf = CA_CRT.replace('\n', "\r\n");
    assert!(certs::parse_certificate(&crlf).is_ok());
    assert!(Ca::parse(&crlf, &CA_KEY_PKCS1.replace('\n', "\r\n")).is_ok());
    assert!(
        certs::parse_certificate("-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n")
            .is_err()
    );
    assert!(certs::parse_certificate("").is_err());
}
