//! The per-call `Store` data: what one plugin call can see and touch, and its clocks.

use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::ResourceTable;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::bindings::{self, types};
use crate::call_clock::CallClock;
use crate::call_env::{CallEnv, CallerView};
use crate::capabilities::Capabilities;
use crate::cluster_view::ClusterView;
use crate::http_gate::HttpGate;
use crate::limits::Limits;
use crate::wire::AccessAttributes;
use odh_label_selector::LabelSelector;

/// How much of a plugin's stderr (panic messages) is kept for error reports.
const STDERR_CAPTURE_BYTES: usize = 16 * 1024;
/// Host calls one plugin call may make: generous for any real reconcile (the isvc plugin makes
/// tens), a bound on a plugin that reads in a loop, which would otherwise spin on the host's
/// caches for its whole wall-clock budget.
pub const MAX_HOST_CALLS_PER_CALL: u32 = 10_000;

use crate::log_budget::LogBudget;

/// What one call's sandbox refused or dropped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Refusals {
    /// The call made more than [`MAX_HOST_CALLS_PER_CALL`] host calls; the rest were refused.
    pub host_calls_refused: bool,
    /// Log lines beyond the call's log budget.
    pub log_lines_dropped: u64,
}

pub struct CallState {
    pub(crate) plugin: Arc<str>,
    pub(crate) caps: Arc<Capabilities>,
    pub(super) cluster: Arc<dyn ClusterView>,
    pub(super) caller: Option<Arc<dyn CallerView>>,
    /// Set for reconcile calls only: who makes its `writes`.
    pub(crate) writer: Option<Arc<dyn crate::writes::Writer>>,
    pub(super) limiter: MemoryLimiter,
    pub(super) stderr: MemoryOutputPipe,
    pub(super) clock: CallClock,
    wasi: WasiCtx,
    table: ResourceTable,
    http: WasiHttpCtx,
    http_gate: HttpGate,
    log_budget: LogBudget,
    /// Host calls (cluster reads, access reviews) made so far in this call.
    host_calls: u32,
    /// Reads that failed with an API status: the error text the plugin was given, and the
    /// status (an admission denial wrapping that text answers with the status).
    pub(crate) api_errors: Vec<(String, crate::writes::ApiStatus)>,
}

impl CallState {
    pub(super) fn new(
        plugin: Arc<str>,
        caps: Arc<Capabilities>,
        limits: &Limits,
        op: crate::Export,
        env: &CallEnv,
        clock: CallClock,
        host: &crate::EngineOptions,
    ) -> Self {
        let stderr = MemoryOutputPipe::new(STDERR_CAPTURE_BYTES);
        let mut wasi = WasiCtx::builder();
        // No preopened directories, no environment, no arguments, no sockets: the builder
        // grants none of those unless asked. Sockets are disabled explicitly anyway.
        wasi.stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        if !caps.secure_random {
            // Replayable: the same inputs give the same outputs.
            wasi.secure_random(wasmtime_wasi::random::Deterministic::new(vec![0x5a; 32]));
            wasi.insecure_random(wasmtime_wasi::random::Deterministic::new(vec![0xa5; 32]));
            wasi.insecure_random_seed(0x0d4_u128);
        }
        let http_gate = HttpGate::new(
            plugin.clone(),
            caps.clone(),
            env.effects,
            limits,
            clock.budget_end(),
            host.identity.clone(),
            host.http_trust.clone(),
        );
        Self {
            plugin,
            caps,
            cluster: env.cluster.clone(),
            caller: env.caller.clone(),
            writer: (op == crate::Export::Reconcile).then(|| {
                env.writer.clone().unwrap_or_else(|| {
                    Arc::new(crate::writes::Simulated {
                        cluster: env.cluster.clone(),
                    })
                })
            }),
            limiter: MemoryLimiter::new(limits.memory_bytes(), host.memory_budget.clone()),
            stderr,
            clock,
            wasi: wasi.build(),
            table: ResourceTable::new(),
            http: WasiHttpCtx::new(),
            http_gate,
            log_budget: LogBudget::default(),
            host_calls: 0,
            api_errors: Vec::new(),
        }
    }

