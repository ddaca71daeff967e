//! The validating and mutating webhooks (spec §4; W-V*, D-05, D-19, D-20). The defaulting
//! logic itself is tested scenario by scenario in odh-serving-admission.

mod common;

use common::*;
use isvc::settings::Settings;
use isvc::webhooks;
use odh_plugin_sdk::cluster::FakeCluster;
use odh_plugin_sdk::{AdmissionRequest, Object, Operation, Value, json};

fn request(op: Operation, v: &Value) -> AdmissionRequest {
    let mut r = AdmissionRequest::for_object(webhooks::VALIDATING_PATH, op, &Object(v.clone()));
    r.namespace = v["metadata"]["namespace"].as_str().map(str::to_string);
    r
}

fn in_namespace(name: &str, namespace: &str) -> Value {
    let mut v = raw_isvc(name);
    v["metadata"]["namespace"] = json!(namespace);
    v
}

fn app_ns_settings() -> Settings {
    Settings {
        pod_namespace: Some("opendatahub".into()),
        ..Settings::default()
    }
}

fn validate(op: Operation, v: &Value, cluster: &FakeCluster) -> odh_plugin_sdk::AdmissionDecision {
    webhooks::validate(&request(op, v), &app_ns_settings(), cluster).unwrap()
}

#[test]
fn w_v01_an_ordinary_namespace_is_allowed() {
    assert!(
        validate(
            Operation::Create,
            &in_namespace("test-isvc", "test-model"),
            &FakeCluster::new()
        )
        .allowed
    );
}

#[test]
fn w_v02_the_application_namespace_is_protected() {
    let d = validate(
        Operation::Create,
        &in_namespace("test-isvc", "opendatahub"),
        &FakeCluster::new(),
    );
    assert!(!d.allowed);
    assert_eq!(d.code, Some(422));
    assert_eq!(
        d.message.as_deref(),
        Some(
            "InferenceService.serving.kserve.io \"test-isvc\" is invalid: metadata.namespace: Invalid value: \"opendatahub\": specified namespace is protected"
        )
    );
}

#[test]
fn w_v02_a_dsci_applications_namespace_overrides_pod_namespace() {
    let dsci = json!({"apiVersion": "dscinitialization.opendatahub.io/v1", "kind": "DSCInitialization",
        "metadata": {"name": "default-dsci"}, "spec": {"applicationsNamespace": "redhat-ods-applications"}});
    let cluster = FakeCluster::new().with(dsci);
    assert!(
        !validate(
            Operation::Create,
            &in_namespace("x", "redhat-ods-applications"),
            &cluster
        )
        .allowed
    );
    assert!(
        validate(
            Operation::Create,
            &in_namespace("x", "opendatahub"),
            &cluster
        )
        .allowed
    );
}

#[test]
fn w_v03_a_54_character_name_is_too_long() {
    let name = format!("test-isvc-{}", "x".repeat(44));
    assert_eq!(name.len(), 54);
    let d = validate(
        Operation::Create,
        &in_namespace(&name, "test-model"),
        &FakeCluster::new(),
    );
    assert!(!d.allowed);
    assert_eq!(d.code, Some(422));
    assert_eq!(
        d.message.unwrap(),
        format!(
            "InferenceService.serving.kserve.io \"{name}\" is invalid: metadata.name: Invalid value: \"{name}\": InferenceService name is too long. The name exceeds the maximum length of 53 characters (current length: 54)"
        )
    );
}

#[test]
fn w_v04_a_53_character_name_is_allowed() {
    let name = format!("test-isvc-{}", "x".repeat(43));
    assert!(
        validate(
            Operation::Create,
            &in_namespace(&name, "test-model"),
            &FakeCluster::new()
        )
        .allowed
    );
}

#[test]
fn w_v05_a_short_name_is_allowed() {
    assert!(
        validate(
            Operation::Create,
            &in_namespace("short-name", "test-model"),
            &FakeCluster::new()
        )
        .allowed
    );
}

#[test]
fn name_and_namespace_are_checked_on_create_only() {
    let name = "y".repeat(60);
    assert!(
        validate(
            Operation::Update,
            &in_namespace(&name, "opendatahub"),
            &FakeCluster::new()
        )
        .allowed
    );
}

