//! What every command that serves needs first: the kube client, the termination signal, and
//! the plugins it starts with (built-ins with the settings their registration entries derive
//! from the environment, and `--plugin` files).

use std::borrow::Cow;

use anyhow::Context;
use kube::{Client, Config, config::KubeConfigOptions};
use odh_plugin_runtime::{
    EngineOptions, HttpTrust, Identity, LoadRequest, LoadedPlugin, MemoryBudget, PluginEngine,
    Source,
};
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::builtins;
use crate::cli::RunArgs;

/// Extra certificate authorities for `https://` plugin sources: the PEM file named by
/// `ODH_PLUGIN_SOURCE_CA_FILE` (a private mirror), if set.
pub(crate) fn plugin_source_roots()
-> anyhow::Result<Vec<rustls::pki_types::CertificateDer<'static>>> {
    use rustls::pki_types::pem::PemObject;
    let Some(path) = std::env::var_os("ODH_PLUGIN_SOURCE_CA_FILE") else {
        return Ok(Vec::new());
    };
    rustls::pki_types::CertificateDer::pem_file_iter(&path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .with_context(|| {
            format!(
                "reading ODH_PLUGIN_SOURCE_CA_FILE {}",
                std::path::Path::new(&path).display()
            )
        })
}

/// How often a rejected plugin candidate (e.g. an unreachable source) is tried again.
pub(crate) const REGISTRY_RETRY: std::time::Duration = std::time::Duration::from_secs(30);

/// The plugins this process starts with: the default built-ins (what upstream runs) unless
/// `--no-default-plugins`, and the `--plugin` names (built-in) or `.wasm` files. A built-in
/// starts with the settings its registration entry derives from the environment; the engine
/// holds the controller's `identity`, which the host sends for plugins where their grants allow.
pub(crate) fn load_plugins(
    args: &RunArgs,
    identity: Identity,
) -> anyhow::Result<(PluginEngine, Vec<LoadedPlugin>)> {
    let mut wanted: Vec<String> = if args.no_default_plugins {
        Vec::new()
    } else {
        builtins::defaults().map(|b| b.name.to_string()).collect()
    };
    for plugin in &args.plugins {
        if !wanted.contains(plugin) {
            wanted.push(plugin.clone());
        }
    }
    let memory_budget = match args.plugin_memory_budget_mib {
        Some(mib) => MemoryBudget::with_limit(mib.saturating_mul(1024 * 1024)),
        None => MemoryBudget::from_container_limit(),
    };
    match memory_budget.limit() {
        Some(bytes) => info!(
            "plugin calls in flight may hold {} MiB of memory together",
            bytes / (1024 * 1024)
        ),
        None => info!("no container memory limit: plugin calls' memory is bounded per call only"),
    }
    let options = EngineOptions {
        cache_dir: args.plugin_cache_dir.clone(),
        precompiled_dir: Some(args.plugin_precompiled_dir.clone()),
        identity,
        memory_budget,
        http_trust: plugin_http_trust(&args.plugin_http_ca_files)?
            .skipping_verification_for_identity_services(mr_skip_tls_verify()),
        ..Default::default()
    };
    load_plugins_named(&wanted, options)
}

/// Upstream's `MR_SKIP_TLS_VERIFY` (Go's `ParseBool`; empty or unparsable is false): HTTPS to
/// the Model Registry Services (those a plugin may send the controller's identity to) is not
/// verified. Every other host a plugin reaches still is.
fn mr_skip_tls_verify() -> bool {
    let skip = std::env::var("MR_SKIP_TLS_VERIFY")
        .ok()
        .and_then(|v| crate::cli::parse_go_bool(&v).ok())
        .unwrap_or(false);
    if skip {
        tracing::warn!(
            "MR_SKIP_TLS_VERIFY: HTTPS to the Services of the namespaces plugins may send the controller's identity to (the Model Registries) is not verified"
        );
    }
    skip
}

/// Where OpenShift mounts its service CA in every pod (beside the ServiceAccount token).
pub const SERVICE_CA_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/service-ca.crt";

/// The CAs plugin HTTPS trusts: the public web PKI plus `files`, or, with none given,
/// OpenShift's service CA when the pod has it. A file given that does not load stops the start.
fn plugin_http_trust(files: &[std::path::PathBuf]) -> anyhow::Result<HttpTrust> {
    let files: Vec<std::path::PathBuf> = if files.is_empty() {
        let service_ca = std::path::Path::new(SERVICE_CA_FILE);
        service_ca
            .exists()
            .then(|| service_ca.to_path_buf())
            .into_iter()
            .collect()
    } else {
        files.to_vec()
    };
    let trust = HttpTrust::with_pem_files(&files).context("--plugin-http-ca-file")?;
    if trust.extra_roots() > 0 {
        info!(
            files = ?files,
            certificates = trust.extra_roots(),
            "plugin HTTPS trusts these CAs besides the public web PKI"
        );
    }
    Ok(trust)
}

/// A plugin to start with: its bytes, and their hex sha256 when the binary holds them.
struct Component {
    source: Source,
    bytes: Cow<'static, [u8]>,
    sha256: Option<&'static str>,
}

