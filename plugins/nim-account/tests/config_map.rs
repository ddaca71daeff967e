//! ConfigMapHandler scenarios CM1–CM12 and the model data format.

mod support;

use nim_account::names::condition::*;
use nim_account::reconcile::Flow;
use odh_plugin_sdk::{Object, json};
use support::nvidia::{LEGACY_KEY, PERSONAL_KEY};
use support::*;

const NS: &str = "testing-nim-configmap-handler";

fn validated(extra: odh_plugin_sdk::Value) -> Object {
    let mut status = json!({"lastSuccessfulValidation": ago(60),
                            "conditions": [condition(API_KEY_VALIDATION, "True", &ago(60))]});
    for (k, v) in extra.as_object().unwrap() {
        if k == "conditions" {
            status["conditions"]
                .as_array_mut()
                .unwrap()
                .extend(v.as_array().unwrap().clone());
        } else {
            status[k] = v.clone();
        }
    }
    with_status(account(NS), status)
}

fn existing_cm(labels: odh_plugin_sdk::Value) -> Object {
    Object(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("{NS}-cm"), "namespace": NS, "uid": "cm-uid",
                     "labels": labels, "annotations": {"dummy-ann-key": "dummy-ann-value"}},
        "data": {}
    }))
}

fn cm_ref() -> odh_plugin_sdk::Value {
    reference("ConfigMap", "v1", NS, &format!("{NS}-cm"), "cm-uid")
}

fn applied_cm(plan: odh_plugin_sdk::Plan) -> Object {
    plan.into_outcome()
        .applied_object("ConfigMap", &format!("{NS}-cm"))
}

/// CM1: the key is not validated: Continue, nothing refreshed, no HTTP.
#[test]
fn cm1_unvalidated_key_is_not_refreshed() {
    let account = with_status(
        account(NS),
        json!({"conditions": [condition(API_KEY_VALIDATION, "False", &ago(5))]}),
    );
    let http = nvidia();
    let (flow, plan, status) = handle(&account, &cluster(), &http, H::ConfigMap);
    assert!(matches!(flow, Flow::Continue), "{flow:?}");
    assert!(status.last_successful_config_refresh.is_none() && status.nim_config.is_none());
    assert!(plan.outcome().apply.is_empty() && http.requests().is_empty());
}

