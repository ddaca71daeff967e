//! Metrics-dashboard ConfigMap data (docs/plugins/isvc.md, "Controller `inferenceservice`",
//! the dashboard step; scenarios U-D01..U-D28).
//!
//! Every InferenceService gets a `<isvc>-metrics-dashboard` ConfigMap telling the ODH dashboard
//! whether metrics are available for the model and, if so, which Prometheus queries to graph.
//! This module holds the pure parts: runtime-kind detection, the per-runtime query templates
//! (byte-for-byte the upstream `internal/controller/constants/runtime-metrics.go` values, commit
//! `57b43aad41aea718861b6c70b38a16794fc4ac8e`), placeholder substitution, and the ConfigMap
//! `data`/labels. Resolving the ServingRuntime and writing the object is the reconciler's job.

use odh_kinds::annotation::{
    KSERVE_RUNTIME as KSERVE_RUNTIME_ANNOTATION, NIM_RUNTIME as NIM_RUNTIME_ANNOTATION,
};
use odh_plugin_sdk::serde_json::Map;
use odh_plugin_sdk::{Value, json};

/// Name suffix of the dashboard ConfigMap: `<isvc name>-metrics-dashboard`.
pub const DASHBOARD_SUFFIX: &str = "-metrics-dashboard";

/// Value substituted for `${RATE_INTERVAL}`.
pub const RATE_INTERVAL: &str = "1m";
/// Value substituted for `${REQUEST_RATE_INTERVAL}`.
pub const REQUEST_RATE_INTERVAL: &str = "5m";
/// Value substituted for `${KV_CACHE_SAMPLING_RATE}`.
pub const KV_CACHE_SAMPLING_RATE: &str = "24h";

/// The runtime flavours that have a metrics template.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RuntimeKind {
    Nim,
    Ovms,
    Vllm,
    Tgis,
    MlServer,
    AutoGluon,
}

/// String annotation `key` under `obj[section]["annotations"]`, if present and a string.
fn annotation<'a>(obj: &'a Value, section: &str, key: &str) -> Option<&'a str> {
    obj.get(section)?.get("annotations")?.get(key)?.as_str()
}

/// Detects the runtime flavour of a ServingRuntime (JSON object). First match wins:
/// 1. metadata annotation `runtimes.opendatahub.io/nvidia-nim` == `"true"` ⇒ [`RuntimeKind::Nim`];
/// 2. spec annotation `opendatahub.io/kserve-runtime` == `ovms` | `vllm` | `tgis` | `mlserver` |
///    `autogluon` (exact, case-sensitive) ⇒ the matching kind;
/// 3. otherwise `None` (unsupported).
pub fn runtime_kind(serving_runtime: &Value) -> Option<RuntimeKind> {
    if annotation(serving_runtime, "metadata", NIM_RUNTIME_ANNOTATION) == Some("true") {
        return Some(RuntimeKind::Nim);
    }
    match annotation(serving_runtime, "spec", KSERVE_RUNTIME_ANNOTATION)? {
        "ovms" => Some(RuntimeKind::Ovms),
        "vllm" => Some(RuntimeKind::Vllm),
        "tgis" => Some(RuntimeKind::Tgis),
        "mlserver" => Some(RuntimeKind::MlServer),
        "autogluon" => Some(RuntimeKind::AutoGluon),
        _ => None,
    }
}

/// The raw (unsubstituted) metrics template of a runtime kind.
pub fn template(kind: RuntimeKind) -> &'static str {
    match kind {
        RuntimeKind::Nim => NIM_TEMPLATE,
        RuntimeKind::Ovms => OVMS_TEMPLATE,
        RuntimeKind::Vllm => VLLM_TEMPLATE,
        RuntimeKind::Tgis => TGIS_TEMPLATE,
        RuntimeKind::MlServer => MLSERVER_TEMPLATE,
        RuntimeKind::AutoGluon => AUTOGLUON_TEMPLATE,
    }
}