/// Loads `wanted` (built-in names or `.wasm` files), each built-in with the settings its
/// registration entry derives from the environment.
pub fn load_plugins_named(
    wanted: &[String],
    options: EngineOptions,
) -> anyhow::Result<(PluginEngine, Vec<LoadedPlugin>)> {
    let engine = PluginEngine::new(options)?;
    // A built-in's bytes stay where the binary holds them, with the digest taken when it was
    // built: with its compiled form precompiled or cached, a start neither copies nor hashes
    // them, so their pages are never read (resident memory of their size saved).
    let mut sources: Vec<Component> = Vec::new();
    for spec in wanted {
        let path = std::path::Path::new(spec);
        if path.exists() {
            sources.push(Component {
                source: Source::File(path.to_path_buf()),
                bytes: Cow::Owned(std::fs::read(path)?),
                sha256: None,
            });
        } else if let Some((bytes, sha256)) = builtins::embedded(spec) {
            sources.push(Component {
                source: Source::Builtin(spec.clone()),
                bytes: Cow::Borrowed(bytes),
                sha256: Some(sha256),
            });
        } else {
            anyhow::bail!("--plugin {spec:?} is neither a file nor a built-in plugin");
        }
    }
    // Compile every distinct component in parallel, then load each under the digest its
    // compilation took (a `--plugin` file's bytes are hashed once).
    let digested: Vec<(&[u8], Option<&str>)> = sources
        .iter()
        .map(|c| (c.bytes.as_ref(), c.sha256))
        .collect();
    let digests = engine
        .compile_all(&digested)
        .into_iter()
        .map(|compiled| compiled.map(|(_, sha256)| sha256))
        .collect::<anyhow::Result<Vec<String>>>()?;
    let mut plugins = Vec::new();
    for (Component { source, bytes, .. }, sha256) in sources.iter().zip(&digests) {
        let settings = match source {
            Source::Builtin(name) => builtins::find(name)
                .map(|b| b.starting_settings(|k| std::env::var(k).ok()))
                .unwrap_or_default(),
            _ => serde_json::json!({}),
        };
        let (grants, limits) = match source {
            Source::Builtin(name) => (
                builtins::default_grants(name),
                builtins::default_limits(name),
            ),
            _ => Default::default(),
        };
        let request = LoadRequest::new(source.clone(), bytes)
            .digest(sha256)
            .settings(settings)
            .grants(grants)
            .limits(limits);
        let plugin =
            LoadedPlugin::load(&engine, request).map_err(|e| match settings_refusal(&e) {
                Some(message) => anyhow::Error::new(SettingsRefused {
                    plugin: source.to_string(),
                    message: message.to_string(),
                }),
                None => anyhow::anyhow!("loading plugin {source}: {e}"),
            })?;
        info!(
            plugin = plugin.name(),
            version = plugin.manifest().version,
            sha256 = plugin.sha256(),
            "plugin loaded"
        );
        plugins.push(plugin);
    }
    // A `--plugin` file carrying a default built-in's name serves in its place.
    let mut seen = std::collections::BTreeSet::new();
    let mut unique = Vec::new();
    for plugin in plugins.into_iter().rev() {
        if seen.insert(plugin.name().to_string()) {
            unique.push(plugin);
        } else {
            info!(
                plugin = plugin.name(),
                "a later --plugin of the same name replaces this one"
            );
        }
    }
    unique.reverse();
    if unique.is_empty() {
        info!("no plugins enabled (use --plugin)");
    }
    Ok((engine, unique))
}

/// A plugin the process starts with refused its starting settings. A built-in's come from the
/// process environment, so this is a configuration error of the process, in the plugin's words.
#[derive(Debug, thiserror::Error)]
#[error("loading plugin {plugin}: {message}")]
pub struct SettingsRefused {
    pub plugin: String,
    /// The plugin's message, without the SDK's `invalid plugin settings: ` prefix.
    pub message: String,
}

/// The plugin's own words when `e` is its refusal of the settings.
fn settings_refusal(e: &odh_plugin_runtime::LoadError) -> Option<&str> {
    use odh_plugin_runtime::{CallError, Export, GuestError, LoadError};
    match e {
        LoadError::Call(CallError::Guest {
            op,
            error: GuestError::Invalid(message),
            ..
        }) if *op == Export::ValidateSettings.as_str() => Some(
            message
                .strip_prefix("invalid plugin settings: ")
                .unwrap_or(message),
        ),
        _ => None,
    }
}

/// The process's own identity, read at each use: a kubeconfig's static token, else the
/// in-cluster ServiceAccount token file (projected tokens are rotated while the process runs).
fn identity(config: &Config) -> Identity {
    use secrecy::ExposeSecret;
    match config.auth_info.token.as_ref() {
        Some(token) => {
            let token = token.expose_secret().to_string();
            Identity::from_fn(move || Some(token.clone()))
        }
        None => Identity::from_fn(|| {
            std::fs::read_to_string(SERVICE_ACCOUNT_TOKEN_FILE)
                .ok()
                .map(|t| t.trim().to_string())
        }),
    }
}

const SERVICE_ACCOUNT_TOKEN_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/// Kube config resolution as upstream: `--kubeconfig`, then KUBECONFIG, in-cluster, ~/.kube/config.
pub async fn connect(
    kubeconfig: Option<&std::path::Path>,
    limit: Option<odh_reconcile::api_client::RateLimit>,
) -> anyhow::Result<(Config, Client, Identity)> {
    let config = match kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?
        }
        None => Config::infer()
            .await
            .context("unable to load kube config")?,
    };
    let identity = identity(&config);
    Ok((
        config.clone(),
        odh_reconcile::api_client::limited_client(config, limit)?,
        identity,
    ))
}

/// Cancelled on SIGTERM or SIGINT. Both are listened to from the call on, for the life of the
/// process: once a handler is installed the default action (exit) is gone, so a signal that came
/// while nothing listened (e.g. between winning the lease and starting the controllers) would be
/// lost and the process would hold its lease until SIGKILL.
pub fn termination() -> anyhow::Result<CancellationToken> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = interrupt.recv() => {}
        }
        cancel.cancel();
    });
    Ok(token)
}
