//! Process metrics, exposed in the Prometheus text format on `/metrics`.
//!
//! The controller metrics keep controller-runtime's names, labels and buckets (v0.19, the version
//! upstream pins) so dashboards and alerts written for the Go controller keep working:
//!
//! | metric | labels |
//! |---|---|
//! | `controller_runtime_reconcile_total` | `controller`, `result` (`success`, `error`, `requeue`, `requeue_after`) |
//! | `controller_runtime_reconcile_errors_total` | `controller` |
//! | `controller_runtime_terminal_reconcile_errors_total` | `controller` |
//! | `controller_runtime_reconcile_panics_total` | `controller` |
//! | `controller_runtime_reconcile_time_seconds` (histogram) | `controller` |
//! | `controller_runtime_max_concurrent_reconciles` | `controller` |
//! | `controller_runtime_active_workers` | `controller` |
//! | `workqueue_depth`, `workqueue_adds_total`, `workqueue_retries_total` | `name`, `controller` (both the controller's name, as controller-runtime sets them) |
//! | `workqueue_queue_duration_seconds`, `workqueue_work_duration_seconds` (histograms, client-go's buckets 10 ns to 1000 s) | `name`, `controller` |
//! | `workqueue_unfinished_work_seconds`, `workqueue_longest_running_processor_seconds` | `name`, `controller` |
//! | `leader_election_master_status` | `name` (the Lease) |
//! | `controller_runtime_webhook_requests_total` | `webhook` (its path), `code` (HTTP status) |
//! | `controller_runtime_webhook_requests_in_flight` | `webhook` |
//! | `controller_runtime_webhook_latency_seconds` (histogram, Prometheus' default buckets) | `webhook` |
//! | `certwatcher_read_certificate_total`, `certwatcher_read_certificate_errors_total` | — |
//! | `process_cpu_seconds_total`, `process_resident_memory_bytes`, `process_virtual_memory_bytes`, `process_open_fds`, `process_max_fds`, `process_start_time_seconds` | — (Linux, from `/proc/self`) |
//!
//! Ours, for the plugin host:
//!
//! | metric | labels |
//! |---|---|
//! | `odh_plugin_calls_total` | `plugin`, `op`, `result` (`success`, `error`) |
//! | `odh_plugin_call_duration_seconds` (histogram) | `plugin`, `op` |
//! | `odh_plugin_failures_total` | `plugin`, `op`, `reason` (`CallError::metric_label`) |
//! | `odh_refused_writes_total` | `plugin`, `kind` |
//! | `odh_plugin_swaps_total` | `plugin`, `result` (`swapped`, `rejected`) |
//! | `odh_plugin_shadow_differences_total` | `plugin`, `op` |
//! | `odh_plugin_shadow_calls_total`, `odh_plugin_shadow_call_duration_seconds`, `odh_plugin_shadow_failures_total` | as `odh_plugin_calls_total`, `odh_plugin_call_duration_seconds`, `odh_plugin_failures_total`, for the calls of shadow candidates (which those never count) |
//! | `odh_plugin_rollout_calls_total` | `plugin`, `version` (`stable`, `candidate`), `result` (`allowed`, `denied`, `success`, `error`): calls of a plugin while a progressive rollout runs |
//! | `odh_plugin_rollout_call_duration_seconds` (histogram) | `plugin`, `version` |
//! | `odh_plugin_rollout_rollbacks_total` | `plugin`, `guard` (`errorRate`, `denyRateIncrease`, `deadlineOverruns`, `p99`): a guard moved the candidate's slice back to the stable version |
//! | `odh_leader` (gauge, 1 while this replica leads) | — |
//! | `odh_webhook_requests_in_flight` (gauge) | — : admission requests holding room in the webhook server |
//! | `odh_webhook_requests_queued` (gauge) | — : admission requests waiting for room (`--webhook-max-requests-in-flight`) |
//! | `odh_webhook_requests_shed_total` | — : requests answered `503` after waiting 10 s for room |
//! | `odh_webhook_in_flight_bytes`, `odh_webhook_in_flight_bytes_limit` (gauges) | — : the room held (each request weighs its body's declared length, at least 64 KiB) and the whole room |
//!
//! And client-go's, which controller-runtime exposes too:
//!
//! | metric | labels |
//! |---|---|
//! | `rest_client_requests_total` | `code` (`<error>` when no response came), `host`, `method` |

pub mod process;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// The `Content-Type` of [`Metrics::render`]'s output (Prometheus text format 0.0.4), the same
/// as Go's `promhttp` sends by default.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// controller-runtime's buckets for `controller_runtime_reconcile_time_seconds`.
pub const RECONCILE_TIME_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

/// Buckets for `odh_plugin_call_duration_seconds`: plugin calls are short (sub-millisecond to
/// the call deadline, seconds at most).
pub const PLUGIN_CALL_BUCKETS: [f64; 15] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

/// How a reconcile ended, as controller-runtime counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReconcileResult {
    Success,
    /// An error; the request is retried with backoff.
    Error,
    /// An error that retrying cannot fix (controller-runtime's `TerminalError`): counted as
    /// `error` and in `controller_runtime_terminal_reconcile_errors_total`.
    TerminalError,
    /// Requeued with rate limiting (`Result{Requeue: true}`).
    Requeue,
    /// Requeued after a fixed delay (`Result{RequeueAfter: d}`).
    RequeueAfter,
}