/// CM2: a legacy key, no ConfigMap yet: Requeue, the ConfigMap applied (owned, managed label,
/// one compact Go-JSON value per model with model data), reference and refresh time set.
#[test]
fn cm2_config_map_created_with_model_data() {
    let cluster = cluster().with(api_key_secret(NS, LEGACY_KEY));
    let http = nvidia();
    let (flow, plan, status) = handle(&validated(json!({})), &cluster, &http, H::ConfigMap);
    assert!(matches!(flow, Flow::Requeue), "{flow:?}");
    assert_eq!(status.last_successful_config_refresh, Some(now()));
    let reference = status.nim_config.clone().expect("nimConfig");
    assert_eq!(reference.name.as_deref(), Some(format!("{NS}-cm").as_str()));
    let c = cond(&status, CONFIG_MAP_UPDATE);
    assert_eq!(
        (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
        (
            "True",
            "ConfigMapUpdated",
            "nim config reconciled successfully"
        )
    );
    let outcome = plan.into_outcome();
    let applied = outcome
        .applied("ConfigMap", &format!("{NS}-cm"))
        .expect("applied");
    assert_eq!(applied.ownership, odh_plugin_sdk::Ownership::Controller);
    let cm = applied.object;
    assert_eq!(cm.label("opendatahub.io/managed"), Some("true"));
    // Nemotron has no model data (skipped): two keys.
    let data = cm.at(&["data"]).unwrap().as_object().unwrap();
    assert_eq!(
        data.keys().collect::<Vec<_>>(),
        ["llama-3.1-8b-instruct", "phi-3-mini-4k-instruct"]
    );
    assert_eq!(
        data["phi-3-mini-4k-instruct"],
        r#"{"name":"phi-3-mini-4k-instruct","displayName":"Phi-3-Mini-4K-Instruct","shortDescription":"NVIDIA NIM for GPU supported Phi-3-Mini-4K-Instruct inference through OpenAI compatible APIs","namespace":"nim/microsoft","tags":["1.2.3","latest","1.2","1"],"latestTag":"1.2.3","updatedDate":"2024-10-22T18:14:56.808Z"}"#
    );
    // The legacy key's model-data token, then one request per runtime.
    let summary = http.summary();
    assert!(
        summary.contains(&"GET https://authn.nvidia.com/token?service=ngc&".to_string()),
        "{summary:#?}"
    );
    assert!(summary.contains(&"GET https://api.ngc.nvidia.com/v2/org/nim/team/nvidia/repos/nemotron-4-340b-instruct?resolve-labels=true".to_string()));
}

/// CM3: the API-key Secret is missing: Error naming it; the failure conditions, with
/// APIKeyValidation still True (the key manager's clean status is replaced, as upstream's).
#[test]
fn cm3_missing_api_key_secret_is_an_error() {
    let mut account = validated(json!({}));
    account.set(&["spec", "apiKeySecret", "name"], "im-not-here");
    let (flow, _, status) = handle(&account, &cluster(), &nvidia(), H::ConfigMap);
    let Flow::Fail(error) = flow else {
        panic!("{flow:?}")
    };
    assert!(
        error
            .to_string()
            .contains(r#"secrets "im-not-here" not found"#),
        "{error}"
    );
    assert!(status.nim_pull_secret.is_none());
    let c = cond(&status, CONFIG_MAP_UPDATE);
    assert_eq!(
        (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
        (
            "False",
            "ConfigMapNotUpdated",
            "nim config reconciliation failed"
        )
    );
    assert!(!is_true(&status, ACCOUNT_STATUS));
    assert!(is_true(&status, API_KEY_VALIDATION));
    assert_eq!(status.last_account_check, Some(now()));
}

/// CM4: nimConfig names a ConfigMap that does not exist: the generated one is applied and
/// referenced instead.
#[test]
fn cm4_dangling_reference_replaced() {
    let cluster = cluster().with(api_key_secret(NS, LEGACY_KEY));
    let account = validated(
        json!({"nimConfig": reference("ConfigMap", "v1", "configmap", "non-existing", "x")}),
    );
    let (flow, plan, status) = handle(&account, &cluster, &nvidia(), H::ConfigMap);
    assert!(matches!(flow, Flow::Requeue));
    assert_eq!(status.last_successful_config_refresh, Some(now()));
    assert_eq!(status.nim_config.unwrap().name, Some(format!("{NS}-cm")));
    applied_cm(plan);
}

/// CM5: everything fresh (validated 1 min ago, refreshed now, managed label present): Continue.
#[test]
fn cm5_fresh_config_is_kept() {
    let cluster = cluster()
        .with(api_key_secret(NS, LEGACY_KEY))
        .with(existing_cm(
            json!({"opendatahub.io/managed": "true", "dummy-label-key": "v"}),
        ));
    let account = validated(
        json!({"nimConfig": cm_ref(), "lastSuccessfulConfigRefresh": now(),
                                   "conditions": [condition(CONFIG_MAP_UPDATE, "True", &now())]}),
    );
    let http = nvidia();
    let (flow, plan, status) = handle(&account, &cluster, &http, H::ConfigMap);
    assert!(matches!(flow, Flow::Continue), "{flow:?}");
    assert_eq!(status.last_successful_config_refresh, Some(now()));
    assert!(plan.outcome().apply.is_empty() && http.requests().is_empty());
}

/// CM6: the key was validated after the last refresh: refreshed.
#[test]
fn cm6_validated_after_refresh_refreshes() {
    let cluster = cluster()
        .with(api_key_secret(NS, LEGACY_KEY))
        .with(existing_cm(json!({"opendatahub.io/managed": "true"})));
    let mut account = validated(
        json!({"nimConfig": cm_ref(), "lastSuccessfulConfigRefresh": ago(60),
                                       "conditions": [condition(CONFIG_MAP_UPDATE, "True", &ago(60))]}),
    );
    account.set(&["status", "lastSuccessfulValidation"], now());
    let (flow, _, status) = handle(&account, &cluster, &nvidia(), H::ConfigMap);
    assert!(matches!(flow, Flow::Requeue), "{flow:?}");
    assert_eq!(status.last_successful_config_refresh, Some(now()));
}

/// CM7: ConfigMapUpdate False: refreshed.
#[test]
fn cm7_failed_config_refreshes() {
    let cluster = cluster()
        .with(api_key_secret(NS, LEGACY_KEY))
        .with(existing_cm(json!({"opendatahub.io/managed": "true"})));
    let account = validated(
        json!({"nimConfig": cm_ref(), "lastSuccessfulConfigRefresh": ago(1),
                                   "conditions": [condition(CONFIG_MAP_UPDATE, "False", &ago(1))]}),
    );
    let (flow, _, status) = handle(&account, &cluster, &nvidia(), H::ConfigMap);
    assert!(matches!(flow, Flow::Requeue));
    assert_eq!(status.last_successful_config_refresh, Some(now()));
}

/// CM8: the ConfigMap lost the managed label: refreshed, the label added (custom metadata is
/// the user's and stays: the apply names only the managed label).
#[test]
fn cm8_missing_managed_label_restored() {
    let cluster = cluster()
        .with(api_key_secret(NS, LEGACY_KEY))
        .with(existing_cm(json!({"dummy-label-key": "dummy-label-value"})));
    let mut account = validated(
        json!({"nimConfig": cm_ref(), "lastSuccessfulConfigRefresh": now(),
                                       "conditions": [condition(CONFIG_MAP_UPDATE, "True", &now())]}),
    );
    account.set(&["status", "lastSuccessfulValidation"], ago(1));
    let (flow, plan, status) = handle(&account, &cluster, &nvidia(), H::ConfigMap);
    assert!(matches!(flow, Flow::Requeue), "{flow:?}");
    assert_eq!(status.last_successful_config_refresh, Some(now()));
    let cm = applied_cm(plan);
    assert_eq!(cm.labels().len(), 1);
    assert_eq!(cm.label("opendatahub.io/managed"), Some("true"));
    assert!(cm.annotations().is_empty());
}

/// CM9: validated 26 h and refreshed 25 h ago (rate 24h): refreshed.
#[test]
fn cm9_expired_refresh_rate_refreshes() {
    let cluster = cluster()
        .with(api_key_secret(NS, LEGACY_KEY))
        .with(existing_cm(json!({"opendatahub.io/managed": "true"})));
    let mut account = validated(
        json!({"nimConfig": cm_ref(), "lastSuccessfulConfigRefresh": ago(25 * 3600),
                                       "conditions": [condition(CONFIG_MAP_UPDATE, "True", &ago(25 * 3600))]}),
    );
    account.set(&["status", "lastSuccessfulValidation"], ago(26 * 3600));
    let (flow, _, status) = handle(&account, &cluster, &nvidia(), H::ConfigMap);
    assert!(matches!(flow, Flow::Requeue));
    assert_eq!(status.last_successful_config_refresh, Some(now()));
}

fn model_list(models: &str) -> Object {
    Object(json!({"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": format!("{NS}-model-selection"), "namespace": NS},
                  "data": {"models": models}}))
}

/// CM10: the model list keeps phi only: one key.
#[test]
fn cm10_model_list_filters_the_data() {
    let cluster = cluster()
        .with(api_key_secret(NS, LEGACY_KEY))
        .with(model_list(r#"["phi-3-mini-4k-instruct"]"#));
    let mut account = validated(json!({}));
    account.set(
        &["spec", "modelListConfig"],
        json!({"name": format!("{NS}-model-selection")}),
    );
    let (flow, plan, _) = handle(&account, &cluster, &nvidia(), H::ConfigMap);
    assert!(matches!(flow, Flow::Requeue));
    let cm = applied_cm(plan);
    let keys: Vec<&String> = cm
        .at(&["data"])
        .unwrap()
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["phi-3-mini-4k-instruct"]);
}

/// CM11: two keys without a model list; once the Account names a list, the same ConfigMap
/// is refreshed to one key (the apply replaces the data we own).
#[test]
fn cm11_adding_a_model_list_narrows_the_existing_config_map() {
    let mut cluster = cluster()
        .with(api_key_secret(NS, LEGACY_KEY))
        .with(model_list(r#"["phi-3-mini-4k-instruct"]"#));
    let (flow, plan, status) = handle(&validated(json!({})), &cluster, &nvidia(), H::ConfigMap);
    assert!(matches!(flow, Flow::Requeue));
    let mut cm = applied_cm(plan);
    assert_eq!(cm.at(&["data"]).unwrap().as_object().unwrap().len(), 2);
    cm.set(&["metadata", "uid"], "cm-uid");
    cluster.insert(cm);

    let mut account = with_status(account(NS), serde_json::to_value(&status).unwrap());
    account.set(
        &["spec", "modelListConfig"],
        json!({"name": format!("{NS}-model-selection")}),
    );
    account.set(&["status", "lastSuccessfulValidation"], later(1));
    let (flow, plan, _) = handle(&account, &cluster, &nvidia(), H::ConfigMap);
    assert!(matches!(flow, Flow::Requeue), "{flow:?}");
    let cm = applied_cm(plan);
    let keys: Vec<&String> = cm
        .at(&["data"])
        .unwrap()
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["phi-3-mini-4k-instruct"]);
}

/// CM12: a personal key is the bearer of the model-data requests (no authn token).
#[test]
fn cm12_personal_key_refreshes() {
    let cluster = cluster()
        .with(api_key_secret(NS, PERSONAL_KEY))
        .with(existing_cm(json!({"opendatahub.io/managed": "true"})));
    let account = validated(
        json!({"nimConfig": cm_ref(), "lastSuccessfulConfigRefresh": ago(1),
                                   "conditions": [condition(CONFIG_MAP_UPDATE, "False", &ago(1))]}),
    );
    let http = nvidia();
    let (flow, _, status) = handle(&account, &cluster, &http, H::ConfigMap);
    assert!(matches!(flow, Flow::Requeue));
    assert_eq!(status.last_successful_config_refresh, Some(now()));
    assert!(
        !http
            .summary()
            .iter()
            .any(|r| r.contains("authn.nvidia.com"))
    );
    let model = http
        .requests()
        .into_iter()
        .find(|r| r.url.contains("/repos/"))
        .unwrap();
    assert_eq!(
        model.header_value("Authorization"),
        Some(format!("Bearer {PERSONAL_KEY}").as_str())
    );
}

/// No model data at all ("no models found"): the handler's failure conditions, Error.
#[test]
fn no_models_found_fails_the_config_map() {
    let cluster = cluster()
        .with(api_key_secret(NS, LEGACY_KEY))
        .with(model_list(r#"["nemotron-4-340b-instruct"]"#));
    let mut account = validated(json!({}));
    account.set(
        &["spec", "modelListConfig"],
        json!({"name": format!("{NS}-model-selection")}),
    );
    let (flow, plan, status) = handle(&account, &cluster, &nvidia(), H::ConfigMap);
    let Flow::Fail(error) = flow else {
        panic!("{flow:?}")
    };
    assert!(error.to_string().contains("no models found"));
    assert_eq!(
        cond(&status, ACCOUNT_STATUS).message,
        "nim config reconciliation failed"
    );
    assert!(plan.outcome().apply.is_empty());
}

/// Go's JSON escaping of `<`, `>` and `&` in model data.
#[test]
fn model_data_uses_go_escaping() {
    let model = nim_account::ngc::ModelData {
        short_description: "a <b> & c".into(),
        ..Default::default()
    };
    let text = nim_account::ngc::go_json(&model);
    assert!(
        text.contains(r#""shortDescription":"a \u003cb\u003e \u0026 c""#),
        "{text}"
    );
    assert!(text.contains(r#""tags":null"#));
}
