//! A loaded plugin: compiled, pre-instantiated, with its manifest, routes, capabilities and
//! limits. Every call gets a fresh `Store` and instance, its clocks, a memory cap and an
//! output cap.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::Semaphore;
use wasmtime::component::{Component, Instance, InstancePre};
use wasmtime::{Store, StoreContextMut, Trap, UpdateDeadline};

use crate::bindings::exports::odh::controller::{
    http_api, plugin as plugin_api, webhook_selectors,
};
use crate::bindings::{self, WIT_PACKAGE, types};
use crate::call_clock::CallClock;
use crate::call_env::CallEnv;
use crate::call_state::{CallState, Refusals};
use crate::capabilities::{Capabilities, Grants};
use crate::cluster_view::NoCluster;
use crate::engine::PluginEngine;
use crate::errors::CallError;
use crate::export::Export;
use crate::gvk::Gvk;
use crate::limits::Limits;
use crate::source::Source;
use crate::wire::{
    AdmissionDecision, ApiRequest, ApiResponse, ApiRoute, Manifest, Operation, Outcome, OutputSize,
    Ownership, RequestKey, WebhookType,
};

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
    /// The object under review, exactly as the request carried it.
    pub object: Option<Value>,
    pub old_object: Option<Value>,
    pub dry_run: bool,
    pub user_info: Value,
}

/// A change to a watched object whose mapping is `custom`.
#[derive(Debug, Clone)]
pub struct WatchEventInput {
    pub controller: String,
    pub gvk: Gvk,
    pub object: String,
    pub deleted: bool,
}

/// What to load: the bytes plus the admin's configuration for them.
pub struct LoadRequest<'a> {
    pub source: Source,
    pub bytes: &'a [u8],
    pub grants: Grants,
    pub limits: Limits,
    /// Settings JSON handed to every call; checked by the plugin's `validate-settings`.
    pub settings: Value,
    /// False only to describe a component (`plugin inspect`): its settings are the admin's,
    /// checked when it is loaded to serve.
    pub check_settings: bool,
}

impl<'a> LoadRequest<'a> {
    /// The bytes from `source`, with the declared capabilities granted, default limits and no
    /// settings.
    pub fn new(source: Source, bytes: &'a [u8]) -> Self {
        Self {
            source,
            bytes,
            grants: Grants::default(),
            limits: Limits::default(),
            settings: Value::Object(Default::default()),
            check_settings: true,
        }
    }

    /// Skips `validate-settings`: for describing a component whose settings are not known.
    pub fn without_settings_check(mut self) -> Self {
        self.check_settings = false;
        self
    }

    pub fn settings(mut self, settings: Value) -> Self {
        self.settings = settings;
        self
    }

    pub fn grants(mut self, grants: Grants) -> Self {
        self.grants = grants;
        self
    }

    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
}

/// A plugin version ready to serve calls. Cheap to clone.
#[derive(Clone)]
pub struct LoadedPlugin {
    inner: Arc<Inner>,
}

struct Inner {
    name: Arc<str>,
    source: Source,
    sha256: String,
    manifest: Manifest,
    routes: Vec<ApiRoute>,
    caps: Arc<Capabilities>,
    limits: Limits,
    settings: String,
    exports: Exports,
    engine: PluginEngine,
    permits: Arc<Semaphore>,
}

/// The pre-instantiated component and where its exports are. `http-api` (0.1.1) and
/// `webhook-selectors` (0.1.2) are optional: components of older releases do not export them.
struct Exports {
    pre: InstancePre<CallState>,
    plugin: plugin_api::GuestIndices,
    api: Option<http_api::GuestIndices>,
    selectors: Option<webhook_selectors::GuestIndices>,
}

/// Why loading failed.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{source_}: {message}")]
    Invalid { source_: String, message: String },
    #[error(transparent)]
    Call(#[from] CallError),
}

