//! `oci://` plugin sources against a real OCI distribution registry on loopback (Debian's
//! `docker-registry` package; `make test` installs it when absent): anonymous, behind token
//! auth (a token server in the test) and htpasswd basic auth with credentials from a
//! dockerconfigjson Secret, and cosign-compatible signatures published and checked through the
//! CLI and the hot swap.

mod common;

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use odh_model_controller::registry::oci::{self, Access, Credentials, Reference, Session};
use odh_model_controller::registry::{
    PluginEntry, RegistryConfig, STATUS_CONFIGMAP_NAME, SwapResult, fetch,
};
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
    start_registry_with(|_| String::new()).await
}

/// A registry whose `auth:` section `auth(dir)` gives (files it names go into `dir`).
async fn start_registry_with(
    auth: impl FnOnce(&std::path::Path) -> String,
) -> anyhow::Result<LocalRegistry> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let dir = std::env::temp_dir().join(format!("odh-oci-registry-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let config = dir.join("config.yml");
    let auth = auth(&dir);
    std::fs::write(
        &config,
        format!(
            "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{port}\n{auth}",
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
        anyhow::ensure!(status == 200 || status == 401, "status {status}");
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
        RegistryConfig::parse(
            &format!("plugins:\n  misbehave:\n    source: {source}\n    sha256: {digest}\n"),
            &odh_model_controller::builtins::catalog(),
        )
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

const USER: &str = "vendor";
const PASSWORD: &str = "s3cret";

fn docker_config(registry: &str, user: &str, password: &str) -> String {
    use base64::Engine;
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    json!({"auths": {registry: {"auth": auth}}}).to_string()
}

async fn put_pull_secret(t: &TestContext, name: &str, config: &str) -> anyhow::Result<()> {
    put_secret(
        t,
        name,
        "kubernetes.io/dockerconfigjson",
        ".dockerconfigjson",
        config,
    )
    .await
}

async fn put_secret(
    t: &TestContext,
    name: &str,
    type_: &str,
    key: &str,
    value: &str,
) -> anyhow::Result<()> {
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        type_: Some(type_.into()),
        data: Some(BTreeMap::from([(
            key.to_string(),
            ByteString(value.as_bytes().to_vec()),
        )])),
        ..Default::default()
    };
    Api::<Secret>::namespaced(t.client.clone(), &t.namespace)
        .create(&PostParams::default(), &secret)
        .await?;
    Ok(())
}

/// The misbehave entry of a plugins ConfigMap with source `oci://<reference>` and `extra` lines.
fn oci_entry(reference: &str, extra: &str) -> anyhow::Result<PluginEntry> {
    let mut config = RegistryConfig::parse(
        &format!("plugins:\n  misbehave:\n    source: oci://{reference}\n{extra}"),
        &odh_model_controller::builtins::catalog(),
    )
    .map_err(anyhow::Error::msg)?;
    Ok(config.plugins.remove("misbehave").expect("the entry"))
}

/// Publishes `wasm` at `<addr>/<name>` with the host's own push (as `plugin push` does).
async fn publish(
    addr: &str,
    name: &str,
    credentials: Option<(&str, &str)>,
    wasm: &[u8],
) -> anyhow::Result<String> {
    let reference = Reference::parse(&format!("{addr}/{name}")).map_err(anyhow::Error::msg)?;
    let credentials = credentials.map(|(u, p)| {
        (
            Credentials {
                username: u.into(),
                password: p.into(),
            },
            "the test".to_string(),
        )
    });
    let mut session = Session::new(&reference, Access::Push, credentials, &[]);
    oci::push(&mut session, &reference, wasm)
        .await
        .map_err(anyhow::Error::msg)
}

async fn pull(t: &TestContext, entry: &PluginEntry) -> Result<Vec<u8>, String> {
    tokio::time::timeout(
        Duration::from_secs(60),
        fetch::fetch(entry, &t.client, &t.namespace),
    )
    .await
    .map_err(|_| "no answer within 60 s".to_string())?
}

/// A token server as Docker's token protocol specifies: it answers `GET /token?scope=…` with a
/// JWT (ES256, its certificate in `x5c`) granting what is asked to `USER`/`PASSWORD`, `pull`
/// of `public/…` to anyone, and 401 to a wrong password.
struct TokenServer {
    addr: String,
    cert_pem: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TokenServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

const TOKEN_ISSUER: &str = "odh-test-issuer";
const TOKEN_SERVICE: &str = "odh-test-registry";

async fn token_server() -> anyhow::Result<TokenServer> {
    use axum::extract::{Query, State};
    use axum::http::{HeaderMap, StatusCode};
    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};

    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?;
    let cert =
        rcgen::CertificateParams::new(vec!["odh-test-token-issuer".into()])?.self_signed(&key)?;
    let signer = EcdsaKeyPair::from_pkcs8(
        &ECDSA_P256_SHA256_FIXED_SIGNING,
        &key.serialize_der(),
        &ring::rand::SystemRandom::new(),
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let x5c = STANDARD.encode(cert.der());
    let state = std::sync::Arc::new((signer, x5c));
    let expected = format!("Basic {}", STANDARD.encode(format!("{USER}:{PASSWORD}")));
    let handler = move |State(state): State<std::sync::Arc<(EcdsaKeyPair, String)>>,
                        Query(query): Query<Vec<(String, String)>>,
                        headers: HeaderMap| {
        let expected = expected.clone();
        async move {
            let authorization = headers.get("authorization").and_then(|v| v.to_str().ok());
            let authenticated = match authorization {
                None => false,
                Some(a) if a == expected => true,
                Some(_) => {
                    return (
                        StatusCode::UNAUTHORIZED,
                        r#"{"errors":[{"code":"UNAUTHORIZED","message":"wrong user name or password"}]}"#.to_string(),
                    );
                }
            };
            let access: Vec<serde_json::Value> = query
                .iter()
                .filter(|(k, _)| k == "scope")
                .filter_map(|(_, scope)| {
                    let (kind, rest) = scope.split_once(':')?;
                    let (name, actions) = rest.rsplit_once(':')?;
                    let granted: Vec<&str> = actions
                        .split(',')
                        .filter(|a| authenticated || (*a == "pull" && name.starts_with("public/")))
                        .collect();
                    Some(json!({"type": kind, "name": name, "actions": granted}))
                })
                .collect();
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs();
            let header = json!({"typ": "JWT", "alg": "ES256", "x5c": [state.1]});
            let claims = json!({
                "iss": TOKEN_ISSUER,
                "sub": if authenticated { USER } else { "" },
                "aud": TOKEN_SERVICE,
                "exp": now + 300,
                "nbf": now - 10,
                "iat": now,
                "jti": format!("{now}-{}", access.len()),
                "access": access,
            });
            let signing_input = format!(
                "{}.{}",
                URL_SAFE_NO_PAD.encode(header.to_string()),
                URL_SAFE_NO_PAD.encode(claims.to_string())
            );
            let signature = state
                .0
                .sign(&ring::rand::SystemRandom::new(), signing_input.as_bytes())
                .expect("signing");
            let token = format!(
                "{signing_input}.{}",
                URL_SAFE_NO_PAD.encode(signature.as_ref())
            );
            (
                StatusCode::OK,
                json!({"token": token, "expires_in": 300}).to_string(),
            )
        }
    };
    let app = axum::Router::new()
        .route("/token", axum::routing::get(handler))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?.to_string();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(TokenServer {
        addr,
        cert_pem: cert.pem(),
        task,
    })
}

#[tokio::test]
async fn token_auth_pulls_with_a_pull_secret_and_anonymously_where_the_registry_allows()
-> anyhow::Result<()> {
    let t = TestContext::new("registry-oci-token").await?;
    let tokens = token_server().await?;
    let registry = start_registry_with(|dir| {
        let bundle = dir.join("token-issuer.pem");
        std::fs::write(&bundle, &tokens.cert_pem).expect("writing the issuer certificate");
        format!(
            "auth:\n  token:\n    realm: http://{}/token\n    service: {TOKEN_SERVICE}\n    issuer: {TOKEN_ISSUER}\n    rootcertbundle: {}\n",
            tokens.addr,
            bundle.display()
        )
    })
    .await?;
    let wasm = std::fs::read(odh_test_support::plugin_wasm("misbehave")?)?;
    let digest = hex::encode(Sha256::digest(&wasm));
    let pinned = format!("    sha256: {digest}\n");
    let anonymous_push = publish(&registry.addr, "private/misbehave:1", None, &wasm).await;
    assert!(
        anonymous_push
            .as_ref()
            .is_err_and(|e| e.to_string().contains("name a pullSecret")),
        "{anonymous_push:?}"
    );
    publish(
        &registry.addr,
        "private/misbehave:1",
        Some((USER, PASSWORD)),
        &wasm,
    )
    .await?;
    publish(
        &registry.addr,
        "public/misbehave:1",
        Some((USER, PASSWORD)),
        &wasm,
    )
    .await?;

    // Public: an anonymous token is enough (as quay.io and Docker Hub serve public images).
    let public = oci_entry(&format!("{}/public/misbehave:1", registry.addr), &pinned)?;
    assert_eq!(pull(&t, &public).await.map_err(anyhow::Error::msg)?, wasm);

    let private = format!("{}/private/misbehave:1", registry.addr);
    let err = pull(&t, &oci_entry(&private, &pinned)?).await.unwrap_err();
    assert!(err.contains("name a pullSecret"), "{err}");

    put_pull_secret(
        &t,
        "vendor-pull",
        &docker_config(&registry.addr, USER, PASSWORD),
    )
    .await?;
    let entry = oci_entry(&private, &format!("{pinned}    pullSecret: vendor-pull\n"))?;
    assert_eq!(pull(&t, &entry).await.map_err(anyhow::Error::msg)?, wasm);

    put_pull_secret(
        &t,
        "wrong-pull",
        &docker_config(&registry.addr, USER, "guess"),
    )
    .await?;
    let entry = oci_entry(&private, &format!("{pinned}    pullSecret: wrong-pull\n"))?;
    let err = pull(&t, &entry).await.unwrap_err();
    assert!(
        err.contains(&format!(
            "refused the credentials from Secret {}/wrong-pull",
            t.namespace
        )) && err.contains("wrong user name or password"),
        "{err}"
    );

    put_pull_secret(&t, "other-pull", &docker_config("quay.io", USER, PASSWORD)).await?;
    let entry = oci_entry(&private, &format!("{pinned}    pullSecret: other-pull\n"))?;
    let err = pull(&t, &entry).await.unwrap_err();
    assert!(
        err.contains(&format!(
            "has no credentials for registry {}",
            registry.addr
        )) && err.contains("quay.io"),
        "{err}"
    );

    let entry = oci_entry(&private, &format!("{pinned}    pullSecret: missing-pull\n"))?;
    let err = pull(&t, &entry).await.unwrap_err();
    assert!(err.contains("does not exist"), "{err}");
    Ok(())
}

#[tokio::test]
async fn basic_auth_pulls_with_a_pull_secret_and_a_wrong_password_is_named() -> anyhow::Result<()> {
    let t = TestContext::new("registry-oci-basic").await?;
    let registry = start_registry_with(|dir| {
        let file = dir.join("htpasswd");
        let hash = bcrypt::hash(PASSWORD, 4).expect("bcrypt");
        std::fs::write(&file, format!("{USER}:{hash}\n")).expect("writing htpasswd");
        format!(
            "auth:\n  htpasswd:\n    realm: odh-test\n    path: {}\n",
            file.display()
        )
    })
    .await?;
    let wasm = std::fs::read(odh_test_support::plugin_wasm("misbehave")?)?;
    publish(
        &registry.addr,
        "odh/misbehave:1",
        Some((USER, PASSWORD)),
        &wasm,
    )
    .await?;
    let reference = format!("{}/odh/misbehave:1", registry.addr);
    let pinned = format!("    sha256: {}\n", hex::encode(Sha256::digest(&wasm)));

    let err = pull(&t, &oci_entry(&reference, &pinned)?)
        .await
        .unwrap_err();
    assert!(err.contains("name a pullSecret"), "{err}");

    put_pull_secret(&t, "good", &docker_config(&registry.addr, USER, PASSWORD)).await?;
    let entry = oci_entry(&reference, &format!("{pinned}    pullSecret: good\n"))?;
    assert_eq!(pull(&t, &entry).await.map_err(anyhow::Error::msg)?, wasm);

    // The legacy kubernetes.io/dockercfg Secret: the "auths" mapping alone.
    let legacy: serde_json::Value =
        serde_json::from_str(&docker_config(&registry.addr, USER, PASSWORD))?;
    put_secret(
        &t,
        "legacy",
        "kubernetes.io/dockercfg",
        ".dockercfg",
        &legacy["auths"].to_string(),
    )
    .await?;
    let entry = oci_entry(&reference, &format!("{pinned}    pullSecret: legacy\n"))?;
    assert_eq!(pull(&t, &entry).await.map_err(anyhow::Error::msg)?, wasm);
    put_secret(&t, "opaque", "Opaque", "password", PASSWORD).await?;
    let entry = oci_entry(&reference, &format!("{pinned}    pullSecret: opaque\n"))?;
    let err = pull(&t, &entry).await.unwrap_err();
    assert!(
        err.contains("is not of type kubernetes.io/dockerconfigjson"),
        "{err}"
    );

    put_pull_secret(&t, "bad", &docker_config(&registry.addr, USER, "guess")).await?;
    let entry = oci_entry(&reference, &format!("{pinned}    pullSecret: bad\n"))?;
    let err = pull(&t, &entry).await.unwrap_err();
    assert!(
        err.contains(&format!(
            "refused the credentials from Secret {}/bad",
            t.namespace
        )) && err.contains("401"),
        "{err}"
    );
    Ok(())
}

/// Runs `odh-model-controller plugin <args>`; its JSON output, or its error.
async fn cli(args: Vec<String>) -> anyhow::Result<serde_json::Value> {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_odh-model-controller"))
        .arg("plugin")
        .args(&args)
        .env_remove("REGISTRY_AUTH_FILE")
        .output()
        .await?;
    anyhow::ensure!(
        output.status.success(),
        "plugin {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(serde_json::from_slice(&output.stdout)?)
}

#[tokio::test]
async fn a_signed_plugin_goes_live_and_one_signed_by_another_key_or_unsigned_is_refused()
-> anyhow::Result<()> {
    let t = TestContext::new("registry-oci-signed").await?;
    let registry = start_registry().await?;
    let (engine, slot, wasm) = common::misbehave_slot()?;
    let plugins = common::registry(&t, engine, &slot);
    let dir = registry.dir.join("keys");
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("misbehave.wasm");
    std::fs::write(&file, &wasm)?;
    let path = |p: &std::path::Path| p.display().to_string();

    // The vendor's side, all from the CLI: keys, publish, sign, inspect.
    for name in ["vendor", "stranger"] {
        cli(vec!["keygen".into(), "--out".into(), path(&dir.join(name))]).await?;
    }
    let signed = format!("oci://{}/odh/misbehave:signed", registry.addr);
    let pushed = cli(vec!["push".into(), path(&file), signed.clone()]).await?;
    assert_eq!(pushed["sha256"], common::sha(&wasm));
    let sig = cli(vec![
        "sign".into(),
        signed.clone(),
        "--key".into(),
        path(&dir.join("vendor.key")),
    ])
    .await?;
    assert_eq!(sig["digest"], pushed["digest"]);
    let inspected = cli(vec![
        "inspect".into(),
        signed.clone(),
        "--public-key".into(),
        path(&dir.join("vendor.pub")),
    ])
    .await?;
    assert_eq!(inspected["name"], "misbehave");
    assert_eq!(inspected["oci"]["digest"], pushed["digest"]);
    assert_eq!(
        inspected["oci"]["signature"]["status"], "verified",
        "{inspected}"
    );
    let by_stranger = cli(vec![
        "inspect".into(),
        signed.clone(),
        "--public-key".into(),
        path(&dir.join("stranger.pub")),
    ])
    .await?;
    assert_eq!(by_stranger["oci"]["signature"]["status"], "refused");
    // Another artifact of the same component (gzipped: another manifest digest), never signed.
    let unsigned = format!("{}/odh/misbehave:unsigned", registry.addr);
    publish(
        &registry.addr,
        "odh/misbehave:unsigned",
        None,
        &common::gzip(&wasm),
    )
    .await?;
    let unsigned_inspect = cli(vec!["inspect".into(), format!("oci://{unsigned}")]).await?;
    assert_eq!(unsigned_inspect["oci"]["signature"]["status"], "unsigned");

    // The admin's side: trusted keys in ConfigMaps, entries that require a signature.
    let configmaps: Api<ConfigMap> = Api::namespaced(t.client.clone(), &t.namespace);
    for (cm, key) in [("signers", "vendor"), ("strangers", "stranger")] {
        let pem = std::fs::read_to_string(dir.join(format!("{key}.pub")))?;
        let object = ConfigMap {
            metadata: ObjectMeta {
                name: Some(cm.into()),
                ..Default::default()
            },
            data: Some(BTreeMap::from([(format!("{key}.pub"), pem)])),
            ..Default::default()
        };
        configmaps.create(&PostParams::default(), &object).await?;
    }
    let configure = |source: String, keys: &str, label: &str| {
        let text = format!(
            "plugins:\n  misbehave:\n    source: {source}\n    signature:\n      publicKeys:\n        configMap: {keys}\n    settings:\n      okLabel: {label}\n"
        );
        let plugins = &plugins;
        async move {
            let config = RegistryConfig::parse(&text, &odh_model_controller::builtins::catalog())
                .map_err(anyhow::Error::msg)?;
            anyhow::Ok(plugins.apply(&config).await.remove("misbehave"))
        }
    };
    let label = |slot: &odh_model_controller::plugin::PluginSlot| {
        slot.current().settings()["okLabel"]
            .as_str()
            .map(str::to_string)
    };

    assert_eq!(
        configure(signed.clone(), "signers", "signed").await?,
        Some(SwapResult::Swapped(common::sha(&wasm)))
    );
    assert_eq!(
        label(&slot).as_deref(),
        Some("signed"),
        "the signed plugin serves"
    );

    let refused = configure(signed.clone(), "strangers", "stranger").await?;
    assert!(
        matches!(&refused, Some(SwapResult::Rejected(m)) if m.contains("no valid signature by a trusted key") && m.contains("stranger.pub")),
        "{refused:?}"
    );
    let refused = configure(format!("oci://{unsigned}"), "signers", "unsigned").await?;
    assert!(
        matches!(&refused, Some(SwapResult::Rejected(m)) if m.contains("is not signed")),
        "{refused:?}"
    );
    assert_eq!(
        label(&slot).as_deref(),
        Some("signed"),
        "the last good version keeps serving"
    );
    eventually(
        "a PluginRejected Event names the missing signature",
        Timing::default(),
        || async {
            let notes = common::rejection_notes(&t).await?;
            anyhow::ensure!(
                notes.iter().any(|n| n.contains("is not signed")),
                "{notes:?}"
            );
            Ok(())
        },
    )
    .await?;
    let status = configmaps.get(STATUS_CONFIGMAP_NAME).await?;
    let status: serde_json::Value =
        serde_json::from_str(&status.data.unwrap_or_default()["misbehave"])?;
    assert!(
        status["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("is not signed")),
        "{status}"
    );
    assert_eq!(status["activeOciDigest"], pushed["digest"], "{status}");
    assert!(
        status["activeSignedBy"]
            .as_str()
            .is_some_and(|k| k.starts_with("vendor.pub (")),
        "the serving version's signer stays on record: {status}"
    );
    Ok(())
}

/// Registries answer blob downloads with a redirect to storage elsewhere: it is followed, and
/// the registry's credentials go along only to the same origin.
#[tokio::test]
async fn redirects_are_followed_and_credentials_stay_with_their_origin() -> anyhow::Result<()> {
    use axum::http::HeaderMap;
    use axum::response::Redirect;
    let echo = |headers: HeaderMap| async move {
        if headers.contains_key("authorization") {
            "with credentials"
        } else {
            "without credentials"
        }
    };
    let serve = |app: axum::Router| async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        anyhow::Ok((addr, task))
    };
    let (storage, storage_task) =
        serve(axum::Router::new().route("/blob", axum::routing::get(echo))).await?;
    let to_storage = format!("http://{storage}/blob");
    let (origin, origin_task) = serve(
        axum::Router::new()
            .route(
                "/v2/p/blobs/elsewhere",
                axum::routing::get(move || async move { Redirect::temporary(&to_storage) }),
            )
            .route(
                "/v2/p/blobs/here",
                axum::routing::get(|| async { Redirect::to("/echo") }),
            )
            .route("/echo", axum::routing::get(echo)),
    )
    .await?;
    let get = |path: String| async move {
        let mut headers = http::HeaderMap::new();
        headers.insert(http::header::AUTHORIZATION, "Bearer t".parse()?);
        let response = odh_model_controller::registry::http::send(
            http::Method::GET,
            &format!("http://{origin}{path}"),
            headers,
            Bytes::new(),
            &[],
            1024,
        )
        .await
        .map_err(anyhow::Error::msg)?;
        anyhow::ensure!(response.status == 200, "{}", response.describe());
        anyhow::Ok((response.url, String::from_utf8(response.body.to_vec())?))
    };
    let (url, body) = get("/v2/p/blobs/elsewhere".into()).await?;
    assert_eq!(
        (url.as_str(), body.as_str()),
        (
            format!("http://{storage}/blob").as_str(),
            "without credentials"
        )
    );
    let (url, body) = get("/v2/p/blobs/here".into()).await?;
    assert_eq!(
        (url.as_str(), body.as_str()),
        (format!("http://{origin}/echo").as_str(), "with credentials")
    );
    storage_task.abort();
    origin_task.abort();
    Ok(())
}

/// Trust in a signature ends with its key: the serving signed version is verified again at
/// every tick against the keys its entry trusts now, and stops serving (the built-in version
/// takes over, the status and an Event say why) once the signing key is gone from them; with
/// the key back it serves again. A cluster admin's `--plugin-trusted-keys` overrides whatever
/// keys the ConfigMap names.
#[tokio::test]
async fn a_signature_is_trusted_only_while_its_key_is_and_the_cluster_pins_the_keys()
-> anyhow::Result<()> {
    use odh_model_controller::registry::Ceiling;
    let t = TestContext::new("registry-oci-untrust").await?;
    let registry = start_registry().await?;
    let (engine, slot, wasm) = common::misbehave_slot()?;
    let plugins = common::registry(&t, engine.clone(), &slot);
    let dir = registry.dir.join("keys");
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("misbehave.wasm");
    std::fs::write(&file, &wasm)?;
    let path = |p: &std::path::Path| p.display().to_string();
    for name in ["vendor", "stranger"] {
        cli(vec!["keygen".into(), "--out".into(), path(&dir.join(name))]).await?;
    }
    let signed = format!("oci://{}/odh/misbehave:signed", registry.addr);
    cli(vec!["push".into(), path(&file), signed.clone()]).await?;
    cli(vec![
        "sign".into(),
        signed.clone(),
        "--key".into(),
        path(&dir.join("vendor.key")),
    ])
    .await?;
    let pem = |name: &str| std::fs::read_to_string(dir.join(format!("{name}.pub")));
    let configmaps: Api<ConfigMap> = Api::namespaced(t.client.clone(), &t.namespace);
    let put_keys = |key: String| {
        let configmaps = configmaps.clone();
        async move {
            let object = ConfigMap {
                metadata: ObjectMeta {
                    name: Some("signers".into()),
                    ..Default::default()
                },
                data: Some(BTreeMap::from([("signer.pub".to_string(), key)])),
                ..Default::default()
            };
            configmaps
                .patch(
                    "signers",
                    &kube::api::PatchParams::apply("test").force(),
                    &kube::api::Patch::Apply(&object),
                )
                .await
        }
    };
    put_keys(pem("vendor")?).await?;
    let config = RegistryConfig::parse(
        &format!(
            "plugins:\n  misbehave:\n    source: {signed}\n    signature:\n      publicKeys:\n        configMap: signers\n    settings:\n      okLabel: signed\n"
        ),
        &odh_model_controller::builtins::catalog(),
    )
    .map_err(anyhow::Error::msg)?;
    let label = || {
        slot.current().settings()["okLabel"]
            .as_str()
            .map(str::to_string)
    };
    assert_eq!(
        plugins.apply(&config).await.remove("misbehave"),
        Some(SwapResult::Swapped(common::sha(&wasm)))
    );
    assert_eq!(label().as_deref(), Some("signed"));
    assert!(
        plugins.recheck_signatures().await.is_empty(),
        "a version whose key is still trusted keeps serving"
    );

    // The admin replaces the vendor's key: what it signed stops serving at the next tick.
    put_keys(pem("stranger")?).await?;
    let results = plugins.recheck_signatures().await;
    assert!(
        matches!(results.get("misbehave"), Some(SwapResult::Swapped(_))),
        "the built-in version serves again: {results:?}"
    );
    assert_eq!(label(), None, "the version the host started with");
    let status = configmaps.get(STATUS_CONFIGMAP_NAME).await?;
    let status: serde_json::Value =
        serde_json::from_str(&status.data.unwrap_or_default()["misbehave"])?;
    assert!(
        status["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("no longer trusted") && e.contains("not by a trusted key")),
        "{status}"
    );
    let notes = common::rejection_notes(&t).await?;
    assert!(
        notes.iter().any(|n| n.contains("no longer trusted")),
        "{notes:?}"
    );
    assert!(
        plugins.recheck_signatures().await.is_empty(),
        "reported once, not at every tick"
    );

    // The key back, the retry makes the signed version serve again.
    put_keys(pem("vendor")?).await?;
    assert_eq!(
        plugins.retry_rejected().await.remove("misbehave"),
        Some(SwapResult::Swapped(common::sha(&wasm)))
    );
    assert_eq!(label().as_deref(), Some("signed"));

    // A cluster that pins the stranger's fingerprint trusts no signature of the vendor's, even
    // with the vendor's key in the ConfigMap the entry names.
    let stranger = oci::PublicKey::parse_all("stranger", pem("stranger")?.as_bytes())
        .map_err(anyhow::Error::msg)?;
    let pinned = common::registry(&t, engine, &slot).with_ceiling(Ceiling {
        trusted_keys: [stranger[0].fingerprint()].into(),
        ..Ceiling::default()
    });
    let refused = pinned.apply(&config).await.remove("misbehave");
    assert!(
        matches!(&refused, Some(SwapResult::Rejected(m)) if m.contains("hold no key this cluster trusts") && m.contains(&stranger[0].fingerprint())),
        "{refused:?}"
    );
    Ok(())
}

/// A tag moved back to a version this plugin served from it before (signed, as it was then) is
/// refused as a rollback, the newer version serving on; pinning that version rolls back on
/// purpose.
#[tokio::test]
async fn a_tag_moved_back_to_an_older_signed_version_is_refused_unless_pinned() -> anyhow::Result<()>
{
    let t = TestContext::new("registry-oci-rollback").await?;
    let registry = start_registry().await?;
    let (engine, slot, wasm) = common::misbehave_slot()?;
    let plugins = common::registry(&t, engine, &slot);
    let dir = registry.dir.join("keys");
    std::fs::create_dir_all(&dir)?;
    let path = |p: &std::path::Path| p.display().to_string();
    cli(vec![
        "keygen".into(),
        "--out".into(),
        path(&dir.join("vendor")),
    ])
    .await?;
    let pem = std::fs::read_to_string(dir.join("vendor.pub"))?;
    let configmaps: Api<ConfigMap> = Api::namespaced(t.client.clone(), &t.namespace);
    configmaps
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some("signers".into()),
                    ..Default::default()
                },
                data: Some(BTreeMap::from([("vendor.pub".to_string(), pem)])),
                ..Default::default()
            },
        )
        .await?;
    let tag = format!("{}/odh/misbehave:moving", registry.addr);
    // Two versions of the same component (plain and gzipped: two manifest digests), each
    // pushed under the tag and signed.
    let push_and_sign = |bytes: Vec<u8>| {
        let (addr, tag, key) = (registry.addr.clone(), tag.clone(), dir.join("vendor.key"));
        async move {
            let digest = publish(&addr, "odh/misbehave:moving", None, &bytes).await?;
            cli(vec![
                "sign".into(),
                format!("oci://{tag}"),
                "--key".into(),
                key.display().to_string(),
            ])
            .await?;
            anyhow::Ok(digest)
        }
    };
    let configure = |source: String, label: &str| {
        let text = format!(
            "plugins:\n  misbehave:\n    source: oci://{source}\n    signature:\n      publicKeys:\n        configMap: signers\n    settings:\n      okLabel: {label}\n"
        );
        let plugins = &plugins;
        async move {
            let config = RegistryConfig::parse(&text, &odh_model_controller::builtins::catalog())
                .map_err(anyhow::Error::msg)?;
            anyhow::Ok(plugins.apply(&config).await.remove("misbehave"))
        }
    };
    let label = || {
        slot.current().settings()["okLabel"]
            .as_str()
            .map(str::to_string)
    };

    let old = push_and_sign(wasm.clone()).await?;
    assert!(matches!(
        configure(tag.clone(), "old").await?,
        Some(SwapResult::Swapped(_))
    ));
    let new = push_and_sign(common::gzip(&wasm)).await?;
    assert_ne!(old, new);
    assert!(matches!(
        configure(tag.clone(), "new").await?,
        Some(SwapResult::Swapped(_))
    ));

    // The registry moves the tag back to the old, signed version.
    assert_eq!(push_and_sign(wasm.clone()).await?, old);
    let refused = configure(tag.clone(), "back").await?;
    assert!(
        matches!(&refused, Some(SwapResult::Rejected(m)) if m.contains("refused as a rollback") && m.contains(&old) && m.contains(&new)),
        "{refused:?}"
    );
    assert_eq!(
        label().as_deref(),
        Some("new"),
        "the newer version serves on"
    );

    // The admin rolls back on purpose by pinning the old version.
    assert!(matches!(
        configure(format!("{tag}@{old}"), "pinned").await?,
        Some(SwapResult::Swapped(_))
    ));
    assert_eq!(label().as_deref(), Some("pinned"));
    Ok(())
}
