//! The per-call `Store` data: what one plugin call can see and touch.

use std::sync::Arc;

use wasmtime::component::ResourceTable;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks, WasiHttpView};

use super::bindings::{self, types};
use super::capabilities::Capabilities;
use super::cluster_view::ClusterView;
use crate::label_selector::LabelSelector;

/// How much of a plugin's stderr (panic messages) is kept for error reports.
const STDERR_CAPTURE_BYTES: usize = 16 * 1024;

pub struct CallState {
    pub(super) plugin: Arc<str>,
    pub(super) caps: Arc<Capabilities>,
    pub(super) cluster: Arc<dyn ClusterView>,
    pub(super) limiter: MemoryLimiter,
    pub(super) stderr: MemoryOutputPipe,
    wasi: WasiCtx,
    table: ResourceTable,
    http: WasiHttpCtx,
    http_gate: HttpGate,
}

impl CallState {
    pub(super) fn new(
        plugin: Arc<str>,
        caps: Arc<Capabilities>,
        cluster: Arc<dyn ClusterView>,
        memory_limit: usize,
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
        let http_gate = HttpGate {
            plugin: plugin.clone(),
            caps: caps.clone(),
        };
        Self {
            plugin,
            caps,
            cluster,
            limiter: MemoryLimiter {
                limit: memory_limit,
                hit: false,
            },
            stderr,
            wasi: wasi.build(),
            table: ResourceTable::new(),
            http: WasiHttpCtx::new(),
            http_gate,
        }
    }

    /// What the plugin wrote to stderr (a Rust panic message lands here).
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
}

/// Caps linear memory growth; remembers whether the cap was hit so the error can say so.
pub struct MemoryLimiter {
    pub(super) limit: usize,
    pub(super) hit: bool,
}

impl wasmtime::ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.limit {
            self.hit = true;
            return Ok(false);
        }
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

/// Lets outgoing HTTP through only to granted hosts.
struct HttpGate {
    plugin: Arc<str>,
    caps: Arc<Capabilities>,
}

impl WasiHttpHooks for HttpGate {
    fn send_request(
        &mut self,
        request: http::Request<wasmtime_wasi_http::WasiBody>,
        options: Option<wasmtime_wasi_http::RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
    ) -> Box<
        dyn Future<
                Output = Result<
                    (
                        http::Response<wasmtime_wasi_http::WasiBody>,
                        Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
                    ),
                    wasmtime_wasi_http::Error,
                >,
            > + Send,
    > {
        let authority = request
            .uri()
            .authority()
            .map(|a| a.as_str().to_string())
            .unwrap_or_default();
        if !self.caps.may_connect(&authority) {
            tracing::warn!(plugin = %self.plugin, host = %authority, "denied outgoing HTTP to a host the plugin was not granted");
            return Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) });
        }
        let _ = fut;
        Box::new(async move {
            use http_body_util::BodyExt;
            let (response, io) = wasmtime_wasi_http::default_send_request(request, options).await?;
            Ok((
                response.map(BodyExt::boxed_unsync),
                Box::new(io)
                    as Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
            ))
        })
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

impl bindings::odh::controller::cluster::Host for CallState {
    fn get(
        &mut self,
        gvk: types::Gvk,
        namespace: Option<String>,
        name: String,
    ) -> Result<Option<String>, types::Error> {
        let gvk = self.check_read(&gvk)?;
        self.cluster
            .get(&gvk, namespace.as_deref(), &name)
            .map_err(|e| types::Error::Transient(format!("reading {gvk} {name}: {e:#}")))
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
        self.cluster
            .list(&gvk, namespace.as_deref(), &selector)
            .map_err(|e| types::Error::Transient(format!("listing {gvk}: {e:#}")))
    }
}

impl bindings::odh::controller::log::Host for CallState {
    fn log(&mut self, level: bindings::odh::controller::log::Level, message: String) {
        use bindings::odh::controller::log::Level;
        let plugin = &*self.plugin;
        match level {
            Level::Trace => tracing::trace!(plugin, "{message}"),
            Level::Debug => tracing::debug!(plugin, "{message}"),
            Level::Info => tracing::info!(plugin, "{message}"),
            Level::Warn => tracing::warn!(plugin, "{message}"),
            Level::Error => tracing::error!(plugin, "{message}"),
        }
    }
}
