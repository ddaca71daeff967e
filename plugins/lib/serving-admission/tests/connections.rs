//! ConnectionsAPI defaulter scenarios W-C01..W-C38 (namespace `test-ns`,
//! InferenceService `test`), plus derived checks.

use odh_kinds::annotation::{
    CONNECTION_PATH as PATH, CONNECTION_TYPE_PROTOCOL as PROTOCOL, CONNECTION_TYPE_REF as REF,
    CONNECTIONS,
};
use odh_plugin_sdk::testing::FakeCluster;
use odh_plugin_sdk::{Error, Value, core_gvk, json};
use odh_serving_admission::connections::{self, ConnectionInfo};
use odh_serving_admission::{IsvcAdmission, default_inference_service};
use odh_test_fixtures as fixtures;

const NS: &str = "test-ns";

// ── fixtures ──────────────────────────────────────────────────────────────────

/// A Secret carrying these annotations (`{}` included) and plain-text `data` (encoded, as the
/// API serves it).
fn secret_with(name: &str, annotations: Value, data: &[(&str, &str)]) -> Value {
    fixtures::secret(name)
        .namespace(NS)
        .set("/metadata/annotations", annotations)
        .data_entries(data)
        .build()
}

fn secret(name: &str, protocol: &str, data: &[(&str, &str)]) -> Value {
    fixtures::connection_secret(name, protocol)
        .namespace(NS)
        .data_entries(data)
        .build()
}

fn secret_ref(name: &str, reference: &str, data: &[(&str, &str)]) -> Value {
    fixtures::connection_secret_ref(name, reference)
        .namespace(NS)
        .data_entries(data)
        .build()
}

fn cluster(objects: impl IntoIterator<Item = Value>) -> FakeCluster {
    FakeCluster::new().with_all(objects)
}

/// InferenceService `test` as the scenarios send it: an empty predictor and these annotations.
fn isvc(annotations: &[(&str, &str)]) -> Value {
    let isvc = fixtures::isvc("test").namespace(NS).bare();
    if annotations.is_empty() {
        isvc.build()
    } else {
        isvc.annotations(annotations).build()
    }
}

fn predictor(isvc: &Value) -> &Value {
    &isvc["spec"]["predictor"]
}

fn sa_name(isvc: &Value) -> Option<&str> {
    predictor(isvc)["serviceAccountName"].as_str()
}

fn storage(isvc: &Value) -> &Value {
    &predictor(isvc)["model"]["storage"]
}

fn storage_uri(isvc: &Value) -> Option<&str> {
    predictor(isvc)["model"]["storageUri"].as_str()
}

fn pull_secrets(isvc: &Value) -> Option<&Value> {
    predictor(isvc).get("imagePullSecrets")
}

fn expected_sa(secret: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": format!("{secret}-sa"), "namespace": NS},
        "secrets": [{"name": secret}],
    })
}

fn create(c: &FakeCluster, isvc: &mut Value) -> Result<Vec<Value>, Error> {
    connections::default_inference_service(isvc, &IsvcAdmission::create(NS), c)
}

fn update(c: &FakeCluster, old: &Value, isvc: &mut Value) -> Result<Vec<Value>, Error> {
    connections::default_inference_service(isvc, &IsvcAdmission::update(NS, old), c)
}

fn denied(result: Result<Vec<Value>, Error>) -> String {
    match result {
        Err(Error::Denied(message)) => message,
        other => panic!("expected a denial, got {other:?}"),
    }
}

// ── CREATE ────────────────────────────────────────────────────────────────────

#[test]
fn w_c01_no_annotation_injects_nothing() {
    let mut obj = isvc(&[]);
    let before = obj.clone();
    assert_eq!(create(&cluster([]), &mut obj).unwrap(), Vec::<Value>::new());
    assert_eq!(sa_name(&obj), None);
    assert_eq!(predictor(&obj).get("model"), None);
    assert_eq!(pull_secrets(&obj), None);
    assert_eq!(obj, before);
}

