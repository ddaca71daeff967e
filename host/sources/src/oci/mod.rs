//! WebAssembly components published as OCI artifacts: pulled (anonymously, or with
//! credentials through Basic or the Bearer token flow), their cosign signatures verified
//! against the admin's keys, and pushed and signed from the CLI.

pub mod auth;
pub mod cosign;

use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use hyper::body::Bytes;
use serde_json::{Value, json};

use crate::http::{self as web, Response, Roots};
pub use auth::Credentials;
pub use cosign::{PublicKey, SigningKey};

/// Media types a manifest is asked for in.
const MANIFEST_TYPES: &str = "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";
const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// Layers that hold the component.
const WASM_LAYER_TYPES: [&str; 2] = [
    "application/wasm",
    "application/vnd.wasm.content.layer.v1+wasm",
];
const WASM_CONFIG_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The largest manifest or signature payload read.
const MAX_METADATA_BYTES: usize = 4 * 1024 * 1024;

/// `<registry>/<repository>[:<tag>][@sha256:<hex>]` (the tag defaults to `latest`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub registry: String,
    pub repository: String,
    pub tag: Option<String>,
    pub digest: Option<String>,
}

impl Reference {
    /// Parses a reference, with or without `oci://`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.strip_prefix("oci://").unwrap_or(text);
        let bad =
            || format!("oci://{text}: expected <registry>/<repository>[:<tag>][@sha256:<digest>]");
        let (registry, rest) = text.split_once('/').ok_or_else(bad)?;
        let (name, digest) = match rest.split_once('@') {
            Some((name, digest)) => {
                let hex = digest.strip_prefix("sha256:").ok_or_else(bad)?;
                if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                    return Err(bad());
                }
                (name, Some(digest.to_ascii_lowercase()))
            }
            None => (rest, None),
        };
        let (repository, tag) = match name.rsplit_once(':') {
            Some((repo, tag)) if !tag.contains('/') => (repo, Some(tag.to_string())),
            _ => (name, None),
        };
        if registry.is_empty()
            || repository.is_empty()
            || tag.as_deref() == Some("")
            || repository.split('/').any(str::is_empty)
        {
            return Err(bad());
        }
        Ok(Self {
            registry: registry.to_string(),
            repository: repository.to_string(),
            tag,
            digest,
        })
    }

    /// `<registry>/<repository>`: what a cosign signature names as its docker-reference.
    pub fn name(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }

    /// What the manifest is fetched by: the digest when pinned, else the tag.
    fn target(&self) -> &str {
        self.digest
            .as_deref()
            .or(self.tag.as_deref())
            .unwrap_or("latest")
    }

    fn host(&self) -> &str {
        match self.registry.rsplit_once(':') {
            Some((host, port)) if port.chars().all(|c| c.is_ascii_digit()) => host,
            _ => &self.registry,
        }
    }
}

impl std::fmt::Display for Reference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "oci://{}", self.name())?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// What a session may do in its repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Pull,
    Push,
}

/// Requests to one repository of one registry, authorizing as the registry asks (once per
/// session, again when it asks again).
pub struct Session<'a> {
    base: String,
    scope: String,
    credentials: Option<(Credentials, String)>,
    roots: Roots<'a>,
    authorization: Option<HeaderValue>,
    /// What to do when the registry asks for credentials and there are none.
    without_credentials: &'static str,
}

impl<'a> Session<'a> {
    /// `credentials` with where they came from (for messages), or `None` for anonymous access.
    /// Plain HTTP is used for a loopback registry only.
    pub fn new(
        reference: &Reference,
        access: Access,
        credentials: Option<(Credentials, String)>,
        roots: Roots<'a>,
    ) -> Self {
        let scheme = if web::is_loopback(reference.host()) {
            "http"
        } else {
            "https"
        };
        let actions = match access {
            Access::Pull => "pull",
            Access::Push => "pull,push",
        };
        // Docker Hub is named docker.io but serves its API elsewhere.
        let api_host = match reference.registry.as_str() {
            "docker.io" | "index.docker.io" => "registry-1.docker.io",
            other => other,
        };
        Self {
            base: format!("{scheme}://{api_host}"),
            scope: format!("repository:{}:{actions}", reference.repository),
            credentials,
            roots,
            authorization: None,
            without_credentials: "name a pullSecret in the plugin's entry",
        }
    }

    /// Replaces the advice given when the registry asks for credentials and there are none
    /// (the CLI's is an option, not a pullSecret).
    pub fn advising(mut self, without_credentials: &'static str) -> Self {
        self.without_credentials = without_credentials;
        self
    }

