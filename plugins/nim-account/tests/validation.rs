//! ValidationHandler scenarios V2–V10 and the NVIDIA calls (docs/plugins/nim-account.md,
//! "NVIDIA's APIs").

mod support;

use nim_account::names::condition::*;
use nim_account::reconcile::{Flow, Pass};
use odh_plugin_sdk::json;
use support::nvidia::{LEGACY_KEY, PERSONAL_KEY};
use support::*;

const NS: &str = "testing-nim-validation-handler";

/// V2: a legacy key with no status is validated (token + manifest probe): Requeue,
/// APIKeyValidation True, lastSuccessfulValidation set.
#[test]
fn v2_legacy_key_validated() {
    let cluster = cluster().with(api_key_secret(NS, LEGACY_KEY));
    let http = nvidia();
    let (flow, _, status) = handle(&account(NS), &cluster, &http, H::Validation);
    assert!(matches!(flow, Flow::Requeue), "{flow:?}");
    let c = cond(&status, API_KEY_VALIDATION);
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("True", "ApiKeyValidated")
    );
    assert_eq!(c.message, "api key validated successfully");
    assert_eq!(c.observed_generation, Some(1));
    assert_eq!(status.last_successful_validation, Some(now()));
    // Catalog pages 0 and 1, then the registry token and manifest of the first runtime.
    let summary = http.summary();
    assert_eq!(summary.len(), 4, "{summary:#?}");
    assert!(summary[0].starts_with("GET https://api.ngc.nvidia.com/v2/search/catalog/resources/CONTAINER?q=%7B%22query%22%3A%22orgName%3Anim%22%2C%22page%22%3A0%2C%22pageSize%22%3A1000%7D"));
    assert_eq!(
        summary[2],
        "GET https://nvcr.io/proxy_auth?account=$oauthtoken&offline_token=true&scope=repository:nim/microsoft/phi-3-mini-4k-instruct:pull"
    );
    assert_eq!(
        summary[3],
        "GET https://nvcr.io/v2/nim/microsoft/phi-3-mini-4k-instruct/manifests/1.2.3"
    );
}

/// V3: APIKeyValidation False before: validated again, as V2.
#[test]
fn v3_previously_failed_key_revalidated() {
    let cluster = cluster().with(api_key_secret(NS, LEGACY_KEY));
    let account = with_status(
        account(NS),
        json!({"conditions": [condition(API_KEY_VALIDATION, "False", &ago(60))]}),
    );
    let (flow, _, status) = handle(&account, &cluster, &nvidia(), H::Validation);
    assert!(matches!(flow, Flow::Requeue));
    assert!(is_true(&status, API_KEY_VALIDATION));
    assert_eq!(
        cond(&status, API_KEY_VALIDATION).last_transition_time,
        now()
    );
    assert_eq!(status.last_successful_validation, Some(now()));
}

/// V4: a wrong key, but validated successfully just now: Continue, no HTTP, nothing changes.
#[test]
fn v4_fresh_validation_is_not_repeated() {
    let cluster = cluster().with(api_key_secret(NS, "wrong-key"));
    let account = with_status(
        account(NS),
        json!({"lastSuccessfulValidation": ago(1),
               "conditions": [condition(API_KEY_VALIDATION, "True", &ago(1))]}),
    );
    let http = nvidia();
    let (flow, plan, status) = handle(&account, &cluster, &http, H::Validation);
    assert!(matches!(flow, Flow::Continue), "{flow:?}");
    assert!(http.requests().is_empty());
    assert!(plan.outcome().status.is_none());
    assert_eq!(status.last_successful_validation, Some(ago(1)));
    assert_eq!(
        cond(&status, API_KEY_VALIDATION).last_transition_time,
        ago(1)
    );
}

