//! WASI's monotonic clock with every wait bounded by the call's budget. A plugin's sleep (or a
//! `poll` with a timeout) blocks in host code, where the execution deadline does not run (it
//! counts the guest's own time) and nothing else would end it: a plugin sleeping for ten
//! minutes would hold its permit, a thread and an instance slot for ten minutes. Here a
//! pollable on the clock never outlasts the budget, and once the budget is spent a new one
//! traps the call.

use std::time::{Duration, Instant};

use wasmtime::component::{HasData, Linker, Resource};
use wasmtime_wasi::clocks::{WasiClocksCtxView, WasiClocksView};
use wasmtime_wasi::p2::DynPollable;
use wasmtime_wasi::p2::bindings::clocks::monotonic_clock::{self, Host};

use crate::call_state::CallState;

/// Replaces wasmtime-wasi's `wasi:clocks/monotonic-clock` in `linker` (already holding it).
pub(crate) fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let added =
        monotonic_clock::add_to_linker::<CallState, BoundedWaits>(linker, |state| BoundedClock {
            budget_end: state.clock.budget_end(),
            budget: state.clock.budget(),
            clocks: state.clocks(),
        });
    linker.allow_shadowing(false);
    added
}

struct BoundedWaits;

impl HasData for BoundedWaits {
    type Data<'a> = BoundedClock<'a>;
}

struct BoundedClock<'a> {
    clocks: WasiClocksCtxView<'a>,
    budget_end: Instant,
    budget: Duration,
}

impl BoundedClock<'_> {
    /// `wanted`, cut to what is left of the budget; a trap when nothing is.
    fn bounded(&self, wanted: Duration) -> wasmtime::Result<Duration> {
        let left = self.budget_end.saturating_duration_since(Instant::now());
        if left.is_zero() && !wanted.is_zero() {
            return Err(wasmtime::Error::msg(format!(
                "the plugin waited on the clock past its call budget ({:?})",
                self.budget
            )));
        }
        Ok(wanted.min(left))
    }
}

impl Host for BoundedClock<'_> {
    fn now(&mut self) -> wasmtime::Result<monotonic_clock::Instant> {
        self.clocks.now()
    }

    fn resolution(&mut self) -> wasmtime::Result<monotonic_clock::Duration> {
        self.clocks.resolution()
    }

    fn subscribe_instant(
        &mut self,
        when: monotonic_clock::Instant,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        let now = self.clocks.now()?;
        let wanted = Duration::from_nanos(when.saturating_sub(now));
        let bounded = self.bounded(wanted)?;
        self.clocks.subscribe_duration(nanos(bounded))
    }

    fn subscribe_duration(
        &mut self,
        duration: monotonic_clock::Duration,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        let bounded = self.bounded(Duration::from_nanos(duration))?;
        self.clocks.subscribe_duration(nanos(bounded))
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
