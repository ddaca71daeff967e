//! Applying the plugins ConfigMap: each changed entry is fetched, verified, compiled and
//! checked off the hot path, then swapped into its slot atomically; on any failure the last
//! good version keeps serving and the failure is reported (status ConfigMap, Warning Event on
//! the plugins ConfigMap, metric, log line).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use super::config::{CONFIGMAP_NAME, FailurePolicy, PluginEntry, RegistryConfig, Rollout};
use super::fetch;
use crate::metrics::Metrics;
use crate::plugin::{LoadRequest, LoadedPlugin, PluginEngine, PluginSlot};

/// Name of the ConfigMap where the registry reports each plugin's state.
pub const STATUS_CONFIGMAP_NAME: &str = "odh-model-controller-plugins-status";
const FIELD_MANAGER: &str = "odh-model-controller/registry";

/// What happened to one plugin's entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SwapResult {
    /// The candidate serves now (its sha256).
    Swapped(String),
    /// The candidate runs in shadow beside the active version (its sha256).
    Shadowed(String),
    /// Nothing changed since the last attempt.
    Unchanged,
    /// The candidate was refused; the previous version keeps serving.
    Rejected(String),
}

pub struct Registry {
    client: kube::Client,
    namespace: String,
    engine: PluginEngine,
    slots: BTreeMap<String, PluginSlot>,
    /// The version each slot started with (built-in): what a removed entry reverts to.
    defaults: BTreeMap<String, LoadedPlugin>,
    /// The last entry attempted per plugin, so an unchanged entry is not fetched again.
    attempted: Mutex<BTreeMap<String, PluginEntry>>,
    /// Plugins whose last candidate was rejected (retried by [`Registry::retry_rejected`]).
    rejected: Mutex<std::collections::BTreeSet<String>>,
    last_config: Mutex<Option<RegistryConfig>>,
    /// Trusted for `https://` sources besides the public web PKI.
    extra_roots: Vec<rustls::pki_types::CertificateDer<'static>>,
}

impl Registry {
    /// `slots` are the plugins this host serves. Replacing a slot's version is all a swap
    /// does: controllers watch their slot and re-reconcile.
    pub fn new(
        client: kube::Client,
        namespace: String,
        engine: PluginEngine,
        slots: &[PluginSlot],
    ) -> Self {
        Self {
            client,
            namespace,
            engine,
            defaults: slots
                .iter()
                .map(|s| (s.name().to_string(), s.current()))
                .collect(),
            slots: slots
                .iter()
                .map(|s| (s.name().to_string(), s.clone()))
                .collect(),
            attempted: Mutex::new(BTreeMap::new()),
            rejected: Mutex::new(Default::default()),
            last_config: Mutex::new(None),
            extra_roots: Vec::new(),
        }
    }

    /// Also trusts these certificate authorities for `https://` sources (a private mirror).
    pub fn with_extra_roots(
        mut self,
        roots: Vec<rustls::pki_types::CertificateDer<'static>>,
    ) -> Self {
        self.extra_roots = roots;
        self
    }

    /// Applies a whole configuration; plugins without an entry go back to their built-in version.
    pub async fn apply(&self, config: &RegistryConfig) -> BTreeMap<String, SwapResult> {
        *self.last_config.lock().expect("config lock") = Some(config.clone());
        let mut results = BTreeMap::new();
        for (name, entry) in &config.plugins {
            let result = self.apply_entry(entry).await;
            match &result {
                SwapResult::Rejected(message) => {
                    self.rejected
                        .lock()
                        .expect("rejected lock")
                        .insert(name.clone());
                    self.report_rejection(name, entry, message).await;
                }
                SwapResult::Swapped(_) | SwapResult::Shadowed(_) => {
                    self.rejected.lock().expect("rejected lock").remove(name);
                }
                SwapResult::Unchanged => {}
            }
            results.insert(name.clone(), result);
        }
        for (name, default) in &self.defaults {
            if config.plugins.contains_key(name) {
                continue;
            }
            let slot = &self.slots[name];
            let was_configured = self
                .attempted
                .lock()
                .expect("attempted lock")
                .remove(name)
                .is_some();
            if !was_configured {
                continue;
            }
            // Back to how the host started: no shadow candidate, failing closed, its own version.
            slot.set_shadow(None);
            slot.set_fail_open(false);
            if !slot.current().same_as(default) {
                self.swap_in(slot, default.clone()).await;
                results.insert(
                    name.clone(),
                    SwapResult::Swapped(default.sha256().to_string()),
                );
            }
        }
        results
    }

