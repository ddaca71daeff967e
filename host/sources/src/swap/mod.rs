//! Applying the plugins ConfigMap: each changed entry is fetched, verified, compiled and
//! checked off the hot path, then swapped into its slot atomically; on any failure the last
//! good version keeps serving and the failure is reported (status ConfigMap, a Warning Event on
//! the plugins ConfigMap counted as a series while the error stays the same, metric, log line)
//! and tried again with back-off. An entry naming a plugin the host does not serve adds it (its
//! controllers start, its webhooks are served); removing such an entry removes the plugin; a
//! version whose controllers or webhooks differ moves the plugin to a new slot.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use crate::builtins::Builtins;
use crate::ceiling::{Ceiling, SignatureRequirement};
use crate::config::{CONFIGMAP_NAME, FailurePolicy, PluginEntry, RegistryConfig, Rollout, Source};
use crate::{fetch, trust};

mod progressive;
mod recheck;
mod record;
mod replay_gate;
mod report;
mod rollback;
mod shadow_status;
use odh_host_metrics::Metrics;
use odh_plugin_runtime::{LoadRequest, LoadedPlugin, PluginEngine, PluginSet, PluginSlot};

/// Name of the ConfigMap where the registry reports each plugin's state.
pub const STATUS_CONFIGMAP_NAME: &str = "odh-model-controller-plugins-status";
/// Each plugin's status key is written under a field manager of its own, so writing one
/// plugin's key never drops another's.
const FIELD_MANAGER: &str = "odh-model-controller/registry";

/// Retry ticks (of the interval given to [`Registry::run`]) before a rejected candidate is
/// tried again, doubling from 1 up to this.
pub const MAX_BACKOFF_TICKS: u32 = 20;

/// What happened to one plugin's entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SwapResult {
    /// The candidate serves now (its sha256).
    Swapped(String),
    /// The candidate runs in shadow beside the active version (its sha256).
    Shadowed(String),
    /// The candidate serves a slice of the objects beside the active version (its sha256).
    RollingOut(String),
    /// Nothing changed since the last attempt.
    Unchanged,
    /// The candidate was refused; the previous version keeps serving.
    Rejected(String),
    /// The plugin's entry is gone and the plugin is not built in: it no longer serves.
    Removed,
}

/// Whether this host can serve a plugin beside the others it serves (webhook paths, caches):
/// given the candidate and the other plugins' slots.
pub type ServeCheck = Arc<dyn Fn(&LoadedPlugin, &[PluginSlot]) -> Result<(), String> + Send + Sync>;

/// A refused candidate: why, and the digest of what was fetched if it was.
struct Rejection {
    message: String,
    digest: Option<String>,
}

impl Rejection {
    fn new(message: impl Into<String>, digest: Option<&str>) -> Self {
        Self {
            message: message.into(),
            digest: digest.map(str::to_string),
        }
    }
}

/// A candidate ready to serve, and what its status records besides its digest.
struct Accepted {
    plugin: LoadedPlugin,
    admission: Admission,
}

/// How a candidate was admitted: what an explicit grant gave it beyond its baseline, and
/// where a registry artifact came from (manifest digest, the key that signed it).
#[derive(Debug, Default, Clone)]
struct Admission {
    widened: Vec<String>,
    /// What the entry's grants withhold from what the plugin declares (it gets `denied`).
    narrowed: Vec<String>,
    origin: Option<fetch::Origin>,
}

/// When a rejected plugin is tried again, in retry ticks.
#[derive(Debug, Clone, Copy)]
struct Backoff {
    wait: u32,
    next: u32,
}

/// The last rejection reported for a plugin: a repeat of the same message counts on its Event
/// instead of recording a new one.
#[derive(Debug, Clone)]
struct Reported {
    message: String,
    event: Option<String>,
    count: u32,
}

