//! One call of a plugin export in a fresh store: deadline, budget, memory limit, output checks,
//! and what went wrong in words an operator can act on.

use super::*;

/// How a call's guest code shares its thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stepping {
    /// On a thread of its own (the blocking pool, or a load): runs to its deadline.
    Blocking,
    /// On a fiber on the executor's thread: yields at every epoch tick.
    Inline,
}

/// What a call needs to know of its plugin; available before the plugin is fully loaded.
pub(super) struct Bootstrap<'a> {
    pub(super) name: Arc<str>,
    pub(super) caps: Arc<Capabilities>,
    pub(super) limits: &'a Limits,
}

impl Bootstrap<'_> {
    /// A load-time call of the `plugin` interface: no cluster, no caller, no effects.
    pub(super) fn call<R: OutputSize>(
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
    pub(super) fn call_api<R: OutputSize>(
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
    pub(super) fn call_selectors(
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

    /// The load-time call of the `event-filters` interface.
    pub(super) fn call_filters(
        &self,
        engine: &PluginEngine,
        exports: &Exports,
        indices: &event_filters::GuestIndices,
    ) -> Result<Vec<event_filters::EventFilter>, CallError> {
        let env = CallEnv::read_only(Arc::new(NoCluster));
        self.call_with(engine, exports, Export::Filters, &env, |store, instance| {
            let guest = indices.load(&mut *store, instance)?;
            guest.call_filters(store).map(Ok)
        })
    }

    /// Runs one export in a fresh store: the execution deadline counts only the guest's own
    /// time (the call hook moves time spent in host calls off it), the budget bounds every
    /// host call, the limiter caps memory and the output is size-checked.
    pub(super) fn call_with<R: OutputSize>(
        &self,
        engine: &PluginEngine,
        exports: &Exports,
        op: Export,
        env: &CallEnv,
        f: impl FnOnce(&mut Store<CallState>, &Instance) -> wasmtime::Result<Result<R, types::Error>>,
    ) -> Result<R, CallError> {
        let mut store = self.open_store(engine, op, env, Stepping::Blocking);
        let instance = exports
            .pre
            .instantiate(&mut store)
            .map_err(|e| self.instantiate_failed(e))?;
        let result = f(&mut store, &instance);
        self.conclude(op, result, &store)
    }

    /// A fresh store for one call of `op`: its state, memory limiter, host-time clock and
    /// execution deadline.
    pub(super) fn open_store(
        &self,
        engine: &PluginEngine,
        op: Export,
        env: &CallEnv,
        stepping: Stepping,
    ) -> Store<CallState> {
        let limits = self.limits;
        let (deadline, budget) = limits.of_call(op);
        let clock = CallClock::new(deadline, budget);
        let state = CallState::new(
            self.name.clone(),
            self.caps.clone(),
            limits,
            op,
            env,
            clock,
            engine.options(),
        );
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
        match stepping {
            Stepping::Blocking => {
                store.set_epoch_deadline(engine.deadline_ticks(deadline));
                let ticker = engine.clone();
                store.epoch_deadline_callback(move |cx: StoreContextMut<'_, CallState>| {
                    // The wall clock reached the deadline; the guest may have spent part of
                    // it in host calls. Go on for whatever execution time it has left.
                    let left = cx.data().clock.guest_left();
                    if left.is_zero() {
                        Ok(UpdateDeadline::Interrupt)
                    } else {
                        Ok(UpdateDeadline::Continue(ticker.deadline_ticks(left)))
                    }
                });
            }
            Stepping::Inline => {
                // On the executor's thread the guest gives the thread back at every tick, so
                // a slow call never holds it longer than a tick; the deadline is checked then.
                store.set_epoch_deadline(1);
                store.epoch_deadline_callback(|cx: StoreContextMut<'_, CallState>| {
                    if cx.data().clock.guest_left().is_zero() {
                        Ok(UpdateDeadline::Interrupt)
                    } else {
                        // Tokio's own yield: the worker polls its timers and sockets before
                        // resuming the guest (a plain wake would resume it first).
                        Ok(UpdateDeadline::YieldCustom(
                            1,
                            Box::pin(tokio::task::yield_now()),
                        ))
                    }
                });
            }
        }
        store
    }

    pub(super) fn instantiate_failed(&self, e: wasmtime::Error) -> CallError {
        CallError::Instantiate {
            plugin: self.name.to_string(),
            message: format!("{e:#}"),
        }
    }

    /// A call's result as the host takes it: the output's entries and size checked, a
    /// failure told in an operator's words.
    pub(super) fn conclude<R: OutputSize>(
        &self,
        op: Export,
        result: wasmtime::Result<Result<R, types::Error>>,
        store: &Store<CallState>,
    ) -> Result<R, CallError> {
        let limits = self.limits;
        let plugin = || self.name.to_string();
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
            Err(e) => Err(self.classify_failure(op, e, store)),
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
        if state.limiter.budget_hit {
            return CallError::MemoryBudget {
                plugin,
                op,
                budget_mib: state.limiter.budget.limit().unwrap_or_default() / (1024 * 1024),
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
        CallError::Trap {
            plugin,
            op,
            message: what,
            stderr: (!stderr.is_empty()).then(|| panic_summary(&stderr)),
        }
    }
}

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

/// The useful part of a Rust panic report (drops the "note: run with RUST_BACKTRACE" line).
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

impl OutputSize for Vec<event_filters::EventFilter> {
    fn output_size(&self) -> usize {
        self.iter()
            .map(|f| {
                let pointers = match &f.update {
                    event_filters::UpdateFilter::Changed(p) => p.iter().map(String::len).sum(),
                    _ => 0,
                };
                f.controller.len() + f.names.iter().map(String::len).sum::<usize>() + pointers
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
