//! The reconcile as a whole (spec §1.4–§1.6, §3; D-15…D-18) and the plugin's manifest.

mod common;

use common::*;
use isvc::Isvc;
use odh_plugin_sdk::cluster::FakeCluster;
use odh_plugin_sdk::{FinalizerAction, Mapping, Object, Plugin, WatchEvent, json};

#[test]
fn d_15_a_request_for_a_gone_inference_service_cleans_up_an_empty_namespace() {
    let keda_sa = json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "inference-prometheus-auth", "namespace": NS}});
    let d = reconcile(&FakeCluster::new().with(keda_sa.clone()), None);
    assert!(d.deleted("ServiceAccount", "inference-prometheus-auth"));
    assert_eq!(d.error(), None);
    // With an active InferenceService left, nothing is cleaned up.
    let d = reconcile(
        &FakeCluster::new().with(keda_sa).with(raw_isvc("left")),
        None,
    );
    assert!(!d.deleted("ServiceAccount", "inference-prometheus-auth"));
    // And with nothing to clean up there is no request at all.
    assert!(
        reconcile(&FakeCluster::new(), None)
            .outcome
            .delete
            .is_empty()
    );
}

#[test]
fn d_16_finalizer_added_to_live_and_removed_from_deleting_inference_services() {
    let d = reconcile(&FakeCluster::new(), Some(&raw_isvc("m")));
    assert_eq!(d.outcome.finalizer, FinalizerAction::Add);
    // Removed even when a step fails (listing InferenceServices errors here); the error stays.
    let failing = FakeCluster::new().fail(
        isvc::kinds::inference_service(),
        odh_plugin_sdk::Error::Transient("etcd is down".into()),
    );
    let d = reconcile(&failing, Some(&deleting(raw_isvc("m"))));
    assert_eq!(d.outcome.finalizer, FinalizerAction::Remove);
    assert!(d.error().unwrap().contains("etcd is down"));
}

#[test]
fn a_deleting_inference_service_without_our_finalizer_is_left_alone() {
    let mut v = deleting(raw_isvc("m"));
    v["metadata"]["finalizers"] = json!(["someone-else"]);
    let d = reconcile(&FakeCluster::new(), Some(&v));
    assert_eq!(d.outcome.finalizer, FinalizerAction::Keep);
    assert!(d.outcome.apply.is_empty() && d.outcome.delete.is_empty());
}

#[test]
fn every_step_runs_even_after_an_earlier_one_fails() {
    // The Route step fails (no port on the Service); the later steps still decide.
    let cluster = FakeCluster::new()
        .with(service("m-predictor", "m", "predictor", json!([])))
        .with(ovms_runtime());
    let d = reconcile(&cluster, Some(&exposed(isvc("m"))));
    assert!(d.error().unwrap().contains("has no ports defined"));
    assert!(d.applied("ConfigMap", "m-metrics-dashboard").is_some());
    assert!(d.applied("ServiceMonitor", "m-metrics").is_some());
}

fn event(object: odh_plugin_sdk::Value) -> WatchEvent {
    WatchEvent::for_object("inferenceservice", &Object(object), false)
}

#[test]
fn d_17_a_managed_secret_maps_to_the_inference_service_of_its_name_ray_secrets_do_not() {
    let cluster = FakeCluster::new()
        .with(raw_isvc("m"))
        .with(raw_isvc("ray-tls"));
    let secret = |name: &str| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": NS}});
    let keys = isvc::map_event(&event(secret("m")), &cluster).unwrap();
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0].name, "m");
    assert!(
        isvc::map_event(&event(secret("ray-tls")), &cluster)
            .unwrap()
            .is_empty()
    );
    assert!(
        isvc::map_event(&event(secret("unrelated")), &cluster)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn d_18_a_serving_runtime_change_maps_to_every_inference_service_of_its_namespace() {
    let mut elsewhere = raw_isvc("other");
    elsewhere["metadata"]["namespace"] = json!("elsewhere");
    let cluster = FakeCluster::new()
        .with(raw_isvc("a"))
        .with(raw_isvc("b"))
        .with(elsewhere);
    let mut keys: Vec<String> = isvc::map_event(&event(ovms_runtime()), &cluster)
        .unwrap()
        .into_iter()
        .map(|k| k.name)
        .collect();
    keys.sort();
    assert_eq!(keys, ["a", "b"]);
}

#[test]
fn the_manifest_declares_upstreams_controller_watches_and_webhooks() {
    let m = Isvc::manifest();
    assert_eq!(m.name, "isvc");
    let c = &m.controllers[0];
    assert_eq!(c.name, "inferenceservice");
    assert_eq!(
        c.finalizer.as_deref(),
        Some("odh.inferenceservice.finalizers")
    );
    let custom: Vec<&str> = c
        .watches
        .iter()
        .filter(|w| w.mapping == Mapping::Custom)
        .map(|w| w.gvk.kind.as_str())
        .collect();
    assert_eq!(custom, ["ServingRuntime", "Secret"]);
    let paths: Vec<&str> = m.webhooks.iter().map(|w| w.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/validate-serving-kserve-io-v1beta1-inferenceservice",
            "/mutate-serving-kserve-io-v1beta1-inferenceservice"
        ]
    );
    assert!(Isvc::validate_settings(r#"{"podNamespace": "opendatahub"}"#).is_ok());
    assert!(Isvc::validate_settings(r#"{"podNamespaces": "typo"}"#).is_err());
}
