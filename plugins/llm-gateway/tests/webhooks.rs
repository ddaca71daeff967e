//! The LLMInferenceService mutating webhooks through the plugin's `mutate` export
//! (docs/plugins/llm-gateway.md, "Webhooks"; scenarios WC-01..WC-44 and LLM-1..LLM-22, HR-1,
//! HR-2).

use llm_gateway::LlmGateway;
use llm_gateway::settings::Settings;
use llm_gateway::webhooks::{MUTATING_PATH_V1ALPHA1, MUTATING_PATH_V1ALPHA2};
use odh_kinds::gvk;
use odh_plugin_sdk::testing::FakeCluster;
use odh_plugin_sdk::{
    AdmissionDecision, AdmissionRequest, Ctx, Error, Object, Operation, Plugin, Value, json,
};
use odh_serving_admission::connections::ConnectionInfo;
use odh_serving_admission::connections::llm::cleanup_llm_inference_service;
use odh_test_fixtures as fixtures;

const NS: &str = "test-ns";
const CONNECTIONS: &str = "opendatahub.io/connections";
const PATH: &str = "opendatahub.io/connection-path";
const HWP_NAME: &str = "opendatahub.io/hardware-profile-name";
const HWP_NS: &str = "opendatahub.io/hardware-profile-namespace";
const QUEUE: &str = "kueue.x-k8s.io/queue-name";

// ── fixtures ──

fn llm_in(namespace: &str, annotations: &[(&str, &str)]) -> Value {
    let mut v = json!({
        "apiVersion": "serving.kserve.io/v1alpha2",
        "kind": "LLMInferenceService",
        "metadata": {"name": "test-llmisvc", "namespace": namespace, "uid": "u-1"},
        "spec": {"model": {"uri": ""}},
    });
    for (k, val) in annotations {
        v["metadata"]["annotations"][*k] = (*val).into();
    }
    v
}

fn llm(annotations: &[(&str, &str)]) -> Value {
    llm_in(NS, annotations)
}

fn with_template(mut v: Value, template: Value) -> Value {
    v["spec"]["template"] = template;
    v
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

fn s3(name: &str) -> Value {
    secret(name, "s3", &[("AWS_S3_BUCKET", "b")])
}

fn cluster(objects: impl IntoIterator<Item = Value>) -> FakeCluster {
    FakeCluster::for_manifest(&LlmGateway::manifest()).with_all(objects)
}

struct Review {
    op: Operation,
    object: Value,
    old: Option<Value>,
    dry_run: bool,
    path: &'static str,
}

fn create(object: Value) -> Review {
    Review {
        op: Operation::Create,
        object,
        old: None,
        dry_run: false,
        path: MUTATING_PATH_V1ALPHA2,
    }
}

fn update(old: Value, object: Value) -> Review {
    Review {
        op: Operation::Update,
        old: Some(old),
        ..create(object)
    }
}

impl Review {
    fn decide(&self, cluster: &FakeCluster) -> AdmissionDecision {
        let mut request =
            AdmissionRequest::for_object(self.path, self.op, &Object(self.object.clone()))
                .with_namespace(NS);
        if let Some(old) = &self.old {
            request = request.with_old_object(&Object(old.clone()));
        }
        request.dry_run = self.dry_run;
        LlmGateway::mutate(&request, &Ctx::new(&Settings::default(), cluster)).unwrap()
    }

    /// The mutated object; panics on a denial.
    fn run(&self, cluster: &FakeCluster) -> Value {
        let decision = self.decide(cluster);
        assert!(decision.allowed, "denied: {:?}", decision.message);
        serde_json_parse(decision.mutated.as_deref().expect("a mutated object"))
    }

    /// The denial message; panics when allowed.
    fn denied(&self, cluster: &FakeCluster) -> String {
        let decision = self.decide(cluster);
        assert!(!decision.allowed, "allowed: {:?}", decision.mutated);
        assert_eq!(decision.code, Some(403));
        decision.message.unwrap()
    }
}

fn serde_json_parse(text: &str) -> Value {
    Object::parse(text).unwrap().into_value()
}

fn side_effects(decision: &AdmissionDecision) -> Vec<Value> {
    decision
        .side_effects
        .iter()
        .map(|d| serde_json_parse(&d.object))
        .collect()
}

fn uri(v: &Value) -> &str {
    v["spec"]["model"]["uri"].as_str().unwrap_or_default()
}

fn template(v: &Value) -> &Value {
    &v["spec"]["template"]
}

fn sa(v: &Value) -> Option<&str> {
    template(v)["serviceAccountName"].as_str()
}

fn pull_secrets(v: &Value) -> Vec<&str> {
    template(v)["imagePullSecrets"]
        .as_array()
        .map(|a| a.iter().filter_map(|s| s["name"].as_str()).collect())
        .unwrap_or_default()
}

// ── ConnectionsAPI (WC-*) ──

/// WC-01, WC-40: no annotation (CREATE, and UPDATE on both sides): nothing changes.
#[test]
fn wc_01_wc_40_no_connection() {
    let c = cluster([]);
    assert_eq!(create(llm(&[])).run(&c), llm(&[]));
    assert_eq!(update(llm(&[]), llm(&[])).run(&c), llm(&[]));
}

/// WC-02, WC-03, WC-04: refusals with upstream's texts.
#[test]
fn wc_02_to_04_invalid_connections() {
    let untyped = fixtures::secret("secret1").namespace(NS).build();
    let exotic = secret("secret1", "exotic", &[]);
    let with = |s: &str| create(llm(&[(CONNECTIONS, s)]));
    assert_eq!(
        with("secret1").denied(&cluster([untyped])),
        "connection \"secret1\" referenced by annotation \"opendatahub.io/connections\" must have a \"opendatahub.io/connection-type-protocol\" annotation on the Secret"
    );
    assert_eq!(
        with("secret1").denied(&cluster([exotic])),
        "connection \"secret1\" has unsupported connection type \"exotic\"; supported types are s3, uri, oci"
    );
    assert_eq!(
        with("missing-secret").denied(&cluster([])),
        "connection \"missing-secret\" referenced by annotation \"opendatahub.io/connections\" not found in namespace \"test-ns\""
    );
}

/// WC-05: an object being deleted is left alone.
#[test]
fn wc_05_deleting_object_untouched() {
    let mut v = llm(&[(CONNECTIONS, "s3-secret"), (PATH, "p")]);
    v["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z".into();
    v["metadata"]["finalizers"] = json!(["f"]);
    let out = create(v.clone()).run(&cluster([s3("s3-secret")]));
    assert_eq!(out, v);
}

/// WC-06, WC-07, WC-36: S3 sets the ServiceAccount (template created), the `s3://` URI, and
/// asks for `<secret>-sa` (an existing account is fine: the host creates if absent).
#[test]
fn wc_06_wc_07_wc_36_s3_injection() {
    let secret = secret("s3-secret", "s3", &[("AWS_S3_BUCKET", "my-bucket")]);
    let review = create(llm(&[(CONNECTIONS, "s3-secret"), (PATH, "models/llama")]));
    let c = cluster([secret]);
    let out = review.run(&c);
    assert_eq!(sa(&out), Some("s3-secret-sa"));
    assert_eq!(uri(&out), "s3://my-bucket/models/llama");
    assert_eq!(
        side_effects(&review.decide(&c)),
        [json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": "s3-secret-sa", "namespace": NS},
                "secrets": [{"name": "s3-secret"}]})]
    );
}

