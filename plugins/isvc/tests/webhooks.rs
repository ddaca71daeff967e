//! The validating and mutating webhooks (docs/plugins/isvc.md, "Webhooks"; W-V*, D-05, D-19,
//! D-20). The defaulting
//! logic itself is tested scenario by scenario in odh-serving-admission.

mod common;

use common::*;
use isvc::Isvc;
use isvc::settings::Settings;
use isvc::webhooks;
use odh_kinds::annotation::{CONNECTIONS, HARDWARE_PROFILE_NAME};
use odh_kinds::gvk;
use odh_plugin_sdk::testing::{Case, FakeCluster};
use odh_plugin_sdk::{
    AdmissionDecision, AdmissionRequest, Ctx, Error, Object, Operation, Plugin, Value, json,
};

/// A review of `v` on the validating path, in the object's namespace.
fn request(op: Operation, v: &Value) -> AdmissionRequest {
    let object = Object(v.clone());
    let namespace = object.namespace().unwrap_or_default().to_string();
    AdmissionRequest::for_object(webhooks::VALIDATING_PATH, op, &object).with_namespace(&namespace)
}

/// A review of `v` on the mutating path, in [`NS`].
fn mutation(op: Operation, v: &Value) -> AdmissionRequest {
    AdmissionRequest::for_object(webhooks::MUTATING_PATH, op, &Object(v.clone())).with_namespace(NS)
}

fn in_namespace(name: &str, namespace: &str) -> Value {
    isvc(name).raw().namespace(namespace).build()
}

fn app_ns_settings() -> Settings {
    Settings {
        pod_namespace: Some("opendatahub".into()),
        ..Settings::default()
    }
}

/// The plugin's `validate` export, as the host calls it.
fn validate_export(
    request: &AdmissionRequest,
    cluster: &FakeCluster,
) -> Result<AdmissionDecision, Error> {
    Isvc::validate(request, &Ctx::new(&app_ns_settings(), cluster))
}

fn validate(op: Operation, v: &Value, cluster: &FakeCluster) -> AdmissionDecision {
    validate_export(&request(op, v), cluster).unwrap()
}

fn invalid(name: &str, field: &str, value: &str, detail: &str) -> String {
    format!(
        "InferenceService.serving.kserve.io \"{name}\" is invalid: {field}: Invalid value: \"{value}\": {detail}"
    )
}

#[test]
fn w_v01_to_w_v05_names_and_the_protected_namespace() {
    let too_long = format!("test-isvc-{}", "x".repeat(44));
    let at_limit = format!("test-isvc-{}", "x".repeat(43));
    assert_eq!((too_long.len(), at_limit.len()), (54, 53));
    let create = |name: &str, ns: &str| request(Operation::Create, &in_namespace(name, ns));
    let cases = [
        Case::allowed("W-V01 an ordinary namespace", create("test-isvc", "test-model")),
        Case::denied(
            "W-V02 the application namespace is protected",
            create("test-isvc", "opendatahub"),
            &invalid("test-isvc", "metadata.namespace", "opendatahub", "specified namespace is protected"),
        )
        .code(422),
        Case::denied(
            "W-V03 a 54-character name is too long",
            create(&too_long, "test-model"),
            &invalid(
                &too_long,
                "metadata.name",
                &too_long,
                "InferenceService name is too long. The name exceeds the maximum length of 53 characters (current length: 54)",
            ),
        )
        .code(422),
        Case::allowed("W-V04 a 53-character name", create(&at_limit, "test-model")),
        Case::allowed("W-V05 a short name", create("short-name", "test-model")),
        Case::allowed(
            "name and namespace are checked on CREATE only",
            request(Operation::Update, &in_namespace(&"y".repeat(60), "opendatahub")),
        ),
    ];
    let cluster = cluster();
    for case in cases {
        case.run(|r| validate_export(r, &cluster));
    }
}