impl LoadedPlugin {
    /// Compiles (or reuses), checks the world, reads the manifest and routes, and validates
    /// the settings.
    pub fn load(engine: &PluginEngine, req: LoadRequest<'_>) -> Result<Self, LoadError> {
        let (component, sha256) = engine.compile(req.bytes).map_err(|e| LoadError::Invalid {
            source_: req.source.to_string(),
            message: format!("{e:#}"),
        })?;
        Self::from_component(engine, component, sha256, req)
    }

    pub(super) fn from_component(
        engine: &PluginEngine,
        component: Component,
        sha256: String,
        req: LoadRequest<'_>,
    ) -> Result<Self, LoadError> {
        let invalid = |message: String| LoadError::Invalid {
            source_: req.source.to_string(),
            message,
        };
        req.limits
            .check(engine.options().max_memory_mib)
            .map_err(invalid)?;
        let pre = engine.linker().instantiate_pre(&component).map_err(|e| {
            invalid(format!(
                "imports something the host does not provide: {e:#}"
            ))
        })?;
        let plugin = plugin_api::GuestIndices::new(&pre).map_err(|e| {
            invalid(format!(
                "does not export the {WIT_PACKAGE} plugin interface: {e:#}"
            ))
        })?;
        let api = http_api::GuestIndices::new(&pre).ok();
        let selectors = webhook_selectors::GuestIndices::new(&pre).ok();
        let exports = Exports {
            pre,
            plugin,
            api,
            selectors,
        };
        let settings = serde_json::to_string(&req.settings).map_err(|e| invalid(e.to_string()))?;

        // Who the plugin is, asked before anything else is known of it: with no reads, no
        // HTTP and the source as its name in messages.
        let bootstrap = Bootstrap {
            name: Arc::from(req.source.to_string()),
            caps: Arc::new(Capabilities::default()),
            limits: &req.limits,
        };
        let mut manifest: Manifest = bootstrap
            .call(engine, &exports, Export::Manifest, |p, s| {
                p.call_manifest(s).map(Ok)
            })?
            .into();
        manifest.validate().map_err(invalid)?;
        let name: Arc<str> = Arc::from(manifest.name.as_str());
        let bootstrap = Bootstrap { name, ..bootstrap };
        if let Some(indices) = &exports.selectors {
            let selectors = bootstrap.call_selectors(engine, &exports, indices)?;
            manifest
                .scope_webhooks(selectors.into_iter().map(Into::into))
                .map_err(invalid)?;
        }
        let routes = match &exports.api {
            Some(api) => bootstrap
                .call_api(engine, &exports, api, Export::Routes, |a, s| {
                    a.call_routes(s).map(Ok)
                })?
                .into_iter()
                .map(ApiRoute::from)
                .collect(),
            None => Vec::new(),
        };
        if req.check_settings {
            bootstrap.call(engine, &exports, Export::ValidateSettings, |p, s| {
                p.call_validate_settings(s, &settings)
            })?;
        }
        Ok(Self {
            inner: Arc::new(Inner {
                name: bootstrap.name,
                source: req.source,
                sha256,
                caps: Arc::new(Capabilities::new(&manifest, &req.grants)),
                manifest,
                routes,
                permits: Arc::new(Semaphore::new(req.limits.concurrency)),
                limits: req.limits,
                settings,
                exports,
                engine: engine.clone(),
            }),
        })
    }

    /// The settings every call receives.
    pub fn settings(&self) -> Value {
        serde_json::from_str(&self.inner.settings).unwrap_or_default()
    }

    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Whether both handles are the same loaded version (same bytes *and* configuration).
    pub fn same_as(&self, other: &LoadedPlugin) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    pub fn manifest(&self) -> &Manifest {
        &self.inner.manifest
    }

    /// The HTTP routes the plugin serves (none for a component without `http-api`).
    pub fn routes(&self) -> &[ApiRoute] {
        &self.inner.routes
    }

    pub fn sha256(&self) -> &str {
        &self.inner.sha256
    }

    pub fn source(&self) -> &Source {
        &self.inner.source
    }