/// WC-08: a dry run injects but asks for no ServiceAccount.
#[test]
fn wc_08_dry_run_no_service_account() {
    let mut review = create(llm(&[(CONNECTIONS, "s3-secret"), (PATH, "m")]));
    review.dry_run = true;
    let c = cluster([s3("s3-secret")]);
    assert_eq!(uri(&review.run(&c)), "s3://b/m");
    assert!(side_effects(&review.decide(&c)).is_empty());
}

/// WC-09, WC-10, WC-31: S3 data errors; the ServiceAccount is still asked for (upstream
/// creates it before it validates the data; kept, as the doc's "Divergences" says).
#[test]
fn wc_09_wc_10_wc_31_s3_data_errors() {
    let no_bucket = secret("s3-secret", "s3", &[]);
    let empty = secret("s3-secret", "s3", &[("AWS_S3_BUCKET", "")]);
    let with_path = create(llm(&[(CONNECTIONS, "s3-secret"), (PATH, "p")]));
    let c = cluster([no_bucket]);
    assert_eq!(
        with_path.denied(&c),
        "failed to build S3 URI: connection does not contain 'AWS_S3_BUCKET' data key"
    );
    assert_eq!(side_effects(&with_path.decide(&c)).len(), 1);
    assert_eq!(
        with_path.denied(&cluster([empty])),
        "failed to build S3 URI: connection 'AWS_S3_BUCKET' data key is empty"
    );
    assert_eq!(
        create(llm(&[(CONNECTIONS, "s3-secret")])).denied(&cluster([s3("s3-secret")])),
        "failed to build S3 URI: connection info does not have a path"
    );
}

