//! A loaded plugin: compiled, pre-instantiated, with its manifest, capabilities and limits.
//! Every call gets a fresh `Store` and instance, a deadline, a memory cap and an output cap.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Semaphore;
use wasmtime::component::Component;
use wasmtime::{Store, Trap};

use super::bindings::{self, Policy, PolicyPre, WIT_PACKAGE, types};
use super::call_state::CallState;
use super::capabilities::{Capabilities, Grants};
use super::cluster_view::ClusterView;
use super::engine::PluginEngine;
use super::errors::{CallError, GuestError};
use super::limits::Limits;
use super::wire::{self, AdmissionDecision, Manifest, Operation, Outcome, OutputSize, RequestKey};
use crate::gvk::Gvk;

/// One reconcile request.
#[derive(Debug, Clone)]
pub struct ReconcileInput {
    pub controller: String,
    pub key: RequestKey,
    /// The primary object as JSON; `None` when it is gone.
    pub object: Option<String>,
}

/// One admission request.
#[derive(Debug, Clone)]
pub struct AdmissionInput {
    pub uid: String,
    pub path: String,
    pub gvk: Gvk,
    pub resource: String,
    pub sub_resource: Option<String>,
    pub operation: Operation,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub object: Option<String>,
    pub old_object: Option<String>,
    pub dry_run: bool,
    /// `userInfo` as JSON.
    pub user_info: String,
}

/// A change to a watched object whose mapping is `custom`.
#[derive(Debug, Clone)]
pub struct WatchEventInput {
    pub controller: String,
    pub gvk: Gvk,
    pub object: String,
    pub deleted: bool,
}

/// Where a plugin came from, for messages and `plugin inspect`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginSource {
    Builtin(String),
    File(std::path::PathBuf),
    Other(String),
}

impl std::fmt::Display for PluginSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Builtin(n) => write!(f, "builtin:{n}"),
            Self::File(p) => write!(f, "file://{}", p.display()),
            Self::Other(s) => f.write_str(s),
        }
    }
}

/// What to load: the bytes plus the admin's configuration for them.
pub struct LoadRequest<'a> {
    pub source: PluginSource,
    pub bytes: &'a [u8],
    pub grants: Grants,
    pub limits: Limits,
    /// Settings JSON handed to every call; checked by the plugin's `validate-settings`.
    pub settings: Value,
}

/// A plugin ready to serve calls. Cheap to clone.
#[derive(Clone)]
pub struct Plugin {
    inner: Arc<Inner>,
}

struct Inner {
    name: Arc<str>,
    source: PluginSource,
    sha256: String,
    manifest: Manifest,
    caps: Arc<Capabilities>,
    limits: Limits,
    settings: String,
    pre: PolicyPre<CallState>,
    engine: PluginEngine,
    permits: Arc<Semaphore>,
}

/// Why loading failed.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{source_}: {message}")]
    Invalid { source_: String, message: String },
    #[error(transparent)]
    Call(#[from] CallError),
}

impl Plugin {
    /// Compiles (or reuses), checks the world, reads the manifest and validates the settings.
    pub fn load(engine: &PluginEngine, req: LoadRequest<'_>) -> Result<Self, LoadError> {
        let invalid = |message: String| LoadError::Invalid {
            source_: req.source.to_string(),
            message,
        };
        let (component, sha256) = engine
            .compile(req.bytes)
            .map_err(|e| invalid(format!("{e:#}")))?;
        Self::from_component(engine, component, sha256, req)
    }