    /// What the plugin wrote to stderr (a Rust panic message lands here).
    /// What the sandbox refused or dropped in this call, for the caller to count: the sandbox
    /// itself records no metric.
    pub(super) fn refusals(&self) -> Refusals {
        Refusals {
            host_calls_refused: self.host_calls > MAX_HOST_CALLS_PER_CALL,
            log_lines_dropped: self.log_budget.dropped(),
        }
    }

    pub(super) fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr.contents())
            .trim()
            .to_string()
    }

    fn check_read(&self, gvk: &types::Gvk) -> Result<crate::gvk::Gvk, types::Error> {
        let g: crate::gvk::Gvk = gvk.clone().into();
        if self.caps.may_read(&g) {
            Ok(g)
        } else {
            tracing::warn!(plugin = %self.plugin, kind = %g, "denied a read of a kind the plugin was not granted");
            Err(types::Error::Denied(format!(
                "plugin {:?} may not read {g}: declare it in the manifest's reads and have it granted",
                &*self.plugin
            )))
        }
    }

    /// What is left of the call's wall-clock budget for a host call, or the error to give the
    /// plugin when nothing is.
    pub(crate) fn host_call_window(&mut self, what: &str) -> Result<Duration, types::Error> {
        self.host_calls += 1;
        if self.host_calls > MAX_HOST_CALLS_PER_CALL {
            if self.host_calls == MAX_HOST_CALLS_PER_CALL + 1 {
                tracing::warn!(
                    plugin = %self.plugin,
                    "the plugin made more than {MAX_HOST_CALLS_PER_CALL} host calls in one call: its further host calls in this call are refused"
                );
            }
            return Err(types::Error::Denied(format!(
                "{what}: more than {MAX_HOST_CALLS_PER_CALL} host calls in one call"
            )));
        }
        let left = self.clock.budget_left();
        if left.is_zero() {
            return Err(types::Error::Transient(format!(
                "{what}: the call's time budget is spent"
            )));
        }
        Ok(left)
    }
}

/// Caps linear memory growth, per call and across calls (the host's budget); remembers which
/// cap was hit so the error can say so.
pub struct MemoryLimiter {
    pub(super) limit: usize,
    pub(super) hit: bool,
    pub(super) budget: crate::MemoryBudget,
    /// What this call reserved from `budget`, given back when the store is dropped.
    reserved: usize,
    pub(super) budget_hit: bool,
}

impl MemoryLimiter {
    pub(super) fn new(limit: usize, budget: crate::MemoryBudget) -> Self {
        Self {
            limit,
            hit: false,
            budget,
            reserved: 0,
            budget_hit: false,
        }
    }
}

impl Drop for MemoryLimiter {
    fn drop(&mut self) {
        self.budget.release(self.reserved);
    }
}

impl wasmtime::ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.limit {
            self.hit = true;
            return Ok(false);
        }
        // Called for a new memory too (from 0): every byte a call maps is counted.
        let growth = desired.saturating_sub(current);
        if !self.budget.reserve(growth) {
            self.budget_hit = true;
            return Ok(false);
        }
        self.reserved += growth;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }

    fn instances(&self) -> usize {
        32
    }

    fn tables(&self) -> usize {
        32
    }

    fn memories(&self) -> usize {
        8
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.http_gate,
        }
    }
}

impl types::Host for CallState {}
impl bindings::manifest_types::Host for CallState {}
impl bindings::reconcile_types::Host for CallState {}
impl bindings::admission_types::Host for CallState {}
impl bindings::api_types::Host for CallState {}

impl bindings::odh::controller::cluster::Host for CallState {
    fn get(
        &mut self,
        gvk: types::Gvk,
        namespace: Option<String>,
        name: String,
    ) -> Result<Option<String>, types::Error> {
        let gvk = self.check_read(&gvk)?;
        let within = self.host_call_window(&format!("reading {gvk} {name}"))?;
        self.cluster
            .get(&gvk, namespace.as_deref(), &name, within)
            .map_err(|e| self.read_failed(format!("reading {gvk} {name}"), e))
    }

    fn list(
        &mut self,
        gvk: types::Gvk,
        namespace: Option<String>,
        label_selector: Option<String>,
    ) -> Result<Vec<String>, types::Error> {
        let gvk = self.check_read(&gvk)?;
        let selector = match label_selector.as_deref() {
            Some(s) => LabelSelector::parse(s).map_err(|e| types::Error::Invalid(e.to_string()))?,
            None => LabelSelector::everything(),
        };
        let within = self.host_call_window(&format!("listing {gvk}"))?;
        self.cluster
            .list(&gvk, namespace.as_deref(), &selector, within)
            .map_err(|e| self.read_failed(format!("listing {gvk}"), e))
    }
}

