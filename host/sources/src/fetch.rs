//! Getting a plugin's component bytes from its source, and checking them.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;

use crate::config::{KeySource, PluginEntry, SignaturePolicy, Source};
use crate::{http, oci};

/// The largest component accepted (after decompression): a guard against gzip bombs.
pub const MAX_COMPONENT_BYTES: usize = 32 * 1024 * 1024;

/// Fetches the entry's component and verifies its digest. `namespace` is the controller's.
pub async fn fetch(
    entry: &PluginEntry,
    client: &kube::Client,
    namespace: &str,
) -> Result<Vec<u8>, String> {
    fetch_with_roots(entry, client, namespace, &[]).await
}

/// Where `file://` sources may be read: regular files under one directory, or none at all.
#[derive(Debug, Clone, Copy, Default)]
pub struct FileSources<'a>(pub Option<&'a Path>);

/// [`fetch`], trusting `extra_roots` besides the public web PKI for `https://` sources.
pub async fn fetch_with_roots(
    entry: &PluginEntry,
    client: &kube::Client,
    namespace: &str,
    extra_roots: &[rustls::pki_types::CertificateDer<'static>],
) -> Result<Vec<u8>, String> {
    let bytes = fetch_with_origin(
        entry,
        client,
        namespace,
        extra_roots,
        FileSources(None),
        &Default::default(),
    )
    .await?
    .bytes;
    verify(entry, &bytes)?;
    Ok(bytes)
}

/// Where a registry artifact came from: what the plugin's status shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The digest of the manifest the component was taken from.
    pub digest: String,
    /// The signature verified, when the entry requires one.
    pub signature: Option<oci::Verified>,
}

/// A fetched component (decompressed, its digest not checked yet) and, for `oci://`, its
/// origin.
pub struct Fetched {
    pub bytes: Vec<u8>,
    pub origin: Option<Origin>,
}