    pub(super) fn from_component(
        engine: &PluginEngine,
        component: Component,
        sha256: String,
        req: LoadRequest<'_>,
    ) -> Result<Self, LoadError> {
        let source_text = req.source.to_string();
        let invalid = |message: String| LoadError::Invalid {
            source_: source_text.clone(),
            message,
        };
        if req.limits.memory_mib > engine.options().max_memory_mib {
            return Err(invalid(format!(
                "memory limit {} MiB is above the host's maximum of {} MiB",
                req.limits.memory_mib,
                engine.options().max_memory_mib
            )));
        }
        if req.limits.concurrency == 0 {
            return Err(invalid("concurrency must be at least 1".into()));
        }
        let instance_pre = engine.linker().instantiate_pre(&component).map_err(|e| {
            invalid(format!(
                "imports something the host does not provide: {e:#}"
            ))
        })?;
        let pre = PolicyPre::new(instance_pre).map_err(|e| {
            invalid(format!(
                "does not export the {WIT_PACKAGE} plugin interface: {e:#}"
            ))
        })?;
        let settings = serde_json::to_string(&req.settings).map_err(|e| invalid(e.to_string()))?;
        let source_name: Arc<str> = Arc::from(source_text.as_str());
        let mut plugin = Plugin {
            inner: Arc::new(Inner {
                name: source_name,
                source: req.source,
                sha256,
                manifest: Manifest {
                    name: String::new(),
                    version: String::new(),
                    description: String::new(),
                    controllers: vec![],
                    webhooks: vec![],
                    reads: vec![],
                    writes: vec![],
                    http_hosts: vec![],
                },
                caps: Arc::new(Capabilities::default()),
                limits: req.limits,
                settings,
                pre,
                engine: engine.clone(),
                permits: Arc::new(Semaphore::new(1)),
            }),
        };
        let manifest: Manifest = plugin
            .call(
                "manifest",
                plugin.inner.limits.reconcile_timeout(),
                Arc::new(super::NoCluster),
                |p, s| p.odh_controller_plugin().call_manifest(s).map(Ok),
            )?
            .into();
        validate_manifest(&manifest).map_err(invalid)?;
        let caps = Capabilities::new(&manifest, &req.grants);
        let inner = Arc::get_mut(&mut plugin.inner).expect("no other handle exists yet");
        inner.name = Arc::from(manifest.name.as_str());
        inner.caps = Arc::new(caps);
        inner.permits = Arc::new(Semaphore::new(inner.limits.concurrency));
        inner.manifest = manifest;
        let settings = plugin.inner.settings.clone();
        plugin.call(
            "validate-settings",
            plugin.inner.limits.reconcile_timeout(),
            Arc::new(super::NoCluster),
            |p, s| {
                p.odh_controller_plugin()
                    .call_validate_settings(s, &settings)
            },
        )?;
        Ok(plugin)
    }

    /// The settings every call receives.
    pub fn settings(&self) -> serde_json::Value {
        serde_json::from_str(&self.inner.settings).unwrap_or_default()
    }

    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Whether both handles are the same loaded version (same bytes *and* configuration).
    pub fn same_as(&self, other: &Plugin) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    pub fn manifest(&self) -> &Manifest {
        &self.inner.manifest
    }

    pub fn sha256(&self) -> &str {
        &self.inner.sha256
    }

    pub fn source(&self) -> &PluginSource {
        &self.inner.source
    }

    pub fn capabilities(&self) -> &Capabilities {
        &self.inner.caps
    }

    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// Reconciles one primary object (blocking: run it off the async executor).
    pub fn reconcile_blocking(
        &self,
        input: &ReconcileInput,
        cluster: Arc<dyn ClusterView>,
    ) -> Result<Outcome, CallError> {
        let req = bindings::reconcile_types::ReconcileRequest {
            controller: input.controller.clone(),
            key: (&input.key).into(),
            object: input.object.clone(),
            settings: self.inner.settings.clone(),
        };
        let raw = self.call(
            "reconcile",
            self.inner.limits.reconcile_timeout(),
            cluster,
            |p, s| p.odh_controller_plugin().call_reconcile(s, &req),
        )?;
        Outcome::try_from(raw).map_err(|message| self.malformed("reconcile", message))
    }

    /// Maps a watched object's change to primary keys (blocking).
    pub fn map_blocking(
        &self,
        input: &WatchEventInput,
        cluster: Arc<dyn ClusterView>,
    ) -> Result<Vec<RequestKey>, CallError> {
        let ev = bindings::reconcile_types::WatchEvent {
            controller: input.controller.clone(),
            gvk: (&input.gvk).into(),
            object: input.object.clone(),
            deleted: input.deleted,
            settings: self.inner.settings.clone(),
        };
        let keys = self.call(
            "map",
            self.inner.limits.reconcile_timeout(),
            cluster,
            |p, s| p.odh_controller_plugin().call_map(s, &ev),
        )?;
        Ok(keys.into_iter().map(Into::into).collect())
    }

