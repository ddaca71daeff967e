//! A TLS server's certificate: `tls.crt` and `tls.key` from a directory, reloaded when the
//! files change (checked at most once per interval, on a handshake and by the server's own
//! ticker), without a restart. A change that does not load (unreadable, half-written, key and
//! certificate not matching) keeps the last good certificate and is logged. Until a first
//! certificate loads (a Secret volume not written yet) handshakes fail and the server is not
//! ready.
//!
//! The files are looked at through their paths, so a Kubernetes Secret volume's atomic
//! `..data` symlink swap is a change like a rewrite. [`ReloadingCert::debounced`] (the
//! model-serving-api's 250 ms, upstream's watcher debounce) loads a change only once the files
//! have stayed the same for one interval, so a pair being written is not loaded half-way.

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

/// The model-serving-api's interval: upstream reloads 250 ms after the last change it sees.
pub const DEBOUNCE_INTERVAL: Duration = Duration::from_millis(250);

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
    seen: Stamps,
    /// Debounced: stamps that differ from `seen`, first seen at the previous check.
    pending: Option<Stamps>,
}

type Stamps = (Option<FileStamp>, Option<FileStamp>);

/// A [`ResolvesServerCert`] serving the certificate in a directory and following its changes.
#[derive(Debug)]
pub struct ReloadingCert {
    cert_path: PathBuf,
    key_path: PathBuf,
    provider: Arc<CryptoProvider>,
    interval: Duration,
    debounce: bool,
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
            debounce: false,
            current: RwLock::new(key),
            check: Mutex::new(Check {
                last: Instant::now(),
                seen,
                pending: None,
            }),
        }
    }

    /// A self-signed certificate for `names`, made in memory and never reloaded: what
    /// controller-runtime's secure metrics server serves without a certificate directory.
    pub fn self_signed(names: &[String], provider: Arc<CryptoProvider>) -> anyhow::Result<Self> {
        let key = rcgen::KeyPair::generate().context("generating a key")?;
        let cert = rcgen::CertificateParams::new(names.to_vec())
            .context("certificate names")?
            .self_signed(&key)
            .context("self-signing")?;
        let der_key = PrivateKeyDer::try_from(key.serialize_der())
            .map_err(|e| anyhow::anyhow!("the generated key: {e}"))?;
        let certified = CertifiedKey::from_der(vec![cert.der().clone()], der_key, &provider)
            .context("the generated certificate")?;
        Ok(Self {
            cert_path: PathBuf::new(),
            key_path: PathBuf::new(),
            provider,
            interval: Duration::MAX,
            debounce: false,
            current: RwLock::new(Some(Arc::new(certified))),
            check: Mutex::new(Check {
                last: Instant::now(),
                seen: (None, None),
                pending: None,
            }),
        })
    }

    /// Like [`ReloadingCert::with_interval`], but the first pair must load: upstream's server
    /// does not start without its key pair.
    pub fn try_new(
        cert_dir: &Path,
        provider: Arc<CryptoProvider>,
        interval: Duration,
    ) -> anyhow::Result<Self> {
        let cert_path = cert_dir.join(CERT_FILE);
        let key_path = cert_dir.join(KEY_FILE);
        load(&cert_path, &key_path, &provider)?;
        Ok(Self::with_interval(cert_dir, provider, interval))
    }

    /// Loads a change only after the files stayed unchanged for one interval (each change
    /// seen restarts the wait), as upstream's debounced watcher does.
    pub fn debounced(mut self) -> Self {
        self.debounce = true;
        self
    }

    /// How often the files are looked at.
    pub fn interval(&self) -> Duration {
        self.interval
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
            check.pending = None;
            return false;
        }
        if self.debounce && check.pending.as_ref() != Some(&now) {
            // Changed since the last look: wait until it holds still for an interval.
            check.pending = Some(now);
            return false;
        }
        check.pending = None;
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