    fn url(&self, path: &str) -> String {
        if path.starts_with("http://") || path.starts_with("https://") {
            path.to_string()
        } else {
            format!("{}{path}", self.base)
        }
    }

    /// One request (`path` under the registry, or an absolute upload URL it gave); a `401` is
    /// answered by authorizing as its challenge asks and trying once more.
    async fn send(
        &mut self,
        method: Method,
        path: &str,
        headers: HeaderMap,
        body: Bytes,
        limit: usize,
    ) -> Result<Response, String> {
        let url = self.url(path);
        let with_auth = |auth: &Option<HeaderValue>| {
            let mut h = headers.clone();
            if let Some(a) = auth {
                h.insert(header::AUTHORIZATION, a.clone());
            }
            h
        };
        let response = web::send_named_by(
            &self.base,
            method.clone(),
            &url,
            with_auth(&self.authorization),
            body.clone(),
            self.roots,
            limit,
        )
        .await?;
        if response.status != StatusCode::UNAUTHORIZED {
            return Ok(response);
        }
        self.authorize(&response).await?;
        web::send_named_by(
            &self.base,
            method,
            &url,
            with_auth(&self.authorization),
            body,
            self.roots,
            limit,
        )
        .await
    }

    async fn authorize(&mut self, challenged: &Response) -> Result<(), String> {
        let challenge = challenged
            .header(header::WWW_AUTHENTICATE)
            .and_then(auth::parse_challenge)
            .ok_or_else(|| {
                format!(
                    "{}: {} without a Basic or Bearer challenge",
                    challenged.url,
                    challenged.describe()
                )
            })?;
        let value = match challenge {
            auth::Challenge::Basic => match &self.credentials {
                Some((c, _)) => c.basic_header(),
                None => return Err(self.refused(challenged)),
            },
            auth::Challenge::Bearer { realm, service } => {
                let url = auth::token_url(&realm, service.as_deref(), &self.scope);
                let mut headers = HeaderMap::new();
                if let Some((c, _)) = &self.credentials {
                    headers.insert(header::AUTHORIZATION, header_value(&c.basic_header())?);
                }
                // The realm is the registry's choice: judged as such, not as the admin's.
                let answer = web::send_named_by(
                    &self.base,
                    Method::GET,
                    &url,
                    headers,
                    Bytes::new(),
                    self.roots,
                    1 << 20,
                )
                .await?;
                if !answer.status.is_success() {
                    let who = match &self.credentials {
                        Some((_, from)) => format!("the credentials from {from}"),
                        None => format!("an anonymous request ({})", self.without_credentials),
                    };
                    return Err(format!(
                        "the token server {realm} refused {who}: {}",
                        answer.describe()
                    ));
                }
                format!("Bearer {}", auth::token_from(&answer.body)?)
            }
        };
        self.authorization = Some(header_value(&value)?);
        Ok(())
    }

    fn refused(&self, response: &Response) -> String {
        match &self.credentials {
            Some((_, from)) => format!(
                "{}: the registry refused the credentials from {from}: {}",
                response.url,
                response.describe()
            ),
            None => format!(
                "{}: the registry asks for credentials: {} ({})",
                response.url,
                self.without_credentials,
                response.describe()
            ),
        }
    }

    /// `response` if it succeeded, else a message (an authorization failure says whose).
    fn ok(&self, response: Response) -> Result<Response, String> {
        match response.status {
            s if s.is_success() => Ok(response),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Err(self.refused(&response)),
            _ => Err(format!("{}: {}", response.url, response.describe())),
        }
    }

    async fn get(
        &mut self,
        path: &str,
        accept: Option<&str>,
        limit: usize,
    ) -> Result<Response, String> {
        let mut headers = HeaderMap::new();
        if let Some(accept) = accept {
            headers.insert(header::ACCEPT, header_value(accept)?);
        }
        self.send(Method::GET, path, headers, Bytes::new(), limit)
            .await
    }
}

fn header_value(text: &str) -> Result<HeaderValue, String> {
    HeaderValue::from_str(text).map_err(|e| format!("a header value: {e}"))
}

fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(odh_crypto::sha256(bytes)))
}

/// A manifest and its digest (the sha256 of the bytes the registry served).
struct Manifest {
    digest: String,
    value: Value,
}