    pub fn capabilities(&self) -> &Capabilities {
        &self.inner.caps
    }

    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// Reconciles one primary object (blocking: run it through [`LoadedPlugin::offload`]).
    /// Every write the outcome asks for is checked against the plugin's capabilities first.
    pub fn reconcile_blocking(
        &self,
        input: &ReconcileInput,
        env: &CallEnv,
    ) -> Result<Outcome, CallError> {
        let req = bindings::reconcile_types::ReconcileRequest {
            controller: input.controller.clone(),
            key: (&input.key).into(),
            object: input.object.clone(),
            settings: self.inner.settings.clone(),
        };
        let op = Export::Reconcile;
        let raw = self.call(op, env, |p, s| p.call_reconcile(s, &req))?;
        let outcome = Outcome::try_from(raw).map_err(|message| self.malformed(op, message))?;
        self.check_writes(op, outcome.apply.iter().map(|d| &d.object), &outcome.delete)?;
        self.check_owners(&outcome, input.object.as_deref())?;
        if let Some(metadata) = &outcome.primary_metadata {
            check_primary_metadata(metadata).map_err(|message| self.malformed(op, message))?;
        }
        Ok(outcome)
    }

    /// Maps a watched object's change to primary keys (blocking).
    pub fn map_blocking(
        &self,
        input: &WatchEventInput,
        env: &CallEnv,
    ) -> Result<Vec<RequestKey>, CallError> {
        let ev = bindings::reconcile_types::WatchEvent {
            controller: input.controller.clone(),
            gvk: (&input.gvk).into(),
            object: input.object.clone(),
            deleted: input.deleted,
            settings: self.inner.settings.clone(),
        };
        let keys = self.call(Export::Map, env, |p, s| p.call_map(s, &ev))?;
        Ok(keys.into_iter().map(Into::into).collect())
    }