/// V5: a wrong key validated 25 h ago (rate 24h): re-validated, fails: Stop, APIKeyValidation
/// and AccountStatus False, the generated objects cleaned up.
#[test]
fn v5_expired_validation_of_a_wrong_key_fails() {
    let cluster = cluster().with(api_key_secret(NS, "wrong-key"));
    let account = with_status(
        account(NS),
        json!({"lastSuccessfulValidation": ago(25 * 3600),
               "nimPullSecret": reference("Secret", "v1", NS, &format!("{NS}-pull"), "u1"),
               "conditions": [condition(API_KEY_VALIDATION, "True", &ago(25 * 3600))]}),
    );
    let (flow, plan, status) = handle(&account, &cluster, &nvidia(), H::Validation);
    assert!(matches!(flow, Flow::Stop), "{flow:?}");
    let c = cond(&status, API_KEY_VALIDATION);
    assert_eq!(
        (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
        ("False", "ApiKeyNotValidated", "api key failed validation")
    );
    let a = cond(&status, ACCOUNT_STATUS);
    assert_eq!(
        (a.status.as_str(), a.reason.as_str(), a.message.as_str()),
        ("False", "AccountNotSuccessful", "api key failed validation")
    );
    // The clean failure status: the other types Unknown/NotReconciled, references dropped.
    let t = cond(&status, TEMPLATE_UPDATE);
    assert_eq!(
        (t.status.as_str(), t.reason.as_str()),
        ("Unknown", "NotReconciled")
    );
    let order: Vec<&str> = status.conditions.iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(
        order,
        [
            API_KEY_VALIDATION,
            ACCOUNT_STATUS,
            TEMPLATE_UPDATE,
            SECRET_UPDATE,
            CONFIG_MAP_UPDATE
        ]
    );
    assert!(status.nim_pull_secret.is_none());
    assert_eq!(status.last_account_check, Some(now()));
    assert!(plan.outcome().deleted("Secret", &format!("{NS}-pull")));
}

/// V6: the force-validation annotation on the Secret re-validates a fresh, successful key; the
/// wrong key fails. The Secret's version is recorded on the Account so it is honoured once.
#[test]
fn v6_force_validation_annotation() {
    let mut secret = api_key_secret(NS, "wrong-key");
    secret.set_annotation("runtimes.opendatahub.io/nim-force-validation", "true");
    let cluster = cluster().with(secret);
    let account = with_status(
        account(NS),
        json!({"lastSuccessfulValidation": now(),
               "conditions": [condition(API_KEY_VALIDATION, "True", &now()),
                              condition(ACCOUNT_STATUS, "True", &now())]}),
    );
    let (flow, plan, status) = handle(&account, &cluster, &nvidia(), H::Validation);
    assert!(matches!(flow, Flow::Stop), "{flow:?}");
    assert!(!is_true(&status, API_KEY_VALIDATION));
    assert!(!is_true(&status, ACCOUNT_STATUS));
    assert_eq!(status.last_account_check, Some(now()));
    let patched = plan.into_outcome().patched_primary(&account);
    assert_eq!(
        patched.annotation("runtimes.opendatahub.io/nim-force-validation-seen"),
        Some("7")
    );

    // Honoured: the same Secret version does not force again.
    let (flow, _, _) = handle(&patched, &cluster, &nvidia(), H::Validation);
    assert!(matches!(flow, Flow::Continue), "{flow:?}");
}

/// V7: the Secret has no `api_key`: Error naming the Secret, both conditions not True.
#[test]
fn v7_secret_without_api_key_data() {
    let ns = "testing-nim-validation-handler-7";
    let mut secret = api_key_secret(ns, "x");
    secret.remove(&["data", "api_key"]);
    secret.set(&["data", "not_the_correct_key"], "eA==");
    let cluster = cluster().with(secret);
    let (flow, _, status) = handle(&account(ns), &cluster, &nvidia(), H::Validation);
    let Flow::Fail(error) = flow else {
        panic!("{flow:?}")
    };
    assert!(
        error
            .to_string()
            .contains("secret testing-nim-validation-handler-7-api-key has no api_key data"),
        "{error}"
    );
    assert!(!is_true(&status, API_KEY_VALIDATION));
    assert!(!is_true(&status, ACCOUNT_STATUS));
    assert_eq!(
        cond(&status, ACCOUNT_STATUS).message,
        "failed to find api key data in secret"
    );
    assert_eq!(status.last_account_check, Some(now()));
}

/// V8: the API-key Secret does not exist (another namespace): Stop without error.
#[test]
fn v8_missing_api_key_secret_stops() {
    let mut account = account(NS);
    account.set(
        &["spec", "apiKeySecret"],
        json!({"name": "im-not-here-val", "namespace": "this-is-not-happening"}),
    );
    let (flow, _, status) = handle(&account, &cluster(), &nvidia(), H::Validation);
    assert!(matches!(flow, Flow::Stop), "{flow:?}");
    assert!(!is_true(&status, API_KEY_VALIDATION));
    assert_eq!(
        cond(&status, ACCOUNT_STATUS).message,
        "api key secret not found"
    );
    assert_eq!(cond(&status, API_KEY_VALIDATION).reason, "NotReconciled");
    assert_eq!(status.last_account_check, Some(now()));
}

/// V9: the model list keeps only llama, whose registry token is not stubbed: the legacy
/// validation fails: Stop, not True.
#[test]
fn v9_model_list_narrows_the_validation_runtimes() {
    let model_list = odh_plugin_sdk::Object(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("{NS}-model-selection"), "namespace": NS},
        "data": {"models": "[\"llama-3.1-8b-instruct\"]"}
    }));
    let cluster = cluster()
        .with(api_key_secret(NS, LEGACY_KEY))
        .with(model_list);
    let mut account = account(NS);
    account.set(
        &["spec", "modelListConfig"],
        json!({"name": format!("{NS}-model-selection")}),
    );
    let http = nvidia();
    let (flow, _, status) = handle(&account, &cluster, &http, H::Validation);
    assert!(matches!(flow, Flow::Stop), "{flow:?}");
    assert!(!is_true(&status, API_KEY_VALIDATION));
    assert!(!is_true(&status, ACCOUNT_STATUS));
    assert_eq!(status.last_account_check, Some(now()));
    assert!(
        http.summary()
            .iter()
            .any(|r| r.contains("scope=repository:nim/meta/llama-3.1-8b-instruct:pull"))
    );
}