async fn manifest(
    session: &mut Session<'_>,
    reference: &Reference,
    target: &str,
) -> Result<Option<Manifest>, String> {
    let path = format!("/v2/{}/manifests/{target}", reference.repository);
    let response = session
        .get(&path, Some(MANIFEST_TYPES), MAX_METADATA_BYTES)
        .await?;
    if response.status == StatusCode::NOT_FOUND {
        return Ok(None);
    }
    let response = session.ok(response)?;
    let digest = sha256_digest(&response.body);
    let value: Value = serde_json::from_slice(&response.body)
        .map_err(|e| format!("the manifest {target} is not JSON: {e}"))?;
    if value["manifests"].is_array() {
        return Err(format!(
            "{target} is an image index, not the manifest of a component"
        ));
    }
    Ok(Some(Manifest { digest, value }))
}

/// The manifest `reference` names; a pinned digest must match what was served.
async fn resolve(session: &mut Session<'_>, reference: &Reference) -> Result<Manifest, String> {
    let target = reference.target();
    let found = manifest(session, reference, target)
        .await?
        .ok_or_else(|| format!("no manifest {target} (404 Not Found)"))?;
    if let Some(pinned) = &reference.digest
        && *pinned != found.digest
    {
        return Err(format!("the registry served {} for {pinned}", found.digest));
    }
    Ok(found)
}

/// Downloads blob `digest` and checks it is what its digest says.
async fn blob(
    session: &mut Session<'_>,
    reference: &Reference,
    digest: &str,
    limit: usize,
) -> Result<Vec<u8>, String> {
    if !digest.starts_with("sha256:") {
        return Err(format!("unsupported digest {digest}"));
    }
    let path = format!("/v2/{}/blobs/{digest}", reference.repository);
    let response = session.get(&path, None, limit + 1).await?;
    let response = session.ok(response)?;
    if response.body.len() > limit {
        return Err(format!("blob {digest} is larger than {limit} bytes"));
    }
    if sha256_digest(&response.body) != digest {
        return Err(format!("blob {digest} does not match its digest"));
    }
    Ok(response.body.to_vec())
}

/// A pulled component.
#[derive(Debug)]
pub struct Pulled {
    pub component: Vec<u8>,
    /// The digest of the manifest the component came from (what a signature signs).
    pub digest: String,
    /// The signature verified, when keys were given.
    pub signature: Option<Verified>,
}

/// A signature verified: by which key, and what it signed (kept, so the serving version can
/// be verified again, offline, when the trusted keys change).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The key, as `<name> (<fingerprint>)`.
    pub signed_by: String,
    pub payload: Vec<u8>,
    /// Base64, as stored.
    pub signature: String,
}