pub struct Registry {
    client: kube::Client,
    namespace: String,
    engine: PluginEngine,
    set: Arc<PluginSet>,
    /// The components `source: builtin` names, and what each built-in starts from.
    builtins: Arc<Builtins>,
    /// The version each built-in slot started with: what a removed entry reverts to.
    defaults: BTreeMap<String, LoadedPlugin>,
    /// The last entry attempted per plugin, so an unchanged entry is not fetched again.
    attempted: Mutex<BTreeMap<String, PluginEntry>>,
    /// Plugins whose last candidate was rejected (retried by [`Registry::retry_rejected`]).
    rejected: Mutex<BTreeMap<String, Backoff>>,
    reported: Mutex<BTreeMap<String, Reported>>,
    last_config: Mutex<Option<RegistryConfig>>,
    /// Where each serving registry artifact came from (the status shows it on every write).
    active_origins: Mutex<BTreeMap<String, fetch::Origin>>,
    /// Per plugin and `oci://` source, the manifest digests it served, oldest first
    /// ([`rollback`]).
    served: Mutex<BTreeMap<(String, String), Vec<String>>>,
    /// Each plugin's last status value written, so a shadow's counters can be added to it.
    last_status: Mutex<BTreeMap<String, serde_json::Value>>,
    /// The shadow counters last written per plugin.
    reported_shadows: Mutex<BTreeMap<String, odh_plugin_runtime::shadow_stats::ShadowSnapshot>>,
    /// Trusted for `https://` sources besides the public web PKI.
    extra_roots: Vec<rustls::pki_types::CertificateDer<'static>>,
    /// The only directory `file://` sources are read from; none: they are refused.
    file_dir: Option<std::path::PathBuf>,
    serve_check: Option<ServeCheck>,
    /// The most an entry may grant (the Deployment's flags).
    ceiling: Ceiling,
    /// Where recorded calls are written, one directory per plugin; none: in memory only.
    record_dir: Option<std::path::PathBuf>,
    /// Told by a rollout's guard when it rolls the candidate back.
    rollbacks: Arc<tokio::sync::Notify>,
    /// The `rollout` status last written per plugin.
    reported_rollouts: Mutex<BTreeMap<String, serde_json::Value>>,
}

impl Registry {
    /// `set` holds the plugins this host serves; the ones in it now are its built-in versions.
    /// Replacing a slot's version is all a swap does (controllers watch their slot and
    /// re-reconcile); adding, removing or moving a plugin changes `set`, which the controller
    /// supervisor and the webhook table follow.
    pub fn new(
        client: kube::Client,
        namespace: String,
        engine: PluginEngine,
        set: Arc<PluginSet>,
        builtins: Arc<Builtins>,
    ) -> Self {
        Self {
            client,
            namespace,
            engine,
            builtins,
            defaults: set
                .slots()
                .iter()
                .map(|s| (s.name().to_string(), s.current()))
                .collect(),
            set,
            attempted: Mutex::new(BTreeMap::new()),
            rejected: Mutex::new(Default::default()),
            reported: Mutex::new(Default::default()),
            last_config: Mutex::new(None),
            active_origins: Mutex::new(BTreeMap::new()),
            served: Mutex::new(BTreeMap::new()),
            last_status: Mutex::new(BTreeMap::new()),
            reported_shadows: Mutex::new(BTreeMap::new()),
            extra_roots: Vec::new(),
            file_dir: None,
            serve_check: None,
            ceiling: Ceiling::default(),
            record_dir: None,
            rollbacks: Arc::new(tokio::sync::Notify::new()),
            reported_rollouts: Mutex::new(BTreeMap::new()),
        }
    }

    /// Writes recorded calls under `dir/<plugin>/` (the cache `emptyDir`).
    pub fn with_record_dir(mut self, dir: Option<std::path::PathBuf>) -> Self {
        self.record_dir = dir;
        self
    }

    /// Refuses entries granting past `ceiling`.
    pub fn with_ceiling(mut self, ceiling: Ceiling) -> Self {
        self.ceiling = ceiling;
        self
    }

    /// Also trusts these certificate authorities for `https://` sources (a private mirror).
    pub fn with_extra_roots(
        mut self,
        roots: Vec<rustls::pki_types::CertificateDer<'static>>,
    ) -> Self {
        self.extra_roots = roots;
        self
    }

    /// Reads `file://` sources under `dir` (regular files only); without it they are refused.
    pub fn with_file_dir(mut self, dir: Option<std::path::PathBuf>) -> Self {
        self.file_dir = dir;
        self
    }

    /// The plugins served, as this registry changes them.
    pub fn plugins(&self) -> &Arc<PluginSet> {
        &self.set
    }

    /// Checks every plugin added or moved to a new slot with `check` first.
    pub fn with_serve_check(mut self, check: ServeCheck) -> Self {
        self.serve_check = Some(check);
        self
    }