/// WC-11, WC-12, WC-30: URI from `https-host` (preferred) or `URI`.
#[test]
fn wc_11_wc_12_wc_30_uri_injection() {
    let review = create(llm(&[(CONNECTIONS, "uri-secret")]));
    let host = secret(
        "uri-secret",
        "uri",
        &[("https-host", "https://hf.co/model")],
    );
    assert_eq!(uri(&review.run(&cluster([host]))), "https://hf.co/model");
    let key = secret("uri-secret", "uri", &[("URI", "hf://facebook/model")]);
    assert_eq!(uri(&review.run(&cluster([key]))), "hf://facebook/model");
    let both = secret(
        "uri-secret",
        "uri",
        &[
            ("https-host", "https://preferred.com"),
            ("URI", "https://fallback.com"),
        ],
    );
    assert_eq!(uri(&review.run(&cluster([both]))), "https://preferred.com");
}

/// WC-13, and our decision on empty values (docs/plugins/llm-gateway.md, "Divergences"): no
/// key is denied; an empty or unparsable value is a clear denial (upstream panics on the empty
/// one).
#[test]
fn wc_13_uri_errors_never_panic() {
    let review = create(llm(&[(CONNECTIONS, "uri-secret")]));
    assert_eq!(
        review.denied(&cluster([secret("uri-secret", "uri", &[])])),
        "failed to get URI value: connection does not contain 'https-host' or 'URI' data key"
    );
    assert_eq!(
        review.denied(&cluster([secret("uri-secret", "uri", &[("URI", "")])])),
        "invalid URI \"\" from secret uri-secret: the URI is empty"
    );
    assert_eq!(
        review.denied(&cluster([secret(
            "uri-secret",
            "uri",
            &[("URI", "https://x/%zz")]
        )])),
        "invalid URI \"https://x/%zz\" from secret uri-secret: parse \"https://x/%zz\": invalid URL escape \"%zz\""
    );
    // Host and port are checked as Go's url.Parse checks them (texts of Go 1.25).
    for (value, error) in [
        ("http://host:port", "invalid port \":port\" after host"),
        ("http://[1.2.3.4]/m", "invalid IP-literal"),
        (
            "http://[zz]/m",
            "invalid host: ParseAddr(\"zz\"): unable to parse IP",
        ),
        ("http://a b/m", "invalid character \" \" in host name"),
    ] {
        assert_eq!(
            review.denied(&cluster([secret("uri-secret", "uri", &[("URI", value)])])),
            format!("invalid URI {value:?} from secret uri-secret: parse {value:?}: {error}")
        );
    }
}

/// WC-14, WC-15, WC-16, WC-38: OCI adds the pull secret once (template created), after the
/// existing ones; the model URI is untouched.
#[test]
fn wc_14_to_16_wc_38_oci_injection() {
    let c = cluster([secret("oci-secret", "oci", &[])]);
    let base = llm(&[(CONNECTIONS, "oci-secret")]);
    let out = create(base.clone()).run(&c);
    assert_eq!(pull_secrets(&out), ["oci-secret"]);
    assert_eq!(uri(&out), "");
    let already = with_template(
        base.clone(),
        json!({"imagePullSecrets": [{"name": "oci-secret"}]}),
    );
    assert_eq!(pull_secrets(&create(already).run(&c)), ["oci-secret"]);
    let other = with_template(
        base,
        json!({"imagePullSecrets": [{"name": "existing-secret"}]}),
    );
    assert_eq!(
        pull_secrets(&create(other).run(&c)),
        ["existing-secret", "oci-secret"]
    );
}

/// WC-17, WC-22: S3 removal clears the injected ServiceAccount (not a user's) and the URI.
#[test]
fn wc_17_wc_22_s3_removal() {
    let c = cluster([s3("s3-secret")]);
    let old = llm(&[(CONNECTIONS, "s3-secret"), (PATH, "models")]);
    let mut new = with_template(llm(&[]), json!({"serviceAccountName": "s3-secret-sa"}));
    new["spec"]["model"]["uri"] = "s3://my-bucket/models".into();
    let out = update(old.clone(), new.clone()).run(&c);
    assert_eq!(sa(&out), None);
    assert_eq!(uri(&out), "");
    new["spec"]["template"]["serviceAccountName"] = "user-custom-sa".into();
    assert_eq!(sa(&update(old, new).run(&c)), Some("user-custom-sa"));
}

/// WC-18, WC-25, WC-26: URI removal zeroes the URI and keeps the template.
#[test]
fn wc_18_wc_25_wc_26_uri_removal() {
    let c = cluster([secret("uri-secret", "uri", &[("URI", "https://x")])]);
    let old = llm(&[(CONNECTIONS, "uri-secret")]);
    let mut new = with_template(llm(&[]), json!({"serviceAccountName": "some-sa"}));
    new["spec"]["model"]["uri"] = "https://x".into();
    let out = update(old, new).run(&c);
    assert_eq!(uri(&out), "");
    assert_eq!(sa(&out), Some("some-sa"));
}

