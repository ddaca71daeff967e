//! Runtime resolution, the metrics Service, the ServiceMonitor and the dashboard ConfigMap
//! (scenarios C-09, U-S*, D-09…D-12, U-D01…U-D06 end to end).

mod common;

use common::*;
use isvc::metrics;
use odh_plugin_sdk::{Object, Value, json};

fn sr_with_annotations(annotations: Value) -> Object {
    let sr = serving_runtime("test-runtime").auto_selects(&["onnx"]);
    if annotations.is_null() {
        Object(sr.build())
    } else {
        Object(sr.set("/spec/annotations", annotations).build())
    }
}

fn endpoint(annotations: Value) -> Value {
    let sm = metrics::desired_service_monitor(
        &Object(isvc("test-isvc").build()),
        &sr_with_annotations(annotations),
    );
    let endpoints = sm["spec"]["endpoints"].as_array().unwrap().clone();
    assert_eq!(endpoints.len(), 1);
    endpoints[0].clone()
}

#[test]
fn u_s01_the_path_annotation_becomes_the_endpoint_path() {
    let e = endpoint(json!({"prometheus.io/port": "8000", "prometheus.io/path": "/v1/metrics"}));
    assert_eq!(e["path"], "/v1/metrics");
}

#[test]
fn u_s02_no_path_annotation_means_no_path() {
    assert!(
        endpoint(json!({"prometheus.io/port": "8000"}))
            .get("path")
            .is_none()
    );
}

#[test]
fn u_s03_an_empty_path_annotation_means_no_path() {
    let e = endpoint(json!({"prometheus.io/port": "8000", "prometheus.io/path": ""}));
    assert!(e.get("path").is_none());
}

#[test]
fn u_s04_a_relative_path_gets_a_leading_slash() {
    let e = endpoint(json!({"prometheus.io/port": "8000", "prometheus.io/path": "v1/metrics"}));
    assert_eq!(e["path"], "/v1/metrics");
}

#[test]
fn u_s05_surrounding_whitespace_is_trimmed() {
    let e =
        endpoint(json!({"prometheus.io/port": "8000", "prometheus.io/path": "  /v1/metrics  "}));
    assert_eq!(e["path"], "/v1/metrics");
}

#[test]
fn u_s06_a_runtime_without_annotations_still_gets_a_service_monitor() {
    let e = endpoint(Value::Null);
    assert_eq!(e, json!({"port": "test-runtime-metrics", "scheme": "http"}));
}

#[test]
fn c_09_metrics_service_and_service_monitor_for_a_runtime_with_a_port() {
    let name = "example-onnx-mnist";
    let d = reconcile(&cluster().with(ovms_runtime()), Some(&isvc(name).build()));
    let svc = d.applied_object("Service", &format!("{name}-metrics"));
    assert_eq!(
        svc["metadata"]["labels"],
        json!({"name": format!("{name}-metrics"), "monitoring.opendatahub.io/scrape": "true"})
    );
    assert_eq!(
        svc["spec"],
        json!({
            "type": "ClusterIP",
            "ports": [{"name": "kserve-ovms-metrics", "protocol": "TCP", "port": 8888, "targetPort": 8888}],
            "selector": {"serving.kserve.io/inferenceservice": name},
        })
    );
    let sm = d.applied_object("ServiceMonitor", &format!("{name}-metrics"));
    assert_eq!(
        sm["spec"]["selector"]["matchLabels"]["name"],
        format!("{name}-metrics")
    );
    assert_eq!(
        sm["spec"]["endpoints"],
        json!([{"port": "kserve-ovms-metrics", "scheme": "http", "path": "/metrics"}])
    );
    assert_eq!(d.error_message(), None);
}

#[test]
fn d_09_a_raw_container_inference_service_has_no_metrics_objects_and_an_unsupported_dashboard() {
    let d = reconcile(&cluster(), Some(&isvc("raw").raw().build()));
    assert!(d.applied("Service", "raw-metrics").is_none());
    assert!(d.applied("ServiceMonitor", "raw-metrics").is_none());
    let cm = d.applied_object("ConfigMap", "raw-metrics-dashboard");
    assert_eq!(cm["data"], json!({"supported": "false"}));
    assert_eq!(d.error_message(), None);
}

fn auto_selected(name: &str) -> Value {
    isvc(name).auto_runtime().build()
}

#[test]
fn d_10_no_auto_selectable_runtime_gives_an_unsupported_dashboard_and_an_error() {
    let d = reconcile(&cluster(), Some(&auto_selected("m")));
    assert_eq!(
        d.applied_object("ConfigMap", "m-metrics-dashboard")["data"],
        json!({"supported": "false"})
    );
    assert!(d.applied("Service", "m-metrics").is_none());
    let err = d.error_message().expect("an error");
    assert!(
        err.contains("not found error: no suitable runtime found."),
        "{err}"
    );
}

#[test]
fn d_11_auto_selection_skips_disabled_and_single_model_runtimes_newest_wins() {
    let onnx = |name: &str, created: &str| {
        serving_runtime(name)
            .auto_selects(&["onnx"])
            .created(created)
    };
    let cluster = cluster()
        .with(onnx("older", "2026-01-01T00:00:00Z").spec_annotation("prometheus.io/port", "1"))
        .with(onnx("newer", "2026-02-01T00:00:00Z").spec_annotation("prometheus.io/port", "2"))
        .with(onnx("disabled", "2026-03-01T00:00:00Z").set("/spec/disabled", true))
        .with(onnx("single", "2026-03-01T00:00:00Z").set("/spec/multiModel", false));
    let sr = odh_kinds::resolve_runtime(&Object(auto_selected("m")), &cluster)
        .unwrap()
        .unwrap();
    assert_eq!(sr.name(), "newer");
}

