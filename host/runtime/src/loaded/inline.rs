//! Admission calls on the executor's own thread. A webhook request is answered in tens of
//! microseconds; handing each call to the blocking pool and back (two thread wake-ups) cost
//! about a quarter of the webhook server's CPU (docs/performance.md, "Admission"). Here the
//! call runs on a fiber on the worker that handles the request, with the same store, limits
//! and checks as every other call; it gives the thread back at every epoch tick, so a slow or
//! looping plugin delays the worker's other tasks by at most a tick, and host imports that
//! wait (WASI and HTTP I/O) wait asynchronously. The few that block (a read the caches cannot
//! answer, key generation) hand the worker's other tasks to another thread first
//! ([`crate::host_wait`]).

use tracing::Instrument;
use wasmtime::component::{ComponentExportIndex, TypedFunc};

use super::*;
use crate::bindings::admission_types::{AdmissionDecision as RawDecision, AdmissionRequest};

/// An admission export as the `plugin` interface types it.
type AdmitFunc<'a> = TypedFunc<(&'a AdmissionRequest,), (Result<RawDecision, types::Error>,)>;

/// The component pre-instantiated against the asynchronous imports, and where its two
/// admission exports are.
pub(super) struct InlineExports {
    pre: InstancePre<CallState>,
    mutate: ComponentExportIndex,
    validate: ComponentExportIndex,
}

impl InlineExports {
    /// `None` if the component cannot be prepared this way (its calls then take the blocking
    /// pool, as every call did before): the blocking preparation already accepted it.
    pub(super) fn new(engine: &PluginEngine, component: &Component) -> Option<Self> {
        let pre = engine.inline_linker().instantiate_pre(component).ok()?;
        // The blocking preparation found every export of the interface; a call looks up and
        // type-checks only the one it makes, where the bindings' `load` checked all six.
        let interface = plugin_interface_name();
        let interface = pre.component().get_export_index(None, &interface)?;
        let export = |name| pre.component().get_export_index(Some(&interface), name);
        let (mutate, validate) = (export("mutate")?, export("validate")?);
        Some(Self {
            pre,
            mutate,
            validate,
        })
    }

    fn admission(&self, kind: WebhookType) -> &ComponentExportIndex {
        match kind {
            WebhookType::Mutating => &self.mutate,
            WebhookType::Validating => &self.validate,
        }
    }
}

/// `odh:controller/plugin@<version>`, the interface the bindings look the exports up in.
fn plugin_interface_name() -> String {
    let (package, version) = WIT_PACKAGE.split_once('@').unwrap_or((WIT_PACKAGE, ""));
    if version.is_empty() {
        format!("{package}/plugin")
    } else {
        format!("{package}/plugin@{version}")
    }
}

impl LoadedPlugin {
    /// A webhook's decision, `mutate` or `validate` by the webhook's type, made on the calling
    /// task's thread when it can be ([`LoadedPlugin::admit_blocking`] on the blocking pool
    /// otherwise). Same permits, limits, checks and answer either way.
    pub async fn admit(
        &self,
        kind: WebhookType,
        input: AdmissionInput,
        env: CallEnv,
    ) -> Result<AdmissionDecision, CallError> {
        let op = admission_export(kind);
        let inline = match &self.inner.exports.inline {
            // Only where a host import may block in place; elsewhere the blocking pool.
            Some(inline) if crate::host_wait::multi_threaded() => inline,
            _ => {
                return self
                    .offload(op, move |p| p.admit_blocking(kind, &input, &env))
                    .await;
            }
        };
        let _permit = self.permit(op).await?;
        let req = self.admission_request(&input);
        let span = self.call_span(op);
        let bootstrap = self.bootstrap();
        let (called, api_errors) = async {
            let mut store = bootstrap.open_store(&self.inner.engine, op, &env, Stepping::Inline);
            let answer = match inline.pre.instantiate_async(&mut store).await {
                Ok(instance) => {
                    let export = inline.admission(kind);
                    let answer = match instance.get_typed_func(&mut store, export) {
                        Ok(func) => {
                            let func: AdmitFunc<'_> = func;
                            func.call_async(&mut store, (&req,)).await.map(|(a,)| a)
                        }
                        Err(e) => Err(e),
                    };
                    bootstrap.conclude(op, answer, &store)
                }
                Err(e) => Err(bootstrap.instantiate_failed(e)),
            };
            (answer, std::mem::take(&mut store.data_mut().api_errors))
        }
        .instrument(span.clone())
        .await;
        record_outcome(&span, &called);
        self.admission_decision(op, called, &api_errors)
    }
}