    /// A webhook's decision (blocking): `mutate` or `validate` by the webhook's type. Side
    /// effects are checked against the plugin's write capabilities.
    pub fn admit_blocking(
        &self,
        kind: WebhookType,
        input: &AdmissionInput,
        env: &CallEnv,
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
            object: input.object.as_ref().map(Value::to_string),
            old_object: input.old_object.as_ref().map(Value::to_string),
            dry_run: input.dry_run,
            user_info: input.user_info.to_string(),
            settings: self.inner.settings.clone(),
        };
        let op = match kind {
            WebhookType::Mutating => Export::Mutate,
            WebhookType::Validating => Export::Validate,
        };
        let raw = self.call(op, env, |p, s| match kind {
            WebhookType::Mutating => p.call_mutate(s, &req),
            WebhookType::Validating => p.call_validate(s, &req),
        })?;
        let decision =
            AdmissionDecision::try_from(raw).map_err(|message| self.malformed(op, message))?;
        self.check_writes(op, decision.side_effects.iter().map(|d| &d.object), &[])?;
        Ok(decision)
    }

    /// Answers a request to one of the plugin's routes (blocking).
    pub fn handle_blocking(
        &self,
        request: &ApiRequest,
        env: &CallEnv,
    ) -> Result<ApiResponse, CallError> {
        let Some(api) = &self.inner.exports.api else {
            return Err(self.malformed(Export::Handle, "it serves no API".into()));
        };
        let req = bindings::api_types::ApiRequest {
            method: request.method.clone(),
            path: request.path.clone(),
            query: request.query.clone(),
            headers: request.headers.clone(),
            body: request.body.clone(),
            settings: self.inner.settings.clone(),
        };
        let this = self.bootstrap();
        this.call_with(
            &self.inner.engine,
            &self.inner.exports,
            Export::Handle,
            env,
            |store, instance| {
                let api = api.load(&mut *store, instance)?;
                api.call_handle(store, &req)
            },
        )
        .map(Into::into)
    }

    /// Waits for one of the plugin's concurrency permits, then runs `f` (one call of `op`) on
    /// the blocking pool, so guest code never occupies an executor thread. A call waits for a
    /// permit at most its budget: a webhook must answer within its timeout even when every
    /// slot is taken.
    pub async fn offload<R: Send + 'static>(
        &self,
        op: Export,
        f: impl FnOnce(&LoadedPlugin) -> Result<R, CallError> + Send + 'static,
    ) -> Result<R, CallError> {
        let limits = &self.inner.limits;
        let wait = if op.is_interactive() {
            limits.admission_budget()
        } else {
            limits.reconcile_budget()
        };
        let acquire = self.inner.permits.clone().acquire_owned();
        let permit = match tokio::time::timeout(wait, acquire).await {
            Ok(Ok(permit)) => permit,
            Ok(Err(_)) => {
                return Err(CallError::Closed {
                    plugin: self.name().to_string(),
                });
            }
            Err(_) => {
                return Err(CallError::Busy {
                    plugin: self.name().to_string(),
                    op: op.as_str(),
                    waited: wait,
                });
            }
        };
        let this = self.clone();
        let result = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            f(&this)
        })
        .await;
        result.unwrap_or_else(|e| {
            Err(CallError::Trap {
                plugin: self.name().to_string(),
                op: op.as_str(),
                message: format!("host task failed: {e}"),
            })
        })
    }

    /// Refuses an outcome or decision that writes a kind the plugin may not write.
    fn check_writes<'a>(
        &self,
        op: Export,
        objects: impl Iterator<Item = &'a Value>,
        deletes: &[crate::wire::ObjectKey],
    ) -> Result<(), CallError> {
        let mut kinds = Vec::new();
        for object in objects {
            let gvk = Gvk::of_object(object).ok_or_else(|| {
                self.malformed(op, "an object without apiVersion/kind".to_string())
            })?;
            kinds.push(gvk);
        }
        kinds.extend(deletes.iter().map(|k| k.gvk.clone()));
        match kinds.into_iter().find(|k| !self.inner.caps.may_write(k)) {
            None => Ok(()),
            Some(kind) => Err(CallError::WriteRefused {
                plugin: self.name().to_string(),
                op: op.as_str(),
                kind,
            }),
        }
    }

    /// Refuses an outcome that sets an owner reference to anything but its primary on an
    /// object it applies unowned (on an owned one the host sets the owner references, replacing
    /// the plugin's).
    fn check_owners(&self, outcome: &Outcome, primary: Option<&str>) -> Result<(), CallError> {
        let with_owners: Vec<_> = outcome
            .apply
            .iter()
            .filter(|d| d.ownership == Ownership::None)
            .filter_map(|d| {
                let refs = d.object.pointer("/metadata/ownerReferences")?.as_array()?;
                Some((d, refs)).filter(|_| !refs.is_empty())
            })
            .collect();
        if with_owners.is_empty() {
            return Ok(());
        }
        // Rare: only now is the primary parsed for its uid.
        let primary_uid = primary
            .and_then(|p| serde_json::from_str::<Value>(p).ok())
            .and_then(|p| p.pointer("/metadata/uid")?.as_str().map(str::to_string));
        for (d, refs) in with_owners {
            let stranger = refs.iter().find(|r| {
                primary_uid.is_none()
                    || r.get("uid").and_then(Value::as_str) != primary_uid.as_deref()
            });
            if let Some(owner) = stranger {
                let field = |name: &str| owner.get(name).and_then(Value::as_str).unwrap_or("");
                return Err(CallError::ForeignOwner {
                    plugin: self.name().to_string(),
                    kind: Gvk::of_object(&d.object).unwrap_or_else(|| Gvk::new("", "", "")),
                    ownership: format!(
                        "{} owned by {} {} (uid {:?})",
                        describe(&d.object),
                        field("kind"),
                        field("name"),
                        field("uid")
                    ),
                });
            }
        }
        Ok(())
    }

    fn malformed(&self, op: Export, message: String) -> CallError {
        CallError::MalformedOutput {
            plugin: self.name().to_string(),
            op: op.as_str(),
            message,
        }
    }

    fn bootstrap(&self) -> Bootstrap<'_> {
        Bootstrap {
            name: self.inner.name.clone(),
            caps: self.inner.caps.clone(),
            limits: &self.inner.limits,
        }
    }

    /// Runs one export of the `plugin` interface.
    fn call<R: OutputSize>(
        &self,
        op: Export,
        env: &CallEnv,
        f: impl FnOnce(
            &plugin_api::Guest,
            &mut Store<CallState>,
        ) -> wasmtime::Result<Result<R, types::Error>>,
    ) -> Result<R, CallError> {
        let exports = &self.inner.exports;
        self.bootstrap()
            .call_with(&self.inner.engine, exports, op, env, |store, instance| {
                let guest = exports.plugin.load(&mut *store, instance)?;
                f(&guest, store)
            })
    }
}