/// V10: a personal key is validated with get-caller-info (form body, bearer key).
#[test]
fn v10_personal_key_validated() {
    let cluster = cluster().with(api_key_secret(NS, PERSONAL_KEY));
    let http = nvidia();
    let (flow, _, status) = handle(&account(NS), &cluster, &http, H::Validation);
    assert!(matches!(flow, Flow::Requeue), "{flow:?}");
    assert!(is_true(&status, API_KEY_VALIDATION));
    assert_eq!(status.last_successful_validation, Some(now()));
    let post = http
        .requests()
        .into_iter()
        .find(|r| r.method == "POST")
        .expect("caller info");
    assert_eq!(
        post.url,
        "https://api.ngc.nvidia.com/v3/keys/get-caller-info"
    );
    assert_eq!(
        post.header_value("Authorization"),
        Some(format!("Bearer {PERSONAL_KEY}").as_str())
    );
    assert_eq!(
        post.body.as_deref(),
        Some(format!("credentials={PERSONAL_KEY}").as_bytes())
    );
}

/// An unknown personal key (401 from get-caller-info) fails validation.
#[test]
fn unknown_personal_key_fails() {
    let cluster = cluster().with(api_key_secret(NS, "nvapi-unknown"));
    let (flow, _, status) = handle(&account(NS), &cluster, &nvidia(), H::Validation);
    assert!(matches!(flow, Flow::Stop), "{flow:?}");
    assert_eq!(
        cond(&status, API_KEY_VALIDATION).message,
        "api key failed validation"
    );
}

