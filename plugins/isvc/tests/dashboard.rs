//! The metrics-dashboard ConfigMap data (`isvc::dashboard`): runtime detection, the upstream
//! templates pinned byte for byte, substitution and labels (scenarios U-D01..U-D28).

use isvc::dashboard::*;
use odh_kinds::annotation::{
    KSERVE_RUNTIME as KSERVE_RUNTIME_ANNOTATION, NIM_RUNTIME as NIM_RUNTIME_ANNOTATION,
};
use odh_plugin_sdk::serde_json::{self, Map};
use odh_plugin_sdk::{Value, json};
use odh_test_fixtures::serving_runtime;

const NS: &str = "test-namespace";

/// A ServingRuntime with the given metadata and spec annotations.
fn sr(name: &str, meta_annotations: Value, spec_annotations: Value) -> Value {
    let mut sr = serving_runtime(name)
        .namespace(NS)
        .auto_selects(&["onnx"])
        .set(
            "/spec/containers",
            json!([{"name": "kserve-container", "image": "example/runtime:latest"}]),
        );
    if !meta_annotations.is_null() {
        sr = sr.set("/metadata/annotations", meta_annotations);
    }
    if !spec_annotations.is_null() {
        sr = sr.set("/spec/annotations", spec_annotations);
    }
    sr.build()
}

fn kserve_runtime_sr(name: &str, runtime: &str) -> Value {
    sr(
        name,
        Value::Null,
        json!({ KSERVE_RUNTIME_ANNOTATION: runtime }),
    )
}

/// Asserts `data` is exactly the supported form with `tmpl` substituted for `isvc`.
fn assert_supported(data: &Map<String, Value>, tmpl: &str, isvc: &str) {
    assert_eq!(data.len(), 2, "{data:?}");
    assert_eq!(data["supported"], json!("true"));
    let metrics = data["metrics"].as_str().expect("metrics is a string");
    assert_eq!(metrics, substitute(tmpl, NS, isvc));
    assert!(metrics.contains(isvc));
    assert!(metrics.contains(NS));
    assert!(!metrics.contains("${"));
}

fn sections(tmpl: &str) -> Vec<Value> {
    let doc: Value = serde_json::from_str(tmpl).expect("template is valid JSON");
    doc["config"]
        .as_array()
        .expect("config is an array")
        .clone()
}

fn section(tmpl: &str, ty: &str) -> Value {
    sections(tmpl)
        .into_iter()
        .find(|s| s["type"] == ty)
        .unwrap_or_else(|| panic!("no {ty} section"))
}

fn queries(section: &Value) -> Vec<Value> {
    section["queries"]
        .as_array()
        .expect("queries is an array")
        .clone()
}

fn all_query_strings(tmpl: &str) -> Vec<String> {
    sections(tmpl)
        .iter()
        .flat_map(queries)
        .map(|q| q["query"].as_str().expect("query string").to_string())
        .collect()
}

/// U-D07..U-D12.
fn check_request_count(tmpl: &str) {
    let qs = queries(&section(tmpl, "REQUEST_COUNT"));
    assert_eq!(qs.len(), 2);
    let t0 = qs[0]["title"].as_str().unwrap().to_lowercase();
    let t1 = qs[1]["title"].as_str().unwrap().to_lowercase();
    assert!(t0.contains("successful"), "{t0}");
    assert!(t1.contains("failed"), "{t1}");
}

/// U-D13..U-D18, U-D27.
fn check_no_lowercase_placeholders(tmpl: &str) {
    let qs = all_query_strings(tmpl);
    assert!(!qs.is_empty());
    for q in qs {
        assert!(!q.contains("${model_name}"), "{q}");
        assert!(!q.contains("${namespace}"), "{q}");
    }
    assert!(!tmpl.contains("${model_name}"));
    assert!(!tmpl.contains("${namespace}"));
}

/// U-D19..U-D24, U-D28.
fn check_fully_substituted(tmpl: &str) {
    let out = substitute(tmpl, "test-ns", "test-model");
    assert!(!out.contains("${"), "{out}");
    assert!(out.contains("test-ns"));
    assert!(out.contains("test-model"));
    // Still valid JSON after substitution.
    serde_json::from_str::<Value>(&out).expect("substituted template is valid JSON");
}

// --- U-D01..U-D06: dashboard data per runtime -------------------------------------------