    /// Applies a whole configuration; built-in plugins without an entry go back to their
    /// built-in version, other plugins without one are removed.
    pub async fn apply(&self, config: &RegistryConfig) -> BTreeMap<String, SwapResult> {
        *self.last_config.lock().expect("config lock") = Some(config.clone());
        let mut results = BTreeMap::new();
        for (name, entry) in &config.plugins {
            let result = match self.apply_entry(entry).await {
                Ok(result) => {
                    self.rejected.lock().expect("rejected lock").remove(name);
                    self.reported.lock().expect("reported lock").remove(name);
                    self.apply_record(name, entry.record);
                    result
                }
                Err(rejection) => {
                    self.rejected
                        .lock()
                        .expect("rejected lock")
                        .entry(name.clone())
                        .or_insert(Backoff { wait: 1, next: 2 });
                    self.report_rejection(name, entry, &rejection).await;
                    SwapResult::Rejected(rejection.message)
                }
            };
            results.insert(name.clone(), result);
        }
        let gone: Vec<String> = self
            .attempted
            .lock()
            .expect("attempted lock")
            .keys()
            .filter(|name| !config.plugins.contains_key(*name))
            .cloned()
            .collect();
        for name in gone {
            self.attempted.lock().expect("attempted lock").remove(&name);
            self.rejected.lock().expect("rejected lock").remove(&name);
            self.reported.lock().expect("reported lock").remove(&name);
            match self.retire(&name).await {
                Some(SwapResult::Removed) => {
                    tracing::info!(plugin = name, "plugin removed: its entry is gone");
                    self.clear_status(&name).await;
                    results.insert(name, SwapResult::Removed);
                }
                Some(result) => {
                    results.insert(name, result);
                }
                None => {}
            }
        }
        results
    }

    /// Stops serving whatever the plugins ConfigMap made `name` serve: a built-in goes back to
    /// how the host started (its own version, no shadow, failing closed), any other plugin is
    /// removed. `None`: nothing changed.
    async fn retire(&self, name: &str) -> Option<SwapResult> {
        let Some(default) = self.defaults.get(name) else {
            return self.set.remove(name).is_some().then(|| {
                Metrics::global().plugin_swap(name, true);
                SwapResult::Removed
            });
        };
        let serving = self.set.get(name);
        if let Some(slot) = &serving {
            slot.set_shadow(None);
            slot.set_fail_open(false);
            slot.set_recorder(None);
            if slot.canary().is_some() {
                slot.set_canary(None);
            }
        }
        if serving.is_some_and(|s| s.current().same_as(default)) {
            return None;
        }
        match self
            .install(default.clone(), false, &Admission::default())
            .await
        {
            Ok(()) => Some(SwapResult::Swapped(default.sha256().to_string())),
            Err(message) => {
                tracing::error!(
                    plugin = name,
                    "the built-in version could not serve again: {message}"
                );
                None
            }
        }
    }

    async fn apply_entry(&self, entry: &PluginEntry) -> Result<SwapResult, Rejection> {
        if self
            .attempted
            .lock()
            .expect("attempted lock")
            .get(&entry.name)
            == Some(entry)
        {
            return Ok(SwapResult::Unchanged);
        }
        self.attempted
            .lock()
            .expect("attempted lock")
            .insert(entry.name.clone(), entry.clone());
        let serving = self.set.get(&entry.name);
        let predecessor = serving.as_ref().map(PluginSlot::current);
        let Accepted { plugin, admission } = self.candidate(predecessor.as_ref(), entry).await?;
        let sha = plugin.sha256().to_string();
        // The same code with the same settings as the serving version answers as it does:
        // nothing to replay (and adding a gate to the entry that serves must not refuse it).
        let changes_answers = predecessor
            .as_ref()
            .is_none_or(|p| p.sha256() != sha || p.settings() != plugin.settings());
        if let Some(gate) = &entry.replay_gate
            && entry.rollout != Rollout::Shadow
            && changes_answers
        {
            replay_gate::check(serving.as_ref(), &plugin, gate)
                .await
                .map_err(|m| Rejection::new(m, Some(&sha)))?;
        }
        if let Some(plan) = &entry.progressive {
            return self.start_rollout(serving, plugin, plan, &admission).await;
        }
        if entry.rollout == Rollout::Shadow {
            let Some(slot) = serving else {
                return Err(Rejection::new(
                    "a plugin this host does not serve yet has no active version to run beside; add it with mode: active (the default) first",
                    Some(&sha),
                ));
            };
            if !same_shape(&slot.current(), &plugin) {
                return Err(Rejection::new(
                    "a shadow candidate must declare the controllers and webhooks of the version it runs beside",
                    Some(&sha),
                ));
            }
            tracing::info!(
                plugin = slot.name(),
                candidate = sha,
                "shadow candidate running beside the active version"
            );
            slot.set_shadow(Some(plugin));
            self.end_rollout(&slot);
            let active = slot.current().sha256().to_string();
            self.write_status(slot.name(), &active, &sha, None, &admission)
                .await;
            return Ok(SwapResult::Shadowed(sha));
        }
        let fail_open = entry.failure_policy == Some(FailurePolicy::Ignore);
        self.install(plugin, fail_open, &admission)
            .await
            .map_err(|m| Rejection::new(m, Some(&sha)))?;
        // The entry no longer rolls out: its version serves every object (promotion) or the
        // admin pointed it back (rollback). Ended after the swap, so no object of the slice
        // passes through the old version meanwhile.
        if let Some(slot) = &serving {
            self.end_rollout(slot);
        }
        if let (Some(origin), Source::Oci(text), None) =
            (&admission.origin, &entry.source, &entry.sha256)
        {
            self.record_served(&entry.name, text, &origin.digest);
        }
        Ok(SwapResult::Swapped(sha))
    }