#[test]
fn w_v02_a_dsci_applications_namespace_overrides_pod_namespace() {
    let cluster = cluster()
        .with(dsc_initialization("default-dsci").applications_namespace("redhat-ods-applications"));
    let create = |ns: &str| validate(Operation::Create, &in_namespace("x", ns), &cluster);
    assert!(!create("redhat-ods-applications").allowed);
    assert!(create("opendatahub").allowed);
}

#[test]
fn d_05_four_canaries_are_denied_on_create_and_update() {
    let four = isvc("c")
        .raw()
        .namespace("test-model")
        .canary(json!([{}, {}, {}, {}]));
    for op in [Operation::Create, Operation::Update] {
        let d = validate(op, &four.clone().build(), &cluster());
        assert!(!d.allowed);
        assert_eq!(
            d.message.as_deref(),
            Some("canary count 4 exceeds maximum of 3 (OpenShift Route alternateBackends limit)")
        );
    }
    let three = four.canary(json!([{}, {}, {}])).build();
    assert!(validate(Operation::Update, &three, &cluster()).allowed);
}

#[test]
fn d_19_an_unreadable_dsci_list_denies_creation() {
    let cluster = cluster().fail(
        gvk::dsc_initialization(),
        Error::Transient("no matches for kind \"DSCInitialization\"".into()),
    );
    let err = webhooks::validate(
        &request(Operation::Create, &in_namespace("x", "test-model")),
        &app_ns_settings(),
        &cluster,
    )
    .unwrap_err();
    assert!(err.message().starts_with("not able to read "), "{err:?}");
    // The export turns it into upstream's 403 with the bare text.
    let d = validate(
        Operation::Create,
        &in_namespace("x", "test-model"),
        &cluster,
    );
    assert_eq!((d.allowed, d.code), (false, Some(403)));
}

#[test]
fn d_20_an_update_naming_a_deleted_connection_secret_is_denied() {
    let v = isvc("m")
        .raw()
        .annotation(CONNECTIONS, "gone-secret")
        .build();
    let r = mutation(Operation::Update, &v).with_old_object(&Object(v));
    let err = webhooks::mutate(&r, &cluster()).unwrap_err();
    assert_eq!(
        err.message(),
        "connection \"gone-secret\" referenced by annotation \"opendatahub.io/connections\" not found in namespace \"test-ns\""
    );
}

#[test]
fn mutate_leaves_a_deleting_inference_service_alone() {
    let v = isvc("m")
        .raw()
        .deleting()
        .annotation(CONNECTIONS, "gone-secret")
        .build();
    let r = AdmissionRequest::for_object(webhooks::MUTATING_PATH, Operation::Update, &Object(v));
    let d = webhooks::mutate(&r, &cluster()).unwrap();
    assert!(d.allowed && d.mutated.is_none() && d.patch.is_none());
}

/// An InferenceService the defaulting leaves as it was is allowed without the object: the host
/// has nothing to diff, the apiserver gets no patch either way. Through the plugin's own entry
/// point too, which decodes the objects once and hands them on.
#[test]
fn an_inference_service_left_as_it_was_is_answered_without_it() {
    let v = isvc("m").build();
    let d = webhooks::mutate(&mutation(Operation::Create, &v), &cluster()).unwrap();
    assert!(
        d.allowed && d.mutated.is_none() && d.patch.is_none(),
        "{d:?}"
    );
    let cluster = cluster();
    let d = Isvc::mutate(
        &mutation(Operation::Create, &v),
        &Ctx::new(&app_ns_settings(), &cluster),
    )
    .unwrap();
    assert!(d.allowed && d.mutated.is_none(), "{d:?}");
    // A change still comes back as the object: the ServiceAccount of an S3 connection.
    let v = isvc("m").annotation(CONNECTIONS, "s3-secret").build();
    let cluster = cluster.with(connection_secret("s3-secret", "s3"));
    let d = Isvc::mutate(
        &mutation(Operation::Create, &v),
        &Ctx::new(&app_ns_settings(), &cluster),
    )
    .unwrap();
    assert!(d.allowed && d.mutated.is_some(), "{d:?}");
}

