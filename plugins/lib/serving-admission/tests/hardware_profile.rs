//! HardwareProfile defaulter scenarios W-H01..W-H31 (namespace
//! `test-hwp-ns`, InferenceService `test-isvc`, profile `test-hwp`), plus derived checks.

use odh_kinds::annotation::{
    HARDWARE_PROFILE_NAME as NAME, HARDWARE_PROFILE_NAMESPACE as NAMESPACE,
};
use odh_kinds::gvk::hardware_profile as hardware_profile_gvk;
use odh_kinds::label::KUEUE_QUEUE as KUEUE;
use odh_plugin_sdk::testing::FakeCluster;
use odh_plugin_sdk::{Error, Operation, Value, json};
use odh_serving_admission::{IsvcAdmission, default_inference_service, hardware_profile};
use odh_test_fixtures as fixtures;

const NS: &str = "test-hwp-ns";
const HWP: &str = "test-hwp";

// ── fixtures ──────────────────────────────────────────────────────────────────

fn hwp(name: &str, namespace: &str, spec: Value) -> Value {
    fixtures::hardware_profile(name)
        .namespace(namespace)
        .spec(spec)
        .build()
}

fn resource_spec(identifiers: &[(&str, &str)]) -> Value {
    fixtures::hardware_profile("")
        .identifiers(identifiers)
        .build()["spec"]
        .take()
}

fn node_spec(node_selector: Value, tolerations: Value) -> Value {
    fixtures::hardware_profile("")
        .node_scheduling(node_selector, tolerations)
        .build()["spec"]
        .take()
}

fn kueue_spec(queue: &str) -> Value {
    fixtures::hardware_profile("").kueue(queue).build()["spec"].take()
}

fn toleration(key: &str, operator: &str, effect: &str) -> Value {
    json!({"key": key, "operator": operator, "effect": effect})
}

fn cluster(objects: impl IntoIterator<Item = Value>) -> FakeCluster {
    FakeCluster::new().with_all(objects)
}

/// `buildISVCForHWP`: typed, with an empty predictor model.
fn isvc(annotations: Value, labels: Value) -> Value {
    let mut isvc = isvc_without_model(annotations);
    isvc["spec"]["predictor"]["model"] = json!({});
    if !labels.is_null() {
        isvc["metadata"]["labels"] = labels;
    }
    isvc
}

fn isvc_without_model(annotations: Value) -> Value {
    let isvc = fixtures::isvc("test-isvc").namespace(NS).bare();
    if annotations.is_null() {
        isvc.build()
    } else {
        isvc.set("/metadata/annotations", annotations).build()
    }
}

fn named(profile: &str) -> Value {
    json!({NAME: profile})
}

fn named_in(profile: &str, namespace: &str) -> Value {
    json!({NAME: profile, NAMESPACE: namespace})
}

fn create(c: &FakeCluster, isvc: &mut Value) -> Result<Vec<String>, Error> {
    hardware_profile::default_inference_service(isvc, &IsvcAdmission::create(NS), c)
}

fn update(c: &FakeCluster, old: &Value, isvc: &mut Value) -> Result<Vec<String>, Error> {
    hardware_profile::default_inference_service(isvc, &IsvcAdmission::update(NS, old), c)
}

fn resources(isvc: &Value) -> &Value {
    &isvc["spec"]["predictor"]["model"]["resources"]
}

fn node_selector(isvc: &Value) -> Option<&Value> {
    isvc["spec"]["predictor"].get("nodeSelector")
}

fn tolerations(isvc: &Value) -> Option<&Value> {
    isvc["spec"]["predictor"].get("tolerations")
}

fn toleration_keys(isvc: &Value) -> Vec<&str> {
    tolerations(isvc)
        .and_then(Value::as_array)
        .map(|ts| ts.iter().filter_map(|t| t["key"].as_str()).collect())
        .unwrap_or_default()
}

fn kueue_label(isvc: &Value) -> Option<&str> {
    isvc["metadata"]["labels"][KUEUE].as_str()
}

fn ns_annotation(isvc: &Value) -> Option<&str> {
    isvc["metadata"]["annotations"][NAMESPACE].as_str()
}

