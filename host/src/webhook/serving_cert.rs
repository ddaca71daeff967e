//! A TLS server's certificate: `tls.crt` and `tls.key` from a directory, reloaded when the
//! files change (checked at most once per interval, on a handshake and by the server's own
//! ticker), without a restart. A change that does not load (unreadable, half-written, key and
//! certificate not matching) keeps the last good certificate and is logged. Until a first
//! certificate loads (a Secret volume not written yet) handshakes fail and the server is not
//! ready.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

pub const CERT_FILE: &str = "tls.crt";
pub const KEY_FILE: &str = "tls.key";

/// How often the files are looked at, at most.
pub const DEFAULT_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// What identifies one version of a file: a rewrite or a symlink swap (as a Kubernetes secret
/// volume does) changes at least one of these.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileStamp {
    modified: Option<SystemTime>,
    len: u64,
    #[cfg(unix)]
    inode: u64,
}

fn stamp(path: &Path) -> Option<FileStamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some(FileStamp {
        modified: meta.modified().ok(),
        len: meta.len(),
        #[cfg(unix)]
        inode: std::os::unix::fs::MetadataExt::ino(&meta),
    })
}

#[derive(Debug)]
struct Check {
    last: Instant,
    /// The stamps of the files the last load attempt saw (good or not).
    seen: (Option<FileStamp>, Option<FileStamp>),
}

/// A [`ResolvesServerCert`] serving the certificate in a directory and following its changes.
#[derive(Debug)]
pub struct ReloadingCert {
    cert_path: PathBuf,
    key_path: PathBuf,
    provider: Arc<CryptoProvider>,
    interval: Duration,
    current: RwLock<Option<Arc<CertifiedKey>>>,
    check: Mutex<Check>,
}

impl ReloadingCert {
    /// Loads `tls.crt` and `tls.key` from `cert_dir` if they are there and load; otherwise
    /// starts without a certificate (logged) and picks one up when the files appear.
    pub fn new(cert_dir: &Path, provider: Arc<CryptoProvider>) -> Self {
        Self::with_interval(cert_dir, provider, DEFAULT_CHECK_INTERVAL)
    }

    pub fn with_interval(
        cert_dir: &Path,
        provider: Arc<CryptoProvider>,
        interval: Duration,
    ) -> Self {
        let cert_path = cert_dir.join(CERT_FILE);
        let key_path = cert_dir.join(KEY_FILE);
        let seen = (stamp(&cert_path), stamp(&key_path));
        let key = match load(&cert_path, &key_path, &provider) {
            Ok(key) => Some(Arc::new(key)),
            Err(e) => {
                tracing::warn!(cert_dir = %cert_dir.display(), "no serving certificate yet, not ready until one loads: {e:#}");
                None
            }
        };
        Self {
            cert_path,
            key_path,
            provider,
            interval,
            current: RwLock::new(key),
            check: Mutex::new(Check {
                last: Instant::now(),
                seen,
            }),
        }
    }

    /// The certificate being served now, if one has loaded.
    pub fn current(&self) -> Option<Arc<CertifiedKey>> {
        self.current.read().expect("certificate lock").clone()
    }

    /// Whether a certificate is being served.
    pub fn is_loaded(&self) -> bool {
        self.current.read().expect("certificate lock").is_some()
    }

    /// Looks at the files now (whatever the interval) and reloads them if they changed.
    /// Returns whether a new certificate is now served.
    pub fn reload_if_changed(&self) -> bool {
        match self.check.lock() {
            Ok(mut check) => self.check_files(&mut check),
            Err(_) => false,
        }
    }

    /// The throttled form used on every handshake: a handshake that finds another one already
    /// checking does not wait for it.
    fn maybe_reload(&self) {
        let Ok(mut check) = self.check.try_lock() else {
            return;
        };
        if check.last.elapsed() >= self.interval {
            self.check_files(&mut check);
        }
    }

    fn check_files(&self, check: &mut Check) -> bool {
        check.last = Instant::now();
        // Stamps are taken before reading, so a write racing the read is seen next time.
        let now = (stamp(&self.cert_path), stamp(&self.key_path));
        if now == check.seen {
            return false;
        }
        check.seen = now;
        match load(&self.cert_path, &self.key_path, &self.provider) {
            Ok(key) => {
                *self.current.write().expect("certificate lock") = Some(Arc::new(key));
                tracing::info!(cert = %self.cert_path.display(), "loaded the serving certificate");
                true
            }
            Err(e) => {
                tracing::warn!(cert = %self.cert_path.display(), "keeping the previous serving certificate: {e:#}");
                false
            }
        }
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.maybe_reload();
        self.current()
    }
}

fn load(
    cert_path: &Path,
    key_path: &Path,
    provider: &CryptoProvider,
) -> anyhow::Result<CertifiedKey> {
    let chain = CertificateDer::pem_file_iter(cert_path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .with_context(|| format!("reading {}", cert_path.display()))?;
    anyhow::ensure!(
        !chain.is_empty(),
        "{} holds no certificate",
        cert_path.display()
    );
    let key = PrivateKeyDer::from_pem_file(key_path)
        .with_context(|| format!("reading {}", key_path.display()))?;
    CertifiedKey::from_der(chain, key, provider).with_context(|| {
        format!(
            "{} and {} do not form a usable certificate",
            cert_path.display(),
            key_path.display()
        )
    })
}