#[test]
fn d_05_four_canaries_are_denied_on_create_and_update() {
    let mut v = in_namespace("c", "test-model");
    v["spec"]["canary"] = json!([{}, {}, {}, {}]);
    for op in [Operation::Create, Operation::Update] {
        let d = validate(op, &v, &FakeCluster::new());
        assert!(!d.allowed);
        assert_eq!(
            d.message.as_deref(),
            Some("canary count 4 exceeds maximum of 3 (OpenShift Route alternateBackends limit)")
        );
    }
    v["spec"]["canary"] = json!([{}, {}, {}]);
    assert!(validate(Operation::Update, &v, &FakeCluster::new()).allowed);
}

#[test]
fn d_19_an_unreadable_dsci_list_denies_creation() {
    let cluster = FakeCluster::new().fail(
        isvc::kinds::dsc_initialization(),
        odh_plugin_sdk::Error::Transient("no matches for kind \"DSCInitialization\"".into()),
    );
    let err = webhooks::validate(
        &request(Operation::Create, &in_namespace("x", "test-model")),
        &app_ns_settings(),
        &cluster,
    )
    .unwrap_err();
    assert!(err.message().starts_with("not able to read "), "{err:?}");
}

#[test]
fn d_20_an_update_naming_a_deleted_connection_secret_is_denied() {
    let v = with_annotation(raw_isvc("m"), "opendatahub.io/connections", "gone-secret");
    let mut r = AdmissionRequest::for_object(
        webhooks::MUTATING_PATH,
        Operation::Update,
        &Object(v.clone()),
    )
    .with_old_object(&Object(v));
    r.namespace = Some(NS.into());
    let err = webhooks::mutate(&r, &FakeCluster::new()).unwrap_err();
    assert_eq!(
        err.message(),
        "connection \"gone-secret\" referenced by annotation \"opendatahub.io/connections\" not found in namespace \"test-ns\""
    );
}

#[test]
fn mutate_leaves_a_deleting_inference_service_alone() {
    let v = with_annotation(
        deleting(raw_isvc("m")),
        "opendatahub.io/connections",
        "gone-secret",
    );
    let r = AdmissionRequest::for_object(webhooks::MUTATING_PATH, Operation::Update, &Object(v));
    let d = webhooks::mutate(&r, &FakeCluster::new()).unwrap();
    assert!(d.allowed && d.mutated.is_none() && d.patch.is_none());
}

#[test]
fn mutate_creates_the_s3_service_account_as_a_side_effect() {
    let secret = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "s3-secret", "namespace": NS,
                     "annotations": {"opendatahub.io/connection-type-protocol": "s3"}}});
    let v = with_annotation(isvc("m"), "opendatahub.io/connections", "s3-secret");
    let mut r =
        AdmissionRequest::for_object(webhooks::MUTATING_PATH, Operation::Create, &Object(v));
    r.namespace = Some(NS.into());
    let d = webhooks::mutate(&r, &FakeCluster::new().with(secret)).unwrap();
    assert!(d.allowed);
    let mutated: Value =
        odh_plugin_sdk::serde_json::from_str(d.mutated.as_deref().unwrap()).unwrap();
    assert_eq!(
        mutated["spec"]["predictor"]["serviceAccountName"],
        "s3-secret-sa"
    );
    assert_eq!(
        mutated["spec"]["predictor"]["model"]["storage"]["key"],
        "s3-secret"
    );
    assert_eq!(d.side_effects.len(), 1);
    let sa: Value = odh_plugin_sdk::serde_json::from_str(&d.side_effects[0].object).unwrap();
    assert_eq!(sa["metadata"]["name"], "s3-secret-sa");
    assert_eq!(sa["secrets"], json!([{"name": "s3-secret"}]));
}

#[test]
fn a_failed_read_is_a_403_denial_with_the_bare_message() {
    let cluster = FakeCluster::new().fail(
        odh_serving_admission::hardware_profile::hardware_profile_gvk(),
        odh_plugin_sdk::Error::Transient("no matches for kind \"HardwareProfile\"".into()),
    );
    let v = with_annotation(raw_isvc("m"), "opendatahub.io/hardware-profile-name", "gpu");
    let mut r =
        AdmissionRequest::for_object(webhooks::MUTATING_PATH, Operation::Create, &Object(v));
    r.namespace = Some(NS.into());
    let d = isvc::denial_on_error(webhooks::mutate(&r, &cluster)).unwrap();
    assert!(!d.allowed);
    assert_eq!(d.code, Some(403));
    assert_eq!(
        d.message.as_deref(),
        Some(
            "failed fetching hardware profile: failed fetching HardwareProfile test-ns/gpu: no matches for kind \"HardwareProfile\""
        )
    );
}
