//! Fixtures of spec §6 and helpers to run the plugin's decisions natively.
#![allow(dead_code)]

use isvc::model_registry::{HostHttp, Http};
use isvc::settings::Settings;
use odh_plugin_sdk::cluster::FakeCluster;
use odh_plugin_sdk::{Object, ObjectKey, Outcome, Ownership, ReconcileRequest, Value, json};

pub const NS: &str = "test-ns";

/// ISVC-1 of the spec: `example-onnx-mnist`, ONNX on runtime `kserve-ovms`.
pub fn isvc(name: &str) -> Value {
    json!({
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {
            "name": name, "namespace": NS, "uid": format!("uid-{name}"),
            "annotations": {"serving.kserve.io/deploymentMode": "RawDeployment"},
        },
        "spec": {"predictor": {"model": {
            "modelFormat": {"name": "onnx"},
            "runtime": "kserve-ovms",
            "storage": {"key": "testkey", "path": "/testpath/test"},
        }}},
    })
}

/// A raw-container InferenceService (no `predictor.model`).
pub fn raw_isvc(name: &str) -> Value {
    let mut v = isvc(name);
    v["spec"]["predictor"] = json!({"containers": [{"name": "kserve-container", "image": "x"}]});
    v
}

/// SR-1: `kserve-ovms`, multiModel false, Prometheus port 8888 and path /metrics.
pub fn ovms_runtime() -> Value {
    json!({
        "apiVersion": "serving.kserve.io/v1alpha1",
        "kind": "ServingRuntime",
        "metadata": {"name": "kserve-ovms", "namespace": NS, "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {
            "multiModel": false,
            "annotations": {"prometheus.io/port": "8888", "prometheus.io/path": "/metrics"},
            "supportedModelFormats": [
                {"name": "openvino_ir", "version": "opset1", "autoSelect": true},
                {"name": "onnx", "version": "1", "autoSelect": true},
            ],
            "containers": [{"name": "kserve-container", "image": "ovms"}],
        },
    })
}

pub fn runtime(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "serving.kserve.io/v1alpha1",
        "kind": "ServingRuntime",
        "metadata": {"name": name, "namespace": NS, "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": spec,
    })
}

/// A KServe Service of an InferenceService.
pub fn service(name: &str, isvc: &str, component: &str, ports: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": NS, "labels": {
            "component": component, "serving.kserve.io/inferenceservice": isvc,
        }},
        "spec": {"ports": ports},
    })
}

/// The predictor Service fixture: one port `http` 8888 → `http`.
pub fn predictor_service(isvc: &str) -> Value {
    service(
        &format!("{isvc}-predictor"),
        isvc,
        "predictor",
        json!([{"name": "http", "port": 8888, "targetPort": "http", "protocol": "TCP"}]),
    )
}

pub fn exposed(mut isvc: Value) -> Value {
    isvc["metadata"]["labels"] = json!({"networking.kserve.io/visibility": "exposed"});
    isvc
}

pub fn with_annotation(mut isvc: Value, key: &str, value: &str) -> Value {
    isvc["metadata"]["annotations"][key] = json!(value);
    isvc
}

pub fn deleting(mut isvc: Value) -> Value {
    isvc["metadata"]["deletionTimestamp"] = json!("2026-11-30T00:00:00Z");
    isvc["metadata"]["finalizers"] = json!(["odh.inferenceservice.finalizers"]);
    isvc
}

/// An InferenceService that autoscales on a Prometheus metric through KEDA.
pub fn keda_isvc(name: &str) -> Value {
    let mut v = isvc(name);
    v["spec"]["predictor"]["minReplicas"] = json!(1);
    v["spec"]["predictor"]["maxReplicas"] = json!(5);
    v["spec"]["predictor"]["autoScaling"] = json!({"metrics": [{
        "type": "External",
        "external": {
            "metric": {"backend": "prometheus", "serverAddress": "https://thanos-querier.openshift-monitoring.svc:9092", "query": "sum(rate(x[1m]))"},
            "target": {"type": "AverageValue", "averageValue": "2"},
        },
    }]});
    v
}

/// What a reconcile decided, easy to assert on.
pub struct Decided {
    pub outcome: Outcome,
}

impl Decided {
    pub fn applied(&self, kind: &str, name: &str) -> Option<(Value, Ownership)> {
        self.outcome.apply.iter().find_map(|d| {
            let v: Value = odh_plugin_sdk::serde_json::from_str(&d.object).unwrap();
            (v["kind"] == kind && v["metadata"]["name"] == name).then_some((v, d.ownership))
        })
    }

    pub fn object(&self, kind: &str, name: &str) -> Value {
        self.applied(kind, name)
            .unwrap_or_else(|| panic!("{kind} {name} not applied; outcome: {:?}", self.outcome))
            .0
    }

    pub fn applied_kinds(&self) -> Vec<String> {
        self.outcome
            .apply
            .iter()
            .map(|d| {
                let v: Value = odh_plugin_sdk::serde_json::from_str(&d.object).unwrap();
                format!(
                    "{}/{}",
                    v["kind"].as_str().unwrap(),
                    v["metadata"]["name"].as_str().unwrap()
                )
            })
            .collect()
    }

    pub fn deleted(&self, kind: &str, name: &str) -> bool {
        self.outcome
            .delete
            .iter()
            .any(|k: &ObjectKey| k.gvk.kind == kind && k.name == name)
    }

    pub fn error(&self) -> Option<String> {
        self.outcome.error.as_ref().map(|e| e.message().to_string())
    }
}

struct NoHttp;
impl Http for NoHttp {
    fn request(
        &self,
        _: &str,
        url: &str,
        _: &[(&str, &str)],
        _: Option<&[u8]>,
    ) -> Result<odh_plugin_sdk::http::Response, odh_plugin_sdk::Error> {
        panic!("no HTTP expected, got a request to {url}")
    }
}

/// Reconciles `isvc` (or, `None`, a request for `test-ns/<gone>`) against `cluster`.
pub fn reconcile(cluster: &FakeCluster, isvc: Option<&Value>) -> Decided {
    let request = match isvc {
        Some(v) => ReconcileRequest::for_object("inferenceservice", &Object(v.clone())),
        None => ReconcileRequest::new("inferenceservice", Some(NS), "gone"),
    };
    let outcome = isvc::reconcile::reconcile(&request, &Settings::default(), cluster, &NoHttp)
        .expect("reconcile returns an outcome");
    let _ = HostHttp;
    Decided { outcome }
}