/// Pulls the component `reference` names. With `keys`, the manifest must carry a cosign
/// signature by one of them; the component is then taken from that very manifest (its digest
/// pinned), so a tag moved meanwhile cannot slip another one in.
pub async fn pull(
    session: &mut Session<'_>,
    reference: &Reference,
    keys: Option<&[PublicKey]>,
    limit: usize,
) -> Result<Pulled, String> {
    let manifest = resolve(session, reference).await?;
    let signature = match keys {
        Some(keys) => Some(verify_signature(session, reference, &manifest.digest, keys).await?),
        None => None,
    };
    let layers = manifest.value["layers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let layer = layers
        .iter()
        .find(|l| WASM_LAYER_TYPES.contains(&l["mediaType"].as_str().unwrap_or_default()))
        .or_else(|| (layers.len() == 1).then(|| &layers[0]))
        .ok_or_else(|| format!("no WebAssembly layer among {} layers", layers.len()))?;
    let digest = layer["digest"].as_str().ok_or("a layer without a digest")?;
    let component = blob(session, reference, digest, limit).await?;
    Ok(Pulled {
        component,
        digest: manifest.digest,
        signature,
    })
}

/// How many signature layers are looked at: a registry cannot make the controller download
/// without end.
const MAX_SIGNATURES: usize = 16;
/// The largest signature payload read (cosign's are a few hundred bytes).
const MAX_PAYLOAD_BYTES: usize = 64 * 1024;

/// The signature layers stored for `digest`: (payload blob digest, base64 signature) each,
/// payloads not downloaded; `None` when there is no signature manifest.
async fn signature_layers(
    session: &mut Session<'_>,
    reference: &Reference,
    digest: &str,
) -> Result<Option<Vec<(String, String)>>, String> {
    let Some(manifest) = manifest(session, reference, &cosign::signature_tag(digest)).await? else {
        return Ok(None);
    };
    let mut out = Vec::new();
    for layer in manifest.value["layers"].as_array().into_iter().flatten() {
        if layer["mediaType"].as_str() != Some(cosign::SIGNATURE_MEDIA_TYPE) {
            continue;
        }
        let Some(signature) = layer["annotations"][cosign::SIGNATURE_ANNOTATION].as_str() else {
            continue;
        };
        let Some(blob_digest) = layer["digest"].as_str() else {
            continue;
        };
        out.push((blob_digest.to_string(), signature.to_string()));
    }
    Ok(Some(out))
}

/// The signature by a trusted key over `digest` of `reference`'s repository, or why there is
/// none. Layers are taken one at a time (its payload downloaded, bounded, and checked before
/// the next), at most [`MAX_SIGNATURES`].
async fn verify_signature(
    session: &mut Session<'_>,
    reference: &Reference,
    digest: &str,
    keys: &[PublicKey],
) -> Result<Verified, String> {
    let tag = cosign::signature_tag(digest);
    let found = signature_layers(session, reference, digest)
        .await?
        .ok_or_else(|| format!("{digest} is not signed (no {tag} beside it); a signature by a trusted key is required"))?;
    let mut reasons = Vec::new();
    for (blob_digest, signature) in found.iter().take(MAX_SIGNATURES) {
        let payload = match blob(session, reference, blob_digest, MAX_PAYLOAD_BYTES).await {
            Ok(payload) => payload,
            Err(reason) => {
                reasons.push(reason);
                continue;
            }
        };
        match cosign::verify(keys, &payload, signature, digest, &reference.name()) {
            Ok(key) => {
                return Ok(Verified {
                    signed_by: key.to_string(),
                    payload,
                    signature: signature.clone(),
                });
            }
            Err(reason) => reasons.push(reason),
        }
    }
    let trusted: Vec<String> = keys.iter().map(ToString::to_string).collect();
    Err(format!(
        "{digest} has no valid signature by a trusted key ({}): {} signature(s) in {tag}{}{}",
        trusted.join(", "),
        found.len(),
        if found.len() > MAX_SIGNATURES {
            format!(" (the first {MAX_SIGNATURES} looked at)")
        } else {
            String::new()
        },
        if reasons.is_empty() {
            String::new()
        } else {
            format!(": {}", reasons.join("; "))
        }
    ))
}

/// What `plugin inspect oci://…` reports about signatures: verified by a key, or how many
/// there are (unverified without keys), or none.
pub async fn signature_status(
    session: &mut Session<'_>,
    reference: &Reference,
    digest: &str,
    keys: Option<&[PublicKey]>,
) -> Result<Value, String> {
    if let Some(keys) = keys {
        return Ok(
            match verify_signature(session, reference, digest, keys).await {
                Ok(verified) => json!({"status": "verified", "signedBy": verified.signed_by}),
                Err(reason) => json!({"status": "refused", "reason": reason}),
            },
        );
    }
    Ok(match signature_layers(session, reference, digest).await? {
        None => json!({"status": "unsigned"}),
        Some(found) => json!({
            "status": "signed (not verified: no --public-key given)",
            "signatures": found.len(),
        }),
    })
}

/// Uploads `bytes` as a blob unless the repository has it; returns its digest.
async fn push_blob(
    session: &mut Session<'_>,
    reference: &Reference,
    bytes: &[u8],
) -> Result<String, String> {
    let digest = sha256_digest(bytes);
    let repo = &reference.repository;
    let head = session
        .send(
            Method::HEAD,
            &format!("/v2/{repo}/blobs/{digest}"),
            HeaderMap::new(),
            Bytes::new(),
            0,
        )
        .await?;
    if head.status.is_success() {
        return Ok(digest);
    }
    let started = session
        .send(
            Method::POST,
            &format!("/v2/{repo}/blobs/uploads/"),
            HeaderMap::new(),
            Bytes::new(),
            1 << 16,
        )
        .await?;
    let started = session.ok(started)?;
    let location = started
        .header(header::LOCATION)
        .ok_or("the registry gave no upload location")?
        .to_string();
    let sep = if location.contains('?') { '&' } else { '?' };
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    let done = session
        .send(
            Method::PUT,
            &format!("{location}{sep}digest={}", auth::query_escape(&digest)),
            headers,
            Bytes::copy_from_slice(bytes),
            1 << 16,
        )
        .await?;
    session.ok(done)?;
    Ok(digest)
}

async fn push_manifest(
    session: &mut Session<'_>,
    reference: &Reference,
    target: &str,
    manifest: &Value,
) -> Result<String, String> {
    let body = serde_json::to_vec(manifest).map_err(|e| e.to_string())?;
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(OCI_MANIFEST));
    let path = format!("/v2/{}/manifests/{target}", reference.repository);
    let response = session
        .send(
            Method::PUT,
            &path,
            headers,
            Bytes::from(body.clone()),
            1 << 16,
        )
        .await?;
    session.ok(response)?;
    Ok(sha256_digest(&body))
}