/// The entry's component, decompressed, its digest not checked yet (see [`verify`]), with the
/// origin of a registry artifact. A signature counts only by a key of the entry's key source
/// whose fingerprint is in `trusted` (when not empty: the cluster admin's pin).
pub async fn fetch_with_origin(
    entry: &PluginEntry,
    client: &kube::Client,
    namespace: &str,
    extra_roots: &[rustls::pki_types::CertificateDer<'static>],
    files: FileSources<'_>,
    trusted: &BTreeSet<String>,
) -> Result<Fetched, String> {
    let mut origin = None;
    let bytes = match &entry.source {
        // Built into the host: the registry takes it from its [`crate::builtins::Builtins`].
        Source::Builtin(name) => {
            return Err(format!(
                "built-in plugin {name:?} is part of the host, not fetched"
            ));
        }
        Source::ConfigMap { name, key } => {
            let (cm, what) = read_required::<ConfigMap>(client, namespace, name, "").await?;
            let data = cm
                .binary_data
                .and_then(|mut d| d.remove(key))
                .ok_or_else(|| format!("{what} has no binaryData key {key:?}"))?;
            decompress(data.0)?
        }
        Source::File(path) => decompress(read_file_source(path, files)?)?,
        Source::Https(url) => decompress(https_get(url, extra_roots).await?)?,
        Source::Oci(reference) => {
            let pulled =
                oci_pull(entry, reference, client, namespace, extra_roots, trusted).await?;
            origin = Some(Origin {
                digest: pulled.digest,
                signature: pulled.signature,
            });
            decompress(pulled.component)?
        }
    };
    Ok(Fetched { bytes, origin })
}

use http::Roots;

/// Downloads `url` over HTTPS (public web PKI plus `extra_roots`), at most
/// [`MAX_COMPONENT_BYTES`].
pub async fn https_get(url: &str, extra_roots: Roots<'_>) -> Result<Vec<u8>, String> {
    let response = http::send(
        ::http::Method::GET,
        url,
        ::http::HeaderMap::new(),
        Default::default(),
        extra_roots,
        MAX_COMPONENT_BYTES + 1,
    )
    .await?;
    if !response.status.is_success() {
        return Err(format!("GET {}: {}", response.url, response.describe()));
    }
    Ok(response.body.to_vec())
}

/// Pulls the entry's `oci://` component: with the credentials of its `pullSecret` and, when it
/// requires a signature, only a manifest signed by one of its trusted keys.
async fn oci_pull(
    entry: &PluginEntry,
    text: &str,
    client: &kube::Client,
    namespace: &str,
    extra_roots: Roots<'_>,
    trusted: &BTreeSet<String>,
) -> Result<oci::Pulled, String> {
    let reference = oci::Reference::parse(text)?;
    let credentials = match &entry.pull_secret {
        Some(secret) => Some(pull_secret(client, namespace, secret, &reference.registry).await?),
        None => None,
    };
    let keys = match &entry.signature {
        Some(policy) => Some(
            trusted_keys(client, namespace, policy, trusted)
                .await
                .map_err(|e| e.to_string())?,
        ),
        None => None,
    };
    let mut session = oci::Session::new(&reference, oci::Access::Pull, credentials, extra_roots);
    let pulled = oci::pull(
        &mut session,
        &reference,
        keys.as_deref(),
        MAX_COMPONENT_BYTES,
    )
    .await
    .map_err(|m| format!("{reference}: {m}"))?;
    if let Some(signer) = pulled.signature.as_ref().map(|s| &s.signed_by) {
        tracing::info!(
            plugin = entry.name,
            digest = pulled.digest,
            "{reference}: signature verified, signed by {signer}"
        );
    }
    Ok(pulled)
}

/// The credentials for `registry` in the `kubernetes.io/dockerconfigjson` Secret `name`.
async fn pull_secret(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    registry: &str,
) -> Result<(oci::Credentials, String), String> {
    let (secret, what) =
        read_required::<Secret>(client, namespace, name, "the pullSecret ").await?;
    let mut data = secret.data.unwrap_or_default();
    // The legacy kubernetes.io/dockercfg format is the "auths" mapping alone.
    let config = match (data.remove(".dockerconfigjson"), data.remove(".dockercfg")) {
        (Some(config), _) => config.0,
        (None, Some(legacy)) => {
            let auths: serde_json::Value = serde_json::from_slice(&legacy.0)
                .map_err(|e| format!("the pullSecret {what}: .dockercfg is not JSON: {e}"))?;
            serde_json::json!({ "auths": auths })
                .to_string()
                .into_bytes()
        }
        (None, None) => {
            return Err(format!(
                "the pullSecret {what} is not of type kubernetes.io/dockerconfigjson (no .dockerconfigjson key)"
            ));
        }
    };
    let credentials = oci::auth::from_docker_config(&config, registry)
        .map_err(|m| format!("the pullSecret {what}: {m}"))?
        .ok_or_else(|| {
            format!(
                "the pullSecret {what} has no credentials for registry {registry} (it has: {})",
                oci::auth::registries_in(&config).join(", ")
            )
        })?;
    Ok((credentials, what))
}

/// Object `name` of kind `K` in `namespace`, read through the API, and `"<Kind> <ns>/<name>"`
/// for messages; `role` (with a trailing space, or empty) says what the entry uses it for.
async fn read_required<K>(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    role: &str,
) -> Result<(K, String), String>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let (object, what) = read_optional::<K>(client, namespace, name, role).await?;
    let object = object.ok_or_else(|| format!("{role}{what} does not exist"))?;
    Ok((object, what))
}

/// [`read_required`], an absent object being `None` rather than an error.
async fn read_optional<K>(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    role: &str,
) -> Result<(Option<K>, String), String>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let what = format!("{} {namespace}/{name}", K::kind(&()));
    let object = Api::<K>::namespaced(client.clone(), namespace)
        .get_opt(name)
        .await
        .map_err(|e| format!("reading {role}{what}: {e}"))?;
    Ok((object, what))
}

/// Why an entry's trusted keys are not there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeysError {
    /// They could not be read (the API failed): nothing is known about them.
    Unavailable(String),
    /// They were read and hold no key that counts: nothing it signed is trusted.
    Untrusted(String),
}

impl std::fmt::Display for KeysError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unavailable(m) | Self::Untrusted(m) => f.write_str(m),
        }
    }
}

