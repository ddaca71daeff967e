//! A loaded plugin: compiled, pre-instantiated, with its manifest, routes, capabilities and
//! limits. Every call gets a fresh `Store` and instance, its clocks, a memory cap and an
//! output cap.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::Semaphore;
use wasmtime::component::{Component, Instance, InstancePre};
use wasmtime::{Store, StoreContextMut, Trap, UpdateDeadline};

use crate::bindings::exports::odh::controller::{
    change_mapping, event_filters, http_api, plugin as plugin_api, webhook_selectors,
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
mod call;
mod checks;
mod inline;

use call::{Bootstrap, Stepping};
pub use checks::check_primary_metadata;

use crate::wire::{
    AdmissionDecision, ApiRequest, ApiResponse, ApiRoute, Manifest, Operation, Outcome, OutputSize,
    Ownership, RawJson, RequestKey, WebhookType,
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
    /// The object under review, exactly as the request carried it (its text, in the buffer
    /// of the request body: handed to the plugin as is, parsed by the host only where needed).
    pub object: Option<RawJson>,
    pub old_object: Option<RawJson>,
    pub dry_run: bool,
    pub user_info: RawJson,
}

/// A change to a watched object whose mapping is `custom`.
#[derive(Debug, Clone)]
pub struct WatchEventInput {
    pub controller: String,
    pub gvk: Gvk,
    pub object: String,
    /// The object before the change, when the host knew it (handed over only by
    /// `change-mapping`, 0.1.4).
    pub old_object: Option<String>,
    pub deleted: bool,
}

/// What to load: the bytes plus the admin's configuration for them.
pub struct LoadRequest<'a> {
    pub source: Source,
    pub bytes: &'a [u8],
    /// The hex sha256 of `bytes` when the caller knows it (a built-in's, taken at build time).
    pub sha256: Option<&'a str>,
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
            sha256: None,
            grants: Grants::default(),
            limits: Limits::default(),
            settings: Value::Object(Default::default()),
            check_settings: true,
        }
    }

    /// The hex sha256 of the bytes, known beforehand: they are not hashed again.
    pub fn digest(mut self, sha256: &'a str) -> Self {
        self.sha256 = Some(sha256);
        self
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

/// The pre-instantiated component and where its exports are. `http-api` (0.1.1),
/// `webhook-selectors` (0.1.2), `event-filters` and `change-mapping` (0.1.4) are optional:
/// components of older releases do not export them.
struct Exports {
    pre: InstancePre<CallState>,
    plugin: plugin_api::GuestIndices,
    api: Option<http_api::GuestIndices>,
    selectors: Option<webhook_selectors::GuestIndices>,
    filters: Option<event_filters::GuestIndices>,
    changes: Option<change_mapping::GuestIndices>,
    /// Admission on the executor's thread; `None` when the component could not be prepared for
    /// it (its admission calls then go through the blocking pool).
    inline: Option<inline::InlineExports>,
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
        let compiled = match req.sha256 {
            Some(sha) => engine.compile_digested(req.bytes, sha.to_string()),
            None => engine.compile(req.bytes),
        };
        let (component, sha256) = compiled.map_err(|e| LoadError::Invalid {
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
        let filters = event_filters::GuestIndices::new(&pre).ok();
        let changes = change_mapping::GuestIndices::new(&pre).ok();
        let inline = inline::InlineExports::new(engine, &component);
        let exports = Exports {
            pre,
            plugin,
            api,
            selectors,
            filters,
            changes,
            inline,
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
        if let Some(indices) = &exports.filters {
            let filters = bootstrap.call_filters(engine, &exports, indices)?;
            manifest
                .filter_events(filters.into_iter().map(Into::into))
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

    /// Whether the component maps changes with their previous state (`change-mapping`,
    /// 0.1.4).
    pub fn maps_changes(&self) -> bool {
        self.inner.exports.changes.is_some()
    }

    /// Maps a watched object's change to primary keys (blocking): through `change-mapping`
    /// with the previous state when the component exports it, else `plugin.map`.
    pub fn map_blocking(
        &self,
        input: &WatchEventInput,
        env: &CallEnv,
    ) -> Result<Vec<RequestKey>, CallError> {
        if let Some(changes) = &self.inner.exports.changes {
            let change = change_mapping::WatchChange {
                controller: input.controller.clone(),
                gvk: (&input.gvk).into(),
                object: input.object.clone(),
                old_object: input.old_object.clone(),
                deleted: input.deleted,
                settings: self.inner.settings.clone(),
            };
            let keys = self.call_traced(Export::Map, env, |store, instance| {
                let guest = changes.load(&mut *store, instance)?;
                guest.call_map_change(store, &change)
            })?;
            return Ok(keys.into_iter().map(Into::into).collect());
        }
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
        let req = self.admission_request(input);
        let op = admission_export(kind);
        let mut api_errors = Vec::new();
        let called = self.call(op, env, |p, s| {
            let answer = match kind {
                WebhookType::Mutating => p.call_mutate(&mut *s, &req),
                WebhookType::Validating => p.call_validate(&mut *s, &req),
            };
            api_errors = std::mem::take(&mut s.data_mut().api_errors);
            answer
        });
        self.admission_decision(op, called, &api_errors)
    }

    /// What the plugin is asked in an admission call.
    fn admission_request(
        &self,
        input: &AdmissionInput,
    ) -> bindings::admission_types::AdmissionRequest {
        bindings::admission_types::AdmissionRequest {
            uid: input.uid.clone(),
            path: input.path.clone(),
            gvk: (&input.gvk).into(),
            resource: input.resource.clone(),
            sub_resource: input.sub_resource.clone(),
            operation: input.operation.into(),
            namespace: input.namespace.clone(),
            name: input.name.clone(),
            // The one copy of the object's text the call needs: the bindings own their strings.
            object: input.object.as_ref().map(|o| o.as_str().to_owned()),
            old_object: input.old_object.as_ref().map(|o| o.as_str().to_owned()),
            dry_run: input.dry_run,
            user_info: input.user_info.as_str().to_owned(),
            settings: self.inner.settings.clone(),
        }
    }

    /// The decision an admission call's answer makes: side effects checked, a denial that
    /// wraps what a failed read was answered passed on with the API server's status.
    fn admission_decision(
        &self,
        op: Export,
        called: Result<bindings::admission_types::AdmissionDecision, CallError>,
        api_errors: &[(String, crate::writes::ApiStatus)],
    ) -> Result<AdmissionDecision, CallError> {
        let raw = match called {
            Ok(raw) => raw,
            Err(e) => {
                let message = e.guest_error().map(crate::GuestError::message);
                return match message.and_then(|m| wrapped_status(m, api_errors)) {
                    Some(status) => Ok(AdmissionDecision::from_status(status)),
                    None => Err(e),
                };
            }
        };
        let mut decision =
            AdmissionDecision::try_from(raw).map_err(|message| self.malformed(op, message))?;
        self.check_writes(op, decision.side_effects.iter().map(|d| &d.object), &[])?;
        if !decision.allowed
            && decision.code.is_none_or(|c| c == 403)
            && let Some(status) = decision
                .message
                .as_deref()
                .and_then(|m| wrapped_status(m, api_errors))
        {
            let side_effects = std::mem::take(&mut decision.side_effects);
            decision = AdmissionDecision {
                side_effects,
                warnings: decision.warnings,
                ..AdmissionDecision::from_status(status)
            };
        }
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
        // In a `plugin.call` span, as every other export's call (a child of the request's).
        self.call_traced(Export::Handle, env, |store, instance| {
            let api = api.load(&mut *store, instance)?;
            api.call_handle(store, &req)
        })
        .map(Into::into)
    }

    /// Waits for one of the plugin's concurrency permits, then runs `f` (one call of `op`) on
    /// the blocking pool, so guest code never occupies an executor thread.
    pub async fn offload<R: Send + 'static>(
        &self,
        op: Export,
        f: impl FnOnce(&LoadedPlugin) -> Result<R, CallError> + Send + 'static,
    ) -> Result<R, CallError> {
        let permit = self.permit(op).await?;
        let this = self.clone();
        // The call's trace span is a child of the request or reconcile that asked for it.
        let parent = tracing::Span::current();
        let result = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            parent.in_scope(|| f(&this))
        })
        .await;
        result.unwrap_or_else(|e| {
            Err(CallError::Trap {
                plugin: self.name().to_string(),
                op: op.as_str(),
                message: format!("host task failed: {e}"),
                stderr: None,
            })
        })
    }

    /// One of the plugin's concurrency permits. A call waits for one at most its budget: a
    /// webhook must answer within its timeout even when every slot is taken.
    async fn permit(&self, op: Export) -> Result<tokio::sync::OwnedSemaphorePermit, CallError> {
        let wait = self.inner.limits.of_call(op).1;
        let acquire = self.inner.permits.clone().acquire_owned();
        match tokio::time::timeout(wait, acquire).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_)) => Err(CallError::Closed {
                plugin: self.name().to_string(),
            }),
            Err(_) => Err(CallError::Busy {
                plugin: self.name().to_string(),
                op: op.as_str(),
                waited: wait,
            }),
        }
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
        self.call_traced(op, env, |store, instance| {
            let guest = exports.plugin.load(&mut *store, instance)?;
            f(&guest, store)
        })
    }

    /// Runs one export (of any interface, `f` loads it) in a `plugin.call` trace span.
    fn call_traced<R: OutputSize>(
        &self,
        op: Export,
        env: &CallEnv,
        f: impl FnOnce(&mut Store<CallState>, &Instance) -> wasmtime::Result<Result<R, types::Error>>,
    ) -> Result<R, CallError> {
        let span = self.call_span(op);
        let _entered = span.enter();
        let result =
            self.bootstrap()
                .call_with(&self.inner.engine, &self.inner.exports, op, env, f);
        record_outcome(&span, &result);
        result
    }

    /// The `plugin.call` trace span of one call of `op`.
    fn call_span(&self, op: Export) -> tracing::Span {
        tracing::info_span!(
            target: "odh_trace",
            "plugin.call",
            odh.plugin = %self.inner.name,
            odh.op = op.as_str(),
            odh.outcome = tracing::field::Empty,
            error = tracing::field::Empty,
        )
    }
}

/// How a call ended, on its span.
fn record_outcome<R>(span: &tracing::Span, result: &Result<R, CallError>) {
    match result {
        Ok(_) => span.record("odh.outcome", "ok"),
        Err(e) => span
            .record("odh.outcome", e.metric_label())
            .record("error", tracing::field::display(e)),
    };
}

/// The export an admission webhook of `kind` calls.
fn admission_export(kind: WebhookType) -> Export {
    match kind {
        WebhookType::Mutating => Export::Mutate,
        WebhookType::Validating => Export::Validate,
    }
}

/// The API status a denial's message wraps: Go's webhooks answer an error whose chain holds an
/// API status error with that status (code, reason, message), the wrapping text dropped. The
/// chain here is the text: a message ending with what a failed read gave the plugin wraps it.
fn wrapped_status<'a>(
    message: &str,
    api_errors: &'a [(String, crate::writes::ApiStatus)],
) -> Option<&'a crate::writes::ApiStatus> {
    api_errors
        .iter()
        .rev()
        .find(|(text, _)| message.ends_with(text.as_str()))
        .map(|(_, status)| status)
}