#[test]
fn mutate_creates_the_s3_service_account_as_a_side_effect() {
    let v = isvc("m").annotation(CONNECTIONS, "s3-secret").build();
    let cluster = cluster().with(connection_secret("s3-secret", "s3"));
    let d = webhooks::mutate(&mutation(Operation::Create, &v), &cluster).unwrap();
    assert!(d.allowed);
    let mutated = Object::parse(d.mutated.as_deref().unwrap()).unwrap();
    assert_eq!(
        mutated.str_at(&["spec", "predictor", "serviceAccountName"]),
        Some("s3-secret-sa")
    );
    assert_eq!(
        mutated.str_at(&["spec", "predictor", "model", "storage", "key"]),
        Some("s3-secret")
    );
    assert_eq!(d.side_effects.len(), 1);
    let sa = Object::parse(&d.side_effects[0].object).unwrap();
    assert_eq!(sa.name(), "s3-secret-sa");
    assert_eq!(sa["secrets"], json!([{"name": "s3-secret"}]));
}

#[test]
fn a_failed_read_is_a_403_denial_with_the_bare_message() {
    let cluster = cluster().fail(
        gvk::hardware_profile(),
        Error::Transient("no matches for kind \"HardwareProfile\"".into()),
    );
    let v = isvc("m")
        .raw()
        .annotation(HARDWARE_PROFILE_NAME, "gpu")
        .build();
    let request = mutation(Operation::Create, &v);
    let d = Isvc::mutate(&request, &Ctx::new(&Settings::default(), &cluster)).unwrap();
    assert!(!d.allowed);
    assert_eq!(d.code, Some(403));
    assert_eq!(
        d.message.as_deref(),
        Some(
            "failed fetching hardware profile: failed fetching HardwareProfile test-ns/gpu: no matches for kind \"HardwareProfile\""
        )
    );
}

#[test]
fn d7_a_hardware_profile_denial_keeps_the_service_account_created_before_it() {
    let cluster = cluster().with(connection_secret("s3-secret", "s3"));
    let v = isvc("m")
        .raw()
        .annotation(CONNECTIONS, "s3-secret")
        .annotation(HARDWARE_PROFILE_NAME, "missing-profile")
        .build();
    let request = mutation(Operation::Create, &v);
    let d = Isvc::mutate(&request, &Ctx::new(&Settings::default(), &cluster)).unwrap();
    assert!(!d.allowed);
    assert_eq!(d.code, Some(403));
    assert!(
        d.message.as_deref().unwrap().contains("missing-profile"),
        "{:?}",
        d.message
    );
    assert_eq!(
        d.side_effects.len(),
        1,
        "the ServiceAccount still comes first"
    );
    let sa = Object::parse(&d.side_effects[0].object).unwrap();
    assert_eq!(sa.name(), "s3-secret-sa");
}

#[test]
fn d21_an_object_that_does_not_decode_is_a_400_on_both_webhooks() {
    for path in [webhooks::VALIDATING_PATH, webhooks::MUTATING_PATH] {
        let mut r =
            AdmissionRequest::for_object(path, Operation::Create, &Object(isvc("m").build()))
                .with_namespace(NS);
        r.object = Some("{\"metadata\": ".into());
        let (settings, cluster) = (app_ns_settings(), cluster());
        let cx = Ctx::new(&settings, &cluster);
        let d = if path == webhooks::MUTATING_PATH {
            Isvc::mutate(&r, &cx)
        } else {
            Isvc::validate(&r, &cx)
        }
        .unwrap();
        assert!(!d.allowed, "{path}");
        assert_eq!(d.code, Some(400), "{path}");
    }
}
