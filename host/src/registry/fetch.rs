//! Getting a plugin's component bytes from its source, and checking them.

use std::io::Read;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use sha2::{Digest, Sha256};

use super::config::{PluginEntry, Source};
use crate::builtins;

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

/// [`fetch`], trusting `extra_roots` besides the public web PKI for `https://` sources.
pub async fn fetch_with_roots(
    entry: &PluginEntry,
    client: &kube::Client,
    namespace: &str,
    extra_roots: &[rustls::pki_types::CertificateDer<'static>],
) -> Result<Vec<u8>, String> {
    let bytes = fetch_unverified(entry, client, namespace, extra_roots).await?;
    verify(entry, &bytes)?;
    Ok(bytes)
}

/// The entry's component, decompressed, its digest not checked yet (see [`verify`]).
pub async fn fetch_unverified(
    entry: &PluginEntry,
    client: &kube::Client,
    namespace: &str,
    extra_roots: &[rustls::pki_types::CertificateDer<'static>],
) -> Result<Vec<u8>, String> {
    let bytes = match &entry.source {
        Source::Builtin(name) => builtins::component(name)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| format!("there is no built-in plugin {name:?}"))?,
        Source::ConfigMap { name, key } => {
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
            let cm = api
                .get_opt(name)
                .await
                .map_err(|e| format!("reading ConfigMap {namespace}/{name}: {e}"))?
                .ok_or_else(|| format!("ConfigMap {namespace}/{name} does not exist"))?;
            let data = cm
                .binary_data
                .and_then(|mut d| d.remove(key))
                .ok_or_else(|| {
                    format!("ConfigMap {namespace}/{name} has no binaryData key {key:?}")
                })?;
            decompress(data.0)?
        }
        Source::File(path) => {
            let data =
                std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
            decompress(data)?
        }
        Source::Https(url) => decompress(https_get(url, extra_roots).await?)?,
        Source::Oci(reference) => decompress(oci_pull(reference, extra_roots).await?)?,
    };
    Ok(bytes)
}

/// How long one download may take.
const HTTPS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

type Roots<'a> = &'a [rustls::pki_types::CertificateDer<'static>];

/// Downloads `url` over HTTPS (public web PKI plus `extra_roots`), at most
/// [`MAX_COMPONENT_BYTES`].
pub async fn https_get(url: &str, extra_roots: Roots<'_>) -> Result<Vec<u8>, String> {
    get(url, None, extra_roots).await
}

/// GET `url` with an optional `Accept` header. `http://` is allowed for loopback hosts only
/// (a registry on the same machine, as container tools allow); anything else must be HTTPS.
async fn get(url: &str, accept: Option<&str>, extra_roots: Roots<'_>) -> Result<Vec<u8>, String> {
    tokio::time::timeout(HTTPS_TIMEOUT, get_inner(url, accept, extra_roots))
        .await
        .map_err(|_| format!("GET {url}: no answer within {HTTPS_TIMEOUT:?}"))?
}

fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

async fn get_inner(
    url: &str,
    accept: Option<&str>,
    extra_roots: Roots<'_>,
) -> Result<Vec<u8>, String> {
    use http_body_util::{BodyExt, Empty, Limited};
    let fail = |e: &dyn std::fmt::Display| format!("GET {url}: {e}");
    let uri: http::Uri = url.parse().map_err(|e| fail(&e))?;
    let host = uri.host().ok_or_else(|| fail(&"no host"))?.to_string();
    let plain = uri.scheme_str() == Some("http");
    if plain && !is_loopback(&host) {
        return Err(fail(&"plain http is only allowed to loopback hosts"));
    }
    let port = uri.port_u16().unwrap_or(if plain { 80 } else { 443 });
    let bare_host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let tcp = tokio::net::TcpStream::connect((bare_host.as_str(), port))
        .await
        .map_err(|e| fail(&e))?;
    let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let mut request = http::Request::get(path).header(
        http::header::HOST,
        uri.authority().map(|a| a.as_str()).unwrap_or(&host),
    );
    if let Some(accept) = accept {
        request = request.header(http::header::ACCEPT, accept);
    }
    let request = request
        .body(Empty::<hyper::body::Bytes>::new())
        .map_err(|e| fail(&e))?;
    let response = if plain {
        let io = hyper_util::rt::TokioIo::new(tcp);
        let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(|e| fail(&e))?;
        tokio::spawn(conn);
        sender.send_request(request).await.map_err(|e| fail(&e))?
    } else {
        let tls = tls_connect(&bare_host, tcp, extra_roots)
            .await
            .map_err(|e| fail(&e))?;
        let io = hyper_util::rt::TokioIo::new(tls);
        let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(|e| fail(&e))?;
        tokio::spawn(conn);
        sender.send_request(request).await.map_err(|e| fail(&e))?
    };
    if !response.status().is_success() {
        return Err(fail(&response.status()));
    }
    let body = Limited::new(response.into_body(), MAX_COMPONENT_BYTES + 1)
        .collect()
        .await
        .map_err(|e| fail(&e))?
        .to_bytes();
    Ok(body.to_vec())
}

async fn tls_connect(
    host: &str,
    tcp: tokio::net::TcpStream,
    extra_roots: Roots<'_>,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, String> {
    let mut roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    for cert in extra_roots {
        roots.add(cert.clone()).map_err(|e| e.to_string())?;
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let server_name =
        rustls::pki_types::ServerName::try_from(host.to_string()).map_err(|e| e.to_string())?;
    tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
        .connect(server_name, tcp)
        .await
        .map_err(|e| e.to_string())
}

/// Pulls a WebAssembly component published as an OCI artifact: `<registry>/<repository>:<tag>`
/// or `…@sha256:<digest>`. The manifest's layer of media type `application/wasm` (or its only
/// layer) is the component; its digest is checked. Anonymous pulls only.
pub async fn oci_pull(reference: &str, extra_roots: Roots<'_>) -> Result<Vec<u8>, String> {
    let fail = |m: String| format!("oci://{reference}: {m}");
    let (registry, rest) = reference
        .split_once('/')
        .ok_or_else(|| fail("expected <registry>/<repository>:<tag>".into()))?;
    let (repository, tag_or_digest) = match rest.split_once('@') {
        Some((repo, digest)) => (repo, digest),
        None => rest.rsplit_once(':').unwrap_or((rest, "latest")),
    };
    let registry_host = registry.rsplit_once(':').map_or(registry, |(h, _)| h);
    let scheme = if is_loopback(registry_host) {
        "http"
    } else {
        "https"
    };
    let base = format!("{scheme}://{registry}/v2/{repository}");
    let accept = "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";
    let manifest = get(
        &format!("{base}/manifests/{tag_or_digest}"),
        Some(accept),
        extra_roots,
    )
    .await?;
    let manifest: serde_json::Value = serde_json::from_slice(&manifest)
        .map_err(|e| fail(format!("the manifest is not JSON: {e}")))?;
    let layers = manifest["layers"].as_array().cloned().unwrap_or_default();
    let wasm_layer = |l: &&serde_json::Value| {
        matches!(
            l["mediaType"].as_str(),
            Some("application/wasm" | "application/vnd.wasm.content.layer.v1+wasm")
        )
    };
    let layer = layers
        .iter()
        .find(wasm_layer)
        .or_else(|| (layers.len() == 1).then(|| &layers[0]))
        .ok_or_else(|| {
            fail(format!(
                "no WebAssembly layer among {} layers",
                layers.len()
            ))
        })?;
    let digest = layer["digest"]
        .as_str()
        .ok_or_else(|| fail("a layer without a digest".into()))?;
    let expected = digest
        .strip_prefix("sha256:")
        .ok_or_else(|| fail(format!("unsupported digest {digest}")))?;
    let blob = get(&format!("{base}/blobs/{digest}"), None, extra_roots).await?;
    if hex::encode(Sha256::digest(&blob)) != expected {
        return Err(fail(format!("blob {digest} does not match its digest")));
    }
    Ok(blob)
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
    let actual = hex::encode(Sha256::digest(bytes));
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
    use crate::registry::config::RegistryConfig;
    use std::io::Write;

    fn entry(sha: Option<&str>) -> PluginEntry {
        let mut e = RegistryConfig::parse("plugins: {p: {source: builtin}}")
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