/// What a call needs to know of its plugin; available before the plugin is fully loaded.
struct Bootstrap<'a> {
    name: Arc<str>,
    caps: Arc<Capabilities>,
    limits: &'a Limits,
}

impl Bootstrap<'_> {
    /// A load-time call of the `plugin` interface: no cluster, no caller, no effects.
    fn call<R: OutputSize>(
        &self,
        engine: &PluginEngine,
        exports: &Exports,
        op: Export,
        f: impl FnOnce(
            &plugin_api::Guest,
            &mut Store<CallState>,
        ) -> wasmtime::Result<Result<R, types::Error>>,
    ) -> Result<R, CallError> {
        let env = CallEnv::read_only(Arc::new(NoCluster));
        self.call_with(engine, exports, op, &env, |store, instance| {
            let guest = exports.plugin.load(&mut *store, instance)?;
            f(&guest, store)
        })
    }

    /// A load-time call of the `http-api` interface.
    fn call_api<R: OutputSize>(
        &self,
        engine: &PluginEngine,
        exports: &Exports,
        api: &http_api::GuestIndices,
        op: Export,
        f: impl FnOnce(
            &http_api::Guest,
            &mut Store<CallState>,
        ) -> wasmtime::Result<Result<R, types::Error>>,
    ) -> Result<R, CallError> {
        let env = CallEnv::read_only(Arc::new(NoCluster));
        self.call_with(engine, exports, op, &env, |store, instance| {
            let guest = api.load(&mut *store, instance)?;
            f(&guest, store)
        })
    }

    /// The load-time call of the `webhook-selectors` interface.
    fn call_selectors(
        &self,
        engine: &PluginEngine,
        exports: &Exports,
        indices: &webhook_selectors::GuestIndices,
    ) -> Result<Vec<webhook_selectors::WebhookSelector>, CallError> {
        let env = CallEnv::read_only(Arc::new(NoCluster));
        self.call_with(
            engine,
            exports,
            Export::Selectors,
            &env,
            |store, instance| {
                let guest = indices.load(&mut *store, instance)?;
                guest.call_selectors(store).map(Ok)
            },
        )
    }

    /// Runs one export in a fresh store: the execution deadline counts only the guest's own
    /// time (the call hook moves time spent in host calls off it), the budget bounds every
    /// host call, the limiter caps memory and the output is size-checked.
    fn call_with<R: OutputSize>(
        &self,
        engine: &PluginEngine,
        exports: &Exports,
        op: Export,
        env: &CallEnv,
        f: impl FnOnce(&mut Store<CallState>, &Instance) -> wasmtime::Result<Result<R, types::Error>>,
    ) -> Result<R, CallError> {
        let limits = self.limits;
        let (deadline, budget) = if op.is_interactive() {
            (limits.admission_timeout(), limits.admission_budget())
        } else {
            (limits.reconcile_timeout(), limits.reconcile_budget())
        };
        let clock = CallClock::new(deadline, budget);
        let state = CallState::new(self.name.clone(), self.caps.clone(), limits, env, clock);
        let mut store = Store::new(engine.engine(), state);
        store.limiter(|s| &mut s.limiter);
        store.call_hook(|mut cx, hook| {
            match hook {
                wasmtime::CallHook::CallingHost => cx.data_mut().clock.enter_host(),
                wasmtime::CallHook::ReturningFromHost => cx.data_mut().clock.leave_host(),
                _ => {}
            }
            Ok(())
        });
        store.set_epoch_deadline(engine.deadline_ticks(deadline));
        let ticker = engine.clone();
        store.epoch_deadline_callback(move |cx: StoreContextMut<'_, CallState>| {
            // The wall clock reached the deadline; the guest may have spent part of it in
            // host calls. Go on for whatever execution time it has left.
            let left = cx.data().clock.guest_left();
            if left.is_zero() {
                Ok(UpdateDeadline::Interrupt)
            } else {
                Ok(UpdateDeadline::Continue(ticker.deadline_ticks(left)))
            }
        });

        let plugin = || self.name.to_string();
        let instance = exports
            .pre
            .instantiate(&mut store)
            .map_err(|e| CallError::Instantiate {
                plugin: plugin(),
                message: format!("{e:#}"),
            })?;
        let result = f(&mut store, &instance);
        count_refusals(&self.name, store.data().refusals());
        match result {
            Ok(Ok(value)) => {
                let count = value.entries();
                if count > R::MAX_ENTRIES {
                    return Err(CallError::TooManyEntries {
                        plugin: plugin(),
                        op: op.as_str(),
                        count,
                        limit: R::MAX_ENTRIES,
                    });
                }
                let size = value.output_size();
                if size > limits.max_output_bytes {
                    return Err(CallError::OutputTooLarge {
                        plugin: plugin(),
                        op: op.as_str(),
                        size,
                        limit: limits.max_output_bytes,
                    });
                }
                Ok(value)
            }
            Ok(Err(guest)) => Err(CallError::Guest {
                plugin: plugin(),
                op: op.as_str(),
                error: guest.into(),
            }),
            Err(e) => Err(self.classify_failure(op, e, &store)),
        }
    }

    fn classify_failure(
        &self,
        op: Export,
        e: wasmtime::Error,
        store: &Store<CallState>,
    ) -> CallError {
        let plugin = self.name.to_string();
        let op = op.as_str();
        let state = store.data();
        let trap = e.downcast_ref::<Trap>().copied();
        if trap == Some(Trap::Interrupt) {
            return CallError::Timeout {
                plugin,
                op,
                deadline: state.clock.guest_limit(),
            };
        }
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
/// The sandbox's refusals of one call, in the process's metrics.
fn count_refusals(plugin: &str, refusals: Refusals) {
    let metrics = odh_host_metrics::Metrics::global();
    if refusals.host_calls_refused {
        metrics.host_calls_refused(plugin);
    }
    if refusals.log_lines_dropped > 0 {
        metrics.plugin_log_lines_dropped(plugin, refusals.log_lines_dropped);
    }
}

fn panic_summary(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|l| !l.starts_with("note: run with `RUST_BACKTRACE"))
        .collect::<Vec<_>>()
        .join(" ")
}