#[test]
fn w_c02_secret_without_type_annotation_is_denied() {
    let c = cluster([secret_with("s", json!({}), &[])]);
    let message = denied(create(&c, &mut isvc(&[(CONNECTIONS, "s")])));
    assert!(message.contains("opendatahub.io/connection-type-protocol"));
    assert_eq!(
        message,
        r#"connection "s" referenced by annotation "opendatahub.io/connections" must have a "opendatahub.io/connection-type-protocol" annotation on the Secret"#
    );
}

#[test]
fn w_c03_exotic_type_is_denied() {
    let c = cluster([secret("s", "exotic", &[])]);
    let message = denied(create(&c, &mut isvc(&[(CONNECTIONS, "s")])));
    assert_eq!(
        message,
        r#"connection "s" has unsupported connection type "exotic"; supported types are s3, uri, oci"#
    );
}

#[test]
fn w_c04_missing_secret_is_denied_as_not_found() {
    let message = denied(create(&cluster([]), &mut isvc(&[(CONNECTIONS, "missing")])));
    assert!(message.contains("not found"));
    assert_eq!(
        message,
        r#"connection "missing" referenced by annotation "opendatahub.io/connections" not found in namespace "test-ns""#
    );
}

#[test]
fn w_c05_deleting_isvc_is_skipped() {
    let c = cluster([secret("s", "s3", &[])]);
    let mut obj = isvc(&[(CONNECTIONS, "s")]);
    obj["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
    let before = obj.clone();
    let defaulted = default_inference_service(&mut obj, &IsvcAdmission::create(NS), &c).unwrap();
    assert!(defaulted.side_effects.is_empty() && defaulted.warnings.is_empty());
    assert_eq!(sa_name(&obj), None);
    assert_eq!(obj, before);
}

#[test]
fn w_c06_s3_secret_injects_sa_storage_and_creates_sa() {
    let c = cluster([secret("s3-secret", "s3", &[])]);
    let mut obj = isvc(&[(CONNECTIONS, "s3-secret"), (PATH, "models/v1")]);
    obj["spec"]["predictor"]["model"] = json!({});
    let side_effects = create(&c, &mut obj).unwrap();
    assert_eq!(sa_name(&obj), Some("s3-secret-sa"));
    assert_eq!(
        storage(&obj),
        &json!({"key": "s3-secret", "path": "models/v1"})
    );
    assert_eq!(side_effects, [expected_sa("s3-secret")]);
}

#[test]
fn w_c07_dry_run_injects_but_creates_no_sa() {
    let c = cluster([secret("s3-secret", "s3", &[])]);
    let mut obj = isvc(&[(CONNECTIONS, "s3-secret"), (PATH, "models/v1")]);
    obj["spec"]["predictor"]["model"] = json!({});
    let dry_run = IsvcAdmission {
        dry_run: true,
        ..IsvcAdmission::create(NS)
    };
    let side_effects = connections::default_inference_service(&mut obj, &dry_run, &c).unwrap();
    assert_eq!(storage(&obj)["key"], "s3-secret");
    assert!(side_effects.is_empty());
}

#[test]
fn w_c08_uri_secret_https_host_sets_storage_uri() {
    let c = cluster([secret(
        "uri-s",
        "uri",
        &[("https-host", "https://example.com/model")],
    )]);
    let mut obj = isvc(&[(CONNECTIONS, "uri-s")]);
    assert!(create(&c, &mut obj).unwrap().is_empty());
    assert_eq!(storage_uri(&obj), Some("https://example.com/model"));
}

#[test]
fn w_c08_a_model_created_for_the_uri_carries_the_schema_required_model_format() {
    let c = cluster([secret("uri-s", "uri", &[("URI", "s3://bucket/model")])]);
    let mut obj = isvc(&[(CONNECTIONS, "uri-s")]);
    create(&c, &mut obj).unwrap();
    assert_eq!(
        predictor(&obj)["model"],
        json!({"modelFormat": {"name": ""}, "storageUri": "s3://bucket/model"})
    );
}

#[test]
fn w_c09_uri_secret_uri_key_sets_storage_uri() {
    let c = cluster([secret("uri-s", "uri", &[("URI", "s3://bucket/model")])]);
    let mut obj = isvc(&[(CONNECTIONS, "uri-s")]);
    create(&c, &mut obj).unwrap();
    assert_eq!(storage_uri(&obj), Some("s3://bucket/model"));
}

#[test]
fn w_c10_uri_secret_without_keys_is_denied() {
    let c = cluster([secret("uri-s", "uri", &[])]);
    let message = denied(create(&c, &mut isvc(&[(CONNECTIONS, "uri-s")])));
    assert!(message.contains("URI"));
    assert_eq!(
        message,
        "failed to get URI value: connection does not contain 'https-host' or 'URI' data key"
    );
}

#[test]
fn w_c11_oci_secret_adds_image_pull_secret() {
    let c = cluster([secret("oci-s", "oci", &[])]);
    let mut obj = isvc(&[(CONNECTIONS, "oci-s")]);
    assert!(create(&c, &mut obj).unwrap().is_empty());
    assert_eq!(pull_secrets(&obj), Some(&json!([{"name": "oci-s"}])));
}

#[test]
fn w_c12_oci_secret_already_present_is_not_duplicated() {
    let c = cluster([secret("oci-s", "oci", &[])]);
    let mut obj = isvc(&[(CONNECTIONS, "oci-s")]);
    obj["spec"]["predictor"]["imagePullSecrets"] = json!([{"name": "oci-s"}]);
    create(&c, &mut obj).unwrap();
    assert_eq!(pull_secrets(&obj), Some(&json!([{"name": "oci-s"}])));
}

// ── UPDATE: inject / remove / replace / none ──────────────────────────────────

#[test]
fn w_c13_update_adding_s3_annotation_injects_and_creates_sa() {
    let c = cluster([secret("s3-secret", "s3", &[])]);
    let old = isvc(&[]);
    let mut obj = isvc(&[(CONNECTIONS, "s3-secret"), (PATH, "models/v1")]);
    obj["spec"]["predictor"]["model"] = json!({});
    let side_effects = update(&c, &old, &mut obj).unwrap();
    assert_eq!(sa_name(&obj), Some("s3-secret-sa"));
    assert_eq!(
        storage(&obj),
        &json!({"key": "s3-secret", "path": "models/v1"})
    );
    assert_eq!(side_effects, [expected_sa("s3-secret")]);
}

#[test]
fn w_c14_update_removing_s3_annotation_clears_sa_and_storage() {
    let c = cluster([secret("s3-secret", "s3", &[])]);
    let old = isvc(&[(CONNECTIONS, "s3-secret")]);
    let mut obj = isvc(&[]);
    obj["spec"]["predictor"] = json!({
        "serviceAccountName": "s3-secret-sa",
        "model": {"storage": {"key": "s3-secret", "path": "models/v1"}},
    });
    assert!(update(&c, &old, &mut obj).unwrap().is_empty());
    assert_eq!(sa_name(&obj), None);
    assert_eq!(predictor(&obj), &json!({"model": {}}));
}

#[test]
fn w_c15_update_removing_uri_annotation_clears_storage_uri() {
    let c = cluster([secret("uri-s", "uri", &[])]);
    let old = isvc(&[(CONNECTIONS, "uri-s")]);
    let mut obj = isvc(&[]);
    obj["spec"]["predictor"]["model"] = json!({"storageUri": "https://example.com"});
    update(&c, &old, &mut obj).unwrap();
    assert_eq!(predictor(&obj)["model"], json!({}));
}

#[test]
fn w_c16_update_removing_oci_annotation_clears_image_pull_secrets() {
    let c = cluster([secret("oci-s", "oci", &[])]);
    let old = isvc(&[(CONNECTIONS, "oci-s")]);
    let mut obj = isvc(&[]);
    obj["spec"]["predictor"]["imagePullSecrets"] = json!([{"name": "oci-s"}]);
    update(&c, &old, &mut obj).unwrap();
    assert_eq!(pull_secrets(&obj), None);
}

#[test]
fn w_c17_update_with_deleted_old_secret_clears_everything() {
    let old = isvc(&[(CONNECTIONS, "deleted-secret")]);
    let mut obj = isvc(&[]);
    obj["spec"]["predictor"] = json!({
        "serviceAccountName": "deleted-secret-sa",
        "model": {"storageUri": "https://example.com", "storage": {}},
        "imagePullSecrets": [{"name": "deleted-secret"}],
    });
    update(&cluster([]), &old, &mut obj).unwrap();
    assert_eq!(predictor(&obj), &json!({"model": {}}));
}

#[test]
fn w_c18_update_removing_s3_keeps_user_service_account() {
    let c = cluster([secret("s3-secret", "s3", &[])]);
    let old = isvc(&[(CONNECTIONS, "s3-secret")]);
    let mut obj = isvc(&[]);
    obj["spec"]["predictor"]["serviceAccountName"] = json!("user-custom-sa");
    update(&c, &old, &mut obj).unwrap();
    assert_eq!(sa_name(&obj), Some("user-custom-sa"));
}

#[test]
fn w_c19_update_s3_to_uri_replaces() {
    let c = cluster([
        secret("s3-secret", "s3", &[]),
        secret("uri-s", "uri", &[("URI", "https://x")]),
    ]);
    let old = isvc(&[(CONNECTIONS, "s3-secret")]);
    let mut obj = isvc(&[(CONNECTIONS, "uri-s")]);
    obj["spec"]["predictor"] = json!({
        "serviceAccountName": "s3-secret-sa",
        "model": {"storage": {"key": "s3-secret"}},
    });
    assert!(update(&c, &old, &mut obj).unwrap().is_empty());
    assert_eq!(sa_name(&obj), None);
    assert_eq!(predictor(&obj)["model"].get("storage"), None);
    assert_eq!(storage_uri(&obj), Some("https://x"));
}

#[test]
fn w_c20_update_s3_path_change_replaces_path() {
    let c = cluster([secret("s3-secret", "s3", &[])]);
    let old = isvc(&[(CONNECTIONS, "s3-secret"), (PATH, "old-path")]);
    let mut obj = isvc(&[(CONNECTIONS, "s3-secret"), (PATH, "new-path")]);
    let side_effects = update(&c, &old, &mut obj).unwrap();
    assert_eq!(storage(&obj)["path"], "new-path");
    assert_eq!(side_effects, [expected_sa("s3-secret")]);
}

#[test]
fn w_c21_update_without_annotations_leaves_model_absent() {
    let mut obj = isvc(&[]);
    let before = obj.clone();
    update(&cluster([]), &isvc(&[]), &mut obj).unwrap();
    assert_eq!(predictor(&obj).get("model"), None);
    assert_eq!(obj, before);
}

#[test]
fn w_c22_update_identical_s3_connection_changes_nothing() {
    let c = cluster([secret("s3-secret", "s3", &[])]);
    let annotations = [(CONNECTIONS, "s3-secret"), (PATH, "models/v1")];
    let mut old = isvc(&annotations);
    old["spec"]["predictor"] = json!({
        "serviceAccountName": "s3-secret-sa",
        "model": {"storage": {"key": "s3-secret", "path": "models/v1"}},
    });
    let mut obj = old.clone();
    let side_effects = update(&c, &old, &mut obj).unwrap();
    assert_eq!(sa_name(&obj), Some("s3-secret-sa"));
    assert_eq!(storage(&obj)["path"], "models/v1");
    assert_eq!(obj, old);
    assert!(side_effects.is_empty());
}

#[test]
fn w_c23_update_uri_path_change_does_not_replace() {
    let c = cluster([secret("uri-s", "uri", &[("URI", "https://x")])]);
    let mut old = isvc(&[(CONNECTIONS, "uri-s"), (PATH, "old")]);
    old["spec"]["predictor"]["model"] = json!({"storageUri": "https://x"});
    let mut obj = isvc(&[(CONNECTIONS, "uri-s"), (PATH, "new")]);
    obj["spec"]["predictor"]["model"] = json!({"storageUri": "https://x"});
    let before = obj.clone();
    update(&c, &old, &mut obj).unwrap();
    assert_eq!(storage_uri(&obj), Some("https://x"));
    assert_eq!(obj, before);
}

// ── S3 path priority ──────────────────────────────────────────────────────────

#[test]
fn w_c24_create_prefers_user_path_over_annotation() {
    let c = cluster([secret("s3-secret", "s3", &[])]);
    let mut obj = isvc(&[(CONNECTIONS, "s3-secret"), (PATH, "ann-path")]);
    obj["spec"]["predictor"]["model"] = json!({"storage": {"path": "user-path"}});
    create(&c, &mut obj).unwrap();
    assert_eq!(
        storage(&obj),
        &json!({"key": "s3-secret", "path": "user-path"})
    );
}

#[test]
fn w_c25_update_replace_prefers_annotation_path_over_old_spec() {
    let c = cluster([secret("s3-secret", "s3", &[])]);
    let old = isvc(&[(CONNECTIONS, "s3-secret"), (PATH, "different-old-path")]);
    let mut obj = isvc(&[(CONNECTIONS, "s3-secret"), (PATH, "ann-path")]);
    update(&c, &old, &mut obj).unwrap();
    assert_eq!(storage(&obj)["path"], "ann-path");
}

#[test]
fn w_c26_update_inject_falls_back_to_old_spec_path() {
    let c = cluster([secret("s3-secret", "s3", &[])]);
    let mut old = isvc(&[]);
    old["spec"]["predictor"]["model"] = json!({"storage": {"path": "old-spec-path"}});
    let mut obj = isvc(&[(CONNECTIONS, "s3-secret")]);
    update(&c, &old, &mut obj).unwrap();
    assert_eq!(
        storage(&obj),
        &json!({"key": "s3-secret", "path": "old-spec-path"})
    );
}

// ── backward compatibility (connection-type-ref) ──────────────────────────────

#[test]
fn w_c27_ref_s3_injects_service_account() {
    let c = cluster([secret_ref("s3-secret", "s3", &[])]);
    let mut obj = isvc(&[(CONNECTIONS, "s3-secret"), (PATH, "models/v1")]);
    let side_effects = create(&c, &mut obj).unwrap();
    assert_eq!(sa_name(&obj), Some("s3-secret-sa"));
    assert_eq!(side_effects, [expected_sa("s3-secret")]);
}

#[test]
fn w_c28_ref_uri_v1_sets_storage_uri() {
    let c = cluster([secret_ref("uri-s", "uri-v1", &[("URI", "https://x")])]);
    let mut obj = isvc(&[(CONNECTIONS, "uri-s")]);
    create(&c, &mut obj).unwrap();
    assert_eq!(storage_uri(&obj), Some("https://x"));
}

#[test]
fn w_c29_ref_oci_v1_adds_image_pull_secret() {
    let c = cluster([secret_ref("oci-s", "oci-v1", &[])]);
    let mut obj = isvc(&[(CONNECTIONS, "oci-s")]);
    create(&c, &mut obj).unwrap();
    assert_eq!(pull_secrets(&obj), Some(&json!([{"name": "oci-s"}])));
}

// ── edge cases ────────────────────────────────────────────────────────────────

#[test]
fn w_c30_s3_create_keeps_user_service_account() {
    let c = cluster([secret("s3-secret", "s3", &[])]);
    let mut obj = isvc(&[(CONNECTIONS, "s3-secret"), (PATH, "models/v1")]);
    obj["spec"]["predictor"] = json!({"serviceAccountName": "user-custom-sa", "model": {}});
    create(&c, &mut obj).unwrap();
    assert_eq!(sa_name(&obj), Some("user-custom-sa"));
    assert_eq!(storage(&obj)["key"], "s3-secret");
}

#[test]
fn w_c31_oci_appends_to_existing_pull_secrets() {
    let c = cluster([secret("oci-s", "oci", &[])]);
    let mut obj = isvc(&[(CONNECTIONS, "oci-s")]);
    obj["spec"]["predictor"]["imagePullSecrets"] = json!([{"name": "existing"}]);
    create(&c, &mut obj).unwrap();
    assert_eq!(
        pull_secrets(&obj),
        Some(&json!([{"name": "existing"}, {"name": "oci-s"}]))
    );
}

#[test]
fn w_c32_oci_removal_keeps_other_pull_secrets() {
    let c = cluster([secret("oci-s", "oci", &[])]);
    let old = isvc(&[(CONNECTIONS, "oci-s")]);
    let mut obj = isvc(&[]);
    obj["spec"]["predictor"]["imagePullSecrets"] = json!([{"name": "other"}, {"name": "oci-s"}]);
    update(&c, &old, &mut obj).unwrap();
    assert_eq!(pull_secrets(&obj), Some(&json!([{"name": "other"}])));
}

#[test]
fn w_c33_update_to_other_s3_secret_replaces_service_account() {
    let c = cluster([
        secret("old-secret", "s3", &[]),
        secret("s3-secret", "s3", &[]),
    ]);
    let old = isvc(&[(CONNECTIONS, "old-secret"), (PATH, "models/v1")]);
    let mut obj = isvc(&[(CONNECTIONS, "s3-secret"), (PATH, "models/v1")]);
    obj["spec"]["predictor"]["serviceAccountName"] = json!("old-secret-sa");
    let side_effects = update(&c, &old, &mut obj).unwrap();
    assert_eq!(sa_name(&obj), Some("s3-secret-sa"));
    assert_eq!(storage(&obj)["key"], "s3-secret");
    assert_eq!(side_effects, [expected_sa("s3-secret")]);
}

#[test]
fn w_c34_https_host_wins_over_uri_key() {
    let c = cluster([secret(
        "uri-s",
        "uri",
        &[
            ("https-host", "https://preferred.com"),
            ("URI", "https://fallback.com"),
        ],
    )]);
    let mut obj = isvc(&[(CONNECTIONS, "uri-s")]);
    create(&c, &mut obj).unwrap();
    assert_eq!(storage_uri(&obj), Some("https://preferred.com"));
}

#[test]
fn w_c35_deleted_old_secret_filters_pull_secrets_by_name_only() {
    let old = isvc(&[(CONNECTIONS, "deleted-secret")]);
    let mut obj = isvc(&[]);
    obj["spec"]["predictor"]["imagePullSecrets"] = json!([{"name": "a"}, {"name": "b"}]);
    update(&cluster([]), &old, &mut obj).unwrap();
    assert_eq!(
        pull_secrets(&obj),
        Some(&json!([{"name": "a"}, {"name": "b"}]))
    );
}

#[test]
fn w_c36_cleanup_with_empty_secret_name_clears_all_pull_secrets() {
    let mut obj = isvc(&[]);
    obj["spec"]["predictor"]["imagePullSecrets"] = json!([{"name": "a"}]);
    connections::cleanup_inference_service(&mut obj, &ConnectionInfo::default());
    assert_eq!(pull_secrets(&obj), None);
}

#[test]
fn w_c37_protocol_annotation_wins_over_ref() {
    let c = cluster([secret_with(
        "s",
        json!({PROTOCOL: "uri", REF: "oci-v1"}),
        &[("URI", "https://x")],
    )]);
    let mut obj = isvc(&[(CONNECTIONS, "s")]);
    create(&c, &mut obj).unwrap();
    assert_eq!(storage_uri(&obj), Some("https://x"));
    assert_eq!(pull_secrets(&obj), None);
}

#[test]
fn w_c38_existing_service_account_is_fine() {
    let existing_sa = json!({
        "apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "s3-secret-sa", "namespace": NS},
    });
    let c = cluster([secret("s3-secret", "s3", &[]), existing_sa]);
    let mut obj = isvc(&[(CONNECTIONS, "s3-secret"), (PATH, "models/v1")]);
    obj["spec"]["predictor"]["model"] = json!({});
    // The host applies the side effect and treats "already exists" as success.
    let side_effects = create(&c, &mut obj).unwrap();
    assert_eq!(sa_name(&obj), Some("s3-secret-sa"));
    assert_eq!(side_effects, [expected_sa("s3-secret")]);
}

// ── derived ───────────────────────────────────────────────────────────────────

#[test]
fn unknown_fields_survive_injection() {
    let c = cluster([secret("s3-secret", "s3", &[])]);
    let mut obj = isvc(&[(CONNECTIONS, "s3-secret"), (PATH, "p"), ("keep", "me")]);
    obj["metadata"]["labels"] = json!({"app": "x"});
    obj["spec"]["futureField"] = json!({"nested": [1, 2]});
    obj["spec"]["predictor"] = json!({
        "minReplicas": 2,
        "containers": [{"name": "c", "unknown": true}],
        "model": {
            "modelFormat": {"name": "onnx", "vendorThing": 1},
            "runtime": "rt",
            "storage": {"schemaPath": "s", "parameters": {"x": "y"}},
            "unknownModelField": "z",
        },
    });
    obj["status"] = json!({"url": "http://x"});
    let mut expected = obj.clone();
    expected["spec"]["predictor"]["serviceAccountName"] = json!("s3-secret-sa");
    expected["spec"]["predictor"]["model"]["storage"]["key"] = json!("s3-secret");
    expected["spec"]["predictor"]["model"]["storage"]["path"] = json!("p");
    create(&c, &mut obj).unwrap();
    assert_eq!(obj, expected);
}

#[test]
fn unknown_fields_survive_removal() {
    let c = cluster([secret("oci-s", "oci", &[])]);
    let old = isvc(&[(CONNECTIONS, "oci-s")]);
    let mut obj = isvc(&[]);
    obj["spec"]["predictor"] = json!({
        "imagePullSecrets": [{"name": "oci-s"}],
        "model": {"storageUri": "keep-me-oci-does-not-own-it", "x": 1},
        "y": [true],
    });
    update(&c, &old, &mut obj).unwrap();
    assert_eq!(
        predictor(&obj),
        &json!({"model": {"storageUri": "keep-me-oci-does-not-own-it", "x": 1}, "y": [true]})
    );
}

#[test]
fn d_20_update_with_vanished_secret_and_unchanged_annotation_is_denied() {
    let old = isvc(&[(CONNECTIONS, "gone")]);
    let mut obj = old.clone();
    let message = denied(update(&cluster([]), &old, &mut obj));
    assert!(message.contains("not found in namespace"), "{message}");
}

#[test]
fn failing_secret_read_keeps_host_error_case() {
    let c = FakeCluster::new().fail(core_gvk("Secret"), Error::transient("etcd timeout"));
    let result = create(&c, &mut isvc(&[(CONNECTIONS, "s")]));
    assert_eq!(
        result,
        Err(Error::Transient(
            "failed to validate connection: etcd timeout".into()
        ))
    );
}

#[test]
fn failing_old_secret_read_is_reported() {
    let c = FakeCluster::new().fail(core_gvk("Secret"), Error::denied("forbidden"));
    let result = update(&c, &isvc(&[(CONNECTIONS, "s")]), &mut isvc(&[]));
    assert_eq!(
        result,
        Err(Error::Denied(
            "failed to get old secret metadata: forbidden".into()
        ))
    );
}

#[test]
fn undecodable_old_object_is_denied() {
    let result = update(&cluster([]), &json!("nope"), &mut isvc(&[]));
    assert!(denied(result).starts_with("failed to decode old object: "));
}

#[test]
fn old_secret_with_unrecognised_type_removes_nothing() {
    let c = cluster([secret_with("s", json!({REF: "exotic"}), &[])]);
    let old = isvc(&[(CONNECTIONS, "s")]);
    let mut obj = isvc(&[]);
    obj["spec"]["predictor"] = json!({
        "serviceAccountName": "s-sa",
        "imagePullSecrets": [{"name": "s"}],
        "model": {"storageUri": "u", "storage": {"key": "s"}},
    });
    let before = obj.clone();
    update(&c, &old, &mut obj).unwrap();
    assert_eq!(obj, before);
}