#[test]
fn d_12_a_non_numeric_prometheus_port_is_an_error_but_the_service_monitor_is_still_made() {
    let sr = serving_runtime("kserve-ovms").spec_annotation("prometheus.io/port", "abc");
    let d = reconcile(&cluster().with(sr), Some(&isvc("m").build()));
    assert!(d.applied("Service", "m-metrics").is_none());
    assert!(d.applied("ServiceMonitor", "m-metrics").is_some());
    let err = d.error_message().expect("an error");
    assert!(
        err.contains("strconv.ParseInt: parsing \"abc\": invalid syntax"),
        "{err}"
    );
}

#[test]
fn an_explicit_runtime_that_does_not_exist_is_an_error_for_all_three() {
    let d = reconcile(&cluster(), Some(&isvc("m").build()));
    assert!(d.applied("ConfigMap", "m-metrics-dashboard").is_none());
    let err = d.error_message().unwrap();
    assert!(
        err.contains("servingruntimes.serving.kserve.io \"kserve-ovms\" not found"),
        "{err}"
    );
}

#[test]
fn metrics_objects_are_removed_when_the_runtime_goes_away_from_a_raw_container() {
    let existing = |kind: &str, api: &str| json!({"apiVersion": api, "kind": kind, "metadata": {"name": "raw-metrics", "namespace": NS}});
    let cluster = cluster()
        .with(existing("Service", "v1"))
        .with(existing("ServiceMonitor", "monitoring.coreos.com/v1"));
    let d = reconcile(&cluster, Some(&isvc("raw").raw().build()));
    assert!(d.deleted("Service", "raw-metrics"));
    assert!(d.deleted("ServiceMonitor", "raw-metrics"));
}

fn dashboard_for(sr: ServingRuntime, name: &str) -> Value {
    let runtime = sr.value()["metadata"]["name"].as_str().unwrap().to_string();
    let v = isvc(name).runtime(&runtime).build();
    let d = reconcile(&cluster().with(sr), Some(&v));
    d.applied_object("ConfigMap", &format!("{name}-metrics-dashboard"))
        .into_value()
}

#[test]
fn u_d01_to_u_d06_dashboards_through_the_whole_reconcile() {
    let nim =
        serving_runtime("nim-runtime").annotation("runtimes.opendatahub.io/nvidia-nim", "true");
    let cm = dashboard_for(nim, "nim-model");
    assert_eq!(cm["data"]["supported"], "true");
    let metrics = cm["data"]["metrics"].as_str().unwrap();
    assert!(metrics.contains("nim-model") && metrics.contains(NS));
    assert_eq!(
        cm["metadata"]["labels"],
        json!({
            "opendatahub.io/managed": "true",
            "app.kubernetes.io/name": "odh-model-controller",
            "app.kubernetes.io/component": "kserve",
            "app.kubernetes.io/part-of": "odh-model-serving",
            "app.kubernetes.io/managed-by": "odh-model-controller",
        })
    );
    let ovms =
        serving_runtime("ovms-runtime").spec_annotation("opendatahub.io/kserve-runtime", "ovms");
    assert_eq!(
        dashboard_for(ovms, "ovms-model")["data"]["metrics"],
        json!(isvc::dashboard::substitute(
            isvc::dashboard::OVMS_TEMPLATE,
            NS,
            "ovms-model"
        ))
    );
    let generic = serving_runtime("generic-runtime");
    assert_eq!(
        dashboard_for(generic, "generic-model")["data"],
        json!({"supported": "false"})
    );
}

#[test]
fn d19_a_port_beyond_32_bits_wraps_as_gos_int32_conversion_does() {
    // 2^32 + 8080 parses as a 64-bit integer and wraps to 8080; 2^31 wraps negative (the API
    // server then refuses the Service, as it refuses upstream's).
    for (annotation, port) in [("4294975376", 8080), ("2147483648", i32::MIN as i64)] {
        let sr = serving_runtime("kserve-ovms").spec_annotation("prometheus.io/port", annotation);
        let d = reconcile(&cluster().with(sr), Some(&isvc("m").build()));
        let svc = d.applied_object("Service", "m-metrics").into_value();
        assert_eq!(svc["spec"]["ports"][0]["port"], json!(port), "{annotation}");
        assert_eq!(svc["spec"]["ports"][0]["targetPort"], json!(port));
    }
    let sr = serving_runtime("kserve-ovms")
        .spec_annotation("prometheus.io/port", "99999999999999999999");
    let d = reconcile(&cluster().with(sr), Some(&isvc("m").build()));
    assert!(
        d.error_message()
            .unwrap()
            .contains("strconv.ParseInt: parsing \"99999999999999999999\": value out of range")
    );
}

#[test]
fn d9_a_failed_read_before_a_removal_is_an_error_unless_the_kind_is_not_served() {
    // A raw-container InferenceService wants no metrics objects, so both are looked up to be
    // removed.
    let forbidden = cluster().fail(
        odh_kinds::gvk::service_monitor(),
        odh_plugin_sdk::Error::Transient(
            "servicemonitors.monitoring.coreos.com is forbidden".into(),
        ),
    );
    let d = reconcile(&forbidden, Some(&isvc("raw").raw().build()));
    let err = d.error_message().expect("an error that retries");
    assert!(err.contains("is forbidden"), "{err}");
    let unserved = cluster().fail(
        odh_kinds::gvk::service_monitor(),
        odh_plugin_sdk::Error::Transient(
            "no matches for kind \"ServiceMonitor\" in version \"monitoring.coreos.com/v1\"".into(),
        ),
    );
    let d = reconcile(&unserved, Some(&isvc("raw").raw().build()));
    assert_eq!(d.error_message(), None);
}
