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
}

impl std::fmt::Debug for HttpTrust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTrust")
            .field("extra_roots", &self.extra)
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
        })
    }

    /// The CAs trusted beyond the public roots.
    pub fn extra_roots(&self) -> usize {
        self.extra
    }

    pub(crate) fn client_config(&self) -> Arc<rustls::ClientConfig> {
        self.config.clone()
    }
}

fn public_roots() -> rustls::RootCertStore {
    rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.into(),
    }
}

fn build(roots: rustls::RootCertStore) -> Arc<rustls::ClientConfig> {
    Arc::new(
        rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}