/// Reads the pair, counted in `certwatcher_read_certificate_total` (and `_errors_total`) as
/// controller-runtime's certificate watcher counts its reads.
fn load(
    cert_path: &Path,
    key_path: &Path,
    provider: &CryptoProvider,
) -> anyhow::Result<CertifiedKey> {
    let read = read_pair(cert_path, key_path, provider);
    odh_host_metrics::Metrics::global().certificate_read(read.is_ok());
    read
}

fn read_pair(
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

#[cfg(test)]
mod tests {
    //! The certificate-rotation scenarios CR-1..CR-3 of the model-serving-api: a Kubernetes Secret volume layout,
    //! `..data` symlink swaps, and a mismatched pair that must not replace the served one.

    use super::*;
    use std::os::unix::fs::symlink;

    /// A self-signed certificate for 127.0.0.1 with serial `serial`: (cert PEM, key PEM).
    fn cert_with_serial(serial: u8) -> (String, String) {
        let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
        params.serial_number = Some(rcgen::SerialNumber::from_slice(&[serial]));
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    /// One DER element: (tag, contents, rest).
    fn der(input: &[u8]) -> (u8, &[u8], &[u8]) {
        let (tag, first) = (input[0], input[1]);
        let (len, header) = if first < 0x80 {
            (first as usize, 2)
        } else {
            let n = (first & 0x7f) as usize;
            let len = input[2..2 + n]
                .iter()
                .fold(0usize, |acc, b| (acc << 8) | *b as usize);
            (len, 2 + n)
        };
        (tag, &input[header..header + len], &input[header + len..])
    }

    /// The serial number of an X.509 certificate (DER), as its integer bytes.
    fn serial_of(cert: &CertificateDer<'_>) -> Vec<u8> {
        let (_, certificate, _) = der(cert.as_ref());
        let (_, tbs, _) = der(certificate);
        let (tag, version, rest) = der(tbs);
        let rest = if tag == 0xa0 {
            rest
        } else {
            let _ = version;
            tbs
        };
        let (tag, serial, _) = der(rest);
        assert_eq!(tag, 0x02, "an INTEGER serial");
        serial.to_vec()
    }

    fn served_serial(cert: &ReloadingCert) -> Vec<u8> {
        serial_of(&cert.current().expect("a certificate").cert[0])
    }

    /// A directory laid out as the kubelet writes a Secret volume.
    struct SecretVolume {
        dir: PathBuf,
        generation: u32,
    }

    impl SecretVolume {
        fn new(cert: &(String, String)) -> Self {
            let dir = std::env::temp_dir().join(format!(
                "cr-secret-volume-{}-{}",
                std::process::id(),
                SystemTime::now()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos()
            ));
            std::fs::create_dir_all(&dir).unwrap();
            let mut volume = Self { dir, generation: 0 };
            volume.swap_to(cert);
            symlink("..data/tls.crt", volume.dir.join(CERT_FILE)).unwrap();
            symlink("..data/tls.key", volume.dir.join(KEY_FILE)).unwrap();
            volume
        }

        /// Writes a new timestamped directory and atomically points `..data` at it, then
        /// removes the previous one, as the kubelet's atomic writer does.
        fn swap_to(&mut self, (cert, key): &(String, String)) {
            let old = format!("..gen_{}", self.generation);
            self.generation += 1;
            let new = format!("..gen_{}", self.generation);
            std::fs::create_dir_all(self.dir.join(&new)).unwrap();
            std::fs::write(self.dir.join(&new).join(CERT_FILE), cert).unwrap();
            std::fs::write(self.dir.join(&new).join(KEY_FILE), key).unwrap();
            symlink(&new, self.dir.join("..data_tmp")).unwrap();
            std::fs::rename(self.dir.join("..data_tmp"), self.dir.join("..data")).unwrap();
            let _ = std::fs::remove_dir_all(self.dir.join(old));
        }
    }

    impl Drop for SecretVolume {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    fn reloader(volume: &SecretVolume) -> ReloadingCert {
        ReloadingCert::try_new(
            &volume.dir,
            crate::tls::crypto_provider(),
            DEBOUNCE_INTERVAL,
        )
        .unwrap()
        .debounced()
    }

    /// Checks the files every 50 ms (what the server's ticker and handshakes do) until the
    /// served serial is `serial`; returns how long it took.
    fn wait_for_serial(cert: &ReloadingCert, serial: u8, within: Duration) -> Duration {
        let start = Instant::now();
        loop {
            cert.maybe_reload();
            if served_serial(cert) == [serial] {
                return start.elapsed();
            }
            assert!(
                start.elapsed() < within,
                "serial {serial} not served within {within:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    #[test]
    fn cr_1_kubernetes_secret_volume_loads() {
        let volume = SecretVolume::new(&cert_with_serial(1));
        let cert = reloader(&volume);
        assert_eq!(served_serial(&cert), [1]);
        assert_eq!(cert.interval(), Duration::from_millis(250));
    }

    #[test]
    fn cr_2_data_symlink_swaps_are_each_picked_up() {
        let mut volume = SecretVolume::new(&cert_with_serial(1));
        let cert = reloader(&volume);
        for serial in 2..=5 {
            volume.swap_to(&cert_with_serial(serial));
            let took = wait_for_serial(&cert, serial, Duration::from_secs(10));
            assert!(
                took < Duration::from_secs(1),
                "serial {serial} took {took:?}"
            );
        }
        assert_eq!(served_serial(&cert), [5]);
    }

    /// `certwatcher_read_certificate_total` and `_errors_total` (process-wide: other tests
    /// read too, so only growth is checked).
    fn certificate_reads() -> (f64, f64) {
        let text = odh_host_metrics::Metrics::global().render();
        let value = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
                .unwrap_or(0.0)
        };
        (
            value("certwatcher_read_certificate_total"),
            value("certwatcher_read_certificate_errors_total"),
        )
    }

    #[test]
    fn cr_3_a_mismatched_pair_keeps_the_served_certificate() {
        let mut volume = SecretVolume::new(&cert_with_serial(1));
        let (reads, errors) = certificate_reads();
        let cert = reloader(&volume);
        let (other_cert, _) = cert_with_serial(9);
        let (_, other_key) = cert_with_serial(8);
        volume.swap_to(&(other_cert, other_key));
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(2) {
            cert.maybe_reload();
            assert_eq!(served_serial(&cert), [1], "after {:?}", start.elapsed());
            std::thread::sleep(Duration::from_millis(50));
        }
        let (reads_after, errors_after) = certificate_reads();
        assert!(
            reads_after >= reads + 2.0 && errors_after > errors,
            "the good read and the bad one are counted: {reads}/{errors} -> {reads_after}/{errors_after}"
        );
        // A good pair afterwards is picked up.
        volume.swap_to(&cert_with_serial(6));
        wait_for_serial(&cert, 6, Duration::from_secs(10));
    }

    #[test]
    fn debounce_waits_for_the_files_to_hold_still() {
        let mut volume = SecretVolume::new(&cert_with_serial(1));
        let cert = ReloadingCert::try_new(
            &volume.dir,
            crate::tls::crypto_provider(),
            Duration::from_millis(10),
        )
        .unwrap()
        .debounced();
        volume.swap_to(&cert_with_serial(2));
        let mut check = cert.check.lock().unwrap();
        assert!(!cert.check_files(&mut check), "first sight: pending");
        assert!(cert.check_files(&mut check), "unchanged since: loaded");
        drop(check);
        assert_eq!(served_serial(&cert), [2]);
        // Undebounced, the first sight loads.
        let plain = ReloadingCert::with_interval(
            &volume.dir,
            crate::tls::crypto_provider(),
            Duration::from_millis(10),
        );
        volume.swap_to(&cert_with_serial(3));
        assert!(plain.reload_if_changed());
        assert_eq!(served_serial(&plain), [3]);
    }

    #[test]
    fn a_missing_pair_fails_try_new() {
        let dir = std::env::temp_dir().join(format!("cr-missing-{}", std::process::id()));
        let Err(err) =
            ReloadingCert::try_new(&dir, crate::tls::crypto_provider(), DEBOUNCE_INTERVAL)
        else {
            panic!("no files, no certificate");
        };
        assert!(format!("{err:#}").contains("tls.crt"), "{err:#}");
    }
}
