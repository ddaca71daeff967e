//! PullSecretHandler scenarios PS1–PS6 and TemplateHandler scenarios T1–T6, and the generated
//! ServingRuntime (docs/plugins/nim-account.md, "Controller `odh-nim-controller`", step 5).

mod support;

use nim_account::names::condition::*;
use nim_account::reconcile::Flow;
use odh_plugin_sdk::{Object, Value, json};
use support::*;

const NS: &str = "testing-nim-pull-secret-handler";
const KEY: &str = "arbitrary-key";

fn pull_ref(ns: &str, name: &str) -> Value {
    reference("Secret", "v1", ns, name, "pull-uid")
}

fn existing_pull(labels: Value) -> Object {
    Object(json!({
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"name": format!("{NS}-pull"), "namespace": NS, "uid": "pull-uid",
                     "labels": labels, "annotations": {"dummy-ann-key": "v"}},
        "data": {".dockerconfigjson": odh_plugin_sdk::base64::encode(nim_account::reconcile::docker_config(KEY))}
    }))
}

/// PS1: the API-key Secret is missing: Error naming it, SecretUpdate/AccountStatus not True.
#[test]
fn ps1_missing_api_key_secret() {
    let mut account = account(NS);
    account.set(&["spec", "apiKeySecret", "name"], "im-not-here");
    let (flow, _, status) = handle(&account, &cluster(), &nvidia(), H::PullSecret);
    let Flow::Fail(error) = flow else {
        panic!("{flow:?}")
    };
    assert!(
        error
            .to_string()
            .contains(r#"secrets "im-not-here" not found"#)
    );
    assert!(status.nim_pull_secret.is_none());
    let c = cond(&status, SECRET_UPDATE);
    assert_eq!(
        (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
        ("False", "SecretNotUpdated", "pull secret reconcile failed")
    );
    assert!(!is_true(&status, ACCOUNT_STATUS));
    assert_eq!(status.last_account_check, Some(now()));
}

/// PS2: no pull Secret yet: applied with exactly the managed label and the `nvcr.io`
/// dockerconfigjson; Requeue; reference set; lastAccountCheck untouched.
#[test]
fn ps2_pull_secret_created() {
    let cluster = cluster().with(api_key_secret(NS, KEY));
    let (flow, plan, status) = handle(&account(NS), &cluster, &nvidia(), H::PullSecret);
    assert!(matches!(flow, Flow::Requeue), "{flow:?}");
    assert!(status.nim_pull_secret.is_some());
    assert!(is_true(&status, SECRET_UPDATE));
    assert_eq!(
        cond(&status, SECRET_UPDATE).message,
        "pull secret reconciled successfully"
    );
    assert!(status.last_account_check.is_none());
    let secret = plan
        .into_outcome()
        .applied_object("Secret", &format!("{NS}-pull"));
    assert_eq!(
        secret.at(&["metadata", "labels"]),
        Some(&json!({"opendatahub.io/managed": "true"}))
    );
    assert_eq!(
        secret.str_at(&["type"]),
        Some("kubernetes.io/dockerconfigjson")
    );
    let config =
        odh_plugin_sdk::base64::decode(secret.str_at(&["data", ".dockerconfigjson"]).unwrap())
            .unwrap();
    assert_eq!(
        String::from_utf8(config).unwrap(),
        r#"{"auths":{"nvcr.io":{"password":"arbitrary-key","username":"$oauthtoken"}}}"#
    );
}

/// PS3: an existing, referenced pull Secret with SecretUpdate False: Requeue, True.
#[test]
fn ps3_failed_condition_recovers() {
    let cluster = cluster()
        .with(api_key_secret(NS, KEY))
        .with(existing_pull(json!({"opendatahub.io/managed": "true"})));
    let account = with_status(
        account(NS),
        json!({"nimPullSecret": pull_ref(NS, &format!("{NS}-pull")),
                                                   "conditions": [condition(SECRET_UPDATE, "False", &ago(5))]}),
    );
    let (flow, _, status) = handle(&account, &cluster, &nvidia(), H::PullSecret);
    assert!(matches!(flow, Flow::Requeue));
    assert!(is_true(&status, SECRET_UPDATE));
}

/// PS4: existing, referenced, SecretUpdate True (same reason/message): Continue; the apply
/// names only the managed label, so custom metadata stays.
#[test]
fn ps4_up_to_date_pull_secret_continues() {
    let cluster = cluster().with(api_key_secret(NS, KEY)).with(existing_pull(
        json!({"opendatahub.io/managed": "true", "dummy-label-key": "v"}),
    ));
    let mut account = account(NS);
    account.set(
        &["status"],
        json!({"nimPullSecret": pull_ref(NS, &format!("{NS}-pull"))}),
    );
    let (_, _, first) = handle(&account, &cluster, &nvidia(), H::PullSecret);
    let account = with_status(account, serde_json::to_value(&first).unwrap());
    let (flow, plan, _) = handle(&account, &cluster, &nvidia(), H::PullSecret);
    assert!(matches!(flow, Flow::Continue), "{flow:?}");
    let secret = plan
        .into_outcome()
        .applied_object("Secret", &format!("{NS}-pull"));
    assert_eq!(secret.labels().len(), 1);
    assert!(secret.annotations().is_empty());
}

/// PS5: the pull Secret lost the managed label: re-applied with it, and still Continue.
#[test]
fn ps5_label_repair_does_not_requeue() {
    let cluster = cluster()
        .with(api_key_secret(NS, KEY))
        .with(existing_pull(json!({"dummy-label-key": "v"})));
    let account = with_status(
        account(NS),
        json!({"nimPullSecret": pull_ref(NS, &format!("{NS}-pull")),
        "conditions": [{"type": SECRET_UPDATE, "status": "True", "reason": "SecretUpdated",
                        "message": "pull secret reconciled successfully", "observedGeneration": 1,
                        "lastTransitionTime": ago(5)}]}),
    );
    let (flow, plan, _) = handle(&account, &cluster, &nvidia(), H::PullSecret);
    assert!(matches!(flow, Flow::Continue), "{flow:?}");
    let secret = plan
        .into_outcome()
        .applied_object("Secret", &format!("{NS}-pull"));
    assert_eq!(secret.label("opendatahub.io/managed"), Some("true"));
}

/// PS6: the reference names a Secret that does not exist: the generated one is applied and
/// referenced.
#[test]
fn ps6_dangling_reference_replaced() {
    let cluster = cluster().with(api_key_secret(NS, KEY));
    let account = with_status(
        account(NS),
        json!({"nimPullSecret": pull_ref("this-isn't-happening", "im-not-here-pull"),
        "conditions": [condition(SECRET_UPDATE, "True", &ago(5))]}),
    );
    let (flow, plan, status) = handle(&account, &cluster, &nvidia(), H::PullSecret);
    assert!(matches!(flow, Flow::Requeue));
    assert_eq!(
        status.nim_pull_secret.unwrap().name,
        Some(format!("{NS}-pull"))
    );
    plan.into_outcome()
        .applied_object("Secret", &format!("{NS}-pull"));
}

const TNS: &str = "testing-nim-template-handler";

fn existing_template(labels: Value, annotations: Value, objects: Value) -> Object {
    Object(json!({
        "apiVersion": "template.openshift.io/v1", "kind": "Template",
        "metadata": {"name": format!("{TNS}-template"), "namespace": TNS, "uid": "t-uid",
                     "labels": labels, "annotations": annotations},
        "objects": objects
    }))
}

fn template_ref() -> Value {
    reference(
        "Template",
        "template.openshift.io/v1",
        TNS,
        &format!("{TNS}-template"),
        "t-uid",
    )
}

/// T1: a Template that cannot be applied (the referenced one lives in another namespace, so
/// upstream's extracted apply is rejected; the build failure of upstream's test cannot happen
/// here): Error, the reference not updated, not True.
#[test]
fn t1_template_failure() {
    let mut other = existing_template(json!({}), json!({}), json!([]));
    other.set(&["metadata", "namespace"], "elsewhere");
    let cluster = cluster().with(other);
    let account = with_status(
        account(TNS),
        json!({"runtimeTemplate":
        reference("Template", "template.openshift.io/v1", "elsewhere", &format!("{TNS}-template"), "t-uid")}),
    );
    let (flow, plan, status) = handle(&account, &cluster, &nvidia(), H::Template);
    assert!(matches!(flow, Flow::Fail(_)), "{flow:?}");
    // Not replaced by a new reference (upstream's T1 starts without one and ends without).
    assert_eq!(
        status
            .runtime_template
            .clone()
            .and_then(|r| r.namespace)
            .as_deref(),
        Some("elsewhere")
    );
    let c = cond(&status, TEMPLATE_UPDATE);
    assert_eq!(
        (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
        (
            "False",
            "TemplateNotUpdated",
            "runtime template reconcile failed"
        )
    );
    assert!(!is_true(&status, ACCOUNT_STATUS));
    assert_eq!(status.last_account_check, Some(now()));
    assert!(plan.outcome().apply.is_empty());
}

/// T2: no Template yet: applied with exactly the common labels and the two template
/// annotations, one object (the NIM ServingRuntime); Requeue; lastAccountCheck untouched.
#[test]
fn t2_template_created() {
    let (flow, plan, status) = handle(&account(TNS), &cluster(), &nvidia(), H::Template);
    assert!(matches!(flow, Flow::Requeue));
    assert!(status.runtime_template.is_some());
    assert!(is_true(&status, TEMPLATE_UPDATE));
    assert!(status.last_account_check.is_none());
    let template = plan
        .into_outcome()
        .applied_object("Template", &format!("{TNS}-template"));
    assert_eq!(
        template.at(&["metadata", "labels"]),
        Some(&json!({"opendatahub.io/managed": "true"}))
    );
    assert_eq!(
        template.at(&["metadata", "annotations"]),
        Some(
            &json!({"opendatahub.io/apiProtocol": "REST", "opendatahub.io/modelServingSupport": "[\"single\"]"})
        )
    );
    let objects = template.array_at(&["objects"]);
    assert_eq!(objects.len(), 1);
    assert_eq!(
        objects[0],
        nim_account::runtime_template::serving_runtime(false)
    );
}

/// T3: existing, referenced Template with TemplateUpdate False: Requeue, True, the runtime
/// (re)applied.
#[test]
fn t3_failed_condition_recovers() {
    let cluster = cluster().with(existing_template(
        json!({"opendatahub.io/managed": "true"}),
        json!({}),
        json!([]),
    ));
    let account = with_status(
        account(TNS),
        json!({"runtimeTemplate": template_ref(),
        "conditions": [condition(TEMPLATE_UPDATE, "False", &ago(5))]}),
    );
    let (flow, plan, status) = handle(&account, &cluster, &nvidia(), H::Template);
    assert!(matches!(flow, Flow::Requeue));
    assert!(is_true(&status, TEMPLATE_UPDATE));
    assert_eq!(
        plan.into_outcome()
            .applied_object("Template", &format!("{TNS}-template"))
            .array_at(&["objects"])
            .len(),
        1
    );
}

fn template_true() -> Value {
    json!({"runtimeTemplate": template_ref(),
           "conditions": [{"type": TEMPLATE_UPDATE, "status": "True", "reason": "TemplateUpdated",
                           "message": "runtime template reconciled successfully", "observedGeneration": 1,
                           "lastTransitionTime": ago(5)}]})
}

/// T4: an up-to-date Template (required and custom metadata, its runtime): Continue; the
/// existing objects kept (toggling air-gapped does not rewrite them); custom metadata not named.
#[test]
fn t4_up_to_date_template_continues() {
    let kept = json!([{"apiVersion": "serving.kserve.io/v1alpha1", "kind": "ServingRuntime", "metadata": {"name": "kept"}}]);
    let cluster = cluster().with(existing_template(
        json!({"opendatahub.io/managed": "true", "dummy-label-key": "v"}),
        json!({"opendatahub.io/apiProtocol": "REST", "opendatahub.io/modelServingSupport": "[\"single\"]", "dummy-ann-key": "v"}),
        kept.clone(),
    ));
    let account = with_status(account(TNS), template_true());
    let (flow, plan, _) = handle(&account, &cluster, &nvidia(), H::Template);
    assert!(matches!(flow, Flow::Continue), "{flow:?}");
    let template = plan
        .into_outcome()
        .applied_object("Template", &format!("{TNS}-template"));
    assert_eq!(template.at(&["objects"]), Some(&kept));
    assert_eq!(template.labels().len(), 1);
    assert_eq!(template.annotations().len(), 2);
}

/// T5: a Template with only custom metadata and no objects: Continue; the required label, both
/// annotations and the runtime are applied.
#[test]
fn t5_missing_required_metadata_and_runtime_added() {
    let cluster = cluster().with(existing_template(
        json!({"dummy-label-key": "v"}),
        json!({"dummy-ann-key": "v"}),
        json!([]),
    ));
    let account = with_status(account(TNS), template_true());
    let (flow, plan, _) = handle(&account, &cluster, &nvidia(), H::Template);
    assert!(matches!(flow, Flow::Continue), "{flow:?}");
    let template = plan
        .into_outcome()
        .applied_object("Template", &format!("{TNS}-template"));
    assert_eq!(template.label("opendatahub.io/managed"), Some("true"));
    assert_eq!(
        template.annotation("opendatahub.io/apiProtocol"),
        Some("REST")
    );
    assert_eq!(
        template.annotation("opendatahub.io/modelServingSupport"),
        Some("[\"single\"]")
    );
    assert_eq!(template.array_at(&["objects"]).len(), 1);
}

/// T6: the reference names a Template that does not exist: the generated one is applied and
/// referenced.
#[test]
fn t6_dangling_reference_replaced() {
    let account = with_status(
        account(TNS),
        json!({"runtimeTemplate":
        reference("Template", "template.openshift.io/v1", TNS, "gone", "g")}),
    );
    let (flow, plan, status) = handle(&account, &cluster(), &nvidia(), H::Template);
    assert!(matches!(flow, Flow::Requeue));
    assert_eq!(
        status.runtime_template.unwrap().name,
        Some(format!("{TNS}-template"))
    );
    plan.into_outcome()
        .applied_object("Template", &format!("{TNS}-template"));
}

/// The ServingRuntime's fields; air-gapped drops the NGC key and pull secret.
#[test]
fn serving_runtime_shape() {
    let online = nim_account::runtime_template::serving_runtime(false);
    assert_eq!(online["metadata"]["name"], "nvidia-nim-runtime");
    assert_eq!(
        online["metadata"]["annotations"]["runtimes.opendatahub.io/nvidia-nim"],
        "true"
    );
    assert_eq!(
        online["metadata"]["annotations"]["opendatahub.io/recommended-accelerators"],
        "[\"nvidia.com/gpu\"]"
    );
    assert_eq!(
        online["spec"]["imagePullSecrets"],
        json!([{"name": "ngc-secret"}])
    );
    let container = &online["spec"]["containers"][0];
    assert_eq!(
        container["env"][1]["valueFrom"]["secretKeyRef"],
        json!({"name": "nvidia-nim-secrets", "key": "NGC_API_KEY"})
    );
    assert_eq!(container["volumeMounts"].as_array().unwrap().len(), 9);
    assert_eq!(online["spec"]["volumes"].as_array().unwrap().len(), 8);
    assert_eq!(container["resources"]["limits"]["nvidia.com/gpu"], "2");
    let offline = nim_account::runtime_template::serving_runtime(true);
    assert!(offline["spec"].get("imagePullSecrets").is_none());
    assert_eq!(
        offline["spec"]["containers"][0]["env"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

/// T1 (a second way): the cluster does not serve OpenShift's Template kind: the handler fails
/// as upstream's apply does (TemplateUpdate False, Error) instead of reporting success.
#[test]
fn t1_template_kind_not_served_fails_the_handler() {
    let cluster = cluster().fail(
        odh_kinds::gvk::template(),
        odh_plugin_sdk::Error::Invalid(
            r#"no matches for kind "Template" in version "template.openshift.io/v1""#.into(),
        ),
    );
    let (flow, plan, status) = handle(&account(TNS), &cluster, &nvidia(), H::Template);
    let Flow::Fail(error) = flow else {
        panic!("{flow:?}")
    };
    assert!(error.to_string().contains("no matches for kind"), "{error}");
    assert_eq!(
        cond(&status, TEMPLATE_UPDATE).message,
        "runtime template reconcile failed"
    );
    assert!(plan.outcome().apply.is_empty());
}

/// PS2 and T2 with the host's writes (spec §1.8 step 3, §1.10 step 2): the object is applied
/// while the pass runs and the status reference is built from the API server's answer, uid
/// included, in the same pass; a refused apply is the handler's failure status and error.
#[test]
fn references_carry_the_uid_of_the_apply_answer() {
    use odh_plugin_sdk::testing::FakeWrites;
    let cluster = cluster().with(api_key_secret(NS, KEY));
    let writes = FakeWrites::new();
    let (flow, plan, status) = handle_writing(
        &account(NS),
        &cluster,
        &nvidia(),
        Some(&writes),
        H::PullSecret,
    );
    assert!(matches!(flow, Flow::Requeue), "{flow:?}");
    let reference = status.nim_pull_secret.clone().unwrap();
    assert_eq!(
        reference.uid.as_deref(),
        Some(format!("uid-{NS}-pull").as_str())
    );
    assert!(
        plan.into_outcome().apply.is_empty(),
        "applied now, not by the plan"
    );
    assert_eq!(writes.applied().len(), 1);

    let writes = FakeWrites::new();
    let (flow, _, status) = handle_writing(
        &account(NS),
        &cluster,
        &nvidia(),
        Some(&writes),
        H::Template,
    );
    assert!(matches!(flow, Flow::Requeue), "{flow:?}");
    assert!(status.runtime_template.unwrap().uid.is_some());

    let refused = FakeWrites::new().fail(
        odh_kinds::gvk::secret(),
        FakeWrites::refused(403, "Forbidden", "no"),
    );
    let (flow, _, status) = handle_writing(
        &account(NS),
        &cluster,
        &nvidia(),
        Some(&refused),
        H::PullSecret,
    );
    let Flow::Fail(error) = flow else {
        panic!("{flow:?}")
    };
    assert_eq!(error.message(), "no");
    assert!(!is_true(&status, SECRET_UPDATE));
    assert_eq!(cond(&status, SECRET_UPDATE).reason, "SecretNotUpdated");
}
