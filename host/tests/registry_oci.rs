//! `oci://` plugin sources against a real OCI distribution registry on loopback (Debian's
//! `docker-registry` package; `make test` installs it when absent).

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use odh_model_controller::registry::RegistryConfig;
use odh_model_controller::registry::fetch;
use odh_test_support::{TestContext, Timing, eventually};
use serde_json::json;
use sha2::{Digest, Sha256};

struct LocalRegistry {
    child: Child,
    addr: String,
    dir: std::path::PathBuf,
}

impl Drop for LocalRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn start_registry() -> anyhow::Result<LocalRegistry> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let dir = std::env::temp_dir().join(format!("odh-oci-registry-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let config = dir.join("config.yml");
    std::fs::write(
        &config,
        format!(
            "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{port}\n",
            dir.join("data").display()
        ),
    )?;
    let child = Command::new("docker-registry")
        .arg("serve")
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| {
            anyhow::anyhow!(
                "starting docker-registry (apt-get install docker-registry; `make test` does): {e}"
            )
        })?;
    let registry = LocalRegistry {
        child,
        addr: format!("127.0.0.1:{port}"),
        dir,
    };
    eventually("the registry answers", Timing::default(), || async {
        let (status, _, _) = request(&registry.addr, "GET", "/v2/", None, Bytes::new()).await?;
        anyhow::ensure!(status == 200, "status {status}");
        Ok(())
    })
    .await?;
    Ok(registry)
}

/// One plain-HTTP request to the loopback registry: (status, Location header, body).
async fn request(
    addr: &str,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: Bytes,
) -> anyhow::Result<(u16, Option<String>, Bytes)> {
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp)).await?;
    tokio::spawn(conn);
    let mut req = http::Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::HOST, addr);
    if let Some(ct) = content_type {
        req = req.header(http::header::CONTENT_TYPE, ct);
    }
    let resp = sender.send_request(req.body(Full::new(body))?).await?;
    let status = resp.status().as_u16();
    let location = resp
        .headers()
        .get(http::header::LOCATION)
        .and_then(|l| l.to_str().ok())
        .map(str::to_string);
    Ok((
        status,
        location,
        resp.into_body().collect().await?.to_bytes(),
    ))
}

/// Pushes a blob with the two-step upload of the distribution API; returns its digest.
async fn push_blob(addr: &str, repo: &str, bytes: &[u8]) -> anyhow::Result<String> {
    let digest = format!("sha256:{}", hex::encode(Sha256::digest(bytes)));
    let (status, location, _) = request(
        addr,
        "POST",
        &format!("/v2/{repo}/blobs/uploads/"),
        None,
        Bytes::new(),
    )
    .await?;
    anyhow::ensure!(status == 202, "upload start: {status}");
    let location = location.ok_or_else(|| anyhow::anyhow!("no upload location"))?;
    let path = location
        .strip_prefix(&format!("http://{addr}"))
        .unwrap_or(&location)
        .to_string();
    let sep = if path.contains('?') { '&' } else { '?' };
    let (status, _, body) = request(
        addr,
        "PUT",
        &format!("{path}{sep}digest={digest}"),
        Some("application/octet-stream"),
        Bytes::copy_from_slice(bytes),
    )
    .await?;
    anyhow::ensure!(
        status == 201,
        "upload: {status} {}",
        String::from_utf8_lossy(&body)
    );
    Ok(digest)
}

#[tokio::test]
async fn a_component_published_as_an_oci_artifact_is_pulled_and_verified() -> anyhow::Result<()> {
    let t = TestContext::new("registry-oci").await?;
    let registry = start_registry().await?;
    let wasm = std::fs::read(odh_test_support::plugin_wasm("misbehave")?)?;
    let layer = push_blob(&registry.addr, "odh/misbehave", &wasm).await?;
    let config = push_blob(&registry.addr, "odh/misbehave", b"{}").await?;
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "artifactType": "application/vnd.wasm.component.v1+wasm",
        "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": config, "size": 2},
        "layers": [{"mediaType": "application/wasm", "digest": layer, "size": wasm.len()}],
    });
    let (status, _, body) = request(
        &registry.addr,
        "PUT",
        "/v2/odh/misbehave/manifests/0.1.0",
        Some("application/vnd.oci.image.manifest.v1+json"),
        Bytes::from(manifest.to_string()),
    )
    .await?;
    anyhow::ensure!(
        status == 201,
        "manifest push: {status} {}",
        String::from_utf8_lossy(&body)
    );

    let digest = hex::encode(Sha256::digest(&wasm));
    let entry = |source: &str| {
        RegistryConfig::parse(&format!(
            "plugins:\n  misbehave:\n    source: {source}\n    sha256: {digest}\n"
        ))
        .map(|mut c| c.plugins.remove("misbehave").unwrap())
        .map_err(anyhow::Error::msg)
    };
    let by_tag = entry(&format!("oci://{}/odh/misbehave:0.1.0", registry.addr))?;
    let bytes = tokio::time::timeout(
        Duration::from_secs(30),
        fetch::fetch(&by_tag, &t.client, &t.namespace),
    )
    .await?
    .map_err(anyhow::Error::msg)?;
    assert_eq!(bytes, wasm);

    let unknown_tag = entry(&format!("oci://{}/odh/misbehave:9.9.9", registry.addr))?;
    let err = fetch::fetch(&unknown_tag, &t.client, &t.namespace)
        .await
        .unwrap_err();
    assert!(err.contains("404"), "{err}");
    Ok(())
}
