//! The certificate authorities a plugin's HTTPS trusts: the public web PKI (Mozilla's roots, as
//! wasi-http's own client) plus the cluster's own CAs the Deployment mounts — OpenShift's service
//! CA (`service-ca.crt` beside the ServiceAccount token), an operator's CA bundle — so a plugin
//! reaches an in-cluster Service signed by them (a Model Registry behind the service CA). The
//! grants still decide where a plugin may connect; this only decides whom it believes.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// Trusted roots for plugin HTTPS (cloning shares them).
#[derive(Clone)]
pub struct HttpTrust {
    config: Arc<rustls::ClientConfig>,
    /// How many CAs beyond the public roots (for the start-up log).
    extra: usize,
    /// `MR_SKIP_TLS_VERIFY`: HTTPS to the Services a plugin may send the controller's identity
    /// to (its `serviceAccountNamespaces` grant: the Model Registries) is not verified.
    unverified_identity_services: bool,
    /// This trust believes any certificate ([`HttpTrust::accepting_any_certificate`]).
    accepts_any: bool,
}

impl std::fmt::Debug for HttpTrust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTrust")
            .field("extra_roots", &self.extra)
            .field(
                "unverified_identity_services",
                &self.unverified_identity_services,
            )
            .finish()
    }
}

impl Default for HttpTrust {
    /// The public web PKI only.
    fn default() -> Self {
        static PUBLIC: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
        Self {
            config: PUBLIC.get_or_init(|| build(public_roots())).clone(),
            extra: 0,
            unverified_identity_services: false,
            accepts_any: false,
        }
    }
}

impl HttpTrust {
    /// The public roots plus every certificate in the PEM files `paths`.
    pub fn with_pem_files(paths: &[impl AsRef<Path>]) -> anyhow::Result<Self> {
        let mut roots = public_roots();
        let mut extra = 0;
        for path in paths {
            let path = path.as_ref();
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                .and_then(|certs| certs.collect::<Result<_, _>>())
                .map_err(|e| anyhow::anyhow!("reading CA certificates {}: {e}", path.display()))?;
            anyhow::ensure!(
                !certs.is_empty(),
                "{} holds no PEM certificate",
                path.display()
            );
            for cert in certs {
                roots
                    .add(cert)
                    .map_err(|e| anyhow::anyhow!("a CA certificate in {}: {e}", path.display()))?;
                extra += 1;
            }
        }
        Ok(Self {
            config: build(roots),
            extra,
            unverified_identity_services: false,
            accepts_any: false,
        })
    }

    /// Upstream's `MR_SKIP_TLS_VERIFY`, scoped: when `skip`, HTTPS to a Service of a namespace
    /// the plugin is granted to send the controller's identity to is not verified (upstream
    /// skips verification for its Model Registry client only); every other host still is.
    pub fn skipping_verification_for_identity_services(mut self, skip: bool) -> Self {
        self.unverified_identity_services = skip;
        self
    }

    /// What HTTPS to an identity Service believes under `MR_SKIP_TLS_VERIFY`: any certificate
    /// (the handshake's signatures are still checked, so the peer holds the key of the
    /// certificate it shows).
    pub fn accepting_any_certificate() -> Self {
        static UNVERIFIED: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
        let config = UNVERIFIED.get_or_init(|| {
            let builder = rustls::ClientConfig::builder_with_provider(odh_crypto::tls::provider())
                .with_safe_default_protocol_versions()
                .expect("the host's TLS provider supports TLS 1.2 and 1.3");
            let provider = builder.crypto_provider().clone();
            Arc::new(
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
                    .with_no_client_auth(),
            )
        });
        Self {
            config: config.clone(),
            extra: 0,
            unverified_identity_services: false,
            accepts_any: true,
        }
    }

    pub(crate) fn accepts_any(&self) -> bool {
        self.accepts_any
    }

    /// What a request to `authority` believes: any certificate for an identity Service under
    /// `MR_SKIP_TLS_VERIFY`, else this trust.
    pub(crate) fn for_authority(&self, caps: &crate::Capabilities, authority: &str) -> Self {
        if self.unverified_identity_services && caps.may_send_identity_to(authority).is_ok() {
            Self::accepting_any_certificate()
        } else {
            self.clone()
        }
    }

    /// The CAs trusted beyond the public roots.
    pub fn extra_roots(&self) -> usize {
        self.extra
    }

    pub fn client_config(&self) -> Arc<rustls::ClientConfig> {
        self.config.clone()
    }
}

/// Accepts any server certificate; verifies the handshake signatures with `0`'s algorithms.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

fn public_roots() -> rustls::RootCertStore {
    rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.into(),
    }
}

fn build(roots: rustls::RootCertStore) -> Arc<rustls::ClientConfig> {
    Arc::new(
        rustls::ClientConfig::builder_with_provider(odh_crypto::tls::provider())
            .with_safe_default_protocol_versions()
            .expect("the host's TLS provider supports TLS 1.2 and 1.3")
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `MR_SKIP_TLS_VERIFY` reaches only the Services of the identity namespaces: another host,
    /// a Service of another namespace, or the variable unset keep verification.
    #[test]
    fn only_identity_services_skip_verification_and_only_when_asked() {
        let caps = crate::Capabilities {
            service_account_namespaces: ["registries".to_string()].into(),
            ..Default::default()
        };
        let skipping = HttpTrust::default().skipping_verification_for_identity_services(true);
        let mr = "mr.registries.svc.cluster.local:8443";
        assert!(skipping.for_authority(&caps, mr).accepts_any());
        assert!(
            !skipping
                .for_authority(&caps, "mr.tenant.svc.cluster.local:8443")
                .accepts_any()
        );
        assert!(
            !skipping
                .for_authority(&caps, "api.example.com:443")
                .accepts_any()
        );
        assert!(!HttpTrust::default().for_authority(&caps, mr).accepts_any());
        let no_identity = crate::Capabilities::default();
        assert!(!skipping.for_authority(&no_identity, mr).accepts_any());
    }
}
