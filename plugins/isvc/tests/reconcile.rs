//! The reconcile as a whole (docs/plugins/isvc.md, "Controller `inferenceservice`" and its
//! subsections; scenarios D-15…D-18) and the plugin's manifest.

mod common;

use common::*;
use isvc::Isvc;
use odh_kinds::{gvk, selector};
use odh_plugin_sdk::{Ctx, Error, FinalizerAction, Mapping, Object, Plugin, WatchEvent, json};

#[test]
fn d_15_a_request_for_a_gone_inference_service_cleans_up_an_empty_namespace() {
    let keda_sa = json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "inference-prometheus-auth", "namespace": NS}});
    let d = reconcile(&cluster().with(keda_sa.clone()), None);
    assert!(d.deleted("ServiceAccount", "inference-prometheus-auth"));
    assert_eq!(d.error_message(), None);
    // With an active InferenceService left, nothing is cleaned up.
    let d = reconcile(&cluster().with(keda_sa).with(isvc("left").raw()), None);
    assert!(!d.deleted("ServiceAccount", "inference-prometheus-auth"));
    // And with nothing to clean up there is no request at all.
    assert!(reconcile(&cluster(), None).delete.is_empty());
}

#[test]
fn d_16_finalizer_added_to_live_and_removed_from_deleting_inference_services() {
    let d = reconcile(&cluster(), Some(&isvc("m").raw().build()));
    assert_eq!(d.finalizer, FinalizerAction::Add);
    // Removed even when a step fails (listing InferenceServices errors here); the error stays.
    let failing = cluster().fail(
        gvk::inference_service(),
        Error::Transient("etcd is down".into()),
    );
    let d = reconcile(&failing, Some(&isvc("m").raw().deleting().build()));
    assert_eq!(d.finalizer, FinalizerAction::Remove);
    assert!(d.error_message().unwrap().contains("etcd is down"));
}

#[test]
fn a_deleting_inference_service_without_our_finalizer_is_left_alone() {
    let v = isvc("m")
        .raw()
        .deleting()
        .finalizers(&["someone-else"])
        .build();
    let d = reconcile(&cluster(), Some(&v));
    assert_eq!(d.finalizer, FinalizerAction::Keep);
    assert!(d.apply.is_empty() && d.delete.is_empty());
}

#[test]
fn every_step_runs_even_after_an_earlier_one_fails() {
    // The Route step fails (no port on the Service); the later steps still decide.
    let cluster = cluster()
        .with(service("m-predictor", "m", "predictor", json!([])))
        .with(ovms_runtime());
    let d = reconcile(&cluster, Some(&isvc("m").exposed().build()));
    assert!(d.error_message().unwrap().contains("has no ports defined"));
    assert!(d.applied("ConfigMap", "m-metrics-dashboard").is_some());
    assert!(d.applied("ServiceMonitor", "m-metrics").is_some());
}

fn event(object: impl Into<odh_plugin_sdk::Value>) -> WatchEvent {
    WatchEvent::for_object("inferenceservice", &Object(object.into()), false)
}

fn map(event: &WatchEvent, cluster: &odh_plugin_sdk::testing::FakeCluster) -> Vec<String> {
    let settings = isvc::settings::Settings::default();
    let mut names: Vec<String> = Isvc::map(event, &Ctx::new(&settings, cluster))
        .unwrap()
        .into_iter()
        .map(|k| k.name)
        .collect();
    names.sort();
    names
}

#[test]
fn d_17_a_managed_secret_maps_to_the_inference_service_of_its_name_ray_secrets_do_not() {
    let cluster = cluster().with(isvc("m").raw()).with(isvc("ray-tls").raw());
    assert_eq!(map(&event(secret("m").managed()), &cluster), ["m"]);
    assert!(map(&event(secret("ray-tls").managed()), &cluster).is_empty());
    assert!(map(&event(secret("unrelated").managed()), &cluster).is_empty());
}

#[test]
fn d_18_a_serving_runtime_change_maps_to_every_inference_service_of_its_namespace() {
    let cluster = cluster()
        .with(isvc("a").raw())
        .with(isvc("b").raw())
        .with(isvc("other").raw().namespace("elsewhere"));
    assert_eq!(map(&event(ovms_runtime()), &cluster), ["a", "b"]);
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
            "/mutate-serving-kserve-io-v1beta1-inferenceservice",
            "/mutate-serving-kserve-io-v1alpha1-inferencegraph",
            "/validate-serving-kserve-io-v1alpha1-inferencegraph",
        ]
    );
    let graph_operations: Vec<_> = m.webhooks[2..]
        .iter()
        .map(|w| (w.gvk.kind.as_str(), w.operations.clone()))
        .collect();
    assert_eq!(
        graph_operations,
        [
            ("InferenceGraph", vec![odh_plugin_sdk::Operation::Create]),
            (
                "InferenceGraph",
                vec![
                    odh_plugin_sdk::Operation::Create,
                    odh_plugin_sdk::Operation::Update
                ]
            ),
        ],
        "upstream's operations: the defaulter on CREATE only"
    );
    assert!(
        odh_plugin_sdk::validate_settings::<isvc::settings::Settings>(
            r#"{"podNamespace": "opendatahub"}"#
        )
        .is_ok()
    );
    assert!(
        odh_plugin_sdk::validate_settings::<isvc::settings::Settings>(
            r#"{"podNamespaces": "typo"}"#
        )
        .is_err()
    );
}

#[test]
fn every_secret_watch_selects_managed_secrets_as_upstreams_cache_does() {
    let m = Isvc::manifest();
    let secret_watches: Vec<_> = m.controllers[0]
        .watches
        .iter()
        .filter(|w| w.gvk == gvk::secret())
        .collect();
    assert_eq!(secret_watches.len(), 2);
    for w in secret_watches {
        assert_eq!(
            w.label_selector.as_deref(),
            Some(selector::MANAGED),
            "{w:?}"
        );
    }
}

#[test]
fn reads_and_writes_list_every_kind_the_controller_touches() {
    let m = Isvc::manifest();
    let c = &m.controllers[0];
    for kind in std::iter::once(&c.primary)
        .chain(&c.owns)
        .chain(c.watches.iter().map(|w| &w.gvk))
    {
        assert!(m.reads.contains(kind), "{kind} not in reads");
    }
    let writes: Vec<String> = m.writes.iter().map(|g| g.kind.clone()).collect();
    assert_eq!(
        writes,
        [
            "Route",
            "Service",
            "ConfigMap",
            "ClusterRoleBinding",
            "ServiceMonitor",
            "ServiceAccount",
            "Secret",
            "Role",
            "RoleBinding",
            "TriggerAuthentication",
        ],
        "what the plugin writes, nothing it only watches"
    );
    for kind in ["DataScienceCluster", "DSCInitialization", "HardwareProfile"] {
        assert!(m.reads.iter().any(|g| g.kind == kind), "{kind}");
    }
}