#[test]
fn u_d01_nim_runtime_gets_nim_template() {
    let runtime = sr(
        "nim-runtime",
        json!({ NIM_RUNTIME_ANNOTATION: "true" }),
        Value::Null,
    );
    assert_eq!(runtime_kind(&runtime), Some(RuntimeKind::Nim));
    let data = dashboard_data(NS, "nim-model", Some(&runtime));
    assert_supported(&data, NIM_TEMPLATE, "nim-model");
    assert_eq!(
        format!("nim-model{DASHBOARD_SUFFIX}"),
        "nim-model-metrics-dashboard"
    );
}

#[test]
fn u_d02_ovms_runtime_gets_ovms_template() {
    let runtime = kserve_runtime_sr("ovms-runtime", "ovms");
    let data = dashboard_data(NS, "ovms-model", Some(&runtime));
    assert_supported(&data, OVMS_TEMPLATE, "ovms-model");
}

#[test]
fn u_d03_vllm_runtime_gets_vllm_template() {
    let runtime = kserve_runtime_sr("vllm-runtime", "vllm");
    let data = dashboard_data(NS, "vllm-model", Some(&runtime));
    assert_supported(&data, VLLM_TEMPLATE, "vllm-model");
}

#[test]
fn u_d04_tgis_runtime_gets_tgis_template() {
    let runtime = kserve_runtime_sr("tgis-runtime", "tgis");
    let data = dashboard_data(NS, "tgis-model", Some(&runtime));
    assert_supported(&data, TGIS_TEMPLATE, "tgis-model");
}

#[test]
fn u_d05_autogluon_runtime_gets_autogluon_template() {
    let runtime = kserve_runtime_sr("autogluon-runtime", "autogluon");
    let data = dashboard_data(NS, "autogluon-model", Some(&runtime));
    assert_supported(&data, AUTOGLUON_TEMPLATE, "autogluon-model");
    let metrics = data["metrics"].as_str().unwrap();
    assert!(metrics.contains("request_predict_seconds_count"));
    assert!(metrics.contains("request_preprocess_seconds"));
}

#[test]
fn u_d06_generic_runtime_is_unsupported() {
    let runtime = sr("generic-runtime", Value::Null, Value::Null);
    assert_eq!(runtime_kind(&runtime), None);
    let data = dashboard_data(NS, "generic-model", Some(&runtime));
    let mut expected = Map::new();
    expected.insert("supported".into(), json!("false"));
    assert_eq!(data, expected);
    assert!(!data.contains_key("metrics"));
}

// --- U-D07..U-D12: REQUEST_COUNT has successful + failed queries -------------------------

#[test]
fn u_d07_caikit_request_count_successful_and_failed() {
    check_request_count(CAIKIT_TEMPLATE);
}

#[test]
fn u_d08_ovms_request_count_successful_and_failed() {
    check_request_count(OVMS_TEMPLATE);
}

#[test]
fn u_d09_tgis_request_count_successful_and_failed() {
    check_request_count(TGIS_TEMPLATE);
}

#[test]
fn u_d10_vllm_request_count_successful_and_failed() {
    check_request_count(VLLM_TEMPLATE);
}

#[test]
fn u_d11_nim_request_count_successful_and_failed() {
    check_request_count(NIM_TEMPLATE);
}

#[test]
fn u_d12_mlserver_request_count_successful_and_failed() {
    check_request_count(MLSERVER_TEMPLATE);
}

// --- U-D13..U-D18: no lowercase placeholders ---------------------------------------------

#[test]
fn u_d13_caikit_no_lowercase_placeholders() {
    check_no_lowercase_placeholders(CAIKIT_TEMPLATE);
}

#[test]
fn u_d14_ovms_no_lowercase_placeholders() {
    check_no_lowercase_placeholders(OVMS_TEMPLATE);
}

#[test]
fn u_d15_tgis_no_lowercase_placeholders() {
    check_no_lowercase_placeholders(TGIS_TEMPLATE);
}

#[test]
fn u_d16_vllm_no_lowercase_placeholders() {
    check_no_lowercase_placeholders(VLLM_TEMPLATE);
}

#[test]
fn u_d17_nim_no_lowercase_placeholders() {
    check_no_lowercase_placeholders(NIM_TEMPLATE);
}

#[test]
fn u_d18_mlserver_no_lowercase_placeholders() {
    check_no_lowercase_placeholders(MLSERVER_TEMPLATE);
}

// --- U-D19..U-D24: fully substituted ----------------------------------------------------