/// WC-19, WC-39: OCI removal drops only its pull secret (an emptied list goes) and, as
/// upstream does, clears the URI too.
#[test]
fn wc_19_wc_39_oci_removal() {
    let c = cluster([secret("oci-secret", "oci", &[])]);
    let old = llm(&[(CONNECTIONS, "oci-secret")]);
    let mut only = with_template(
        llm(&[]),
        json!({"imagePullSecrets": [{"name": "oci-secret"}]}),
    );
    only["spec"]["model"]["uri"] = "oci://x".into();
    let out = update(old.clone(), only).run(&c);
    assert!(pull_secrets(&out).is_empty());
    assert_eq!(template(&out).get("imagePullSecrets"), None);
    assert_eq!(uri(&out), "");
    let two = with_template(
        llm(&[]),
        json!({"imagePullSecrets": [{"name": "other"}, {"name": "oci-secret"}]}),
    );
    assert_eq!(pull_secrets(&update(old, two).run(&c)), ["other"]);
}

/// WC-20, WC-34: a direct cleanup without a secret name drops every pull secret.
#[test]
fn wc_20_wc_34_cleanup_without_a_name() {
    for type_ in ["oci", ""] {
        let mut v = with_template(llm(&[]), json!({"imagePullSecrets": [{"name": "a"}]}));
        let info = ConnectionInfo {
            type_: type_.into(),
            ..Default::default()
        };
        cleanup_llm_inference_service(&mut v, &info);
        assert_eq!(template(&v).get("imagePullSecrets"), None, "type {type_:?}");
    }
}

/// WC-21, WC-33: the old Secret is gone: both the S3 and the OCI fields are looked for.
#[test]
fn wc_21_wc_33_old_secret_deleted() {
    let c = cluster([]);
    let old = llm(&[(CONNECTIONS, "deleted-secret")]);
    let mut new = with_template(
        llm(&[]),
        json!({"serviceAccountName": "deleted-secret-sa",
               "imagePullSecrets": [{"name": "deleted-secret"}, {"name": "other"}]}),
    );
    new["spec"]["model"]["uri"] = "s3://x/y".into();
    let out = update(old, new).run(&c);
    assert_eq!(sa(&out), None);
    assert_eq!(pull_secrets(&out), ["other"]);
    assert_eq!(uri(&out), "");
}

/// WC-23, WC-41: switching connections replaces (old cleaned, new injected).
#[test]
fn wc_23_wc_41_replace() {
    let c = cluster([
        secret("uri-secret", "uri", &[("URI", "https://x")]),
        s3("s3-secret"),
        s3("old-secret"),
    ]);
    let new = llm(&[(CONNECTIONS, "s3-secret"), (PATH, "models/v1")]);
    let out = update(llm(&[(CONNECTIONS, "uri-secret")]), new.clone()).run(&c);
    assert_eq!(
        (sa(&out), uri(&out)),
        (Some("s3-secret-sa"), "s3://b/models/v1")
    );
    let old = llm(&[(CONNECTIONS, "old-secret"), (PATH, "models/v1")]);
    let carried = with_template(new, json!({"serviceAccountName": "old-secret-sa"}));
    let out = update(old, carried).run(&c);
    assert_eq!(
        (sa(&out), uri(&out)),
        (Some("s3-secret-sa"), "s3://b/models/v1")
    );
}

/// WC-24, WC-32: a path change re-injects for S3 only.
#[test]
fn wc_24_wc_32_path_changes() {
    let c = cluster([
        s3("s3-secret"),
        secret("uri-secret", "uri", &[("URI", "https://x")]),
    ]);
    let s3_old = llm(&[(CONNECTIONS, "s3-secret"), (PATH, "old")]);
    let s3_new = llm(&[(CONNECTIONS, "s3-secret"), (PATH, "new")]);
    assert_eq!(uri(&update(s3_old, s3_new).run(&c)), "s3://b/new");
    let uri_old = llm(&[(CONNECTIONS, "uri-secret"), (PATH, "old")]);
    let uri_new = llm(&[(CONNECTIONS, "uri-secret"), (PATH, "new")]);
    assert_eq!(uri(&update(uri_old, uri_new).run(&c)), "");
}

/// WC-27, WC-28, WC-29: the deprecated ref annotation's vocabulary.
#[test]
fn wc_27_to_29_ref_annotation() {
    let c = cluster([
        secret_ref("s3-secret", "s3", &[("AWS_S3_BUCKET", "b")]),
        secret_ref("uri-secret", "uri-v1", &[("URI", "https://x")]),
        secret_ref("oci-secret", "oci-v1", &[]),
    ]);
    let out = create(llm(&[(CONNECTIONS, "s3-secret"), (PATH, "m")])).run(&c);
    assert_eq!((sa(&out), uri(&out)), (Some("s3-secret-sa"), "s3://b/m"));
    assert_eq!(
        uri(&create(llm(&[(CONNECTIONS, "uri-secret")])).run(&c)),
        "https://x"
    );
    assert_eq!(
        pull_secrets(&create(llm(&[(CONNECTIONS, "oci-secret")])).run(&c)),
        ["oci-secret"]
    );
}