/// Replaces every `${NAMESPACE}`, `${MODEL_NAME}`, `${RATE_INTERVAL}` (`1m`),
/// `${REQUEST_RATE_INTERVAL}` (`5m`) and `${KV_CACHE_SAMPLING_RATE}` (`24h`) in `template`.
///
/// Like Go's `strings.NewReplacer`, this is a single left-to-right pass: replacement text is
/// never rescanned (irrelevant for DNS-label names, but it keeps the behaviour identical).
pub fn substitute(template: &str, namespace: &str, model_name: &str) -> String {
    let pairs: [(&str, &str); 5] = [
        ("${NAMESPACE}", namespace),
        ("${MODEL_NAME}", model_name),
        ("${RATE_INTERVAL}", RATE_INTERVAL),
        ("${REQUEST_RATE_INTERVAL}", REQUEST_RATE_INTERVAL),
        ("${KV_CACHE_SAMPLING_RATE}", KV_CACHE_SAMPLING_RATE),
    ];
    let mut out = String::with_capacity(template.len() + 256);
    let mut rest = template;
    while let Some(pos) = rest.find("${") {
        out.push_str(&rest[..pos]);
        let tail = &rest[pos..];
        match pairs.iter().find(|(from, _)| tail.starts_with(from)) {
            Some((from, to)) => {
                out.push_str(to);
                rest = &tail[from.len()..];
            }
            None => {
                out.push_str("${");
                rest = &tail[2..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The ConfigMap `data` for ISVC `namespace/isvc_name` whose resolved ServingRuntime is
/// `runtime` (`None` = no model / no suitable runtime ⇒ unsupported):
/// `{"supported":"false"}` or `{"supported":"true","metrics":<substituted template>}`.
pub fn dashboard_data(
    namespace: &str,
    isvc_name: &str,
    runtime: Option<&Value>,
) -> Map<String, Value> {
    let mut data = Map::new();
    match runtime.and_then(runtime_kind) {
        Some(kind) => {
            data.insert("supported".into(), json!("true"));
            data.insert(
                "metrics".into(),
                Value::String(substitute(template(kind), namespace, isvc_name)),
            );
        }
        None => {
            data.insert("supported".into(), json!("false"));
        }
    }
    data
}

/// The dashboard ConfigMap's labels (exactly these five).
pub fn dashboard_labels() -> Map<String, Value> {
    [
        ("opendatahub.io/managed", "true"),
        ("app.kubernetes.io/name", "odh-model-controller"),
        ("app.kubernetes.io/component", "kserve"),
        ("app.kubernetes.io/part-of", "odh-model-serving"),
        ("app.kubernetes.io/managed-by", "odh-model-controller"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), json!(v)))
    .collect()
}

// ---------------------------------------------------------------------------------------------
// Templates: the files under `dashboard/`, transcribed verbatim from upstream
// `runtime-metrics.go` (Go raw strings; tabs, spaces and newlines are significant, and no file
// ends with a newline — they are the externally visible ConfigMap content, pinned by
// `tests/dashboard.rs`).
// ---------------------------------------------------------------------------------------------

/// Caikit standalone (defined upstream, but no runtime detection rule selects it).
pub const CAIKIT_TEMPLATE: &str = include_str!("dashboard/caikit.json");

/// OpenVINO Model Server.
pub const OVMS_TEMPLATE: &str = include_str!("dashboard/ovms.json");

/// Caikit + TGIS.
pub const TGIS_TEMPLATE: &str = include_str!("dashboard/tgis.json");

/// vLLM.
pub const VLLM_TEMPLATE: &str = include_str!("dashboard/vllm.json");

/// NVIDIA NIM.
pub const NIM_TEMPLATE: &str = include_str!("dashboard/nim.json");

/// MLServer.
pub const MLSERVER_TEMPLATE: &str = include_str!("dashboard/mlserver.json");

/// AutoGluon (KServe Python SDK standard metrics).
pub const AUTOGLUON_TEMPLATE: &str = include_str!("dashboard/autogluon.json");