#[test]
fn u_d19_caikit_fully_substituted() {
    check_fully_substituted(CAIKIT_TEMPLATE);
}

#[test]
fn u_d20_ovms_fully_substituted() {
    check_fully_substituted(OVMS_TEMPLATE);
}

#[test]
fn u_d21_tgis_fully_substituted() {
    check_fully_substituted(TGIS_TEMPLATE);
}

#[test]
fn u_d22_vllm_fully_substituted() {
    check_fully_substituted(VLLM_TEMPLATE);
}

#[test]
fn u_d23_nim_fully_substituted() {
    check_fully_substituted(NIM_TEMPLATE);
}

#[test]
fn u_d24_mlserver_fully_substituted() {
    check_fully_substituted(MLSERVER_TEMPLATE);
}

// --- U-D25..U-D28: AutoGluon ------------------------------------------------------------

#[test]
fn u_d25_autogluon_has_required_sections() {
    let secs = sections(AUTOGLUON_TEMPLATE);
    for ty in ["REQUEST_COUNT", "MEAN_LATENCY", "CPU_USAGE", "MEMORY_USAGE"] {
        let s = secs
            .iter()
            .find(|s| s["type"] == ty)
            .unwrap_or_else(|| panic!("missing {ty}"));
        assert!(!queries(s).is_empty(), "{ty} has no queries");
    }
}

#[test]
fn u_d26_autogluon_request_count_has_one_query() {
    let qs = queries(&section(AUTOGLUON_TEMPLATE, "REQUEST_COUNT"));
    assert_eq!(qs.len(), 1);
    assert_eq!(qs[0]["title"], "Number of incoming prediction requests");
}

#[test]
fn u_d27_autogluon_no_lowercase_placeholders() {
    check_no_lowercase_placeholders(AUTOGLUON_TEMPLATE);
}

#[test]
fn u_d28_autogluon_fully_substituted() {
    check_fully_substituted(AUTOGLUON_TEMPLATE);
}

// --- Extra coverage ----------------------------------------------------------------------