fn denied(result: Result<Vec<String>, Error>) -> String {
    match result {
        Err(Error::Denied(message)) => message,
        other => panic!("expected a denial, got {other:?}"),
    }
}

// ── basic injection (CREATE) ──────────────────────────────────────────────────

#[test]
fn w_h01_no_annotations_leaves_isvc_alone() {
    let mut obj = isvc_without_model(Value::Null);
    let before = obj.clone();
    assert!(create(&cluster([]), &mut obj).unwrap().is_empty());
    assert_eq!(obj["spec"]["predictor"].get("model"), None);
    assert_eq!(node_selector(&obj), None);
    assert_eq!(kueue_label(&obj), None);
    assert_eq!(obj, before);
}

#[test]
fn w_h02_identifiers_set_requests_and_limits() {
    let spec = resource_spec(&[("cpu", "4"), ("memory", "8Gi"), ("nvidia.com/gpu", "2")]);
    let c = cluster([hwp(HWP, NS, spec)]);
    let mut obj = isvc(named(HWP), Value::Null);
    create(&c, &mut obj).unwrap();
    let expected = json!({"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "2"});
    assert_eq!(
        resources(&obj),
        &json!({"requests": expected, "limits": expected})
    );
}

#[test]
fn w_h03_node_scheduling_is_injected() {
    let mut t = toleration("nvidia.com/gpu", "Exists", "NoSchedule");
    t["tolerationSeconds"] = json!(300.0);
    let spec = node_spec(json!({"nvidia.com/gpu.product": "A100"}), json!([t]));
    let c = cluster([hwp(HWP, NS, spec)]);
    let mut obj = isvc(named(HWP), Value::Null);
    create(&c, &mut obj).unwrap();
    assert_eq!(
        node_selector(&obj),
        Some(&json!({"nvidia.com/gpu.product": "A100"}))
    );
    assert_eq!(
        tolerations(&obj),
        Some(&json!([{
            "key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule",
            "tolerationSeconds": 300,
        }]))
    );
}

#[test]
fn w_h04_kueue_profile_sets_label_and_no_node_scheduling() {
    let spec = json!({"scheduling": {
        "kueue": {"localQueueName": "test-queue"},
        "node": {"nodeSelector": {"zone": "gpu-zone"}},
    }});
    let c = cluster([hwp(HWP, NS, spec)]);
    let mut obj = isvc(named(HWP), Value::Null);
    create(&c, &mut obj).unwrap();
    assert_eq!(kueue_label(&obj), Some("test-queue"));
    assert_eq!(node_selector(&obj), None);
}

#[test]
fn w_h05_missing_profile_is_denied() {
    let message = denied(create(
        &cluster([]),
        &mut isvc(named("missing-hwp"), Value::Null),
    ));
    assert!(message.contains("missing-hwp"));
    assert_eq!(
        message,
        r#"hardware profile "missing-hwp" not found in namespace "test-hwp-ns""#
    );
}

#[test]
fn w_h06_namespace_annotation_is_stamped() {
    let c = cluster([hwp(HWP, NS, kueue_spec("q"))]);
    let mut obj = isvc(named(HWP), Value::Null);
    create(&c, &mut obj).unwrap();
    assert_eq!(ns_annotation(&obj), Some(NS));
}

#[test]
fn w_h07_identifier_without_default_count_is_denied() {
    let spec = json!({"identifiers": [{"identifier": "cpu"}]});
    let c = cluster([hwp(HWP, NS, spec)]);
    let message = denied(create(&c, &mut isvc(named(HWP), Value::Null)));
    assert_eq!(
        message,
        r#"failed fetching hardware profile: failed parsing defaultCount for identifier "cpu": unexpected type <nil> for resource quantity"#
    );
}

#[test]
fn w_h08_invalid_quantity_is_denied() {
    let spec = json!({"identifiers": [{"identifier": "cpu", "defaultCount": "bad!"}]});
    let c = cluster([hwp(HWP, NS, spec)]);
    let message = denied(create(&c, &mut isvc(named(HWP), Value::Null)));
    assert_eq!(
        message,
        r#"failed fetching hardware profile: failed parsing defaultCount for identifier "cpu": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"#
    );
}

#[test]
fn w_h09_empty_profile_only_stamps_namespace() {
    let c = cluster([hwp(HWP, NS, json!({}))]);
    let mut obj = isvc(named(HWP), Value::Null);
    let mut expected = obj.clone();
    expected["metadata"]["annotations"][NAMESPACE] = json!(NS);
    create(&c, &mut obj).unwrap();
    assert_eq!(obj["spec"]["predictor"]["model"].get("resources"), None);
    assert_eq!(node_selector(&obj), None);
    assert_eq!(kueue_label(&obj), None);
    assert_eq!(ns_annotation(&obj), Some(NS));
    assert_eq!(obj, expected);
}

// ── injection semantics (CREATE) ──────────────────────────────────────────────

#[test]
fn w_h10_existing_request_is_kept_and_backfills_limit() {
    let c = cluster([hwp(
        HWP,
        NS,
        resource_spec(&[("cpu", "4"), ("nvidia.com/gpu", "2")]),
    )]);
    let mut obj = isvc(named(HWP), Value::Null);
    obj["spec"]["predictor"]["model"]["resources"] = json!({"requests": {"cpu": "2"}});
    create(&c, &mut obj).unwrap();
    assert_eq!(
        resources(&obj),
        &json!({
            "requests": {"cpu": "2", "nvidia.com/gpu": "2"},
            "limits": {"cpu": "2", "nvidia.com/gpu": "2"},
        })
    );
}

#[test]
fn w_h11_profile_wins_conflicting_node_selector_key() {
    let spec = node_spec(json!({"zone": "eu-west", "tier": "gpu"}), Value::Null);
    let c = cluster([hwp(HWP, NS, spec)]);
    let mut obj = isvc(named(HWP), Value::Null);
    obj["spec"]["predictor"]["nodeSelector"] = json!({"zone": "us-east"});
    let warnings = create(&c, &mut obj).unwrap();
    assert_eq!(
        node_selector(&obj),
        Some(&json!({"zone": "eu-west", "tier": "gpu"}))
    );
    assert_eq!(
        warnings,
        [
            r#"nodeSelector key "zone" has value "us-east" which will be overwritten by HardwareProfile "test-hwp" with value "eu-west""#
        ]
    );
}

#[test]
fn w_h12_identical_toleration_is_not_doubled() {
    let t = toleration("nvidia.com/gpu", "Exists", "NoSchedule");
    let c = cluster([hwp(HWP, NS, node_spec(Value::Null, json!([t])))]);
    let mut obj = isvc(named(HWP), Value::Null);
    obj["spec"]["predictor"]["tolerations"] = json!([t]);
    create(&c, &mut obj).unwrap();
    assert_eq!(tolerations(&obj), Some(&json!([t])));
}

#[test]
fn w_h13_profile_overwrites_kueue_label() {
    let c = cluster([hwp(HWP, NS, kueue_spec("hwp-queue"))]);
    let mut obj = isvc(named(HWP), json!({KUEUE: "user-queue"}));
    let warnings = create(&c, &mut obj).unwrap();
    assert_eq!(kueue_label(&obj), Some("hwp-queue"));
    assert_eq!(
        warnings,
        [
            r#"label "kueue.x-k8s.io/queue-name" has value "user-queue" which will be overwritten by HardwareProfile "test-hwp" with value "hwp-queue""#
        ]
    );
}

#[test]
fn w_h14_limit_only_user_value_is_kept() {
    let c = cluster([hwp(HWP, NS, resource_spec(&[("nvidia.com/gpu", "2")]))]);
    let mut obj = isvc(named(HWP), Value::Null);
    obj["spec"]["predictor"]["model"]["resources"] = json!({"limits": {"nvidia.com/gpu": "1"}});
    create(&c, &mut obj).unwrap();
    assert_eq!(
        resources(&obj),
        &json!({"requests": {"nvidia.com/gpu": "2"}, "limits": {"nvidia.com/gpu": "1"}})
    );
}

#[test]
fn w_h15_no_model_still_gets_node_scheduling() {
    let c = cluster([hwp(
        HWP,
        NS,
        node_spec(json!({"zone": "gpu-zone"}), Value::Null),
    )]);
    let mut obj = isvc_without_model(named(HWP));
    create(&c, &mut obj).unwrap();
    assert_eq!(obj["spec"]["predictor"].get("model"), None);
    assert_eq!(node_selector(&obj), Some(&json!({"zone": "gpu-zone"})));
}

#[test]
fn w_h16_user_toleration_is_kept_after_profile_ones() {
    let spec = node_spec(
        Value::Null,
        json!([toleration("hwp-key", "Exists", "NoSchedule")]),
    );
    let c = cluster([hwp(HWP, NS, spec)]);
    let mut obj = isvc(named(HWP), Value::Null);
    obj["spec"]["predictor"]["tolerations"] = json!([{"key": "manual-key", "operator": "Exists"}]);
    create(&c, &mut obj).unwrap();
    assert_eq!(toleration_keys(&obj), ["hwp-key", "manual-key"]);
}

#[test]
fn w_h17_matching_kueue_label_is_unchanged() {
    let c = cluster([hwp(HWP, NS, kueue_spec("my-queue"))]);
    let mut obj = isvc(named(HWP), json!({KUEUE: "my-queue"}));
    let warnings = create(&c, &mut obj).unwrap();
    assert_eq!(kueue_label(&obj), Some("my-queue"));
    assert!(warnings.is_empty());
}

// ── profile change and annotation removal (UPDATE) ────────────────────────────

fn cpu_and_zone_profile() -> Value {
    let mut spec = resource_spec(&[("cpu", "4")]);
    spec["scheduling"] = json!({"node": {"nodeSelector": {"zone": "gpu-zone"}}});
    hwp(HWP, NS, spec)
}

#[test]
fn w_h18_same_profile_on_update_merges() {
    let c = cluster([cpu_and_zone_profile()]);
    let old = isvc(named_in(HWP, NS), Value::Null);
    let mut obj = isvc(named_in(HWP, NS), Value::Null);
    update(&c, &old, &mut obj).unwrap();
    assert_eq!(
        resources(&obj),
        &json!({"requests": {"cpu": "4"}, "limits": {"cpu": "4"}})
    );
    assert_eq!(node_selector(&obj), Some(&json!({"zone": "gpu-zone"})));
    assert_eq!(kueue_label(&obj), None);
}

#[test]
fn w_h19_profile_switch_clears_old_scheduling() {
    let a = node_spec(
        json!({"zone": "eu-west"}),
        json!([toleration("key-a", "Exists", "NoSchedule")]),
    );
    let b = node_spec(
        json!({"tier": "gpu"}),
        json!([toleration("key-b", "Exists", "NoSchedule")]),
    );
    let c = cluster([hwp("hwp-a", NS, a), hwp("hwp-b", NS, b)]);
    let carried = |annotations| {
        let mut o = isvc(annotations, json!({KUEUE: "old-queue"}));
        o["spec"]["predictor"]["nodeSelector"] = json!({"zone": "eu-west"});
        o["spec"]["predictor"]["tolerations"] =
            json!([toleration("key-a", "Exists", "NoSchedule")]);
        o
    };
    let old = carried(named_in("hwp-a", NS));
    let mut obj = carried(named_in("hwp-b", NS));
    update(&c, &old, &mut obj).unwrap();
    assert_eq!(node_selector(&obj), Some(&json!({"tier": "gpu"})));
    assert_eq!(toleration_keys(&obj), ["key-b"]);
    assert_eq!(kueue_label(&obj), None);
    assert_eq!(obj["metadata"].get("labels"), None);
}

#[test]
fn w_h20_annotation_removed_takes_profile_scheduling_out() {
    let a = node_spec(
        json!({"zone": "eu-west"}),
        json!([toleration("key-a", "", "")]),
    );
    let c = cluster([hwp("hwp-a", NS, a)]);
    let scheduled = |annotations| {
        let mut o = isvc(annotations, Value::Null);
        o["spec"]["predictor"]["nodeSelector"] = json!({"zone": "eu-west"});
        o["spec"]["predictor"]["tolerations"] = json!([{"key": "key-a"}, {"key": "manual"}]);
        o
    };
    let old = scheduled(named_in("hwp-a", NS));
    let mut obj = scheduled(json!({NAMESPACE: NS}));
    assert!(update(&c, &old, &mut obj).unwrap().is_empty());
    assert_eq!(node_selector(&obj), None);
    assert_eq!(tolerations(&obj), Some(&json!([{"key": "manual"}])));
    assert_eq!(ns_annotation(&obj), None);
    assert_eq!(obj["metadata"].get("annotations"), None);
}

#[test]
fn w_h21_annotation_removed_with_missing_old_profile_is_admitted() {
    let old = isvc(named_in("hwp-a", NS), Value::Null);
    let mut obj = isvc(json!({NAMESPACE: NS}), Value::Null);
    obj["spec"]["predictor"]["nodeSelector"] = json!({"zone": "eu-west"});
    let warnings = update(&cluster([]), &old, &mut obj).unwrap();
    assert_eq!(ns_annotation(&obj), None);
    assert_eq!(node_selector(&obj), Some(&json!({"zone": "eu-west"})));
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].contains(r#"hardware profile "hwp-a" not found"#),
        "{warnings:?}"
    );
}

#[test]
fn w_h22_cross_namespace_profile_is_used() {
    let c = cluster([hwp(HWP, "other-ns", resource_spec(&[("cpu", "8")]))]);
    let mut obj = isvc(named_in(HWP, "other-ns"), Value::Null);
    create(&c, &mut obj).unwrap();
    assert_eq!(resources(&obj)["requests"]["cpu"], "8");
    assert_eq!(ns_annotation(&obj), Some("other-ns"));
}

#[test]
fn w_h23_namespace_only_change_is_a_switch() {
    let c = cluster([hwp(
        HWP,
        "namespace-2",
        node_spec(json!({"tier": "gpu"}), Value::Null),
    )]);
    let mut old = isvc(named_in(HWP, "namespace-1"), Value::Null);
    old["spec"]["predictor"]["nodeSelector"] = json!({"zone": "eu-west"});
    let mut obj = isvc(named_in(HWP, "namespace-2"), Value::Null);
    obj["spec"]["predictor"]["nodeSelector"] = json!({"zone": "eu-west"});
    update(&c, &old, &mut obj).unwrap();
    assert_eq!(node_selector(&obj), Some(&json!({"tier": "gpu"})));
}

#[test]
fn w_h24_first_assignment_on_update_merges() {
    let c = cluster([cpu_and_zone_profile()]);
    let old = isvc(Value::Null, Value::Null);
    let mut obj = isvc(named(HWP), Value::Null);
    obj["spec"]["predictor"]["nodeSelector"] = json!({"mine": "x"});
    update(&c, &old, &mut obj).unwrap();
    assert_eq!(
        resources(&obj),
        &json!({"requests": {"cpu": "4"}, "limits": {"cpu": "4"}})
    );
    assert_eq!(
        node_selector(&obj),
        Some(&json!({"zone": "gpu-zone", "mine": "x"}))
    );
    assert_eq!(kueue_label(&obj), None);
}

#[test]
fn w_h25_kueue_to_kueue_switch_sets_new_queue() {
    let c = cluster([
        hwp("hwp-a", NS, kueue_spec("queue-a")),
        hwp("hwp-b", NS, kueue_spec("queue-b")),
    ]);
    let old = isvc(named_in("hwp-a", NS), json!({KUEUE: "queue-a"}));
    let mut obj = isvc(named_in("hwp-b", NS), json!({KUEUE: "queue-a"}));
    let warnings = update(&c, &old, &mut obj).unwrap();
    assert_eq!(kueue_label(&obj), Some("queue-b"));
    assert!(warnings.is_empty(), "a switch does not warn: {warnings:?}");
}

fn zone_profile_a() -> FakeCluster {
    cluster([hwp(
        "hwp-a",
        NS,
        node_spec(json!({"zone": "eu-west"}), Value::Null),
    )])
}

#[test]
fn w_h26_annotation_removed_keeps_user_changed_value() {
    let mut old = isvc(named_in("hwp-a", NS), Value::Null);
    old["spec"]["predictor"]["nodeSelector"] = json!({"zone": "eu-west"});
    let mut obj = isvc(json!({NAMESPACE: NS}), Value::Null);
    obj["spec"]["predictor"]["nodeSelector"] = json!({"zone": "us-east"});
    update(&zone_profile_a(), &old, &mut obj).unwrap();
    assert_eq!(node_selector(&obj), Some(&json!({"zone": "us-east"})));
}

#[test]
fn w_h27_annotation_removed_without_node_selector_is_fine() {
    let mut old = isvc(named_in("hwp-a", NS), Value::Null);
    old["spec"]["predictor"]["nodeSelector"] = json!({"zone": "eu-west"});
    let mut obj = isvc(json!({NAMESPACE: NS}), Value::Null);
    update(&zone_profile_a(), &old, &mut obj).unwrap();
    assert_eq!(node_selector(&obj), None);
}

#[test]
fn w_h28_annotation_removed_drops_kueue_label_unconditionally() {
    let c = cluster([hwp("hwp-a", NS, kueue_spec("hwp-queue"))]);
    let old = isvc(named_in("hwp-a", NS), json!({KUEUE: "hwp-queue"}));
    let mut obj = isvc(json!({NAMESPACE: NS}), json!({KUEUE: "user-queue"}));
    update(&c, &old, &mut obj).unwrap();
    assert_eq!(kueue_label(&obj), None);
}

#[test]
fn w_h29_annotation_removed_node_profile_without_label_is_fine() {
    let mut old = isvc(named_in("hwp-a", NS), Value::Null);
    old["spec"]["predictor"]["nodeSelector"] = json!({"zone": "eu-west"});
    let mut obj = isvc(json!({NAMESPACE: NS}), json!({"app": "x"}));
    obj["spec"]["predictor"]["nodeSelector"] = json!({"zone": "eu-west"});
    update(&zone_profile_a(), &old, &mut obj).unwrap();
    assert_eq!(kueue_label(&obj), None);
    assert_eq!(obj["metadata"]["labels"], json!({"app": "x"}));
}

// ── resolver ──────────────────────────────────────────────────────────────────

#[test]
fn w_h30_resolve_with_empty_name_reads_nothing() {
    // Any read of the kind would fail, so success proves no read happened.
    let c = FakeCluster::new().fail(hardware_profile_gvk(), Error::internal("unexpected read"));
    assert_eq!(hardware_profile::resolve(&c, "", NS), Ok(None));
}

#[test]
fn w_h31_resolve_reports_read_errors() {
    let c = FakeCluster::new().fail(
        hardware_profile_gvk(),
        Error::transient("transient connection error"),
    );
    let result = hardware_profile::resolve(&c, HWP, NS);
    assert_eq!(
        result,
        Err(Error::Transient(
            "failed fetching hardware profile: failed fetching HardwareProfile test-hwp-ns/test-hwp: transient connection error".into()
        ))
    );
    assert!(
        result
            .unwrap_err()
            .message()
            .contains("transient connection error")
    );
}

// ── derived ───────────────────────────────────────────────────────────────────

#[test]
fn unknown_fields_survive_injection() {
    let mut spec = resource_spec(&[("cpu", "1000m")]);
    spec["scheduling"] = json!({"node": {
        "nodeSelector": {"zone": "z"},
        "tolerations": [toleration("t", "Exists", "NoSchedule")],
    }});
    let c = cluster([hwp(HWP, NS, spec)]);
    let mut obj = isvc(named(HWP), json!({"app": "x"}));
    obj["metadata"]["annotations"]["other"] = json!("kept");
    obj["spec"]["predictor"]["model"] = json!({
        "modelFormat": {"name": "onnx"},
        "resources": {"requests": {"memory": "1Gi"}, "claims": [{"name": "c"}]},
        "unknownModelField": [1],
    });
    obj["spec"]["predictor"]["tolerations"] = json!([{"key": "u", "futureField": true}]);
    obj["spec"]["predictor"]["futureField"] = json!({"a": 1});
    obj["spec"]["transformer"] = json!({"containers": []});
    obj["status"] = json!({"anything": "goes"});

    let mut expected = obj.clone();
    expected["metadata"]["annotations"][NAMESPACE] = json!(NS);
    let model = &mut expected["spec"]["predictor"]["model"];
    model["resources"]["requests"]["cpu"] = json!("1");
    model["resources"]["limits"] = json!({"cpu": "1"});
    expected["spec"]["predictor"]["nodeSelector"] = json!({"zone": "z"});
    expected["spec"]["predictor"]["tolerations"] = json!([
        toleration("t", "Exists", "NoSchedule"),
        {"key": "u", "futureField": true},
    ]);

    create(&c, &mut obj).unwrap();
    assert_eq!(obj, expected);
}

#[test]
fn unknown_fields_survive_removal() {
    let c = cluster([hwp("hwp-a", NS, kueue_spec("q"))]);
    let old = isvc(named_in("hwp-a", NS), json!({KUEUE: "q"}));
    let mut obj = isvc(
        json!({NAMESPACE: NS, "other": "kept"}),
        json!({KUEUE: "q", "app": "x"}),
    );
    obj["spec"]["predictor"]["model"]["resources"] = json!({"requests": {"cpu": "4"}});
    obj["spec"]["extra"] = json!(true);
    let mut expected = obj.clone();
    expected["metadata"]["annotations"] = json!({"other": "kept"});
    expected["metadata"]["labels"] = json!({"app": "x"});
    update(&c, &old, &mut obj).unwrap();
    assert_eq!(
        obj, expected,
        "injected resources stay; only the label and annotation go"
    );
}

#[test]
fn deleting_isvc_is_skipped() {
    let mut obj = isvc(named("missing"), Value::Null);
    obj["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
    let before = obj.clone();
    let defaulted =
        default_inference_service(&mut obj, &IsvcAdmission::create(NS), &cluster([])).unwrap();
    assert!(defaulted.warnings.is_empty());
    assert_eq!(obj, before);
}

#[test]
fn default_counts_are_canonicalised() {
    let spec = json!({"identifiers": [
        {"identifier": "cpu", "defaultCount": 4},
        {"identifier": "memory", "defaultCount": "2048Mi"},
        {"identifier": "ephemeral-storage", "defaultCount": 1.5},
        {"identifier": "example.com/fpga", "defaultCount": "500m"},
    ]});
    let c = cluster([hwp(HWP, NS, spec)]);
    let mut obj = isvc(named(HWP), Value::Null);
    create(&c, &mut obj).unwrap();
    assert_eq!(
        resources(&obj)["requests"],
        json!({"cpu": "4", "memory": "2Gi", "ephemeral-storage": "1", "example.com/fpga": "500m"})
    );
}

#[test]
fn transient_old_profile_read_during_removal_is_admitted_with_warning() {
    let c = FakeCluster::new().fail(hardware_profile_gvk(), Error::transient("timeout"));
    let old = isvc(named_in("hwp-a", NS), Value::Null);
    let mut obj = isvc(json!({NAMESPACE: NS}), Value::Null);
    let warnings = update(&c, &old, &mut obj).unwrap();
    assert_eq!(ns_annotation(&obj), None);
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].ends_with("test-hwp-ns/hwp-a: timeout"),
        "{warnings:?}"
    );
}

#[test]
fn update_without_old_object_is_a_switch() {
    let c = cluster([hwp(HWP, NS, node_spec(json!({"tier": "gpu"}), Value::Null))]);
    let mut obj = isvc(named(HWP), json!({KUEUE: "stale"}));
    obj["spec"]["predictor"]["nodeSelector"] = json!({"zone": "old"});
    let no_old = IsvcAdmission {
        operation: Operation::Update,
        ..IsvcAdmission::create(NS)
    };
    hardware_profile::default_inference_service(&mut obj, &no_old, &c).unwrap();
    assert_eq!(node_selector(&obj), Some(&json!({"tier": "gpu"})));
    assert_eq!(kueue_label(&obj), None);
}
