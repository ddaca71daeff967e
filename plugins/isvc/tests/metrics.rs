//! Runtime resolution, the metrics Service, the ServiceMonitor and the dashboard ConfigMap
//! (spec §2.1, §2.4–§2.6; scenarios C-09, U-S*, D-09…D-12, U-D01…U-D06 end to end).

mod common;

use common::*;
use isvc::metrics;
use odh_plugin_sdk::cluster::FakeCluster;
use odh_plugin_sdk::{Object, Value, json};

fn sr_with_annotations(annotations: Value) -> Object {
    let mut spec = json!({"supportedModelFormats": [{"name": "onnx", "autoSelect": true}]});
    if !annotations.is_null() {
        spec["annotations"] = annotations;
    }
    Object(runtime("test-runtime", spec))
}

fn endpoint(annotations: Value) -> Value {
    let sm = metrics::desired_service_monitor(
        &Object(isvc("test-isvc")),
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
    let d = reconcile(&FakeCluster::new().with(ovms_runtime()), Some(&isvc(name)));
    let svc = d.object("Service", &format!("{name}-metrics"));
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
    let sm = d.object("ServiceMonitor", &format!("{name}-metrics"));
    assert_eq!(
        sm["spec"]["selector"]["matchLabels"]["name"],
        format!("{name}-metrics")
    );
    assert_eq!(
        sm["spec"]["endpoints"],
        json!([{"port": "kserve-ovms-metrics", "scheme": "http", "path": "/metrics"}])
    );
    assert_eq!(d.error(), None);
}

#[test]
fn d_09_a_raw_container_inference_service_has_no_metrics_objects_and_an_unsupported_dashboard() {
    let d = reconcile(&FakeCluster::new(), Some(&raw_isvc("raw")));
    assert!(d.applied("Service", "raw-metrics").is_none());
    assert!(d.applied("ServiceMonitor", "raw-metrics").is_none());
    let cm = d.object("ConfigMap", "raw-metrics-dashboard");
    assert_eq!(cm["data"], json!({"supported": "false"}));
    assert_eq!(d.error(), None);
}

fn auto_selected(name: &str) -> Value {
    let mut v = isvc(name);
    v["spec"]["predictor"]["model"]
        .as_object_mut()
        .unwrap()
        .remove("runtime");
    v
}

#[test]
fn d_10_no_auto_selectable_runtime_gives_an_unsupported_dashboard_and_an_error() {
    let d = reconcile(&FakeCluster::new(), Some(&auto_selected("m")));
    assert_eq!(
        d.object("ConfigMap", "m-metrics-dashboard")["data"],
        json!({"supported": "false"})
    );
    assert!(d.applied("Service", "m-metrics").is_none());
    let err = d.error().expect("an error");
    assert!(
        err.contains("not found error: no suitable runtime found."),
        "{err}"
    );
}

#[test]
fn d_11_auto_selection_skips_disabled_and_single_model_runtimes_newest_wins() {
    let fmt = json!([{"name": "onnx", "autoSelect": true}]);
    let mut older = runtime(
        "older",
        json!({"supportedModelFormats": fmt, "annotations": {"prometheus.io/port": "1"}}),
    );
    older["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
    let mut newer = runtime(
        "newer",
        json!({"supportedModelFormats": fmt, "annotations": {"prometheus.io/port": "2"}}),
    );
    newer["metadata"]["creationTimestamp"] = json!("2026-02-01T00:00:00Z");
    let mut disabled = runtime(
        "disabled",
        json!({"supportedModelFormats": fmt, "disabled": true}),
    );
    disabled["metadata"]["creationTimestamp"] = json!("2026-03-01T00:00:00Z");
    let mut single = runtime(
        "single",
        json!({"supportedModelFormats": fmt, "multiModel": false}),
    );
    single["metadata"]["creationTimestamp"] = json!("2026-03-01T00:00:00Z");
    let cluster = FakeCluster::new()
        .with(older)
        .with(newer)
        .with(disabled)
        .with(single);
    let sr = isvc::runtime::resolve(&Object(auto_selected("m")), &cluster)
        .unwrap()
        .unwrap();
    assert_eq!(sr.name(), "newer");
}

#[test]
fn d_12_a_non_numeric_prometheus_port_is_an_error_but_the_service_monitor_is_still_made() {
    let sr = runtime(
        "kserve-ovms",
        json!({"annotations": {"prometheus.io/port": "abc"}}),
    );
    let d = reconcile(&FakeCluster::new().with(sr), Some(&isvc("m")));
    assert!(d.applied("Service", "m-metrics").is_none());
    assert!(d.applied("ServiceMonitor", "m-metrics").is_some());
    let err = d.error().expect("an error");
    assert!(
        err.contains("strconv.ParseInt: parsing \"abc\": invalid syntax"),
        "{err}"
    );
}

#[test]
fn an_explicit_runtime_that_does_not_exist_is_an_error_for_all_three() {
    let d = reconcile(&FakeCluster::new(), Some(&isvc("m")));
    assert!(d.applied("ConfigMap", "m-metrics-dashboard").is_none());
    let err = d.error().unwrap();
    assert!(
        err.contains("servingruntimes.serving.kserve.io \"kserve-ovms\" not found"),
        "{err}"
    );
}

#[test]
fn metrics_objects_are_removed_when_the_runtime_goes_away_from_a_raw_container() {
    let existing = |kind: &str, api: &str| json!({"apiVersion": api, "kind": kind, "metadata": {"name": "raw-metrics", "namespace": NS}});
    let cluster = FakeCluster::new()
        .with(existing("Service", "v1"))
        .with(existing("ServiceMonitor", "monitoring.coreos.com/v1"));
    let d = reconcile(&cluster, Some(&raw_isvc("raw")));
    assert!(d.deleted("Service", "raw-metrics"));
    assert!(d.deleted("ServiceMonitor", "raw-metrics"));
}

fn dashboard_for(sr: Value, name: &str) -> Value {
    let mut v = isvc(name);
    v["spec"]["predictor"]["model"]["runtime"] = sr["metadata"]["name"].clone();
    let d = reconcile(&FakeCluster::new().with(sr), Some(&v));
    d.object("ConfigMap", &format!("{name}-metrics-dashboard"))
}

#[test]
fn u_d01_to_u_d06_dashboards_through_the_whole_reconcile() {
    let mut nim = runtime("nim-runtime", json!({}));
    nim["metadata"]["annotations"] = json!({"runtimes.opendatahub.io/nvidia-nim": "true"});
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
    let ovms = runtime(
        "ovms-runtime",
        json!({"annotations": {"opendatahub.io/kserve-runtime": "ovms"}}),
    );
    assert_eq!(
        dashboard_for(ovms, "ovms-model")["data"]["metrics"],
        json!(isvc::dashboard::substitute(
            isvc::dashboard::OVMS_TEMPLATE,
            NS,
            "ovms-model"
        ))
    );
    let generic = runtime("generic-runtime", json!({}));
    assert_eq!(
        dashboard_for(generic, "generic-model")["data"],
        json!({"supported": "false"})
    );
}