/// FNV-1a 64-bit, to pin the exact template bytes without extra dependencies.
fn fnv1a64(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[test]
fn templates_are_pinned_byte_for_byte() {
    let pinned: [(&str, &str, usize, u64); 7] = [
        ("caikit", CAIKIT_TEMPLATE, 2313, 0x9669_c222_b104_d6dc),
        ("ovms", OVMS_TEMPLATE, 1895, 0x31b5_e5c2_5358_b286),
        ("tgis", TGIS_TEMPLATE, 2068, 0xdecc_216d_c253_d468),
        ("vllm", VLLM_TEMPLATE, 1690, 0x569d_2e05_b22d_5d59),
        ("nim", NIM_TEMPLATE, 4180, 0x913a_7973_26cb_59eb),
        ("mlserver", MLSERVER_TEMPLATE, 2198, 0x1030_ca3e_c734_101a),
        ("autogluon", AUTOGLUON_TEMPLATE, 1872, 0xbb4f_31a1_ec52_e7bd),
    ];
    for (name, tmpl, len, hash) in pinned {
        assert_eq!(tmpl.len(), len, "{name} length");
        assert_eq!(fnv1a64(tmpl), hash, "{name} checksum");
        // Upstream layout: Go raw string opening `{`, 8-space indented "config", tab-indented
        // body, closing `    }` with no trailing newline.
        assert!(
            tmpl.starts_with("{\n        \"config\": [\n\t\t\t{\n"),
            "{name}"
        );
        assert!(tmpl.ends_with("\n\t\t]\n    }"), "{name}");
    }
}

#[test]
fn templates_contain_distinctive_queries() {
    let cases: [(&str, &[&str]); 7] = [
        (
            CAIKIT_TEMPLATE,
            &[
                "round(sum(increase(predict_rpc_count_total{namespace='${NAMESPACE}',code='OK',model_id='${MODEL_NAME}'}[${REQUEST_RATE_INTERVAL}])))",
                "predict_caikit_library_duration_seconds_sum",
            ],
        ),
        (
            OVMS_TEMPLATE,
            &[
                "ovms_requests_success",
                "ovms_requests_fail",
                "ovms_inference_time_us_",
                "ovms_request_time_us_",
            ],
        ),
        (
            TGIS_TEMPLATE,
            &[
                "tgi_request_success",
                "tgi_request_failure",
                "tgi_request_inference_duration_",
            ],
        ),
        (
            VLLM_TEMPLATE,
            &[
                "round(sum(increase(vllm:request_success_total{namespace='${NAMESPACE}',model_name='${MODEL_NAME}',finished_reason!~'error|abort'}[${REQUEST_RATE_INTERVAL}])))",
                "finished_reason=~'error|abort'",
                "histogram_quantile(0.5, sum(rate(vllm:e2e_request_latency_seconds_bucket{namespace='${NAMESPACE}', model_name='${MODEL_NAME}'}[${RATE_INTERVAL}])) by (le, model_name))",
            ],
        ),
        (
            NIM_TEMPLATE,
            &[
                "gpu_cache_usage_perc",
                "num_requests_waiting",
                "num_request_max",
                "time_to_first_token_seconds_sum",
                "time_per_output_token_seconds_sum",
                "${KV_CACHE_SAMPLING_RATE}",
            ],
        ),
        (
            MLSERVER_TEMPLATE,
            &[
                "model_infer_request_success_total",
                "model_infer_request_failure_total",
                "rest_server_request_duration_seconds_",
                "/v2/models/",
            ],
        ),
        (
            AUTOGLUON_TEMPLATE,
            &[
                "request_predict_seconds_count",
                "request_preprocess_seconds_",
            ],
        ),
    ];
    let cpu = "\"query\":  \"sum(pod:container_cpu_usage:sum{namespace='${NAMESPACE}', pod=~'${MODEL_NAME}-predictor-.*'})/sum(kube_pod_resource_limit{resource='cpu', pod=~'${MODEL_NAME}-predictor-.*', namespace='${NAMESPACE}'})\"";
    let mem = "\"query\":  \"sum(container_memory_working_set_bytes{namespace='${NAMESPACE}', pod=~'${MODEL_NAME}-predictor-.*'})/sum(kube_pod_resource_limit{resource='memory', pod=~'${MODEL_NAME}-predictor-.*', namespace='${NAMESPACE}'})\"";
    for (tmpl, needles) in cases {
        for n in needles {
            assert!(tmpl.contains(n), "missing {n}");
        }
        assert!(tmpl.contains(cpu));
        assert!(tmpl.contains(mem));
        assert!(tmpl.contains("\"title\": \"Requests per 5 minutes\""));
        assert!(tmpl.contains("\"title\": \"Average response time (ms)\""));
        assert!(tmpl.contains("\"title\": \"CPU utilization %\""));
        assert!(tmpl.contains("\"title\": \"Memory utilization %\""));
    }
}

#[test]
fn section_types_match_spec_table() {
    let types = |t: &str| -> Vec<(String, usize)> {
        sections(t)
            .iter()
            .map(|s| (s["type"].as_str().unwrap().to_string(), queries(s).len()))
            .collect()
    };
    let four = |rc: usize, ml: usize| {
        vec![
            ("REQUEST_COUNT".to_string(), rc),
            ("MEAN_LATENCY".to_string(), ml),
            ("CPU_USAGE".to_string(), 1),
            ("MEMORY_USAGE".to_string(), 1),
        ]
    };
    assert_eq!(types(OVMS_TEMPLATE), four(2, 2));
    assert_eq!(types(VLLM_TEMPLATE), four(2, 1));
    assert_eq!(types(TGIS_TEMPLATE), four(2, 2));
    assert_eq!(types(MLSERVER_TEMPLATE), four(2, 2));
    assert_eq!(types(AUTOGLUON_TEMPLATE), four(1, 2));
    assert_eq!(types(CAIKIT_TEMPLATE), four(2, 2));
    let mut nim = four(2, 1);
    nim.extend(
        [
            ("KV_CACHE", 1),
            ("CURRENT_REQUESTS", 3),
            ("TOKENS_COUNT", 2),
            ("TIME_TO_FIRST_TOKEN", 1),
            ("TIME_PER_OUTPUT_TOKEN", 1),
            ("REQUEST_OUTCOMES", 2),
        ]
        .map(|(t, n)| (t.to_string(), n)),
    );
    assert_eq!(types(NIM_TEMPLATE), nim);
}

#[test]
fn runtime_kind_detection_order_and_values() {
    // NIM metadata annotation wins over the spec annotation.
    let both = sr(
        "r",
        json!({ NIM_RUNTIME_ANNOTATION: "true" }),
        json!({ KSERVE_RUNTIME_ANNOTATION: "vllm" }),
    );
    assert_eq!(runtime_kind(&both), Some(RuntimeKind::Nim));
    // NIM annotation must be exactly "true"; the spec annotation is then consulted.
    let not_nim = sr(
        "r",
        json!({ NIM_RUNTIME_ANNOTATION: "True" }),
        json!({ KSERVE_RUNTIME_ANNOTATION: "tgis" }),
    );
    assert_eq!(runtime_kind(&not_nim), Some(RuntimeKind::Tgis));
    // The kserve-runtime annotation only counts under spec, not metadata.
    let in_meta = sr(
        "r",
        json!({ KSERVE_RUNTIME_ANNOTATION: "ovms" }),
        Value::Null,
    );
    assert_eq!(runtime_kind(&in_meta), None);
    // The NIM annotation only counts under metadata, not spec.
    let nim_in_spec = sr("r", Value::Null, json!({ NIM_RUNTIME_ANNOTATION: "true" }));
    assert_eq!(runtime_kind(&nim_in_spec), None);
    for (value, kind) in [
        ("ovms", Some(RuntimeKind::Ovms)),
        ("vllm", Some(RuntimeKind::Vllm)),
        ("tgis", Some(RuntimeKind::Tgis)),
        ("mlserver", Some(RuntimeKind::MlServer)),
        ("autogluon", Some(RuntimeKind::AutoGluon)),
        ("caikit", None),
        ("OVMS", None),
        ("", None),
    ] {
        assert_eq!(
            runtime_kind(&kserve_runtime_sr("r", value)),
            kind,
            "{value}"
        );
    }
    let non_string = sr("r", Value::Null, json!({ KSERVE_RUNTIME_ANNOTATION: 1 }));
    assert_eq!(runtime_kind(&non_string), None);
    assert_eq!(runtime_kind(&json!({})), None);
    assert_eq!(runtime_kind(&Value::Null), None);
}

#[test]
fn template_maps_each_kind() {
    assert_eq!(template(RuntimeKind::Nim), NIM_TEMPLATE);
    assert_eq!(template(RuntimeKind::Ovms), OVMS_TEMPLATE);
    assert_eq!(template(RuntimeKind::Vllm), VLLM_TEMPLATE);
    assert_eq!(template(RuntimeKind::Tgis), TGIS_TEMPLATE);
    assert_eq!(template(RuntimeKind::MlServer), MLSERVER_TEMPLATE);
    assert_eq!(template(RuntimeKind::AutoGluon), AUTOGLUON_TEMPLATE);
}

#[test]
fn mlserver_runtime_gets_mlserver_template() {
    let runtime = kserve_runtime_sr("mlserver-runtime", "mlserver");
    let data = dashboard_data(NS, "mlserver-model", Some(&runtime));
    assert_supported(&data, MLSERVER_TEMPLATE, "mlserver-model");
}

#[test]
fn no_runtime_is_unsupported() {
    let data = dashboard_data(NS, "m", None);
    assert_eq!(Value::Object(data), json!({"supported": "false"}));
}

#[test]
fn substitute_replaces_all_placeholders() {
    let t = "${NAMESPACE}/${MODEL_NAME} ${RATE_INTERVAL} ${REQUEST_RATE_INTERVAL} \
             ${KV_CACHE_SAMPLING_RATE} ${NAMESPACE} ${OTHER} ${ $";
    assert_eq!(substitute(t, "ns", "m"), "ns/m 1m 5m 24h ns ${OTHER} ${ $");
    // Single pass: replacement text is not rescanned (Go strings.Replacer semantics).
    assert_eq!(
        substitute("${NAMESPACE}", "${MODEL_NAME}", "x"),
        "${MODEL_NAME}"
    );
    assert_eq!(substitute("", "ns", "m"), "");
    let nim = substitute(NIM_TEMPLATE, "ns", "m");
    assert!(nim.contains("[24h])"));
    assert!(!nim.contains("${"));
}

#[test]
fn labels_are_exact() {
    assert_eq!(
        Value::Object(dashboard_labels()),
        json!({
            "opendatahub.io/managed": "true",
            "app.kubernetes.io/name": "odh-model-controller",
            "app.kubernetes.io/component": "kserve",
            "app.kubernetes.io/part-of": "odh-model-serving",
            "app.kubernetes.io/managed-by": "odh-model-controller"
        })
    );
    assert_eq!(DASHBOARD_SUFFIX, "-metrics-dashboard");
}