impl ReconcileResult {
    /// The `result` label value.
    pub fn label(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Error | Self::TerminalError => "error",
            Self::Requeue => "requeue",
            Self::RequeueAfter => "requeue_after",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerResultLabels {
    controller: String,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    name: String,
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLabels {
    webhook: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookCodeLabels {
    webhook: String,
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NameLabels {
    name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RolloutCallLabels {
    plugin: String,
    version: &'static str,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RolloutVersionLabels {
    plugin: String,
    version: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RolloutGuardLabels {
    plugin: String,
    guard: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginOpLabels {
    plugin: String,
    op: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginResultLabels {
    plugin: String,
    op: String,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginReasonLabels {
    plugin: String,
    op: String,
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginSwapLabels {
    plugin: String,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RestClientLabels {
    code: String,
    host: String,
    method: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginLabels {
    plugin: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginKindLabels {
    plugin: String,
    kind: String,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

fn reconcile_time_histogram() -> Histogram {
    Histogram::new(RECONCILE_TIME_BUCKETS)
}

fn plugin_call_histogram() -> Histogram {
    Histogram::new(PLUGIN_CALL_BUCKETS)
}

/// Prometheus' default buckets (`prometheus.DefBuckets`), what controller-runtime's webhook
/// latency histogram uses.
const DEFAULT_BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

fn webhook_latency_histogram() -> Histogram {
    Histogram::new(DEFAULT_BUCKETS)
}

/// client-go's workqueue buckets: 10 ns to 1000 s, ×10 each.
fn workqueue_histogram() -> Histogram {
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        10e-9, 10.0, 12,
    ))
}

type FloatGauge = Gauge<f64, std::sync::atomic::AtomicU64>;

/// Count, duration and failures of plugin calls, by plugin and operation.
#[derive(Clone)]
struct CallMetrics {
    calls: Family<PluginResultLabels, Counter>,
    duration: HistogramFamily<PluginOpLabels>,
    failures: Family<PluginReasonLabels, Counter>,
}

impl CallMetrics {
    /// Registers the three families as `<prefix>calls`, `<prefix>call_duration_seconds` and
    /// `<prefix>failures`, with `whose` in their help texts.
    fn register(registry: &mut Registry, prefix: &str, whose: &str) -> Self {
        let calls = Family::default();
        registry.register(
            format!("{prefix}calls"),
            format!("Total number of {whose} per plugin, operation and result"),
            calls.clone(),
        );
        let duration: HistogramFamily<PluginOpLabels> =
            Family::new_with_constructor(plugin_call_histogram);
        registry.register(
            format!("{prefix}call_duration_seconds"),
            format!("Duration of {whose} per plugin and operation"),
            duration.clone(),
        );
        let failures = Family::default();
        registry.register(
            format!("{prefix}failures"),
            format!("Total number of failed {whose} per plugin, operation and reason"),
            failures.clone(),
        );
        Self {
            calls,
            duration,
            failures,
        }
    }

    fn record(&self, plugin: &str, op: &str, failure_reason: Option<&str>, duration: Duration) {
        self.calls
            .get_or_create(&PluginResultLabels {
                plugin: plugin.to_string(),
                op: op.to_string(),
                result: if failure_reason.is_some() {
                    "error"
                } else {
                    "success"
                },
            })
            .inc();
        self.duration
            .get_or_create(&PluginOpLabels {
                plugin: plugin.to_string(),
                op: op.to_string(),
            })
            .observe(duration.as_secs_f64());
        if let Some(reason) = failure_reason {
            self.failures
                .get_or_create(&PluginReasonLabels {
                    plugin: plugin.to_string(),
                    op: op.to_string(),
                    reason: reason.to_string(),
                })
                .inc();
        }
    }
}

/// Every metric the process exposes. Cloning is cheap and clones share the values.
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Registry>,
    reconcile_total: Family<ControllerResultLabels, Counter>,
    reconcile_errors: Family<ControllerLabels, Counter>,
    terminal_reconcile_errors: Family<ControllerLabels, Counter>,
    reconcile_panics: Family<ControllerLabels, Counter>,
    reconcile_time: HistogramFamily<ControllerLabels>,
    max_concurrent_reconciles: Family<ControllerLabels, Gauge>,
    active_workers: Family<ControllerLabels, Gauge>,
    workqueue_depth: Family<QueueLabels, Gauge>,
    workqueue_adds: Family<QueueLabels, Counter>,
    workqueue_retries: Family<QueueLabels, Counter>,
    workqueue_queue_duration: HistogramFamily<QueueLabels>,
    workqueue_work_duration: HistogramFamily<QueueLabels>,
    workqueue_unfinished_work: Family<QueueLabels, FloatGauge>,
    workqueue_longest_running: Family<QueueLabels, FloatGauge>,
    leader_election_status: Family<NameLabels, Gauge>,
    webhook_requests: Family<WebhookCodeLabels, Counter>,
    webhook_requests_in_flight: Family<WebhookLabels, Gauge>,
    webhook_latency: HistogramFamily<WebhookLabels>,
    /// Each webhook path's series, found once ([`WebhookSeries`]).
    webhook_series: Arc<std::sync::RwLock<std::collections::HashMap<String, Arc<WebhookSeries>>>>,
    certificate_reads: Counter,
    certificate_read_errors: Counter,
    /// The calls that decide (the active versions').
    plugin_calls: CallMetrics,
    /// The calls of shadow candidates, in series of their own: counted with the active calls
    /// they would double a plugin's call rate and mix a candidate's failures into its alerts.
    shadow_calls: CallMetrics,
    refused_writes: Family<PluginKindLabels, Counter>,
    /// The `kind` values `refused_writes` has per plugin: a plugin names the kinds it tries to
    /// write, so past [`MAX_KINDS_PER_PLUGIN`] they count as `other` (a plugin cannot grow
    /// the series without bound).
    refused_kinds:
        Arc<std::sync::Mutex<std::collections::HashMap<String, std::collections::HashSet<String>>>>,
    log_lines_dropped: Family<PluginLabels, Counter>,
    host_calls_refused: Family<PluginLabels, Counter>,
    swaps: Family<PluginSwapLabels, Counter>,
    shadow_differences: Family<PluginOpLabels, Counter>,
    rollout_calls: Family<RolloutCallLabels, Counter>,
    rollout_duration: HistogramFamily<RolloutVersionLabels>,
    rollout_rollbacks: Family<RolloutGuardLabels, Counter>,
    leader: Gauge,
    webhook_in_flight: Gauge,
    webhook_queued: Gauge,
    webhook_shed: Counter,
    webhook_in_flight_bytes: Gauge,
    webhook_in_flight_bytes_limit: Gauge,
    rest_client_requests: Family<RestClientLabels, Counter>,
    /// More metrics rendered after the registry's (a server's own, added while running).
    sources: Arc<std::sync::RwLock<Vec<Source>>>,
}

/// Distinct `kind` label values of `odh_refused_writes_total` per plugin; more count as
/// `other`.
pub const MAX_KINDS_PER_PLUGIN: usize = 32;

/// Renders more metrics in the Prometheus text format.
pub type Source = Arc<dyn Fn() -> String + Send + Sync>;

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A fresh set of metrics in a registry of its own (tests use this; the process uses
    /// [`Metrics::global`]).
    pub fn new() -> Self {
        let mut registry = Registry::default();
        // Counter names are registered without `_total`: the encoder appends it.
        let reconcile_total = Family::default();
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            reconcile_total.clone(),
        );
        let reconcile_errors = Family::default();
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            reconcile_errors.clone(),
        );
        let terminal_reconcile_errors = Family::default();
        registry.register(
            "controller_runtime_terminal_reconcile_errors",
            "Total number of terminal reconciliation errors per controller",
            terminal_reconcile_errors.clone(),
        );
        let reconcile_panics = Family::default();
        registry.register(
            "controller_runtime_reconcile_panics",
            "Total number of reconciliation panics per controller",
            reconcile_panics.clone(),
        );
        let reconcile_time: HistogramFamily<ControllerLabels> =
            Family::new_with_constructor(reconcile_time_histogram);
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            reconcile_time.clone(),
        );
        let max_concurrent_reconciles = Family::default();
        registry.register(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            max_concurrent_reconciles.clone(),
        );
        let active_workers = Family::default();
        registry.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            active_workers.clone(),
        );
        let workqueue_depth = Family::default();
        registry.register(
            "workqueue_depth",
            "Current depth of workqueue",
            workqueue_depth.clone(),
        );
        let workqueue_adds = Family::default();
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            workqueue_adds.clone(),
        );
        let workqueue_retries = Family::default();
        registry.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            workqueue_retries.clone(),
        );
        let workqueue_queue_duration: HistogramFamily<QueueLabels> =
            Family::new_with_constructor(workqueue_histogram);
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            workqueue_queue_duration.clone(),
        );
        let workqueue_work_duration: HistogramFamily<QueueLabels> =
            Family::new_with_constructor(workqueue_histogram);
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            workqueue_work_duration.clone(),
        );
        let workqueue_unfinished_work = Family::default();
        registry.register(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
            workqueue_unfinished_work.clone(),
        );
        let workqueue_longest_running = Family::default();
        registry.register(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            workqueue_longest_running.clone(),
        );
        let leader_election_status = Family::default();
        registry.register(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
            leader_election_status.clone(),
        );
        let webhook_requests = Family::default();
        registry.register(
            "controller_runtime_webhook_requests",
            "Total number of admission requests by HTTP status code.",
            webhook_requests.clone(),
        );
        let webhook_requests_in_flight = Family::default();
        registry.register(
            "controller_runtime_webhook_requests_in_flight",
            "Current number of admission requests being served.",
            webhook_requests_in_flight.clone(),
        );
        let webhook_latency: HistogramFamily<WebhookLabels> =
            Family::new_with_constructor(webhook_latency_histogram);
        registry.register(
            "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests",
            webhook_latency.clone(),
        );
        let certificate_reads = Counter::default();
        registry.register(
            "certwatcher_read_certificate",
            "Total number of certificate reads",
            certificate_reads.clone(),
        );
        let certificate_read_errors = Counter::default();
        registry.register(
            "certwatcher_read_certificate_errors",
            "Total number of certificate read errors",
            certificate_read_errors.clone(),
        );
        let plugin_calls = CallMetrics::register(&mut registry, "odh_plugin_", "plugin calls");
        let refused_writes = Family::default();
        registry.register(
            "odh_refused_writes",
            "Total number of writes proposed by a plugin and refused by the host",
            refused_writes.clone(),
        );
        let log_lines_dropped = Family::default();
        registry.register(
            "odh_plugin_log_lines_dropped",
            "Total number of log lines a plugin wrote past its per-call log budget, dropped",
            log_lines_dropped.clone(),
        );
        let host_calls_refused = Family::default();
        registry.register(
            "odh_plugin_host_call_limit_hits",
            "Total number of plugin calls refused further host calls past the per-call limit",
            host_calls_refused.clone(),
        );
        let swaps = Family::default();
        registry.register(
            "odh_plugin_swaps",
            "Total number of plugin version changes per plugin and result (swapped or rejected)",
            swaps.clone(),
        );
        let shadow_differences = Family::default();
        registry.register(
            "odh_plugin_shadow_differences",
            "Total number of inputs on which a shadow candidate decided differently from the active version",
            shadow_differences.clone(),
        );
        let shadow_calls = CallMetrics::register(
            &mut registry,
            "odh_plugin_shadow_",
            "calls of shadow candidates",
        );
        let rollout_calls = Family::default();
        registry.register(
            "odh_plugin_rollout_calls",
            "Total number of calls per plugin, version (stable or candidate) and result while a progressive rollout runs",
            rollout_calls.clone(),
        );
        let rollout_duration: HistogramFamily<RolloutVersionLabels> =
            Family::new_with_constructor(plugin_call_histogram);
        registry.register(
            "odh_plugin_rollout_call_duration_seconds",
            "Duration of calls per plugin and version while a progressive rollout runs",
            rollout_duration.clone(),
        );
        let rollout_rollbacks = Family::default();
        registry.register(
            "odh_plugin_rollout_rollbacks",
            "Total number of progressive rollouts moved back to the stable version per plugin and breached guard",
            rollout_rollbacks.clone(),
        );
        let leader = Gauge::default();
        registry.register(
            "odh_leader",
            "1 while this replica holds the leader election lease, else 0",
            leader.clone(),
        );
        let webhook_in_flight = Gauge::default();
        registry.register(
            "odh_webhook_requests_in_flight",
            "Admission requests the webhook server holds room for",
            webhook_in_flight.clone(),
        );
        let webhook_queued = Gauge::default();
        registry.register(
            "odh_webhook_requests_queued",
            "Admission requests waiting for room in the webhook server",
            webhook_queued.clone(),
        );
        let webhook_shed = Counter::default();
        registry.register(
            "odh_webhook_requests_shed",
            "Total number of admission requests answered 503 after waiting for room",
            webhook_shed.clone(),
        );
        let webhook_in_flight_bytes = Gauge::default();
        registry.register(
            "odh_webhook_in_flight_bytes",
            "Room held by admission requests in flight, by their declared body sizes",
            webhook_in_flight_bytes.clone(),
        );
        let webhook_in_flight_bytes_limit = Gauge::default();
        registry.register(
            "odh_webhook_in_flight_bytes_limit",
            "Room the webhook server has for admission requests in flight",
            webhook_in_flight_bytes_limit.clone(),
        );
        let rest_client_requests = Family::default();
        registry.register(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            rest_client_requests.clone(),
        );
        Self {
            registry: Arc::new(registry),
            reconcile_total,
            reconcile_errors,
            terminal_reconcile_errors,
            reconcile_panics,
            reconcile_time,
            max_concurrent_reconciles,
            active_workers,
            workqueue_depth,
            workqueue_adds,
            workqueue_retries,
            workqueue_queue_duration,
            workqueue_work_duration,
            workqueue_unfinished_work,
            workqueue_longest_running,
            leader_election_status,
            webhook_requests,
            webhook_requests_in_flight,
            webhook_latency,
            webhook_series: Arc::default(),
            certificate_reads,
            certificate_read_errors,
            plugin_calls,
            shadow_calls,
            refused_writes,
            refused_kinds: Default::default(),
            log_lines_dropped,
            host_calls_refused,
            swaps,
            shadow_differences,
            rollout_calls,
            rollout_duration,
            rollout_rollbacks,
            leader,
            webhook_in_flight,
            webhook_queued,
            webhook_shed,
            webhook_in_flight_bytes,
            webhook_in_flight_bytes_limit,
            rest_client_requests,
            sources: Default::default(),
        }
    }

    /// Adds metrics rendered after this registry's (e.g. the model-serving-api's).
    pub fn add_source(&self, source: Source) {
        self.sources
            .write()
            .expect("metrics sources lock")
            .push(source);
    }

    /// One request to the API server answered with `code` (`None`: no response).
    pub fn rest_client_request(&self, host: &str, method: &str, code: Option<u16>) {
        self.rest_client_requests
            .get_or_create(&RestClientLabels {
                code: code.map_or_else(|| "<error>".into(), |c| c.to_string()),
                host: host.into(),
                method: method.into(),
            })
            .inc();
    }

    /// The process-wide metrics, created on first use.
    pub fn global() -> &'static Metrics {
        static GLOBAL: OnceLock<Metrics> = OnceLock::new();
        GLOBAL.get_or_init(Metrics::new)
    }

    /// Announces a controller as controller-runtime does when it starts: every result counter
    /// at 0, `max_concurrent_reconciles` set, no active workers; and its work queue at depth 0.
    pub fn register_controller(&self, controller: &str, max_concurrent_reconciles: usize) {
        for result in [
            ReconcileResult::Error,
            ReconcileResult::RequeueAfter,
            ReconcileResult::Requeue,
            ReconcileResult::Success,
        ] {
            self.reconcile_total
                .get_or_create(&controller_result(controller, result))
                .inc_by(0);
        }
        let c = controller_labels(controller);
        self.reconcile_errors.get_or_create(&c).inc_by(0);
        self.terminal_reconcile_errors.get_or_create(&c).inc_by(0);
        self.reconcile_panics.get_or_create(&c).inc_by(0);
        self.max_concurrent_reconciles
            .get_or_create(&c)
            .set(i64::try_from(max_concurrent_reconciles).unwrap_or(i64::MAX));
        self.active_workers.get_or_create(&c).set(0);
        let q = queue_labels(controller);
        self.workqueue_unfinished_work.get_or_create(&q).set(0.0);
        self.workqueue_longest_running.get_or_create(&q).set(0.0);
        self.workqueue_depth.get_or_create(&q).set(0);
        self.workqueue_adds.get_or_create(&q).inc_by(0);
        self.workqueue_retries.get_or_create(&q).inc_by(0);
    }

    /// Records one finished reconcile: its result and how long it took.
    pub fn reconcile_done(&self, controller: &str, result: ReconcileResult, duration: Duration) {
        self.reconcile_total
            .get_or_create(&controller_result(controller, result))
            .inc();
        let c = controller_labels(controller);
        if matches!(
            result,
            ReconcileResult::Error | ReconcileResult::TerminalError
        ) {
            self.reconcile_errors.get_or_create(&c).inc();
        }
        if result == ReconcileResult::TerminalError {
            self.terminal_reconcile_errors.get_or_create(&c).inc();
        }
        self.reconcile_time
            .get_or_create(&c)
            .observe(duration.as_secs_f64());
    }

    /// A reconcile panicked (counted in addition to its `error` result).
    pub fn reconcile_panicked(&self, controller: &str) {
        self.reconcile_panics
            .get_or_create(&controller_labels(controller))
            .inc();
    }

    /// Marks one worker of `controller` busy until the guard is dropped.
    pub fn active_worker(&self, controller: &str) -> ActiveWorker {
        let gauge = self
            .active_workers
            .get_or_create_owned(&controller_labels(controller));
        gauge.inc();
        ActiveWorker { gauge }
    }

    /// The work queue of `queue` (the controller's name) holds `depth` items.
    pub fn workqueue_depth(&self, queue: &str, depth: usize) {
        self.workqueue_depth
            .get_or_create(&queue_labels(queue))
            .set(i64::try_from(depth).unwrap_or(i64::MAX));
    }

    /// An item was added to the work queue of `queue`.
    pub fn workqueue_add(&self, queue: &str) {
        self.workqueue_adds
            .get_or_create(&queue_labels(queue))
            .inc();
    }

    /// An item of the work queue of `queue` waited `waited` before a worker took it.
    pub fn workqueue_waited(&self, queue: &str, waited: Duration) {
        self.workqueue_queue_duration
            .get_or_create(&queue_labels(queue))
            .observe(waited.as_secs_f64());
    }

    /// A worker processed an item of the work queue of `queue` for `worked`.
    pub fn workqueue_worked(&self, queue: &str, worked: Duration) {
        self.workqueue_work_duration
            .get_or_create(&queue_labels(queue))
            .observe(worked.as_secs_f64());
    }

    /// How long the items of `queue` in progress have been: in total, and the longest.
    pub fn workqueue_in_progress(&self, queue: &str, total: Duration, longest: Duration) {
        let labels = queue_labels(queue);
        self.workqueue_unfinished_work
            .get_or_create(&labels)
            .set(total.as_secs_f64());
        self.workqueue_longest_running
            .get_or_create(&labels)
            .set(longest.as_secs_f64());
    }

    /// An admission request to the webhook at `path` begins: in flight until
    /// [`WebhookRequest::done`] (or the guard is dropped, counted without a code).
    pub fn webhook_request(&self, path: &str) -> WebhookRequest {
        let series = self.webhook_series(path);
        series.in_flight.inc();
        WebhookRequest {
            series,
            started: std::time::Instant::now(),
        }
    }

    /// The series of webhook `path`, made at its first request.
    fn webhook_series(&self, path: &str) -> Arc<WebhookSeries> {
        if let Some(series) = self
            .webhook_series
            .read()
            .expect("webhook series lock")
            .get(path)
        {
            return series.clone();
        }
        let labels = WebhookLabels {
            webhook: path.to_string(),
        };
        let made = Arc::new(WebhookSeries {
            in_flight: self.webhook_requests_in_flight.get_or_create_owned(&labels),
            latency: OnceLock::new(),
            answered_200: OnceLock::new(),
            latency_family: self.webhook_latency.clone(),
            requests: self.webhook_requests.clone(),
            path: labels.webhook,
        });
        self.webhook_series
            .write()
            .expect("webhook series lock")
            .entry(path.to_string())
            .or_insert(made)
            .clone()
    }

    /// A serving certificate was read (`ok`) or failed to read.
    pub fn certificate_read(&self, ok: bool) {
        self.certificate_reads.inc();
        if !ok {
            self.certificate_read_errors.inc();
        }
    }

    /// An item was re-added to the work queue of `queue` with rate limiting.
    pub fn workqueue_retry(&self, queue: &str) {
        self.workqueue_retries
            .get_or_create(&queue_labels(queue))
            .inc();
    }

    /// Records one plugin call: how long it took and, when it failed, why (the reason label,
    /// e.g. `timeout`).
    pub fn plugin_call(
        &self,
        plugin: &str,
        op: &str,
        failure_reason: Option<&str>,
        duration: Duration,
    ) {
        self.plugin_calls
            .record(plugin, op, failure_reason, duration);
    }

    /// Records one call of a shadow candidate, as [`Metrics::plugin_call`] does an active one.
    pub fn shadow_call(
        &self,
        plugin: &str,
        op: &str,
        failure_reason: Option<&str>,
        duration: Duration,
    ) {
        self.shadow_calls
            .record(plugin, op, failure_reason, duration);
    }

    /// The host refused a write a plugin proposed (outside its declared kinds, ...).
    pub fn refused_write(&self, plugin: &str, kind: &str) {
        let kind = {
            let mut seen = self.refused_kinds.lock().expect("kinds lock");
            let kinds = seen.entry(plugin.to_string()).or_default();
            if kinds.contains(kind) || kinds.len() < MAX_KINDS_PER_PLUGIN {
                kinds.insert(kind.to_string());
                kind
            } else {
                "other"
            }
        };
        self.refused_writes
            .get_or_create(&PluginKindLabels {
                plugin: plugin.to_string(),
                kind: kind.to_string(),
            })
            .inc();
    }

    /// A plugin's log line was dropped: its call had logged its budget already.
    pub fn plugin_log_lines_dropped(&self, plugin: &str, lines: u64) {
        self.log_lines_dropped
            .get_or_create(&PluginLabels {
                plugin: plugin.to_string(),
            })
            .inc_by(lines);
    }

    /// A plugin call went past the per-call host-call limit.
    pub fn host_calls_refused(&self, plugin: &str) {
        self.host_calls_refused
            .get_or_create(&PluginLabels {
                plugin: plugin.to_string(),
            })
            .inc();
    }

    /// A plugin candidate was swapped in (`true`) or rejected, the last good version serving on.
    pub fn plugin_swap(&self, plugin: &str, swapped: bool) {
        let result = if swapped { "swapped" } else { "rejected" };
        self.swaps
            .get_or_create(&PluginSwapLabels {
                plugin: plugin.to_string(),
                result,
            })
            .inc();
    }

    /// One call while a progressive rollout runs: `version` is `stable` or `candidate`,
    /// `result` `allowed`, `denied` (admission), `success` (other calls) or `error`.
    pub fn rollout_call(
        &self,
        plugin: &str,
        version: &'static str,
        result: &'static str,
        duration: Duration,
    ) {
        self.rollout_calls
            .get_or_create(&RolloutCallLabels {
                plugin: plugin.to_string(),
                version,
                result,
            })
            .inc();
        self.rollout_duration
            .get_or_create(&RolloutVersionLabels {
                plugin: plugin.to_string(),
                version,
            })
            .observe(duration.as_secs_f64());
    }

    /// A rollout's guard moved its slice back to the stable version.
    pub fn rollout_rollback(&self, plugin: &str, guard: &str) {
        self.rollout_rollbacks
            .get_or_create(&RolloutGuardLabels {
                plugin: plugin.to_string(),
                guard: guard.to_string(),
            })
            .inc();
    }

    /// A shadow candidate decided differently from the active version.
    pub fn shadow_difference(&self, plugin: &str, op: &str) {
        self.shadow_differences
            .get_or_create(&PluginOpLabels {
                plugin: plugin.to_string(),
                op: op.to_string(),
            })
            .inc();
    }

    /// Whether this replica currently leads, by the Lease `lease`.
    pub fn set_leader(&self, lease: &str, leader: bool) {
        self.leader.set(i64::from(leader));
        self.leader_election_status
            .get_or_create(&NameLabels {
                name: lease.to_string(),
            })
            .set(i64::from(leader));
    }

    /// The webhook server's room for requests in flight, in bytes.
    pub fn webhook_room(&self, bytes: usize) {
        self.webhook_in_flight_bytes_limit
            .set(i64::try_from(bytes).unwrap_or(i64::MAX));
    }

    /// Admission requests started (`1`) or stopped (`-1`) waiting for room.
    pub fn webhook_requests_queued(&self, delta: i64) {
        self.webhook_queued.inc_by(delta);
    }

    /// Admission requests took (`1`, with their weight in bytes) or gave back (`-1`, minus
    /// it) room.
    pub fn webhook_requests_in_flight(&self, delta: i64, bytes: i64) {
        self.webhook_in_flight.inc_by(delta);
        self.webhook_in_flight_bytes.inc_by(bytes);
    }

    /// An admission request was answered 503: no room came within the wait.
    pub fn webhook_request_shed(&self) {
        self.webhook_shed.inc();
    }

    /// Every metric in the Prometheus text format (version 0.0.4, see [`CONTENT_TYPE`]).
    pub fn render(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry)
            .expect("writing to a String cannot fail");
        out.push_str(&process::render());
        for source in self.sources.read().expect("metrics sources lock").iter() {
            out.push_str(&source());
        }
        out
    }
}

/// One admission request being served ([`Metrics::webhook_request`]).
#[must_use = "the request counts as in flight until it is done"]
pub struct WebhookRequest {
    series: Arc<WebhookSeries>,
    started: std::time::Instant,
}

/// A webhook path's series, looked up by label once rather than on every request (three
/// label strings, their hashes and a clone of every metric handle per request before: about
/// 1.5% of an admission request's CPU). The latency histogram and the count of 200 answers
/// appear at the first answer, as they did when they were looked up then.
struct WebhookSeries {
    path: String,
    in_flight: Gauge,
    latency: OnceLock<Histogram>,
    answered_200: OnceLock<Counter>,
    latency_family: HistogramFamily<WebhookLabels>,
    requests: Family<WebhookCodeLabels, Counter>,
}

impl WebhookSeries {
    fn labels(&self) -> WebhookLabels {
        WebhookLabels {
            webhook: self.path.clone(),
        }
    }

    fn count_answer(&self, code: u16) {
        let labels = |code: u16| WebhookCodeLabels {
            webhook: self.path.clone(),
            code: code.to_string(),
        };
        if code == 200 {
            self.answered_200
                .get_or_init(|| self.requests.get_or_create_owned(&labels(200)))
                .inc();
        } else {
            self.requests.get_or_create(&labels(code)).inc();
        }
    }
}

impl WebhookRequest {
    /// Answered with HTTP `code`: counted, its latency observed.
    pub fn done(self, code: u16) {
        let series = &self.series;
        series
            .latency
            .get_or_init(|| series.latency_family.get_or_create_owned(&series.labels()))
            .observe(self.started.elapsed().as_secs_f64());
        series.count_answer(code);
    }
}

impl Drop for WebhookRequest {
    fn drop(&mut self) {
        self.series.in_flight.dec();
    }
}

/// Keeps `controller_runtime_active_workers` raised while alive.
#[derive(Debug)]
#[must_use = "the worker counts as active only while the guard lives"]
pub struct ActiveWorker {
    gauge: Gauge,
}

impl Drop for ActiveWorker {
    fn drop(&mut self) {
        self.gauge.dec();
    }
}

fn controller_labels(controller: &str) -> ControllerLabels {
    ControllerLabels {
        controller: controller.to_string(),
    }
}

fn controller_result(controller: &str, result: ReconcileResult) -> ControllerResultLabels {
    ControllerResultLabels {
        controller: controller.to_string(),
        result: result.label(),
    }
}

/// controller-runtime names a controller's queue after the controller and sets both labels.
fn queue_labels(queue: &str) -> QueueLabels {
    QueueLabels {
        name: queue.to_string(),
        controller: queue.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of the sample line that starts with `prefix` (name and labels).
    fn sample(text: &str, prefix: &str) -> Option<f64> {
        text.lines()
            .find(|l| l.starts_with(prefix) && l[prefix.len()..].starts_with(' '))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
    }

    #[test]
    fn registered_controller_exposes_zeroed_series_like_controller_runtime() {
        let m = Metrics::new();
        m.register_controller("widget", 1);
        let text = m.render();
        for result in ["success", "error", "requeue", "requeue_after"] {
            let line = format!(
                r#"controller_runtime_reconcile_total{{controller="widget",result="{result}"}}"#
            );
            assert_eq!(sample(&text, &line), Some(0.0), "{line} in\n{text}");
        }
        assert_eq!(
            sample(
                &text,
                r#"controller_runtime_max_concurrent_reconciles{controller="widget"}"#
            ),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                r#"controller_runtime_active_workers{controller="widget"}"#
            ),
            Some(0.0)
        );
        assert_eq!(
            sample(
                &text,
                r#"workqueue_depth{name="widget",controller="widget"}"#
            ),
            Some(0.0)
        );
        // Prometheus 0.0.4 text: the TYPE line names the sample, `_total` included.
        assert!(text.contains("# TYPE controller_runtime_reconcile_total counter\n"));
        assert!(!text.contains("# EOF"), "no OpenMetrics EOF marker");
        assert!(text.contains("# TYPE odh_leader gauge\nodh_leader 0\n"));
    }

    #[test]
    fn the_webhook_servers_room_is_exposed() {
        let m = Metrics::new();
        m.webhook_room(8 * 8 * 1024 * 1024);
        m.webhook_requests_in_flight(1, 65536);
        m.webhook_requests_in_flight(1, 2 * 1024 * 1024);
        m.webhook_requests_in_flight(-1, -65536);
        m.webhook_requests_queued(1);
        m.webhook_request_shed();
        let text = m.render();
        for (name, value) in [
            ("odh_webhook_requests_in_flight", 1.0),
            ("odh_webhook_in_flight_bytes", 2097152.0),
            ("odh_webhook_in_flight_bytes_limit", 67108864.0),
            ("odh_webhook_requests_queued", 1.0),
            ("odh_webhook_requests_shed_total", 1.0),
        ] {
            assert_eq!(sample(&text, name), Some(value), "{name} in\n{text}");
        }
        assert!(text.contains("# TYPE odh_webhook_requests_queued gauge\n"));
        assert!(text.contains("# TYPE odh_webhook_requests_shed_total counter\n"));
    }

    #[test]
    fn reconcile_results_count_errors_and_observe_time() {
        let m = Metrics::new();
        m.reconcile_done("secret", ReconcileResult::Success, Duration::from_millis(3));
        m.reconcile_done("secret", ReconcileResult::Error, Duration::from_millis(70));
        m.reconcile_done(
            "secret",
            ReconcileResult::TerminalError,
            Duration::from_secs(2),
        );
        m.reconcile_done(
            "secret",
            ReconcileResult::RequeueAfter,
            Duration::from_secs(90),
        );
        let text = m.render();
        let total = |r: &str| {
            sample(
                &text,
                &format!(
                    r#"controller_runtime_reconcile_total{{controller="secret",result="{r}"}}"#
                ),
            )
        };
        assert_eq!(total("success"), Some(1.0));
        assert_eq!(total("error"), Some(2.0));
        assert_eq!(total("requeue_after"), Some(1.0));
        assert_eq!(
            sample(
                &text,
                r#"controller_runtime_reconcile_errors_total{controller="secret"}"#
            ),
            Some(2.0)
        );
        assert_eq!(
            sample(
                &text,
                r#"controller_runtime_terminal_reconcile_errors_total{controller="secret"}"#
            ),
            Some(1.0)
        );
        // controller-runtime's buckets: 0.005 holds the 3 ms reconcile, 0.1 the 70 ms one,
        // 60 everything but the 90 s one, +Inf all four. `le` values print as Go prints them.
        assert!(text.contains("# TYPE controller_runtime_reconcile_time_seconds histogram\n"));
        let bucket = |le: &str| {
            sample(
                &text,
                &format!(
                    r#"controller_runtime_reconcile_time_seconds_bucket{{controller="secret",le="{le}"}}"#
                ),
            )
        };
        assert_eq!(bucket("0.005"), Some(1.0), "{text}");
        assert_eq!(bucket("0.1"), Some(2.0));
        assert_eq!(bucket("1.25"), Some(2.0));
        assert_eq!(bucket("60"), Some(3.0));
        assert_eq!(bucket("+Inf"), Some(4.0));
        let buckets = text
            .lines()
            .filter(|l| l.starts_with("controller_runtime_reconcile_time_seconds_bucket{"))
            .count();
        assert_eq!(
            buckets,
            RECONCILE_TIME_BUCKETS.len() + 1,
            "40 buckets and +Inf"
        );
        assert_eq!(
            sample(
                &text,
                r#"controller_runtime_reconcile_time_seconds_count{controller="secret"}"#
            ),
            Some(4.0)
        );
        assert_eq!(RECONCILE_TIME_BUCKETS.len(), 40);
    }

    #[test]
    fn workers_and_queue_metrics() {
        let m = Metrics::new();
        m.register_controller("core-pod", 4);
        let a = m.active_worker("core-pod");
        let b = m.active_worker("core-pod");
        let busy = m.render();
        assert_eq!(
            sample(
                &busy,
                r#"controller_runtime_active_workers{controller="core-pod"}"#
            ),
            Some(2.0)
        );
        drop((a, b));
        m.workqueue_add("core-pod");
        m.workqueue_add("core-pod");
        m.workqueue_retry("core-pod");
        m.workqueue_depth("core-pod", 5);
        let text = m.render();
        assert_eq!(
            sample(
                &text,
                r#"controller_runtime_active_workers{controller="core-pod"}"#
            ),
            Some(0.0)
        );
        let q = r#"{name="core-pod",controller="core-pod"}"#;
        assert_eq!(
            sample(&text, &format!("workqueue_adds_total{q}")),
            Some(2.0)
        );
        assert_eq!(
            sample(&text, &format!("workqueue_retries_total{q}")),
            Some(1.0)
        );
        assert_eq!(sample(&text, &format!("workqueue_depth{q}")), Some(5.0));
    }

    #[test]
    fn shadow_calls_have_series_of_their_own() {
        let m = Metrics::new();
        m.plugin_call("isvc", "mutate", None, Duration::from_micros(300));
        m.shadow_call("isvc", "mutate", Some("trap"), Duration::from_micros(500));
        let text = m.render();
        let active = r#"{plugin="isvc",op="mutate",result="success"}"#;
        assert_eq!(
            sample(&text, &format!("odh_plugin_calls_total{active}")),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                r#"odh_plugin_calls_total{plugin="isvc",op="mutate",result="error"}"#
            ),
            None,
            "the shadow's failure is not the active version's"
        );
        assert_eq!(
            sample(
                &text,
                r#"odh_plugin_call_duration_seconds_count{plugin="isvc",op="mutate"}"#
            ),
            Some(1.0)
        );
        assert!(!text.contains("odh_plugin_failures_total{"), "{text}");
        assert_eq!(
            sample(
                &text,
                r#"odh_plugin_shadow_calls_total{plugin="isvc",op="mutate",result="error"}"#
            ),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                r#"odh_plugin_shadow_failures_total{plugin="isvc",op="mutate",reason="trap"}"#
            ),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                r#"odh_plugin_shadow_call_duration_seconds_count{plugin="isvc",op="mutate"}"#
            ),
            Some(1.0)
        );
    }

    #[test]
    fn plugin_calls_failures_refusals_and_leader() {
        let m = Metrics::new();
        m.plugin_call("nim", "reconcile", None, Duration::from_micros(400));
        m.plugin_call("nim", "reconcile", Some("timeout"), Duration::from_secs(1));
        m.refused_write("nim", "Secret");
        m.set_leader("lease", true);
        let text = m.render();
        assert_eq!(
            sample(
                &text,
                r#"odh_plugin_calls_total{plugin="nim",op="reconcile",result="success"}"#
            ),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                r#"odh_plugin_calls_total{plugin="nim",op="reconcile",result="error"}"#
            ),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                r#"odh_plugin_failures_total{plugin="nim",op="reconcile",reason="timeout"}"#
            ),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                r#"odh_plugin_call_duration_seconds_count{plugin="nim",op="reconcile"}"#
            ),
            Some(2.0)
        );
        assert_eq!(
            sample(
                &text,
                r#"odh_refused_writes_total{plugin="nim",kind="Secret"}"#
            ),
            Some(1.0)
        );
        assert_eq!(sample(&text, "odh_leader"), Some(1.0));
    }

    #[test]
    fn a_plugin_cannot_grow_the_refused_kinds_without_bound() {
        let m = Metrics::new();
        for i in 0..MAX_KINDS_PER_PLUGIN + 10 {
            m.refused_write("p", &format!("Kind{i}"));
        }
        m.refused_write("p", "Kind0");
        let text = m.render();
        assert_eq!(
            text.lines()
                .filter(|l| l.starts_with("odh_refused_writes_total{"))
                .count(),
            MAX_KINDS_PER_PLUGIN + 1
        );
        assert_eq!(
            sample(
                &text,
                r#"odh_refused_writes_total{plugin="p",kind="other"}"#
            ),
            Some(10.0)
        );
        assert_eq!(
            sample(
                &text,
                r#"odh_refused_writes_total{plugin="p",kind="Kind0"}"#
            ),
            Some(2.0),
            "a kind seen before keeps its series"
        );
    }

    #[test]
    fn webhook_requests_are_counted_by_path_and_code_as_controller_runtime_does() {
        let m = Metrics::new();
        let path = "/validate-serving-kserve-io-v1beta1-inferenceservice";
        let first = m.webhook_request(path);
        let second = m.webhook_request(path);
        let text = m.render();
        assert_eq!(
            sample(
                &text,
                &format!(r#"controller_runtime_webhook_requests_in_flight{{webhook="{path}"}}"#)
            ),
            Some(2.0)
        );
        first.done(200);
        second.done(400);
        let text = m.render();
        for (code, n) in [("200", 1.0), ("400", 1.0)] {
            assert_eq!(
                sample(
                    &text,
                    &format!(
                        r#"controller_runtime_webhook_requests_total{{webhook="{path}",code="{code}"}}"#
                    )
                ),
                Some(n)
            );
        }
        assert_eq!(
            sample(
                &text,
                &format!(r#"controller_runtime_webhook_requests_in_flight{{webhook="{path}"}}"#)
            ),
            Some(0.0)
        );
        assert_eq!(
            sample(
                &text,
                &format!(r#"controller_runtime_webhook_latency_seconds_count{{webhook="{path}"}}"#)
            ),
            Some(2.0)
        );
        assert!(text.contains(&format!(
            r#"controller_runtime_webhook_latency_seconds_bucket{{le="0.005",webhook="{path}"}}"#
        )) || text.contains(&format!(
            r#"controller_runtime_webhook_latency_seconds_bucket{{webhook="{path}",le="0.005"}}"#
        )));
    }

    #[test]
    fn a_webhook_paths_answers_appear_at_its_first_answer_and_keep_counting() {
        let m = Metrics::new();
        let path = "/mutate--v1-pod";
        let waiting = m.webhook_request(path);
        let text = m.render();
        assert!(
            !text.contains("controller_runtime_webhook_latency_seconds_count")
                && !text.contains("controller_runtime_webhook_requests_total{"),
            "nothing answered yet:\n{text}"
        );
        waiting.done(200);
        for code in [200, 200, 503] {
            m.clone().webhook_request(path).done(code);
        }
        let text = m.render();
        let count = |series: &str| sample(&text, series);
        assert_eq!(
            count(&format!(
                r#"controller_runtime_webhook_requests_total{{webhook="{path}",code="200"}}"#
            )),
            Some(3.0)
        );
        assert_eq!(
            count(&format!(
                r#"controller_runtime_webhook_requests_total{{webhook="{path}",code="503"}}"#
            )),
            Some(1.0)
        );
        assert_eq!(
            count(&format!(
                r#"controller_runtime_webhook_latency_seconds_count{{webhook="{path}"}}"#
            )),
            Some(4.0)
        );
        assert_eq!(
            count(&format!(
                r#"controller_runtime_webhook_requests_in_flight{{webhook="{path}"}}"#
            )),
            Some(0.0)
        );
    }

    #[test]
    fn clones_share_values_and_global_is_one_instance() {
        let m = Metrics::new();
        m.clone().refused_write("p", "ConfigMap");
        assert!(
            m.render()
                .contains(r#"odh_refused_writes_total{plugin="p",kind="ConfigMap"} 1"#)
        );
        assert!(std::ptr::eq(Metrics::global(), Metrics::global()));
    }
}