    async fn apply_entry(&self, entry: &PluginEntry) -> SwapResult {
        if self
            .attempted
            .lock()
            .expect("attempted lock")
            .get(&entry.name)
            == Some(entry)
        {
            return SwapResult::Unchanged;
        }
        self.attempted
            .lock()
            .expect("attempted lock")
            .insert(entry.name.clone(), entry.clone());
        let Some(slot) = self.slots.get(&entry.name) else {
            return SwapResult::Rejected(format!(
                "plugin {:?} is not served by this host (start it with --plugin; adding plugins needs a restart)",
                entry.name
            ));
        };
        match self.candidate(slot, entry).await {
            Ok(plugin) if entry.rollout == Rollout::Shadow => {
                let sha = plugin.sha256().to_string();
                tracing::info!(
                    plugin = slot.name(),
                    candidate = sha,
                    "shadow candidate running beside the active version"
                );
                slot.set_shadow(Some(plugin));
                let active = slot.current().sha256().to_string();
                self.write_status(slot.name(), &active, &sha, None).await;
                SwapResult::Shadowed(sha)
            }
            Ok(plugin) => {
                let sha = plugin.sha256().to_string();
                slot.set_shadow(None);
                slot.set_fail_open(entry.failure_policy == Some(FailurePolicy::Ignore));
                self.swap_in(slot, plugin).await;
                SwapResult::Swapped(sha)
            }
            Err(message) => SwapResult::Rejected(message),
        }
    }