    /// Makes `plugin` serve: in its slot when its controllers and webhooks are those the slot
    /// serves, else in a new slot (the plugin's old loops stop, new ones start).
    async fn install(
        &self,
        plugin: LoadedPlugin,
        fail_open: bool,
        admission: &Admission,
    ) -> Result<(), String> {
        let name = plugin.name().to_string();
        if let Some(slot) = self.set.get(&name)
            && same_shape(&slot.current(), &plugin)
        {
            slot.set_shadow(None);
            slot.set_fail_open(fail_open);
            self.swap_in(&slot, plugin, admission).await;
            return Ok(());
        }
        if let Some(check) = &self.serve_check {
            let others: Vec<PluginSlot> = self
                .set
                .slots()
                .into_iter()
                .filter(|s| s.name() != name)
                .collect();
            check(&plugin, &others)?;
        }
        let sha = plugin.sha256().to_string();
        self.set_active_origin(&name, admission.origin.clone());
        let slot = PluginSlot::new(plugin);
        slot.set_fail_open(fail_open);
        let previous = self.set.insert(slot);
        match &previous {
            Some(p) => tracing::info!(
                plugin = name,
                from = p.current().sha256(),
                to = sha,
                "plugin swapped with new controllers or webhooks: its loops and routes restart"
            ),
            None => tracing::info!(plugin = name, sha256 = sha, "plugin added"),
        }
        Metrics::global().plugin_swap(&name, true);
        self.write_status(&name, &sha, &sha, None, admission).await;
        Ok(())
    }

