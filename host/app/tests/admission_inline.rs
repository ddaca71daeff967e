//! Admission calls run on the executor's own thread (a fiber that yields at every epoch tick),
//! not on the blocking pool: the sandbox holds there as everywhere else, and a bad plugin never
//! keeps the worker from its other tasks.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use odh_model_controller::plugin::wire::{AdmissionDecision, Operation, WebhookType};
use odh_model_controller::plugin::{
    CallEnv, CallError, ClusterView, EngineOptions, Limits, LoadRequest, LoadedPlugin,
    MemoryCluster, PluginEngine,
};
use odh_test_support::host::{admission, component};
use serde_json::{Value, json};

/// Runs `test` as a task on a runtime of one worker and one blocking thread, so what runs
/// where is visible (`block_on`'s own future would run on the test's thread instead).
fn on_one_worker<F>(test: F)
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async { tokio::spawn(test).await.unwrap() });
}

fn misbehave(limits: Limits) -> LoadedPlugin {
    let (source, bytes) = component("misbehave");
    LoadedPlugin::load(
        &PluginEngine::new(EngineOptions::default()).unwrap(),
        LoadRequest::new(source, &bytes).limits(limits),
    )
    .expect("load misbehave")
}

fn config_map(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "ns", "uid": "u-1"}, "data": data})
}

async fn validate(
    plugin: &LoadedPlugin,
    data: Value,
    cluster: Arc<dyn ClusterView>,
) -> Result<AdmissionDecision, CallError> {
    let input = admission(
        "/validate-misbehave",
        Operation::Create,
        config_map("reviewed", data),
    );
    plugin
        .admit(WebhookType::Validating, input, CallEnv::live(cluster))
        .await
}

/// Runs `call` beside a task counting 1 ms ticks on the same runtime; the call's answer and the
/// ticks counted meanwhile (a worker held by guest code counts none).
async fn ticks_during<T>(call: impl std::future::Future<Output = T>) -> (T, u64) {
    let ticks = Arc::new(AtomicU64::new(0));
    let counted = ticks.clone();
    let ticker = tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_millis(1));
        loop {
            every.tick().await;
            counted.fetch_add(1, Ordering::Relaxed);
        }
    });
    tokio::task::yield_now().await;
    let before = ticks.load(Ordering::Relaxed);
    let answer = call.await;
    let during = ticks.load(Ordering::Relaxed) - before;
    ticker.abort();
    (answer, during)
}

/// The call is answered while the only blocking thread is taken: it never went there.
#[test]
fn an_admission_call_does_not_wait_for_the_blocking_pool() {
    let plugin = misbehave(Limits::default());
    on_one_worker(async move {
        let (release, held) = std::sync::mpsc::channel::<()>();
        let pool = tokio::task::spawn_blocking(move || held.recv_timeout(Duration::from_secs(60)));
        let decision = tokio::time::timeout(
            Duration::from_secs(30),
            validate(&plugin, json!({}), Arc::new(MemoryCluster::default())),
        )
        .await
        .expect("answered while the blocking pool was busy")
        .expect("an answer");
        assert!(decision.allowed);
        release.send(()).unwrap();
        pool.await.unwrap().unwrap();
    });
}

/// An endless loop ends at its execution deadline, and meanwhile the worker it runs on keeps
/// serving its other tasks.
#[test]
fn a_looping_admission_call_gives_its_worker_back_and_ends_at_its_deadline() {
    let plugin = misbehave(Limits {
        admission_timeout_ms: 300,
        ..Limits::default()
    });
    on_one_worker(async move {
        let looping = validate(
            &plugin,
            json!({"behaviour": "loop"}),
            Arc::new(MemoryCluster::default()),
        );
        let (answer, during) = ticks_during(looping).await;
        let err = answer.unwrap_err();
        assert!(matches!(err, CallError::Timeout { .. }), "{err}");
        // 300 ms of looping at a yield every 10 ms tick: tens of ticks; none if it held the
        // worker (a fiber that never yields, or a call run synchronously on it).
        assert!(
            during >= 10,
            "the ticker ran {during} times during the loop"
        );
    });
}

/// A plugin asleep in WASI waits asynchronously: the budget still ends it, and the worker runs
/// its other tasks meanwhile.
#[test]
fn a_sleeping_admission_call_ends_at_its_budget_without_holding_its_worker() {
    let plugin = misbehave(Limits {
        admission_timeout_ms: 200,
        admission_budget_ms: 600,
        ..Limits::default()
    });
    on_one_worker(async move {
        let sleeping = validate(
            &plugin,
            json!({"behaviour": "sleep"}),
            Arc::new(MemoryCluster::default()),
        );
        let (answer, during) = ticks_during(sleeping).await;
        let err = answer.unwrap_err();
        assert!(
            err.to_string()
                .contains("waited on the clock past its call budget"),
            "{err}"
        );
        assert!(
            during >= 50,
            "the ticker ran {during} times during the sleep"
        );
    });
}

/// A panic writes to stderr through WASI's asynchronous streams; the failure carries it.
#[test]
fn a_panic_in_an_inline_admission_call_fails_with_its_message() {
    let plugin = misbehave(Limits::default());
    on_one_worker(async move {
        let err = validate(
            &plugin,
            json!({"behaviour": "panic"}),
            Arc::new(MemoryCluster::default()),
        )
        .await
        .unwrap_err();
        assert!(
            err.to_string().contains("misbehave: deliberate panic"),
            "{err}"
        );
        // The next call on the same worker is served as usual.
        let ok = validate(&plugin, json!({}), Arc::new(MemoryCluster::default()))
            .await
            .expect("served after the panic");
        assert!(ok.allowed);
    });
}

/// A cluster whose reads wait on the runtime, as a read the caches cannot answer does (the API
/// server, asked through the host's client).
struct RemoteCluster(tokio::runtime::Handle);

impl ClusterView for RemoteCluster {
    fn get(
        &self,
        _: &odh_model_controller::gvk::Gvk,
        namespace: Option<&str>,
        name: &str,
        _: Duration,
    ) -> anyhow::Result<Option<String>> {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": name, "namespace": namespace}});
        odh_model_controller::plugin::host_wait::block_on(&self.0, async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            Ok(Some(object.to_string()))
        })
    }

    fn list(
        &self,
        _: &odh_model_controller::gvk::Gvk,
        _: Option<&str>,
        _: &odh_label_selector::LabelSelector,
        _: Duration,
    ) -> anyhow::Result<Vec<String>> {
        Ok(Vec::new())
    }
}

/// A host import that waits on the runtime from an inline call hands the worker over first
/// (a runtime cannot be blocked on from its own worker), and the read answers.
#[test]
fn a_read_waiting_on_the_runtime_answers_an_inline_call() {
    let plugin = misbehave(Limits::default());
    // Two workers: the one the call blocks in place hands its queue to the other.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let test = async move {
        let cluster = Arc::new(RemoteCluster(tokio::runtime::Handle::current()));
        let decision = validate(
            &plugin,
            json!({"behaviour": "read-granted", "target": "target"}),
            cluster,
        )
        .await
        .expect("the read answered");
        let result: Value = serde_json::from_str(decision.message.as_deref().unwrap()).unwrap();
        assert_eq!(result["found"], true, "{result}");
    };
    runtime.block_on(async { tokio::spawn(test).await.unwrap() });
}