    /// Fetches, verifies and loads a candidate, and checks it can take the slot's place.
    async fn candidate(
        &self,
        slot: &PluginSlot,
        entry: &PluginEntry,
    ) -> Result<LoadedPlugin, String> {
        let bytes =
            fetch::fetch_with_roots(entry, &self.client, &self.namespace, &self.extra_roots)
                .await?;
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
        let plugin = tokio::task::spawn_blocking(move || {
            LoadedPlugin::load(
                &engine,
                LoadRequest::new(req_entry.source.clone(), &bytes)
                    .grants(req_entry.grants.clone())
                    .limits(req_entry.limits.clone())
                    .settings(req_entry.settings.clone()),
            )
            .map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| format!("loading failed: {e}"))??;
        let current = slot.current();
        if plugin.name() != entry.name {
            return Err(format!(
                "the component is plugin {:?}, not {:?}",
                plugin.name(),
                entry.name
            ));
        }
        let withheld = plugin.capabilities().withheld(plugin.manifest());
        if !withheld.is_empty() {
            // The grant narrows the manifest; the plugin gets Denied for what it lacks.
            tracing::info!(
                plugin = plugin.name(),
                "the grants narrow the candidate's manifest: {}",
                withheld.join(", ")
            );
        }
        let (old, new) = (current.manifest(), plugin.manifest());
        if old.controllers != new.controllers || old.webhooks != new.webhooks {
            return Err(
                "the candidate changes its controllers or webhooks; that needs a restart".into(),
            );
        }
        Ok(plugin)
    }

    /// Forgets rejected attempts and applies the last configuration again: a source that was
    /// unreachable is tried anew.
    pub async fn retry_rejected(&self) -> BTreeMap<String, SwapResult> {
        let rejected: Vec<String> =
            std::mem::take(&mut *self.rejected.lock().expect("rejected lock"))
                .into_iter()
                .collect();
        if rejected.is_empty() {
            return BTreeMap::new();
        }
        {
            let mut attempted = self.attempted.lock().expect("attempted lock");
            for name in &rejected {
                attempted.remove(name);
            }
        }
        let config = self.last_config.lock().expect("config lock").clone();
        match config {
            Some(c) => self.apply(&c).await,
            None => BTreeMap::new(),
        }
    }

    async fn swap_in(&self, slot: &PluginSlot, plugin: LoadedPlugin) {
        let sha = plugin.sha256().to_string();
        let previous = slot.replace(plugin);
        tracing::info!(
            plugin = slot.name(),
            from = previous.sha256(),
            to = sha,
            "plugin swapped"
        );
        Metrics::global().plugin_swap(slot.name(), true);
        self.write_status(slot.name(), &sha, &sha, None).await;
    }

    async fn report_rejection(&self, name: &str, entry: &PluginEntry, message: &str) {
        tracing::warn!(plugin = name, source = %entry.source, "plugin candidate rejected, the last good version keeps serving: {message}");
        Metrics::global().plugin_swap(name, false);
        let active = self
            .slots
            .get(name)
            .map(|s| s.current().sha256().to_string())
            .unwrap_or_default();
        let candidate = entry.sha256.clone().unwrap_or_default();
        self.write_status(name, &active, &candidate, Some(message))
            .await;
        self.warning_event("PluginRejected", &format!("plugin {name}: {message}"))
            .await;
    }

    /// A Warning Event on the plugins ConfigMap. Each one is its own Event (not a series): every
    /// rejection's message matters.
    async fn warning_event(&self, reason: &str, note: &str) {
        use k8s_openapi::api::events::v1::Event;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
        let event = Event {
            metadata: kube::api::ObjectMeta {
                generate_name: Some(format!("{CONFIGMAP_NAME}-")),
                namespace: Some(self.namespace.clone()),
                ..Default::default()
            },
            event_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::now())),
            type_: Some("Warning".into()),
            reason: Some(reason.into()),
            action: Some("Swap".into()),
            note: Some(note.chars().take(1024).collect()),
            reporting_controller: Some("odh-model-controller".into()),
            reporting_instance: Some(
                std::env::var("POD_NAME").unwrap_or_else(|_| "odh-model-controller".into()),
            ),
            regarding: Some(ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("ConfigMap".into()),
                name: Some(CONFIGMAP_NAME.into()),
                namespace: Some(self.namespace.clone()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let api: Api<Event> = Api::namespaced(self.client.clone(), &self.namespace);
        let result = api.create(&Default::default(), &event).await.map(|_| ());
        if let Err(e) = result {
            tracing::warn!(
                reason,
                "could not record an Event on the plugins ConfigMap: {e}"
            );
        }
    }

    /// Records a plugin's state in the status ConfigMap (one JSON value per plugin).
    async fn write_status(&self, name: &str, active: &str, candidate: &str, error: Option<&str>) {
        let entry = json!({
            "activeDigest": active,
            "candidateDigest": candidate,
            "lastError": error,
            "time": k8s_openapi::jiff::Timestamp::now().to_string(),
        });
        let body = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": STATUS_CONFIGMAP_NAME, "namespace": self.namespace},
            "data": {name: entry.to_string()},
        });
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        if let Err(e) = api
            .patch(
                STATUS_CONFIGMAP_NAME,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&body),
            )
            .await
        {
            tracing::warn!(plugin = name, "could not write the plugin status: {e}");
        }
    }

    /// Applies the plugins ConfigMap's current content (absent: everything built-in). A
    /// configuration that does not parse changes nothing and is reported.
    pub async fn apply_configmap(
        &self,
        cm: Option<&ConfigMap>,
    ) -> Result<BTreeMap<String, SwapResult>, String> {
        let text = cm
            .and_then(|c| c.data.as_ref())
            .and_then(|d| d.get(super::config::CONFIG_KEY))
            .cloned()
            .unwrap_or_default();
        match RegistryConfig::parse(&text) {
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
                    self.retry_rejected().await;
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