impl CallState {
    /// The plugin's error for a failed read; one the API server answered is remembered with
    /// its status.
    fn read_failed(&mut self, what: String, e: anyhow::Error) -> types::Error {
        let text = format!("{what}: {e:#}");
        if let Some(status) = e.downcast_ref::<crate::writes::ApiStatus>() {
            self.api_errors.push((text.clone(), status.clone()));
        }
        types::Error::Transient(text)
    }
}

impl bindings::odh::controller::caller::Host for CallState {
    fn allowed(
        &mut self,
        attributes: bindings::odh::controller::caller::AccessAttributes,
    ) -> Result<bool, types::Error> {
        let Some(caller) = self.caller.clone() else {
            return Err(types::Error::Denied(
                "caller.allowed is only available while handling an API request on a route that authenticates its caller".into(),
            ));
        };
        let attributes = AccessAttributes::from(attributes);
        let within = self.host_call_window("an access review")?;
        caller
            .allowed(&attributes, within)
            .map_err(|e| types::Error::Transient(format!("access review failed: {e:#}")))
    }
}

impl bindings::keys::Host for CallState {
    fn generate(
        &mut self,
        algorithm: bindings::keys::KeyAlgorithm,
    ) -> Result<bindings::keys::KeyPair, types::Error> {
        use bindings::keys::KeyAlgorithm;
        self.check_keys("keys.generate")?;
        let algorithm = match algorithm {
            KeyAlgorithm::Rsa2048 => crate::keys::Algorithm::Rsa2048,
            KeyAlgorithm::Rsa4096 => crate::keys::Algorithm::Rsa4096,
            KeyAlgorithm::EcdsaP256 => crate::keys::Algorithm::EcdsaP256,
        };
        let pair =
            crate::host_wait::compute(|| crate::keys::generate(algorithm)).map_err(key_error)?;
        Ok(bindings::keys::KeyPair {
            private_key_pem: pair.private_key_pem,
            public_key_der: pair.public_key_der,
        })
    }

    fn sign(&mut self, private_key_pem: String, data: Vec<u8>) -> Result<Vec<u8>, types::Error> {
        self.check_keys("keys.sign")?;
        crate::host_wait::compute(|| crate::keys::sign(&private_key_pem, &data)).map_err(key_error)
    }
}

fn key_error(e: crate::keys::KeyError) -> types::Error {
    match e {
        crate::keys::KeyError::Invalid(m) => types::Error::Invalid(m),
        crate::keys::KeyError::Failed(m) => types::Error::Internal(m),
    }
}

impl CallState {
    /// `keys` is granted with real randomness (`secureRandom`): a plugin without it could not
    /// make a usable key itself, and its calls stay replayable.
    fn check_keys(&mut self, what: &str) -> Result<(), types::Error> {
        if !self.caps.secure_random {
            return Err(types::Error::Denied(format!(
                "{what}: plugin {:?} is not granted secureRandom (plugins ConfigMap grants.secureRandom: true), which keys need",
                &*self.plugin
            )));
        }
        self.host_call_window(what).map(|_| ())
    }
}

impl bindings::odh::controller::log::Host for CallState {
    fn log(&mut self, level: bindings::odh::controller::log::Level, message: String) {
        use bindings::odh::controller::log::Level;
        let plugin = &*self.plugin;
        let Some(message) = self.log_budget.admit(message) else {
            if self.log_budget.dropped() == 1 {
                tracing::warn!(
                    plugin,
                    "the plugin logged more than {} KiB in one call: its further log lines in this call are dropped (odh_plugin_log_lines_dropped_total)",
                    crate::log_budget::MAX_BYTES_PER_CALL / 1024
                );
            }
            return;
        };
        match level {
            Level::Trace => tracing::trace!(plugin, "{message}"),
            Level::Debug => tracing::debug!(plugin, "{message}"),
            Level::Info => tracing::info!(plugin, "{message}"),
            Level::Warn => tracing::warn!(plugin, "{message}"),
            Level::Error => tracing::error!(plugin, "{message}"),
        }
    }
}