/// WC-35: the protocol annotation wins over the ref.
#[test]
fn wc_35_protocol_wins() {
    let both = fixtures::connection_secret("secret1", "s3")
        .namespace(NS)
        .annotation("opendatahub.io/connection-type-ref", "oci-v1")
        .data_entries(&[("AWS_S3_BUCKET", "b")])
        .build();
    let out = create(llm(&[(CONNECTIONS, "secret1"), (PATH, "m")])).run(&cluster([both]));
    assert_eq!((sa(&out), uri(&out)), (Some("secret1-sa"), "s3://b/m"));
    assert!(pull_secrets(&out).is_empty());
}

/// WC-37: a user's ServiceAccount is kept on create.
#[test]
fn wc_37_user_service_account_kept() {
    let v = with_template(
        llm(&[(CONNECTIONS, "s3-secret"), (PATH, "models/v1")]),
        json!({"serviceAccountName": "user-custom-sa"}),
    );
    let out = create(v).run(&cluster([s3("s3-secret")]));
    assert_eq!(
        (sa(&out), uri(&out)),
        (Some("user-custom-sa"), "s3://b/models/v1")
    );
}

/// WC-42: identical S3 annotations on UPDATE change nothing.
#[test]
fn wc_42_identical_update_unchanged() {
    let v = with_template(
        llm(&[(CONNECTIONS, "s3-secret"), (PATH, "m")]),
        json!({"serviceAccountName": "s3-secret-sa"}),
    );
    assert_eq!(
        update(v.clone(), v.clone()).run(&cluster([s3("s3-secret")])),
        v
    );
}

/// WC-43: fields the rules do not name survive the round trip untouched.
#[test]
fn wc_43_unknown_fields_survive() {
    let mut v = llm(&[(CONNECTIONS, "uri-secret")]);
    v["spec"]["router"] = json!({"gateway": {}, "x-unknown": [1, 2]});
    v["spec"]["replicas"] = 2.into();
    let out = create(v.clone()).run(&cluster([secret(
        "uri-secret",
        "uri",
        &[("URI", "hf://a")],
    )]));
    assert_eq!(out["spec"]["router"], v["spec"]["router"]);
    assert_eq!(out["spec"]["replicas"], 2);
}

/// WC-44: the v1alpha1 webhook applies the same rules.
#[test]
fn wc_44_v1alpha1_object() {
    let mut v = llm(&[(CONNECTIONS, "uri-secret")]);
    v["apiVersion"] = "serving.kserve.io/v1alpha1".into();
    let mut review = create(v);
    review.path = MUTATING_PATH_V1ALPHA1;
    let c = cluster([secret(
        "uri-secret",
        "uri",
        &[("URI", "hf://meta-llama/Llama-4")],
    )]);
    assert_eq!(uri(&review.run(&c)), "hf://meta-llama/Llama-4");
}

/// A failing Secret read is denied 403 with upstream's prefix.
#[test]
fn failing_secret_read_is_denied() {
    let c = cluster([]).fail(gvk::secret(), Error::Transient("etcd timeout".into()));
    assert_eq!(
        create(llm(&[(CONNECTIONS, "s")])).denied(&c),
        "failed to validate connection: etcd timeout"
    );
}

// ── HardwareProfile (LLM-*, HR-*; namespace test-llm-hwp-ns, profile test-llm-hwp) ──

const HNS: &str = "test-llm-hwp-ns";
const HWP: &str = "test-llm-hwp";

fn profile(name: &str) -> fixtures::HardwareProfile {
    fixtures::hardware_profile(name).namespace(HNS)
}

fn hwp_llm(annotations: &[(&str, &str)]) -> Value {
    llm_in(HNS, annotations)
}

fn with_hwp(template: Option<Value>) -> Value {
    let v = hwp_llm(&[(HWP_NAME, HWP)]);
    match template {
        Some(t) => with_template(v, t),
        None => v,
    }
}

fn queue(v: &Value) -> Option<&str> {
    v["metadata"]["labels"][QUEUE].as_str()
}

fn main_resources(v: &Value) -> &Value {
    &template(v)["containers"][0]["resources"]
}

fn tol(key: &str) -> Value {
    json!({"key": key, "operator": "Exists", "effect": "NoSchedule"})
}

/// LLM-1: no annotations: nothing.
#[test]
fn llm_1_no_annotations() {
    let out = create(hwp_llm(&[])).run(&cluster([]));
    assert_eq!(template(&out), &Value::Null);
    assert_eq!(queue(&out), None);
}