fn descriptor(media_type: &str, digest: &str, size: usize) -> Value {
    json!({"mediaType": media_type, "digest": digest, "size": size})
}

/// Publishes `component` under `reference` (its tag, `latest` without one) as an OCI artifact:
/// one `application/wasm` layer. Returns the manifest's digest.
pub async fn push(
    session: &mut Session<'_>,
    reference: &Reference,
    component: &[u8],
) -> Result<String, String> {
    let layer = push_blob(session, reference, component).await?;
    let config =
        json!({"architecture": "wasm", "os": "wasip2", "layerDigests": [layer]}).to_string();
    let config_digest = push_blob(session, reference, config.as_bytes()).await?;
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": WASM_CONFIG_TYPE,
        "config": descriptor(WASM_CONFIG_TYPE, &config_digest, config.len()),
        "layers": [descriptor("application/wasm", &layer, component.len())],
    });
    push_manifest(
        session,
        reference,
        reference.tag.as_deref().unwrap_or("latest"),
        &manifest,
    )
    .await
}

/// Signs the manifest `reference` names with `key` and stores the signature beside it as cosign
/// does (added to the signatures already there). Returns (signed digest, signature tag).
pub async fn sign(
    session: &mut Session<'_>,
    reference: &Reference,
    key: &SigningKey,
) -> Result<(String, String), String> {
    let digest = resolve(session, reference).await?.digest;
    let payload = cosign::payload(&reference.name(), &digest);
    let signature = key.sign(&payload)?;
    let payload_digest = push_blob(session, reference, &payload).await?;
    let tag = cosign::signature_tag(&digest);
    let mut layers: Vec<Value> = match manifest(session, reference, &tag).await? {
        Some(existing) => existing.value["layers"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let mut layer = descriptor(cosign::SIGNATURE_MEDIA_TYPE, &payload_digest, payload.len());
    layer["annotations"] = json!({cosign::SIGNATURE_ANNOTATION: signature});
    layers.push(layer);
    let diff_ids: Vec<&Value> = layers.iter().map(|l| &l["digest"]).collect();
    let config = json!({
        "architecture": "",
        "config": {},
        "created": "0001-01-01T00:00:00Z",
        "history": [{"created": "0001-01-01T00:00:00Z"}],
        "os": "",
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
    })
    .to_string();
    let config_digest = push_blob(session, reference, config.as_bytes()).await?;
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": descriptor("application/vnd.oci.image.config.v1+json", &config_digest, config.len()),
        "layers": layers,
    });
    push_manifest(session, reference, &tag, &manifest).await?;
    Ok((digest, tag))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_parse() {
        let r = Reference::parse("oci://quay.io/vendor/runtime:1.2").unwrap();
        assert_eq!(
            (
                r.registry.as_str(),
                r.repository.as_str(),
                r.tag.as_deref(),
                r.digest.as_deref()
            ),
            ("quay.io", "vendor/runtime", Some("1.2"), None)
        );
        assert_eq!(r.target(), "1.2");
        let hex = "ab".repeat(32);
        let r = Reference::parse(&format!("127.0.0.1:5000/p@sha256:{hex}")).unwrap();
        assert_eq!(
            (r.host(), r.target()),
            ("127.0.0.1", format!("sha256:{hex}").as_str())
        );
        let r = Reference::parse("localhost:5000/a/b").unwrap();
        assert_eq!((r.repository.as_str(), r.target()), ("a/b", "latest"));
        assert_eq!(r.to_string(), "oci://localhost:5000/a/b");
        for bad in [
            "quay.io",
            "quay.io/",
            "quay.io/a:",
            "quay.io/a@sha256:12",
            "quay.io//a",
        ] {
            assert!(Reference::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sessions_use_plain_http_for_loopback_only() {
        let local = Reference::parse("127.0.0.1:5000/p").unwrap();
        let remote = Reference::parse("quay.io/v/p").unwrap();
        assert!(
            Session::new(&local, Access::Pull, None, &[])
                .base
                .starts_with("http://")
        );
        let s = Session::new(&remote, Access::Push, None, &[]);
        assert_eq!(s.base, "https://quay.io");
        assert_eq!(s.scope, "repository:v/p:pull,push");
        let hub = Reference::parse("docker.io/library/p:1").unwrap();
        let s = Session::new(&hub, Access::Pull, None, &[]);
        assert_eq!(s.base, "https://registry-1.docker.io");
    }
}