/// Every public key in the ConfigMap or Secret the entry's signature policy names (each data
/// key holds one or more PEM public keys, named after the key) whose fingerprint `pinned`
/// lists, when it lists any.
pub async fn trusted_keys(
    client: &kube::Client,
    namespace: &str,
    policy: &SignaturePolicy,
    pinned: &BTreeSet<String>,
) -> Result<Vec<oci::PublicKey>, KeysError> {
    const ROLE: &str = "the signature keys ";
    let absent = |what: &str| KeysError::Untrusted(format!("{ROLE}{what} does not exist"));
    let (what, data): (String, Vec<(String, Vec<u8>)>) = match &policy.public_keys {
        KeySource::ConfigMap(name) => {
            let (cm, what) = read_optional::<ConfigMap>(client, namespace, name, ROLE)
                .await
                .map_err(KeysError::Unavailable)?;
            let data = cm.ok_or_else(|| absent(&what))?.data.unwrap_or_default();
            (
                what,
                data.into_iter().map(|(k, v)| (k, v.into_bytes())).collect(),
            )
        }
        KeySource::Secret(name) => {
            let (secret, what) = read_optional::<Secret>(client, namespace, name, ROLE)
                .await
                .map_err(KeysError::Unavailable)?;
            let data = secret
                .ok_or_else(|| absent(&what))?
                .data
                .unwrap_or_default();
            (what, data.into_iter().map(|(k, v)| (k, v.0)).collect())
        }
    };
    let mut keys = Vec::new();
    for (name, pem) in data {
        keys.extend(
            oci::PublicKey::parse_all(&name, &pem)
                .map_err(|m| KeysError::Untrusted(format!("the signature keys {what}: {m}")))?,
        );
    }
    if keys.is_empty() {
        return Err(KeysError::Untrusted(format!(
            "the signature keys {what} hold no public key"
        )));
    }
    if !pinned.is_empty() {
        let found: Vec<String> = keys.iter().map(oci::PublicKey::fingerprint).collect();
        keys.retain(|k| pinned.contains(&k.fingerprint()));
        if keys.is_empty() {
            return Err(KeysError::Untrusted(format!(
                "the signature keys {what} hold no key this cluster trusts (they hold {}; --plugin-trusted-keys lists {})",
                found.join(", "),
                pinned.iter().cloned().collect::<Vec<_>>().join(", ")
            )));
        }
    }
    Ok(keys)
}

/// A `file://` source: a regular file under the allowed directory, read no further than
/// [`MAX_COMPONENT_BYTES`] (whoever edits the plugins ConfigMap must not read the container's
/// files, nor make the controller read `/dev/zero` until it runs out of memory).
pub fn read_file_source(path: &Path, files: FileSources<'_>) -> Result<Vec<u8>, String> {
    let shown = path.display();
    let Some(dir) = files.0 else {
        return Err(format!(
            "file://{shown} is not read: file:// sources are off (start the controller with \
             --plugin-file-dir=<directory> to read files under that directory)"
        ));
    };
    let dir = std::fs::canonicalize(dir)
        .map_err(|e| format!("--plugin-file-dir {}: {e}", dir.display()))?;
    let real = std::fs::canonicalize(path).map_err(|e| format!("reading {shown}: {e}"))?;
    if !real.starts_with(&dir) {
        return Err(format!(
            "file://{shown} is not read: it is not under --plugin-file-dir {}",
            dir.display()
        ));
    }
    let file = std::fs::File::open(&real).map_err(|e| format!("reading {shown}: {e}"))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("reading {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("file://{shown} is not read: not a regular file"));
    }
    let mut data = Vec::new();
    file.take(MAX_COMPONENT_BYTES as u64 + 1)
        .read_to_end(&mut data)
        .map_err(|e| format!("reading {shown}: {e}"))?;
    check_size(data)
}

/// Gunzips `data` when it is gzip, within [`MAX_COMPONENT_BYTES`].
pub fn decompress(data: Vec<u8>) -> Result<Vec<u8>, String> {
    if !data.starts_with(&[0x1f, 0x8b]) {
        return check_size(data);
    }
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&data[..])
        .take(MAX_COMPONENT_BYTES as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("not valid gzip: {e}"))?;
    check_size(out)
}

fn check_size(data: Vec<u8>) -> Result<Vec<u8>, String> {
    if data.len() > MAX_COMPONENT_BYTES {
        return Err(format!(
            "the component is larger than {} MiB",
            MAX_COMPONENT_BYTES / (1024 * 1024)
        ));
    }
    Ok(data)
}

/// Checks the component's sha256 against the configured one (built-ins may omit it).
pub fn verify(entry: &PluginEntry, bytes: &[u8]) -> Result<(), String> {
    verify_digest(entry, &hex::encode(odh_crypto::sha256(bytes)))
}