/// LLM-2: identifiers become the main container's requests and limits; the namespace
/// annotation is stamped.
#[test]
fn llm_2_identifiers_on_main() {
    let p = profile(HWP)
        .identifiers(&[("cpu", "4"), ("memory", "8Gi")])
        .build();
    let out = create(with_hwp(Some(json!({"containers": [{"name": "main"}]})))).run(&cluster([p]));
    let expected = json!({"cpu": "4", "memory": "8Gi"});
    assert_eq!(main_resources(&out)["requests"], expected);
    assert_eq!(main_resources(&out)["limits"], expected);
    assert_eq!(out["metadata"]["annotations"][HWP_NS], HNS);
}

/// LLM-3: node scheduling creates the template.
#[test]
fn llm_3_node_scheduling_creates_template() {
    let toleration = json!({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 300});
    let p = profile(HWP)
        .node_scheduling(json!({"zone": "gpu-zone"}), json!([toleration.clone()]))
        .build();
    let out = create(with_hwp(None)).run(&cluster([p]));
    assert_eq!(template(&out)["nodeSelector"], json!({"zone": "gpu-zone"}));
    assert_eq!(template(&out)["tolerations"], json!([toleration]));
}

/// LLM-4, LLM-10, LLM-15: a Kueue profile sets (overwrites) the queue label only.
#[test]
fn llm_4_llm_10_llm_15_kueue() {
    let p = profile(HWP)
        .kueue("test-queue")
        .node_scheduling(json!({"zone": "a"}), Value::Null)
        .build();
    let c = cluster([p]);
    let out = create(with_hwp(None)).run(&c);
    assert_eq!(queue(&out), Some("test-queue"));
    assert_eq!(template(&out), &Value::Null);
    let mut user = with_hwp(None);
    user["metadata"]["labels"] = json!({QUEUE: "user-queue"});
    assert_eq!(queue(&create(user).run(&c)), Some("test-queue"));
    let mut same = with_hwp(None);
    same["metadata"]["labels"] = json!({QUEUE: "test-queue"});
    assert_eq!(queue(&create(same).run(&c)), Some("test-queue"));
}

/// LLM-5, HR-2: a missing profile and a failing read are denied.
#[test]
fn llm_5_hr_2_missing_or_unreadable_profile() {
    let v = hwp_llm(&[(HWP_NAME, "missing-hwp")]);
    assert_eq!(
        create(v.clone()).denied(&cluster([])),
        "hardware profile \"missing-hwp\" not found in namespace \"test-llm-hwp-ns\""
    );
    let failing = cluster([]).fail(
        gvk::hardware_profile(),
        Error::Transient("transient connection error".into()),
    );
    assert_eq!(
        create(v).denied(&failing),
        "failed fetching hardware profile: failed fetching HardwareProfile test-llm-hwp-ns/missing-hwp: transient connection error"
    );
}

/// LLM-6: no `main` container: nothing applied, and the ContainerNameMismatch Event is asked
/// for (the namespace annotation is still stamped).
#[test]
fn llm_6_container_mismatch_event() {
    let p = profile(HWP)
        .identifiers(&[("cpu", "8")])
        .node_scheduling(json!({"zone": "a"}), Value::Null)
        .build();
    let v = with_hwp(Some(
        json!({"containers": [{"name": "server", "resources": {"requests": {"cpu": "2"}}}]}),
    ));
    let c = cluster([p]);
    let review = create(v);
    let out = review.run(&c);
    assert_eq!(main_resources(&out), &json!({"requests": {"cpu": "2"}}));
    assert_eq!(template(&out).get("nodeSelector"), None);
    assert_eq!(queue(&out), None);
    assert_eq!(out["metadata"]["annotations"][HWP_NS], HNS);
    let effects = side_effects(&review.decide(&c));
    assert_eq!(effects.len(), 1);
    let mut event = effects[0].clone();
    assert!(event["firstTimestamp"].as_str().unwrap().ends_with('Z'));
    assert_eq!(event["firstTimestamp"], event["lastTimestamp"]);
    event.as_object_mut().unwrap().remove("firstTimestamp");
    event.as_object_mut().unwrap().remove("lastTimestamp");
    assert_eq!(
        event,
        json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "test-llmisvc.hwp-container-name-mismatch", "namespace": HNS},
            "involvedObject": {"apiVersion": "serving.kserve.io/v1alpha2", "kind": "LLMInferenceService",
                               "namespace": HNS, "name": "test-llmisvc", "uid": "u-1"},
            "reason": "ContainerNameMismatch", "type": "Warning",
            "source": {"component": "hardwareprofile-webhook"}, "count": 1,
            "message": "HardwareProfile \"test-llm-hwp\" was not applied: no container named \"main\" found in spec.template.containers. Rename a container to \"main\" to enable HWP injection.",
        })
    );
}