impl OutputSize for Vec<webhook_selectors::WebhookSelector> {
    fn output_size(&self) -> usize {
        self.iter()
            .map(|w| {
                w.path.len()
                    + w.object_selector.as_ref().map_or(0, String::len)
                    + w.namespace_selector.as_ref().map_or(0, String::len)
            })
            .sum()
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

/// `<Kind> <namespace>/<name>` of an object a plugin returned, for messages.
fn describe(object: &Value) -> String {
    let field = |path: &str| object.pointer(path).and_then(Value::as_str).unwrap_or("");
    match field("/metadata/namespace") {
        "" => format!("{} {}", field("/kind"), field("/metadata/name")),
        ns => format!("{} {ns}/{}", field("/kind"), field("/metadata/name")),
    }
}

/// An outcome's `primaryMetadata` changes labels, annotations and finalizers only; checked
/// before anything of the outcome is applied, so a bad one leaves nothing half done.
pub fn check_primary_metadata(patch: &Value) -> Result<(), String> {
    let Some(fields) = patch.as_object() else {
        return Err("primaryMetadata must be a JSON object".into());
    };
    match fields
        .keys()
        .find(|k| !matches!(k.as_str(), "labels" | "annotations" | "finalizers"))
    {
        Some(other) => Err(format!(
            "primaryMetadata may only change labels, annotations and finalizers, not {other:?}"
        )),
        None => Ok(()),
    }
}