/// The catalog failing: APIKeyValidation False "failed to fetch NIM runtimes", Error with the
/// status line.
#[test]
fn catalog_failure_fails_validation_with_the_status_line() {
    let cluster = cluster().with(api_key_secret(NS, PERSONAL_KEY));
    let http = odh_plugin_sdk::http::Fake::new()
        .handler(|_| Ok(odh_plugin_sdk::http::Response::new(500, "")));
    let (flow, _, status) = handle(&account(NS), &cluster, &http, H::Validation);
    let Flow::Fail(error) = flow else {
        panic!("{flow:?}")
    };
    assert!(
        error.to_string().contains("500 Internal Server Error"),
        "{error}"
    );
    let c = cond(&status, API_KEY_VALIDATION);
    assert_eq!(
        (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
        (
            "False",
            "ApiKeyNotValidated",
            "failed to fetch NIM runtimes"
        )
    );
    assert_eq!(
        cond(&status, ACCOUNT_STATUS).message,
        "failed to fetch NIM runtimes"
    );
}

/// Air-gapped: validation marked successful without reading the Secret or calling NVIDIA.
#[test]
fn air_gapped_validation_makes_no_calls() {
    let settings = settings();
    let (account, cluster, http, now) = (account(NS), cluster(), nvidia(), now());
    let mut pass = Pass::new(&account, &cluster, &http, &settings, &now);
    let mut plan = odh_plugin_sdk::Plan::new();
    assert!(matches!(pass.validation(&mut plan, true), Flow::Requeue));
    assert!(http.requests().is_empty());
    let c = cond(&pass.status, API_KEY_VALIDATION);
    assert_eq!(
        c.message,
        "api key validation marked successful because NIM air-gapped mode is enabled"
    );
    assert!(matches!(pass.validation(&mut plan, true), Flow::Continue));
}

/// An API-key Secret without `opendatahub.io/managed=true` is not found, as upstream's reads
/// from a cache filtered on that label find it: the same Stop and status as V8.
#[test]
fn an_unlabelled_api_key_secret_is_not_found() {
    let mut unlabelled = api_key_secret(NS, LEGACY_KEY);
    unlabelled.0["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("labels");
    let mut opted_out = api_key_secret(NS, LEGACY_KEY);
    opted_out.0["metadata"]["labels"]["opendatahub.io/managed"] = "false".into();
    for secret in [unlabelled, opted_out] {
        let (flow, _, status) = handle(
            &account(NS),
            &cluster().with(secret.clone()),
            &nvidia(),
            H::Validation,
        );
        assert!(matches!(flow, Flow::Stop), "{flow:?} {secret:?}");
        assert_eq!(
            cond(&status, ACCOUNT_STATUS).message,
            "api key secret not found"
        );
    }
    let (flow, _, status) = handle(
        &account(NS),
        &cluster().with(api_key_secret(NS, LEGACY_KEY)),
        &nvidia(),
        H::Validation,
    );
    let _ = flow;
    assert!(
        status
            .conditions
            .iter()
            .all(|c| c.message != "api key secret not found"),
        "the labelled Secret is found: {:?}",
        status.conditions
    );
}

/// V6 with the host's writes (spec §1.6 step 2): the annotation is removed from the Secret at
/// once, a JSON merge patch guarded by the Secret's resourceVersion, and the key re-validated;
/// nothing is recorded on the Account. A refused patch is only logged.
#[test]
fn v6_force_validation_removes_the_annotation() {
    let mut secret = api_key_secret(NS, "wrong-key");
    secret.set_annotation("runtimes.opendatahub.io/nim-force-validation", "true");
    let cluster = cluster().with(secret);
    let account = with_status(
        account(NS),
        json!({"lastSuccessfulValidation": now(),
               "conditions": [condition(API_KEY_VALIDATION, "True", &now()),
                              condition(ACCOUNT_STATUS, "True", &now())]}),
    );
    let writes = odh_plugin_sdk::testing::FakeWrites::new();
    let (flow, plan, status) =
        handle_writing(&account, &cluster, &nvidia(), Some(&writes), H::Validation);
    assert!(matches!(flow, Flow::Stop), "{flow:?}");
    assert!(!is_true(&status, API_KEY_VALIDATION));
    let patches = writes.patched();
    assert_eq!(patches.len(), 1, "{patches:?}");
    let (key, version, patch) = &patches[0];
    assert_eq!(key.gvk.kind, "Secret");
    assert_eq!(key.name, format!("{NS}-api-key"));
    assert_eq!(key.namespace.as_deref(), Some(NS));
    assert_eq!(version, "7");
    assert_eq!(
        patch,
        &json!({"metadata": {"annotations": {"runtimes.opendatahub.io/nim-force-validation": null}}})
    );
    assert!(plan.into_outcome().primary_metadata.is_none());

    let refused = odh_plugin_sdk::testing::FakeWrites::new().fail(
        odh_kinds::gvk::secret(),
        odh_plugin_sdk::testing::FakeWrites::refused(409, "Conflict", "modified"),
    );
    let (flow, _, _) = handle_writing(&account, &cluster, &nvidia(), Some(&refused), H::Validation);
    assert!(matches!(flow, Flow::Stop), "{flow:?}");
}