/// [`verify`] of bytes whose hex sha256 is `actual`.
pub fn verify_digest(entry: &PluginEntry, actual: &str) -> Result<(), String> {
    match &entry.sha256 {
        Some(expected) if *expected != actual => Err(format!(
            "digest mismatch: the configuration says sha256 {expected}, the component is {actual}"
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtins::Builtins;
    use crate::config::RegistryConfig;
    use std::io::Write;

    #[test]
    fn file_sources_are_regular_files_under_the_allowed_directory_read_bounded() {
        let base = std::env::temp_dir().join(format!("odh-file-sources-{}", std::process::id()));
        let allowed = base.join("plugins");
        std::fs::create_dir_all(&allowed).unwrap();
        let inside = allowed.join("p.wasm");
        std::fs::write(&inside, b"\0asm component").unwrap();
        let outside = base.join("secret.txt");
        std::fs::write(&outside, b"not yours").unwrap();
        let files = FileSources(Some(&allowed));

        assert_eq!(
            read_file_source(&inside, files).unwrap(),
            b"\0asm component"
        );
        let off = read_file_source(&inside, FileSources(None)).unwrap_err();
        assert!(
            off.contains("file:// sources are off") && off.contains("--plugin-file-dir"),
            "{off}"
        );
        let err = read_file_source(&outside, files).unwrap_err();
        assert!(err.contains("not under --plugin-file-dir"), "{err}");
        let err = read_file_source(&allowed.join("../secret.txt"), files).unwrap_err();
        assert!(
            err.contains("not under --plugin-file-dir"),
            "dot-dot: {err}"
        );
        #[cfg(unix)]
        {
            let link = allowed.join("link.wasm");
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(&outside, &link).unwrap();
            let err = read_file_source(&link, files).unwrap_err();
            assert!(
                err.contains("not under --plugin-file-dir"),
                "symlink: {err}"
            );
        }
        let err = read_file_source(&allowed, files).unwrap_err();
        assert!(err.contains("not a regular file"), "{err}");
        // A device is refused before a byte is read, even where it is allowed.
        let err = read_file_source(Path::new("/dev/zero"), FileSources(Some(Path::new("/dev"))))
            .unwrap_err();
        assert!(err.contains("not a regular file"), "{err}");
        let big = allowed.join("big.wasm");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(MAX_COMPONENT_BYTES as u64 + 4096)
            .unwrap();
        let err = read_file_source(&big, files).unwrap_err();
        assert!(err.contains("larger than"), "{err}");
        std::fs::remove_dir_all(&base).unwrap();
    }

    fn entry(sha: Option<&str>) -> PluginEntry {
        let mut e = RegistryConfig::parse("plugins: {p: {source: builtin}}", &Builtins::default())
            .unwrap()
            .plugins
            .remove("p")
            .unwrap();
        e.sha256 = sha.map(str::to_string);
        e
    }

    #[test]
    fn gzip_is_transparent_and_plain_bytes_pass_through() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(b"\0asm component").unwrap();
        assert_eq!(
            decompress(gz.finish().unwrap()).unwrap(),
            b"\0asm component"
        );
        assert_eq!(decompress(b"\0asm".to_vec()).unwrap(), b"\0asm");
        assert!(
            decompress(vec![0x1f, 0x8b, 0, 1, 2])
                .unwrap_err()
                .contains("not valid gzip")
        );
    }

    #[test]
    fn a_gzip_bomb_is_refused() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let zeros = vec![0u8; 1024 * 1024];
        for _ in 0..(MAX_COMPONENT_BYTES / zeros.len() + 1) {
            gz.write_all(&zeros).unwrap();
        }
        assert!(
            decompress(gz.finish().unwrap())
                .unwrap_err()
                .contains("larger than")
        );
    }

    #[test]
    fn digests_are_checked() {
        let bytes = b"component";
        // sha2 as an independent reference for the FIPS build's AWS-LC digest.
        use sha2::{Digest, Sha256};
        let good = hex::encode(Sha256::digest(bytes));
        assert!(verify(&entry(Some(&good)), bytes).is_ok());
        assert!(
            verify(&entry(None), bytes).is_ok(),
            "built-ins may omit the digest"
        );
        let err = verify(&entry(Some(&"0".repeat(64))), bytes).unwrap_err();
        assert!(
            err.contains("digest mismatch") && err.contains(&good),
            "{err}"
        );
    }
}
