//! The rustls provider of every TLS server and client of the host (webhooks, metrics, the
//! model-serving-api, the kube client, plugin HTTPS, plugin sources, trace export): ring's
//! defaults, or in the FIPS build AWS-LC's FIPS provider restricted to approved suites and groups.

use std::sync::{Arc, OnceLock};

use rustls::crypto::{CryptoProvider, SupportedKxGroup};
use rustls::{CipherSuite, NamedGroup, SupportedCipherSuite};

#[cfg(feature = "fips")]
use rustls::crypto::aws_lc_rs as implementation;
#[cfg(not(feature = "fips"))]
use rustls::crypto::ring as implementation;

/// Key exchange in the FIPS build: the NIST curves of SP 800-56A only. rustls' FIPS provider
/// also offers the hybrid X25519MLKEM768, which it counts as approved through its ML-KEM half;
/// X25519 itself is not an approved curve, so the FIPS build leaves the hybrid out
/// (docs/decisions.md).
#[cfg(feature = "fips")]
const FIPS_KX_GROUPS: &[NamedGroup] = &[NamedGroup::secp256r1, NamedGroup::secp384r1];

/// The provider (shared; cloning the `Arc` is cheap).
pub fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    PROVIDER.get_or_init(|| Arc::new(build())).clone()
}

#[cfg(not(feature = "fips"))]
fn build() -> CryptoProvider {
    rustls::crypto::ring::default_provider()
}

#[cfg(feature = "fips")]
fn build() -> CryptoProvider {
    CryptoProvider {
        kx_groups: kx_groups(FIPS_KX_GROUPS),
        ..rustls::crypto::default_fips_provider()
    }
}

/// This build's implementations of the suites `wanted`, in that order; the FIPS build leaves out
/// those not approved (ChaCha20-Poly1305), so a policy written once serves both builds.
pub fn cipher_suites(wanted: &[CipherSuite]) -> Vec<SupportedCipherSuite> {
    wanted
        .iter()
        .filter_map(|w| {
            implementation::ALL_CIPHER_SUITES
                .iter()
                .find(|s| s.suite() == *w)
        })
        .filter(|s| approved(s.fips()))
        .copied()
        .collect()
}

/// This build's implementations of the key-exchange groups `wanted`, in that order; the FIPS
/// build leaves out those not approved (X25519).
pub fn kx_groups(wanted: &[NamedGroup]) -> Vec<&'static dyn SupportedKxGroup> {
    wanted
        .iter()
        .filter_map(|w| {
            implementation::ALL_KX_GROUPS
                .iter()
                .find(|g| g.name() == *w)
        })
        .filter(|g| approved(g.fips()) && !(cfg!(feature = "fips") && on_x25519(g.name())))
        .copied()
        .collect()
}

/// X25519 alone or in a hybrid: not an approved curve.
fn on_x25519(group: NamedGroup) -> bool {
    matches!(group, NamedGroup::X25519 | NamedGroup::X25519MLKEM768)
}

fn approved(fips: bool) -> bool {
    !cfg!(feature = "fips") || fips
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suites_follow_the_order_asked() {
        let got: Vec<_> = cipher_suites(&[
            CipherSuite::TLS13_AES_128_GCM_SHA256,
            CipherSuite::TLS13_AES_256_GCM_SHA384,
        ])
        .iter()
        .map(|s| s.suite())
        .collect();
        assert_eq!(
            got,
            [
                CipherSuite::TLS13_AES_128_GCM_SHA256,
                CipherSuite::TLS13_AES_256_GCM_SHA384
            ]
        );
    }

    #[cfg(not(feature = "fips"))]
    #[test]
    fn the_default_build_is_rings_defaults() {
        let ring = rustls::crypto::ring::default_provider();
        let p = provider();
        assert_eq!(p.cipher_suites, ring.cipher_suites);
        let names = |g: &[&dyn SupportedKxGroup]| g.iter().map(|g| g.name()).collect::<Vec<_>>();
        assert_eq!(names(&p.kx_groups), names(&ring.kx_groups));
        assert!(
            cipher_suites(&[CipherSuite::TLS13_CHACHA20_POLY1305_SHA256]).len() == 1,
            "ChaCha20 stays in the default build"
        );
    }

    #[cfg(feature = "fips")]
    #[test]
    fn the_fips_build_offers_approved_suites_and_nist_curves_only() {
        crate::init().expect("FIPS mode");
        let p = provider();
        assert!(p.fips(), "the provider is FIPS-approved");
        let suites: Vec<_> = p.cipher_suites.iter().map(|s| s.suite()).collect();
        assert!(suites.contains(&CipherSuite::TLS13_AES_256_GCM_SHA384));
        assert!(!suites.contains(&CipherSuite::TLS13_CHACHA20_POLY1305_SHA256));
        assert!(
            !suites.iter().any(|s| format!("{s:?}").contains("CHACHA20")),
            "{suites:?}"
        );
        let groups: Vec<_> = p.kx_groups.iter().map(|g| g.name()).collect();
        assert_eq!(groups, [NamedGroup::secp256r1, NamedGroup::secp384r1]);
        assert!(cipher_suites(&[CipherSuite::TLS13_CHACHA20_POLY1305_SHA256]).is_empty());
        assert!(kx_groups(&[NamedGroup::X25519, NamedGroup::X25519MLKEM768]).is_empty());
    }
}