    /// A mutating webhook's decision (blocking). When the plugin returns the mutated object,
    /// the patch is derived here from the raw request object.
    pub fn mutate_blocking(
        &self,
        input: &AdmissionInput,
        cluster: Arc<dyn ClusterView>,
    ) -> Result<AdmissionDecision, CallError> {
        let mut decision = self.admission("mutate", input, cluster)?;
        if decision.patch.is_none()
            && let Some(mutated) = &decision.mutated
        {
            let original: Value = match &input.object {
                Some(o) => serde_json::from_str(o)
                    .map_err(|e| self.malformed("mutate", format!("request object: {e}")))?,
                None => Value::Null,
            };
            decision.patch = Some(wire::derive_patch(&original, mutated));
        }
        Ok(decision)
    }

    /// A validating webhook's decision (blocking).
    pub fn validate_blocking(
        &self,
        input: &AdmissionInput,
        cluster: Arc<dyn ClusterView>,
    ) -> Result<AdmissionDecision, CallError> {
        self.admission("validate", input, cluster)
    }

    /// Async forms: wait for a concurrency permit, then run the call on the blocking pool so
    /// guest code never occupies an executor thread.
    pub async fn reconcile(
        &self,
        input: ReconcileInput,
        cluster: Arc<dyn ClusterView>,
    ) -> Result<Outcome, CallError> {
        self.offload(move |p| p.reconcile_blocking(&input, cluster))
            .await
    }

    pub async fn map(
        &self,
        input: WatchEventInput,
        cluster: Arc<dyn ClusterView>,
    ) -> Result<Vec<RequestKey>, CallError> {
        self.offload(move |p| p.map_blocking(&input, cluster)).await
    }

    pub async fn mutate(
        &self,
        input: AdmissionInput,
        cluster: Arc<dyn ClusterView>,
    ) -> Result<AdmissionDecision, CallError> {
        self.offload(move |p| p.mutate_blocking(&input, cluster))
            .await
    }

    pub async fn validate(
        &self,
        input: AdmissionInput,
        cluster: Arc<dyn ClusterView>,
    ) -> Result<AdmissionDecision, CallError> {
        self.offload(move |p| p.validate_blocking(&input, cluster))
            .await
    }

