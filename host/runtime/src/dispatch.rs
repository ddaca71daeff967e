//! The one way to call the plugin version a slot serves, for controllers, webhooks and API
//! routes alike: the active version decides; a shadow candidate, when the slot has one, gets
//! the same input in the background *without effects* (outgoing HTTP limited to GET and HEAD)
//! and only the difference of its answer is recorded. Every call is metered here, a shadow's
//! in series of its own.

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;
use tracing::warn;

use crate::record::{RecordLine, RecordingView, distinct_objects};
use crate::rollout::guards::CallResult;
use crate::rollout::{Canary, Version};
use crate::wire::{AdmissionDecision, ApiRequest, ApiResponse, Outcome, RequestKey, WebhookType};
use crate::{
    AdmissionInput, CallEnv, CallError, Export, LoadedPlugin, PluginSlot, ReconcileInput,
    WatchEventInput,
};
use odh_host_metrics::Metrics;

/// What a call was about, for the shadow-difference log line.
pub struct Subject {
    pub namespace: Option<String>,
    pub name: Option<String>,
}

impl std::fmt::Display for Subject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}/{}",
            self.namespace.as_deref().unwrap_or(""),
            self.name.as_deref().unwrap_or("")
        )
    }
}

/// Reconciles with the slot's active version; returns the version that decided (its
/// capabilities and name go with the outcome).
pub async fn reconcile(
    slot: &PluginSlot,
    input: ReconcileInput,
    env: CallEnv,
) -> (LoadedPlugin, Result<Outcome, CallError>) {
    let subject = Subject {
        namespace: input.key.namespace.clone(),
        name: Some(input.key.name.clone()),
    };
    call(
        slot,
        Export::Reconcile,
        subject,
        input,
        env,
        |p, i, e| {
            Box::pin(async move {
                p.offload(Export::Reconcile, move |p| p.reconcile_blocking(&i, &e))
                    .await
            })
        },
        RecordLine::reconcile,
    )
    .await
}

/// A webhook's decision from the slot's active version.
pub async fn admit(
    slot: &PluginSlot,
    kind: WebhookType,
    input: AdmissionInput,
    env: CallEnv,
) -> (LoadedPlugin, Result<AdmissionDecision, CallError>) {
    let subject = Subject {
        namespace: input.namespace.clone(),
        name: input.name.clone(),
    };
    let op = match kind {
        WebhookType::Mutating => Export::Mutate,
        WebhookType::Validating => Export::Validate,
    };
    call(
        slot,
        op,
        subject,
        input,
        env,
        move |p, i, e| Box::pin(async move { p.admit(kind, i, e).await }),
        move |p, i, reads, result, latency| {
            RecordLine::admission(p, kind, i, reads, result, latency)
        },
    )
    .await
}

/// Maps a watched change with the slot's active version (no shadow: mappings only schedule
/// work, they decide nothing).
pub async fn map(
    slot: &PluginSlot,
    input: WatchEventInput,
    env: CallEnv,
) -> Result<Vec<RequestKey>, CallError> {
    let plugin = slot.current();
    let call = plugin.offload(Export::Map, move |p| p.map_blocking(&input, &env));
    metered(&plugin, Export::Map, call).await
}

/// Answers an API request with the slot's active version (no shadow: a second call could
/// not answer the same client).
pub async fn handle(
    slot: &PluginSlot,
    request: ApiRequest,
    env: CallEnv,
) -> Result<ApiResponse, CallError> {
    let plugin = slot.current();
    let call = plugin.offload(Export::Handle, move |p| p.handle_blocking(&request, &env));
    metered(&plugin, Export::Handle, call).await
}

/// One call in flight, however it runs.
type Called<R> = Pin<Box<dyn Future<Output = Result<R, CallError>> + Send>>;

async fn metered<R>(
    plugin: &LoadedPlugin,
    op: Export,
    call: impl Future<Output = Result<R, CallError>>,
) -> Result<R, CallError> {
    let started = Instant::now();
    let result = call.await;
    Metrics::global().plugin_call(
        plugin.name(),
        op.as_str(),
        result.as_ref().err().map(CallError::metric_label),
        started.elapsed(),
    );
    result
}

