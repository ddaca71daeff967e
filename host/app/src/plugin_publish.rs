//! `odh-model-controller plugin push|sign|keygen` and `plugin inspect oci://…`: publishing a
//! component to an OCI registry and signing it as cosign does, from the CLI a vendor already
//! has (docs/plugin-authors.md, "4. Ship" and "5.6 Package").

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::registry::fetch::MAX_COMPONENT_BYTES;
use crate::registry::oci::{self, Access, Credentials, PublicKey, Reference, Session, SigningKey};

/// How the CLI authenticates to a registry.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RegistryArgs {
    /// A Docker config (`config.json`, or the `.dockerconfigjson` of a pull Secret) with
    /// credentials for the registry; default `$REGISTRY_AUTH_FILE` when set, else anonymous.
    #[arg(long, value_name = "FILE")]
    pub docker_config: Option<PathBuf>,
}

impl RegistryArgs {
    fn credentials(&self, reference: &Reference) -> anyhow::Result<Option<(Credentials, String)>> {
        let path = match &self.docker_config {
            Some(p) => p.clone(),
            None => match std::env::var_os("REGISTRY_AUTH_FILE") {
                Some(p) => PathBuf::from(p),
                None => return Ok(None),
            },
        };
        let json =
            std::fs::read(&path).map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
        let credentials = oci::auth::from_docker_config(&json, &reference.registry)
            .map_err(|m| anyhow::anyhow!("{}: {m}", path.display()))?;
        Ok(credentials.map(|c| (c, path.display().to_string())))
    }
}

/// Arguments of `plugin push`.
#[derive(Debug, Clone, clap::Args)]
pub struct PushArgs {
    /// The component file (`.wasm`).
    pub file: PathBuf,
    /// Where to publish it: `oci://<registry>/<repository>:<tag>`.
    pub reference: String,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// Arguments of `plugin sign`.
#[derive(Debug, Clone, clap::Args)]
pub struct SignArgs {
    /// The published component: `oci://<registry>/<repository>:<tag>` or `…@sha256:<digest>`.
    pub reference: String,
    /// The private key: PKCS#8 PEM, ECDSA P-256 or Ed25519 (`plugin keygen` makes one).
    #[arg(long)]
    pub key: PathBuf,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// Arguments of `plugin keygen`.
#[derive(Debug, Clone, clap::Args)]
pub struct KeygenArgs {
    /// Writes `<PREFIX>.key` (private, mode 0600) and `<PREFIX>.pub`.
    #[arg(long, value_name = "PREFIX")]
    pub out: PathBuf,
}

/// Arguments of `plugin inspect`.
#[derive(Debug, Clone, clap::Args)]
pub struct InspectArgs {
    /// A component file (`.wasm`), the name of a built-in plugin, or `oci://…`.
    pub plugin: String,
    /// For `oci://…`: PEM public keys a signature is checked against (repeatable).
    #[arg(long = "public-key", value_name = "FILE")]
    pub public_keys: Vec<PathBuf>,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

const CLI_CREDENTIALS: &str = "pass --docker-config with a Docker config holding credentials for the registry (or set REGISTRY_AUTH_FILE)";

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

fn read_keys(paths: &[PathBuf]) -> anyhow::Result<Vec<PublicKey>> {
    let mut keys = Vec::new();
    for path in paths {
        let pem =
            std::fs::read(path).map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
        keys.extend(
            PublicKey::parse_all(&path.display().to_string(), &pem).map_err(anyhow::Error::msg)?,
        );
    }
    Ok(keys)
}

/// Pulls an `oci://` component for `plugin inspect`: its bytes and what the registry says of it
/// (manifest digest, signature status).
pub fn pull(args: &InspectArgs) -> anyhow::Result<(Vec<u8>, Value)> {
    let reference = Reference::parse(&args.plugin).map_err(anyhow::Error::msg)?;
    let credentials = args.registry.credentials(&reference)?;
    let keys = read_keys(&args.public_keys)?;
    runtime()?.block_on(async {
        let mut session =
            Session::new(&reference, Access::Pull, credentials, &[]).advising(CLI_CREDENTIALS);
        let pulled = oci::pull(&mut session, &reference, None, MAX_COMPONENT_BYTES)
            .await
            .map_err(|m| anyhow::anyhow!("{reference}: {m}"))?;
        let signature = oci::signature_status(
            &mut session,
            &reference,
            &pulled.digest,
            (!keys.is_empty()).then_some(&keys[..]),
        )
        .await
        .map_err(|m| anyhow::anyhow!("{reference}: {m}"))?;
        let component = crate::registry::fetch::decompress(pulled.component)
            .map_err(|m| anyhow::anyhow!("{reference}: {m}"))?;
        let info = json!({
            "reference": reference.to_string(),
            "digest": pulled.digest,
            "signature": signature,
        });
        Ok((component, info))
    })
}

/// `plugin push`: the component's sha256 and the manifest digest it was published under.
pub fn push(args: &PushArgs) -> anyhow::Result<Value> {
    let reference = Reference::parse(&args.reference).map_err(anyhow::Error::msg)?;
    let component = std::fs::read(&args.file)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", args.file.display()))?;
    anyhow::ensure!(
        component.starts_with(b"\0asm"),
        "{} is not a WebAssembly binary",
        args.file.display()
    );
    let credentials = args.registry.credentials(&reference)?;
    let digest = runtime()?.block_on(async {
        let mut session =
            Session::new(&reference, Access::Push, credentials, &[]).advising(CLI_CREDENTIALS);
        oci::push(&mut session, &reference, &component).await
    });
    let digest = digest.map_err(|m| anyhow::anyhow!("{reference}: {m}"))?;
    Ok(json!({
        "reference": reference.to_string(),
        "digest": digest,
        "sha256": hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&component)),
    }))
}

/// `plugin sign`: the digest signed and the tag its signature is stored under.
pub fn sign(args: &SignArgs) -> anyhow::Result<Value> {
    let reference = Reference::parse(&args.reference).map_err(anyhow::Error::msg)?;
    let pem = std::fs::read(&args.key)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", args.key.display()))?;
    let key =
        SigningKey::from_pem(&pem).map_err(|m| anyhow::anyhow!("{}: {m}", args.key.display()))?;
    let credentials = args.registry.credentials(&reference)?;
    let signed = runtime()?.block_on(async {
        let mut session =
            Session::new(&reference, Access::Push, credentials, &[]).advising(CLI_CREDENTIALS);
        oci::sign(&mut session, &reference, &key).await
    });
    let (digest, tag) = signed.map_err(|m| anyhow::anyhow!("{reference}: {m}"))?;
    Ok(json!({
        "reference": reference.to_string(),
        "digest": digest,
        "signatureTag": tag,
        "key": key.public_key().fingerprint(),
    }))
}

/// `plugin keygen`: a new ECDSA P-256 key pair.
pub fn keygen(args: &KeygenArgs) -> anyhow::Result<Value> {
    let (private, public) = SigningKey::generate().map_err(anyhow::Error::msg)?;
    let with = |ext: &str| -> PathBuf {
        let mut name = args.out.clone().into_os_string();
        name.push(ext);
        name.into()
    };
    let (key_path, pub_path) = (with(".key"), with(".pub"));
    write_private(&key_path, private.as_bytes())?;
    std::fs::write(&pub_path, public.as_bytes())
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", pub_path.display()))?;
    Ok(json!({
        "privateKey": key_path.display().to_string(),
        "publicKey": pub_path.display().to_string(),
    }))
}

fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| anyhow::anyhow!("creating {}: {e}", path.display()))?;
    file.write_all(bytes)
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))
}
