//! The host's cryptography in one place, so that one feature switches all of it: the rustls
//! provider of every TLS server and client ([`tls`]), signature checks and signing
//! ([`signature`]), digests ([`sha256`]), and the start-up check of FIPS mode ([`init`]).
//!
//! By default this is ring (TLS, signatures) and sha2 (digests), as the host always had. With the
//! `fips` feature every one of them is AWS-LC's FIPS module (aws-lc-fips-sys through aws-lc-rs),
//! and [`init`] refuses to go on unless the module reports FIPS mode.

mod mode;
pub mod signature;
pub mod tls;

pub use mode::{Mode, init, mode};

#[cfg(feature = "fips")]
use aws_lc_rs as backend;
#[cfg(not(feature = "fips"))]
use ring as backend;

/// The SHA-256 digest of `bytes`: artifact pins and OCI content digests, which a signature
/// check's trust flows through.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    #[cfg(feature = "fips")]
    {
        let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, bytes);
        digest
            .as_ref()
            .try_into()
            .expect("a SHA-256 digest is 32 bytes")
    }
    #[cfg(not(feature = "fips"))]
    {
        use sha2::Digest;
        sha2::Sha256::digest(bytes).into()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn sha256_of_a_known_input() {
        assert_eq!(
            hex(&super::sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }
}