    async fn offload<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Plugin) -> Result<R, CallError> + Send + 'static,
    ) -> Result<R, CallError> {
        let closed = || CallError::Closed {
            plugin: self.name().to_string(),
        };
        let permit = self
            .inner
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| closed())?;
        let this = self.clone();
        let result = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            f(&this)
        })
        .await;
        result.unwrap_or_else(|e| {
            Err(CallError::Trap {
                plugin: self.name().to_string(),
                op: "call",
                message: format!("host task failed: {e}"),
            })
        })
    }

    fn admission(
        &self,
        op: &'static str,
        input: &AdmissionInput,
        cluster: Arc<dyn ClusterView>,
    ) -> Result<AdmissionDecision, CallError> {
        let req = bindings::admission_types::AdmissionRequest {
            uid: input.uid.clone(),
            path: input.path.clone(),
            gvk: (&input.gvk).into(),
            resource: input.resource.clone(),
            sub_resource: input.sub_resource.clone(),
            operation: input.operation.into(),
            namespace: input.namespace.clone(),
            name: input.name.clone(),
            object: input.object.clone(),
            old_object: input.old_object.clone(),
            dry_run: input.dry_run,
            user_info: input.user_info.clone(),
            settings: self.inner.settings.clone(),
        };
        let raw = self.call(
            op,
            self.inner.limits.admission_timeout(),
            cluster,
            |p, s| {
                if op == "mutate" {
                    p.odh_controller_plugin().call_mutate(s, &req)
                } else {
                    p.odh_controller_plugin().call_validate(s, &req)
                }
            },
        )?;
        AdmissionDecision::try_from(raw).map_err(|message| self.malformed(op, message))
    }

    fn malformed(&self, op: &'static str, message: String) -> CallError {
        CallError::MalformedOutput {
            plugin: self.name().to_string(),
            op,
            message,
        }
    }

    /// Runs one export in a fresh store with the call's deadline and limits.
    fn call<R: OutputSize>(
        &self,
        op: &'static str,
        deadline: Duration,
        cluster: Arc<dyn ClusterView>,
        f: impl FnOnce(&Policy, &mut Store<CallState>) -> wasmtime::Result<Result<R, types::Error>>,
    ) -> Result<R, CallError> {
        let started = std::time::Instant::now();
        let result = self.call_uninstrumented(op, deadline, cluster, f);
        crate::metrics::Metrics::global().plugin_call(
            &self.inner.name,
            op,
            result.as_ref().map(|_| ()),
            started.elapsed(),
        );
        result
    }

    fn call_uninstrumented<R: OutputSize>(
        &self,
        op: &'static str,
        deadline: Duration,
        cluster: Arc<dyn ClusterView>,
        f: impl FnOnce(&Policy, &mut Store<CallState>) -> wasmtime::Result<Result<R, types::Error>>,
    ) -> Result<R, CallError> {
        let inner = &self.inner;
        let plugin = || inner.name.to_string();
        let state = CallState::new(
            inner.name.clone(),
            inner.caps.clone(),
            cluster,
            inner.limits.memory_bytes(),
        );
        let mut store = Store::new(inner.engine.engine(), state);
        store.limiter(|s| &mut s.limiter);
        store.set_epoch_deadline(inner.engine.deadline_ticks(deadline));
        store.epoch_deadline_trap();

        let policy = match inner.pre.instantiate(&mut store) {
            Ok(p) => p,
            Err(e) => {
                return Err(CallError::Instantiate {
                    plugin: plugin(),
                    message: format!("{e:#}"),
                });
            }
        };
        match f(&policy, &mut store) {
            Ok(Ok(value)) => {
                let size = value.output_size();
                if size > inner.limits.max_output_bytes {
                    return Err(CallError::OutputTooLarge {
                        plugin: plugin(),
                        op,
                        size,
                        limit: inner.limits.max_output_bytes,
                    });
                }
                Ok(value)
            }
            Ok(Err(guest)) => Err(CallError::Guest {
                plugin: plugin(),
                op,
                error: guest_error(guest),
            }),
            Err(e) => Err(self.classify_failure(op, deadline, e, &store)),
        }
    }

    fn classify_failure(
        &self,
        op: &'static str,
        deadline: Duration,
        e: wasmtime::Error,
        store: &Store<CallState>,
    ) -> CallError {
        let plugin = self.name().to_string();
        let trap = e.downcast_ref::<Trap>().copied();
        if trap == Some(Trap::Interrupt) {
            return CallError::Timeout {
                plugin,
                op,
                deadline,
            };
        }
        let state = store.data();
        if state.limiter.hit {
            return CallError::MemoryLimit {
                plugin,
                op,
                limit_mib: state.limiter.limit / (1024 * 1024),
            };
        }
        let stderr = state.stderr_text();
        tracing::debug!(plugin = %plugin, op, "plugin call failed: {e:?}");
        let what = match trap {
            Some(t) => t.to_string(),
            None => format!("{e:#}"),
        };
        let message = if stderr.is_empty() {
            what
        } else {
            format!("{what}; plugin stderr: {}", panic_summary(&stderr))
        };
        CallError::Trap {
            plugin,
            op,
            message,
        }
    }
}

/// The useful part of a Rust panic report (drops the "note: run with RUST_BACKTRACE" line).
fn panic_summary(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|l| !l.starts_with("note: run with `RUST_BACKTRACE"))
        .collect::<Vec<_>>()
        .join(" ")
}

pub(crate) fn guest_error(e: types::Error) -> GuestError {
    match e {
        types::Error::Invalid(m) => GuestError::Invalid(m),
        types::Error::Denied(m) => GuestError::Denied(m),
        types::Error::Transient(m) => GuestError::Transient(m),
        types::Error::Internal(m) => GuestError::Internal(m),
    }
}

impl OutputSize for bindings::manifest_types::Manifest {
    fn output_size(&self) -> usize {
        // Manifests are small and read once; a generous bound still stops a runaway plugin.
        self.name.len()
            + self.description.len()
            + self.controllers.len() * 256
            + self.webhooks.len() * 256
    }
}

fn validate_manifest(m: &Manifest) -> Result<(), String> {
    let name_ok = !m.name.is_empty()
        && m.name.len() <= 63
        && m.name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !name_ok {
        return Err(format!(
            "manifest name {:?} must be 1-63 characters of [a-z0-9-]",
            m.name
        ));
    }
    let mut paths = std::collections::BTreeSet::new();
    for w in &m.webhooks {
        if !w.path.starts_with('/') {
            return Err(format!("webhook path {:?} must start with '/'", w.path));
        }
        if !paths.insert(&w.path) {
            return Err(format!("webhook path {:?} is declared twice", w.path));
        }
    }
    let mut names = std::collections::BTreeSet::new();
    for c in &m.controllers {
        if !names.insert(&c.name) {
            return Err(format!("controller {:?} is declared twice", c.name));
        }
    }
    Ok(())
}