    /// Fetches, verifies and loads a candidate, and checks it may take `predecessor`'s place
    /// (or join the host, without one).
    async fn candidate(
        &self,
        predecessor: Option<&LoadedPlugin>,
        entry: &PluginEntry,
    ) -> Result<Accepted, Rejection> {
        if self.ceiling.signatures == SignatureRequirement::Required
            && !entry.source.is_builtin()
            && entry.signature.is_none()
        {
            return Err(Rejection::new(
                "this cluster runs only signed plugins from outside the host (--plugin-signatures=required): publish the component to an oci:// registry, sign it with a trusted key and name the keys in the entry's signature",
                entry.sha256.as_deref(),
            ));
        }
        // A built-in's bytes stay where the binary holds them (no copy), with the digest taken
        // when it was built (not hashed again at every start and swap).
        let (bytes, digest, origin) = match &entry.source {
            Source::Builtin(name) => {
                let (bytes, digest) =
                    self.builtins.component_and_digest(name).ok_or_else(|| {
                        Rejection::new(format!("there is no built-in plugin {name:?}"), None)
                    })?;
                (Cow::Borrowed(bytes), digest.to_string(), None)
            }
            _ => {
                let fetched = fetch::fetch_with_origin(
                    entry,
                    &self.client,
                    &self.namespace,
                    &self.extra_roots,
                    fetch::FileSources(self.file_dir.as_deref()),
                    &self.ceiling.trusted_keys,
                )
                .await
                .map_err(|m| Rejection::new(m, None))?;
                let digest = hex::encode(odh_crypto::sha256(&fetched.bytes));
                (Cow::Owned(fetched.bytes), digest, fetched.origin)
            }
        };
        let reject = |message: String| Rejection::new(message, Some(&digest));
        fetch::verify_digest(entry, &digest).map_err(reject)?;
        if let (Some(origin), Source::Oci(text)) = (&origin, &entry.source) {
            self.refuse_rollback(&entry.name, text, entry.sha256.is_some(), &origin.digest)
                .map_err(reject)?;
        }
        let engine = self.engine.clone();
        let mut req_entry = entry.clone();
        // The admin's settings refine the ones the host started with (derived from the
        // environment for built-in plugins) key by key.
        if let (Some(serde_json::Value::Object(start)), serde_json::Value::Object(given)) = (
            self.defaults.get(&entry.name).map(LoadedPlugin::settings),
            &req_entry.settings,
        ) {
            let mut merged = start;
            merged.extend(given.clone());
            req_entry.settings = serde_json::Value::Object(merged);
        }
        // Compiling takes a while: off the async executor.
        let load_digest = digest.clone();
        let plugin = tokio::task::spawn_blocking(move || {
            LoadedPlugin::load(
                &engine,
                LoadRequest::new(req_entry.source.clone(), &bytes)
                    .digest(&load_digest)
                    .grants(req_entry.grants.clone())
                    .limits(req_entry.limits.clone())
                    .settings(req_entry.settings.clone()),
            )
            .map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| reject(format!("loading failed: {e}")))?
        .map_err(reject)?;
        if plugin.name() != entry.name {
            return Err(reject(format!(
                "the component is plugin {:?}, not {:?}",
                plugin.name(),
                entry.name
            )));
        }
        let mut widened = Vec::new();
        // What the candidate holds without a grant (a plugin from outside the host only).
        let baseline =
            (!entry.source.is_builtin()).then(|| trust::baseline(predecessor, plugin.manifest()));
        if let Some(baseline) = &baseline {
            let beyond = trust::beyond_baseline(plugin.manifest(), &entry.grants, baseline);
            if !beyond.is_empty() {
                let held = match predecessor {
                    Some(_) => "the version it replaces holds",
                    None => {
                        "a new plugin holds (its controllers' primary and owned kinds, none of them a sensitive kind such as Secret, Pod, a workload, RBAC, a webhook configuration or a CRD)"
                    }
                };
                return Err(reject(format!(
                    "the candidate declares {} beyond what {held}; grant them in the entry's grants to allow them",
                    beyond.join(", ")
                )));
            }
            widened = trust::widened(plugin.capabilities(), baseline);
            if !widened.is_empty() {
                tracing::info!(
                    plugin = plugin.name(),
                    "the entry's grants widen what the plugin holds: {}",
                    widened.join(", ")
                );
            }
        }
        let past_ceiling = match &baseline {
            Some(baseline) => self.ceiling.exceeded(
                plugin.manifest(),
                plugin.capabilities(),
                baseline,
                &Default::default(),
                predecessor.map(LoadedPlugin::manifest),
            ),
            // The host's own code holds what its registration gives it; only where the
            // controller's identity goes is the entry's to widen.
            None => self.ceiling.exceeded(
                plugin.manifest(),
                plugin.capabilities(),
                plugin.capabilities(),
                &self.builtins.grants(&entry.name).service_account_namespaces,
                Some(plugin.manifest()),
            ),
        };
        if !past_ceiling.is_empty() {
            return Err(reject(format!(
                "the entry grants {} past what this cluster allows the plugins ConfigMap to grant (the Deployment's --plugin-grantable-* flags; docs/security.md)",
                past_ceiling.join(", ")
            )));
        }
        let cut = trust::narrowing(
            plugin.manifest(),
            plugin.capabilities(),
            predecessor.map(LoadedPlugin::manifest),
        );
        if !cut.refusing.is_empty() {
            return Err(reject(format!(
                "the entry's grants withhold {} that the candidate declares, which its controllers need or the version it replaces did not declare: it would serve and fail on them; add them to the entry's grants to allow them",
                cut.refusing.join(", ")
            )));
        }
        if !cut.narrowed.is_empty() {
            tracing::warn!(
                plugin = plugin.name(),
                "the entry's grants narrow what the plugin declares; it gets denied for: {}",
                cut.narrowed.join(", ")
            );
        }
        Ok(Accepted {
            plugin,
            admission: Admission {
                widened,
                narrowed: cut.narrowed,
                origin,
            },
        })
    }

    /// One retry tick: each rejected plugin whose back-off has run out is forgotten and the
    /// last configuration applied again (a source may have come back). A plugin rejected
    /// again waits twice as many ticks, up to [`MAX_BACKOFF_TICKS`].
    pub async fn retry_rejected(&self) -> BTreeMap<String, SwapResult> {
        let due: Vec<String> = {
            let mut rejected = self.rejected.lock().expect("rejected lock");
            rejected
                .iter_mut()
                .filter_map(|(name, b)| {
                    b.wait = b.wait.saturating_sub(1);
                    (b.wait == 0).then(|| {
                        b.wait = b.next;
                        b.next = (b.next * 2).min(MAX_BACKOFF_TICKS);
                        name.clone()
                    })
                })
                .collect()
        };
        if due.is_empty() {
            return BTreeMap::new();
        }
        {
            let mut attempted = self.attempted.lock().expect("attempted lock");
            for name in &due {
                attempted.remove(name);
            }
        }
        let config = self.last_config.lock().expect("config lock").clone();
        match config {
            Some(c) => self.apply(&c).await,
            None => BTreeMap::new(),
        }
    }

    async fn swap_in(&self, slot: &PluginSlot, plugin: LoadedPlugin, admission: &Admission) {
        let sha = plugin.sha256().to_string();
        self.set_active_origin(slot.name(), admission.origin.clone());
        let previous = slot.replace(plugin);
        tracing::info!(
            plugin = slot.name(),
            from = previous.sha256(),
            to = sha,
            "plugin swapped"
        );
        Metrics::global().plugin_swap(slot.name(), true);
        self.write_status(slot.name(), &sha, &sha, None, admission)
            .await;
    }

    /// Applies the plugins ConfigMap's current content (absent: everything built-in). A
    /// configuration that does not parse changes nothing and is reported.
    pub async fn apply_configmap(
        &self,
        cm: Option<&ConfigMap>,
    ) -> Result<BTreeMap<String, SwapResult>, String> {
        let text = cm
            .and_then(|c| c.data.as_ref())
            .and_then(|d| d.get(crate::config::CONFIG_KEY))
            .cloned()
            .unwrap_or_default();
        match RegistryConfig::parse(&text, &self.builtins) {
            Ok(config) => Ok(self.apply(&config).await),
            Err(message) => {
                tracing::warn!("the plugins ConfigMap is invalid, nothing changes: {message}");
                self.warning_event("InvalidPluginConfig", &message).await;
                Err(message)
            }
        }
    }

    /// Watches the plugins ConfigMap and applies every change until `shutdown`; rejected
    /// candidates are retried every `retry` (a source may come back).
    pub async fn run(
        self: Arc<Self>,
        retry: std::time::Duration,
        shutdown: tokio_util::sync::CancellationToken,
    ) {
        use futures::StreamExt;
        use kube::runtime::{WatchStreamExt, watcher};
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        let config = watcher::Config::default().fields(&format!("metadata.name={CONFIGMAP_NAME}"));
        let mut stream = std::pin::pin!(watcher(api, config).default_backoff());
        let mut retries = tokio::time::interval(retry);
        retries.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let event = tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = retries.tick() => {
                    self.recheck_signatures().await;
                    self.retry_rejected().await;
                    self.report_shadows().await;
                    self.report_rollouts().await;
                    continue;
                }
                _ = self.rollbacks.notified() => {
                    self.report_rollouts().await;
                    continue;
                }
                e = stream.next() => e,
            };
            match event {
                Some(Ok(watcher::Event::Apply(cm))) | Some(Ok(watcher::Event::InitApply(cm))) => {
                    let _ = self.apply_configmap(Some(&cm)).await;
                }
                Some(Ok(watcher::Event::Delete(_))) => {
                    let _ = self.apply_configmap(None).await;
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    tracing::warn!("watching the plugins ConfigMap failed, retrying: {e}")
                }
                None => return,
            }
        }
    }
}

/// Whether two versions declare the same controllers and webhooks (so one can take the other's
/// slot without restarting loops or routes).
fn same_shape(a: &LoadedPlugin, b: &LoadedPlugin) -> bool {
    let (a, b) = (a.manifest(), b.manifest());
    a.controllers == b.controllers && a.webhooks == b.webhooks
}