async fn call<I, R>(
    slot: &PluginSlot,
    op: Export,
    subject: Subject,
    input: I,
    mut env: CallEnv,
    run: impl Fn(LoadedPlugin, I, CallEnv) -> Called<R> + Send + Sync + Copy + 'static,
    // Makes the record line of a sampled call: the version, its input, what it read, its
    // answer, its latency.
    record: impl FnOnce(
        &LoadedPlugin,
        &I,
        Vec<Value>,
        &Result<R, CallError>,
        std::time::Duration,
    ) -> RecordLine,
) -> (LoadedPlugin, Result<R, CallError>)
where
    I: Clone + Send + 'static,
    R: Serialize + Decided + Send + 'static,
{
    // Which version owns the object: a pure function of its key and the rollout's slice, so
    // every replica routes it alike (docs/decisions.md, "Progressive rollout").
    let canary = slot.canary();
    let (plugin, version) = match &canary {
        Some(c)
            if c.serves(
                subject.namespace.as_deref(),
                subject.name.as_deref(),
                &*env.cluster,
            ) =>
        {
            (c.plugin.clone(), Some(Version::Candidate))
        }
        Some(_) => (slot.current(), Some(Version::Stable)),
        None => (slot.current(), None),
    };
    // A shadow runs beside the stable version only: the candidate in rollout decides for real.
    let shadow = slot
        .shadow_with_stats()
        .filter(|_| version != Some(Version::Candidate))
        .map(|s| (s, input.clone(), env.without_effects()));
    // A sampled call reads through a view that keeps what it read; the others pay one atomic
    // add (and a read lock) for recording.
    let recording = slot.recorder().filter(|r| r.sample()).map(|r| {
        let (view, read) = RecordingView::new(env.cluster.clone());
        env.cluster = std::sync::Arc::new(view);
        (r, read, input.clone())
    });
    let started = Instant::now();
    let result = metered(&plugin, op, run(plugin.clone(), input, env)).await;
    let elapsed = started.elapsed();
    if let Some((recorder, read, input)) = recording {
        let reads = distinct_objects(&read);
        recorder.push(&record(&plugin, &input, reads, &result, elapsed));
    }
    if let (Some(canary), Some(version)) = (&canary, version) {
        count_in_rollout(slot, canary, version, &result, elapsed);
    }
    if let Some(((shadow, stats), input, env)) = shadow {
        let active = comparable(&result);
        tokio::spawn(async move {
            let started = Instant::now();
            let candidate = run(shadow.clone(), input, env).await;
            Metrics::global().shadow_call(
                shadow.name(),
                op.as_str(),
                candidate.as_ref().err().map(CallError::metric_label),
                started.elapsed(),
            );
            stats.record_call();
            let candidate = comparable(&candidate);
            if candidate != active {
                Metrics::global().shadow_difference(shadow.name(), op.as_str());
                let differences = crate::shadow_report::describe(&active, &candidate);
                let described = format!("{} {subject}: {differences}", op.as_str());
                if let Some(unlogged) = stats.record_difference(described) {
                    warn!(
                        plugin = shadow.name(),
                        op = op.as_str(),
                        object = %subject,
                        differences = %differences,
                        unlogged_since_last = unlogged,
                        "shadow candidate decided differently"
                    );
                }
            }
        });
    }
    (plugin, result)
}

/// What a rollout's guards look at in an answer: whether it denied.
pub trait Decided {
    /// `Some(denied)` for an admission decision, `None` for other answers.
    fn denied(&self) -> Option<bool>;
}

impl Decided for AdmissionDecision {
    fn denied(&self) -> Option<bool> {
        Some(!self.allowed)
    }
}

impl Decided for Outcome {
    fn denied(&self) -> Option<bool> {
        None
    }
}

/// Counts a call of a rollout per version and, after a candidate call, checks the guards: a
/// breach moves the slice back to the stable version at once (the candidate stays loaded) and
/// the controllers reconcile everything again, so objects the candidate reconciled are
/// reconciled by the stable version.
fn count_in_rollout<R: Decided>(
    slot: &PluginSlot,
    canary: &Canary,
    version: Version,
    result: &Result<R, CallError>,
    elapsed: std::time::Duration,
) {
    let outcome = match result {
        Ok(r) => match r.denied() {
            Some(true) => CallResult::Denied,
            Some(false) => CallResult::Allowed,
            None => CallResult::Success,
        },
        Err(e) => CallResult::Error {
            overrun: e.metric_label() == "timeout",
        },
    };
    canary.stats.of(version).record(outcome, elapsed);
    Metrics::global().rollout_call(slot.name(), version.as_str(), outcome.as_str(), elapsed);
    if version != Version::Candidate {
        return;
    }
    let (stable, candidate) = (
        canary.stats.stable.snapshot(),
        canary.stats.candidate.snapshot(),
    );
    if let Some((guard, why)) = canary.guards.breached(&stable, &candidate)
        && canary.roll_back(guard, why.clone())
    {
        Metrics::global().rollout_rollback(slot.name(), guard);
        warn!(
            plugin = slot.name(),
            candidate = canary.plugin.sha256(),
            guard,
            "rollout rolled back to the stable version: {why}"
        );
        slot.resync();
    }
}

/// What two versions' answers are compared on: the whole decision, or why the call failed.
fn comparable<R: Serialize>(result: &Result<R, CallError>) -> Result<Value, &'static str> {
    result
        .as_ref()
        .map(|r| serde_json::to_value(r).unwrap_or_default())
        .map_err(CallError::metric_label)
}