/// LLM-7: identifiers with no template: `[main]` is created.
#[test]
fn llm_7_main_container_created() {
    let p = profile(HWP)
        .identifiers(&[("cpu", "4")])
        .node_scheduling(json!({"zone": "gpu-zone"}), Value::Null)
        .build();
    let out = create(with_hwp(None)).run(&cluster([p]));
    assert_eq!(template(&out)["containers"][0]["name"], "main");
    assert_eq!(main_resources(&out)["requests"]["cpu"], "4");
    assert_eq!(template(&out)["nodeSelector"], json!({"zone": "gpu-zone"}));
}

/// LLM-8, LLM-13: the user's request wins and becomes the limit; a limit-only value stays.
#[test]
fn llm_8_llm_13_user_values_kept() {
    let p = profile(HWP)
        .identifiers(&[("cpu", "4"), ("nvidia.com/gpu", "2")])
        .build();
    let c = cluster([p]);
    let v = with_hwp(Some(
        json!({"containers": [{"name": "main", "resources": {"requests": {"cpu": "2"}}}]}),
    ));
    let r = main_resources(&create(v).run(&c)).clone();
    assert_eq!(r["requests"], json!({"cpu": "2", "nvidia.com/gpu": "2"}));
    assert_eq!(r["limits"], json!({"cpu": "2", "nvidia.com/gpu": "2"}));
    let gpu = profile(HWP).identifiers(&[("nvidia.com/gpu", "2")]).build();
    let v = with_hwp(Some(
        json!({"containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}),
    ));
    let r = main_resources(&create(v).run(&cluster([gpu]))).clone();
    assert_eq!(
        r,
        json!({"requests": {"nvidia.com/gpu": "2"}, "limits": {"nvidia.com/gpu": "1"}})
    );
}

/// LLM-9, LLM-14: merging: the profile wins a key; its tolerations come first.
#[test]
fn llm_9_llm_14_merge() {
    let p = profile(HWP)
        .node_scheduling(json!({"zone": "eu-west"}), json!([tol("hwp-key")]))
        .build();
    let v = with_hwp(Some(
        json!({"nodeSelector": {"zone": "us-east"}, "tolerations": [tol("manual-key")]}),
    ));
    let out = create(v).run(&cluster([p]));
    assert_eq!(template(&out)["nodeSelector"], json!({"zone": "eu-west"}));
    assert_eq!(
        template(&out)["tolerations"],
        json!([tol("hwp-key"), tol("manual-key")])
    );
}

/// LLM-11, LLM-18: switching profiles replaces scheduling and the queue.
#[test]
fn llm_11_llm_18_profile_switch() {
    let a = profile("hwp-a")
        .node_scheduling(json!({"zone": "eu-west"}), json!([tol("key-a")]))
        .build();
    let b = profile("hwp-b")
        .node_scheduling(json!({"tier": "gpu"}), json!([tol("key-b")]))
        .build();
    let old = hwp_llm(&[(HWP_NAME, "hwp-a")]);
    let mut new = with_template(
        hwp_llm(&[(HWP_NAME, "hwp-b")]),
        json!({"nodeSelector": {"zone": "eu-west"}, "tolerations": [tol("key-a")]}),
    );
    new["metadata"]["labels"] = json!({QUEUE: "old-queue"});
    let out = update(old, new).run(&cluster([a, b]));
    assert_eq!(template(&out)["nodeSelector"], json!({"tier": "gpu"}));
    assert_eq!(template(&out)["tolerations"], json!([tol("key-b")]));
    assert_eq!(queue(&out), None);
    let qa = profile("hwp-a").kueue("queue-a").build();
    let qb = profile("hwp-b").kueue("queue-b").build();
    let mut new = hwp_llm(&[(HWP_NAME, "hwp-b")]);
    new["metadata"]["labels"] = json!({QUEUE: "queue-a"});
    let out = update(hwp_llm(&[(HWP_NAME, "hwp-a")]), new).run(&cluster([qa, qb]));
    assert_eq!(queue(&out), Some("queue-b"));
}

/// LLM-12, LLM-19, LLM-20: removing the annotation takes out what still matches the old
/// profile, and the namespace annotation; the main container's resources stay.
#[test]
fn llm_12_llm_19_llm_20_removal() {
    let a = profile("hwp-a")
        .node_scheduling(json!({"zone": "eu-west"}), json!([tol("key-a")]))
        .build();
    let c = cluster([a]);
    let old = hwp_llm(&[(HWP_NAME, "hwp-a")]);
    let new = with_template(
        hwp_llm(&[(HWP_NS, HNS)]),
        json!({"nodeSelector": {"zone": "eu-west"}, "tolerations": [tol("key-a"), tol("manual")]}),
    );
    let out = update(old.clone(), new).run(&c);
    assert_eq!(template(&out).get("nodeSelector"), None);
    assert_eq!(template(&out)["tolerations"], json!([tol("manual")]));
    assert_eq!(out["metadata"]["annotations"].get(HWP_NS), None);
    let user = with_template(hwp_llm(&[]), json!({"nodeSelector": {"zone": "us-east"}}));
    assert_eq!(
        template(&update(old.clone(), user).run(&c))["nodeSelector"],
        json!({"zone": "us-east"})
    );
    let empty = with_template(hwp_llm(&[]), json!({}));
    assert_eq!(template(&update(old.clone(), empty).run(&c)), &json!({}));
    // Injected resources are not taken back (as upstream; the doc's "Divergences").
    let resources = json!({"requests": {"cpu": "4"}, "limits": {"cpu": "4"}});
    let injected = with_template(
        hwp_llm(&[]),
        json!({"containers": [{"name": "main", "resources": resources.clone()}]}),
    );
    assert_eq!(main_resources(&update(old, injected).run(&c)), &resources);
}

/// LLM-16: the same name in another namespace is a switch.
#[test]
fn llm_16_namespace_switch() {
    let one = fixtures::hardware_profile(HWP)
        .namespace("namespace-1")
        .build();
    let two = fixtures::hardware_profile(HWP)
        .namespace("namespace-2")
        .node_scheduling(json!({"tier": "gpu"}), Value::Null)
        .build();
    let old = hwp_llm(&[(HWP_NAME, HWP), (HWP_NS, "namespace-1")]);
    let new = with_template(
        hwp_llm(&[(HWP_NAME, HWP), (HWP_NS, "namespace-2")]),
        json!({"nodeSelector": {"zone": "a"}, "tolerations": [tol("old-key")]}),
    );
    let out = update(old, new).run(&cluster([one, two]));
    assert_eq!(template(&out)["nodeSelector"], json!({"tier": "gpu"}));
    assert_eq!(template(&out).get("tolerations"), None);
}

/// LLM-17: a first assignment on UPDATE merges.
#[test]
fn llm_17_first_assignment_on_update() {
    let p = profile(HWP)
        .identifiers(&[("cpu", "4")])
        .node_scheduling(json!({"zone": "gpu-zone"}), Value::Null)
        .build();
    let new = with_hwp(Some(json!({"containers": [{"name": "main"}]})));
    let out = update(hwp_llm(&[]), new).run(&cluster([p]));
    assert_eq!(main_resources(&out)["requests"]["cpu"], "4");
    assert_eq!(template(&out)["nodeSelector"], json!({"zone": "gpu-zone"}));
    assert_eq!(queue(&out), None);
}

/// LLM-21, LLM-22: removing a Kueue profile drops the label whatever its value; a node-only
/// profile adds none.
#[test]
fn llm_21_llm_22_kueue_removal() {
    let q = profile("hwp-q").kueue("hwp-queue").build();
    let n = profile("hwp-n")
        .node_scheduling(json!({"a": "b"}), Value::Null)
        .build();
    let c = cluster([q, n]);
    let mut new = hwp_llm(&[]);
    new["metadata"]["labels"] = json!({QUEUE: "user-queue"});
    assert_eq!(
        queue(&update(hwp_llm(&[(HWP_NAME, "hwp-q")]), new).run(&c)),
        None
    );
    assert_eq!(
        queue(&update(hwp_llm(&[(HWP_NAME, "hwp-n")]), hwp_llm(&[])).run(&c)),
        None
    );
}

/// HR-1: no profile name: no HardwareProfile read at all (a read would be refused here).
#[test]
fn hr_1_empty_name_reads_nothing() {
    let c = cluster([]).deny(gvk::hardware_profile());
    assert_eq!(
        create(hwp_llm(&[(HWP_NAME, "")])).run(&c),
        hwp_llm(&[(HWP_NAME, "")])
    );
}

/// A body that does not decode is a 400; another kind is refused.
#[test]
fn undecodable_and_foreign_objects() {
    let mut request = AdmissionRequest::new(
        MUTATING_PATH_V1ALPHA2,
        gvk::llm_inference_service(),
        Operation::Create,
    );
    request.object = Some("{not json".into());
    let decision =
        LlmGateway::mutate(&request, &Ctx::new(&Settings::default(), &cluster([]))).unwrap();
    assert_eq!((decision.allowed, decision.code), (false, Some(400)));
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}});
    let request =
        AdmissionRequest::for_object(MUTATING_PATH_V1ALPHA2, Operation::Create, &Object(pod));
    let decision =
        LlmGateway::mutate(&request, &Ctx::new(&Settings::default(), &cluster([]))).unwrap();
    assert_eq!(
        decision.message.as_deref(),
        Some("expected a LLMInferenceService object but got v1, Kind=Pod")
    );
}
