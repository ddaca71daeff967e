//! The `nim-account` plugin through the real apiserver with a local stand-in for NVIDIA's APIs
//! (docs/plugins/nim-account.md, "NVIDIA's APIs"): an HTTPS server on the loopback interface with a
//! test CA and a certificate for `api.ngc.nvidia.com`, `nvcr.io` and `authn.nvidia.com`, reached
//! through the host's test-only address override (`ODH_TEST_HTTP_RESOLVE`,
//! `ODH_TEST_HTTP_CA_FILE`). The plugin keeps its real URLs.
//!
//! One host runs the built `target/plugins/nim-account.wasm` for the whole test binary; each
//! test has a namespace of its own. The sandbox tests (no HTTP grant, a stand-in that never
//! answers) call the plugin in the host's runtime on an in-memory cluster.

#[path = "../../../plugins/nim-account/tests/support/nvidia.rs"]
mod nvidia;

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DynamicObject, PostParams};
use odh_model_controller::plugin::wire::{Outcome, RequestKey};
use odh_model_controller::plugin::{CallEnv, Grants, Limits, MemoryCluster, ReconcileInput};
use odh_test_support::host::{Setup, controllers_running_with, load, load_with};
use odh_test_support::https_stand_in::{self, Received, Reply};
use odh_test_support::{TestContext, Timing, absent, consistently, eventually, exists};
use serde_json::{Value, json};

const HOSTS: [&str; 3] = ["api.ngc.nvidia.com", "nvcr.io", "authn.nvidia.com"];
/// A personal key whose validation request the stand-in never answers.
const HANGING_KEY: &str = "nvapi-the-stand-in-never-answers-this-one";

/// Held (shared) by the tests whose Accounts make the controllers call NVIDIA, and
/// exclusively by the one counting that nothing arrives.
static TRAFFIC: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// What the stand-in received, for the whole binary.
static RECEIVED: OnceLock<Arc<Mutex<Vec<Received>>>> = OnceLock::new();

fn stand_in_reply(call: &Received) -> Reply {
    if call.url.ends_with("/v3/keys/get-caller-info")
        && call.header("authorization").as_deref() == Some(&format!("Bearer {HANGING_KEY}"))
    {
        return Reply::Hang;
    }
    let header = |name: &str| call.header(name);
    let request = nvidia::Call {
        method: &call.method,
        url: &call.url,
        header: &header,
        body: &call.body,
    };
    match nvidia::answer(&request) {
        Some((status, body)) => Reply::Answer(status, body),
        None => Reply::Answer(401, r#"{"error":"not stubbed"}"#.into()),
    }
}

/// The stand-in and the controllers, once per test binary, on a runtime of their own. The
/// override is set before any plugin runs.
fn running() {
    controllers_running_with(|client| async move {
        let stand_in = https_stand_in::start(&HOSTS, stand_in_reply)
            .await
            .expect("the NVIDIA stand-in");
        // SAFETY: set once, before the controllers (or any plugin call) read them.
        unsafe {
            std::env::set_var("ODH_TEST_HTTP_RESOLVE", stand_in.resolve_table(&HOSTS));
            std::env::set_var("ODH_TEST_HTTP_CA_FILE", &stand_in.ca_file);
        }
        RECEIVED.set(stand_in.received.clone()).ok();
        // Installs the CRDs (the Account's) before the controllers watch.
        let t = TestContext::new("nim-controllers")
            .await
            .expect("test cluster");
        Setup::new(client, vec![load("nim-account")], 2).keep((t, stand_in))
    });
}

fn accounts(t: &TestContext) -> Api<DynamicObject> {
    t.dynamic("nim.opendatahub.io", "v1", "Account", "accounts")
}

fn templates(t: &TestContext) -> Api<DynamicObject> {
    t.dynamic("template.openshift.io", "v1", "Template", "templates")
}

/// The API-key Secret (managed, as upstream's cache needs) and an Account naming it.
async fn create_account(t: &TestContext, name: &str, key: &str) -> anyhow::Result<()> {
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": format!("{name}-api-key"), "labels": {"opendatahub.io/managed": "true"}},
        "stringData": {"api_key": key}
    }))?;
    t.api::<Secret>()
        .create(&PostParams::default(), &secret)
        .await?;
    let account: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "nim.opendatahub.io/v1", "kind": "Account",
        "metadata": {"name": name, "namespace": t.namespace},
        "spec": {"apiKeySecret": {"name": format!("{name}-api-key")}}
    }))?;
    accounts(t).create(&PostParams::default(), &account).await?;
    Ok(())
}

fn condition<'a>(account: &'a Value, type_: &str) -> Option<&'a Value> {
    account["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

fn condition_is(account: &Value, type_: &str, status: &str, reason: &str, message: &str) -> bool {
    condition(account, type_)
        .is_some_and(|c| c["status"] == status && c["reason"] == reason && c["message"] == message)
}

/// A personal key NVIDIA accepts: the finalizer, every condition True, the model-info
/// ConfigMap (the stand-in's two models), the Template with the NIM runtime and the pull
/// Secret, each referenced from the status (C1, V10, CM2, T2, PS2 end to end); then steady,
/// and its deletion removes them all (C3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn valid_key_makes_the_account_healthy() -> anyhow::Result<()> {
    running();
    let _traffic = TRAFFIC.read().await;
    let t = TestContext::new("nim-valid").await?;
    create_account(&t, "nim", nvidia::PERSONAL_KEY).await?;
    let account = eventually("the Account becomes healthy", Timing::default(), || async {
        let account = serde_json::to_value(accounts(&t).get("nim").await?)?;
        let healthy = condition_is(
            &account,
            "AccountStatus",
            "True",
            "AccountSuccessful",
            "the account is healthy",
        );
        anyhow::ensure!(healthy, "not healthy yet: {}", account["status"]);
        Ok(account)
    })
    .await?;
    for (type_, reason, message) in [
        (
            "APIKeyValidation",
            "ApiKeyValidated",
            "api key validated successfully",
        ),
        (
            "ConfigMapUpdate",
            "ConfigMapUpdated",
            "nim config reconciled successfully",
        ),
        (
            "TemplateUpdate",
            "TemplateUpdated",
            "runtime template reconciled successfully",
        ),
        (
            "SecretUpdate",
            "SecretUpdated",
            "pull secret reconciled successfully",
        ),
    ] {
        anyhow::ensure!(
            condition_is(&account, type_, "True", reason, message),
            "{type_}: {}",
            account["status"]
        );
    }
    anyhow::ensure!(
        account["metadata"]["finalizers"]
            == json!(["runtimes.opendatahub.io/nim-cleanup-finalizer"])
    );
    let cm = exists(&t.api::<ConfigMap>(), "nim-cm").await?;
    let data = cm.data.unwrap_or_default();
    anyhow::ensure!(
        data.keys().collect::<Vec<_>>() == ["llama-3.1-8b-instruct", "phi-3-mini-4k-instruct"],
        "{data:?}"
    );
    let template = serde_json::to_value(exists(&templates(&t), "nim-template").await?)?;
    anyhow::ensure!(template["metadata"]["annotations"]["opendatahub.io/apiProtocol"] == "REST");
    let pull = exists(&t.api::<Secret>(), "nim-pull").await?;
    anyhow::ensure!(pull.type_.as_deref() == Some("kubernetes.io/dockerconfigjson"));
    let config = pull.data.unwrap_or_default()[".dockerconfigjson"].0.clone();
    anyhow::ensure!(String::from_utf8(config)?.contains(r#""username":"$oauthtoken""#));
    for (field, name) in [
        ("nimConfig", "nim-cm"),
        ("runtimeTemplate", "nim-template"),
        ("nimPullSecret", "nim-pull"),
    ] {
        anyhow::ensure!(
            account["status"][field]["name"] == name,
            "{field}: {}",
            account["status"]
        );
    }
    // The requests went to NVIDIA's real names, through the stand-in.
    let received = RECEIVED
        .get()
        .unwrap()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    anyhow::ensure!(
        received
            .iter()
            .any(|r| r.url == "https://api.ngc.nvidia.com/v3/keys/get-caller-info")
    );

    // Healthy settles: once the owned objects' events are through, no status is written
    // again and again (a pass in a later second rewrites `lastAccountCheck`, as upstream's).
    eventually("the healthy Account settles", Timing::default(), || async {
        let version = accounts(&t).get("nim").await?.metadata.resource_version;
        consistently(
            "the healthy Account is left alone",
            Timing::within(Duration::from_secs(3)),
            || async {
                let now = accounts(&t).get("nim").await?.metadata.resource_version;
                anyhow::ensure!(now == version, "{version:?} -> {now:?}");
                Ok(())
            },
        )
        .await
    })
    .await?;

    // C3: deleting the Account deletes what it made, then the Account goes.
    accounts(&t).delete("nim", &Default::default()).await?;
    absent(&accounts(&t), "nim").await?;
    absent(&t.api::<ConfigMap>(), "nim-cm").await?;
    absent(&templates(&t), "nim-template").await?;
    absent(&t.api::<Secret>(), "nim-pull").await?;
    Ok(())
}

/// A legacy key: validated through `nvcr.io` (pull token, manifest) and the model data fetched
/// with an `authn.nvidia.com` token, so all three hosts are reached (V2, CM2 end to end).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_key_goes_through_all_three_hosts() -> anyhow::Result<()> {
    running();
    let _traffic = TRAFFIC.read().await;
    let t = TestContext::new("nim-legacy").await?;
    create_account(&t, "legacy", nvidia::LEGACY_KEY).await?;
    eventually("the Account becomes healthy", Timing::default(), || async {
        let account = serde_json::to_value(accounts(&t).get("legacy").await?)?;
        let healthy = condition_is(
            &account,
            "AccountStatus",
            "True",
            "AccountSuccessful",
            "the account is healthy",
        );
        anyhow::ensure!(healthy, "not healthy yet: {}", account["status"]);
        Ok(())
    })
    .await?;
    let cm = exists(&t.api::<ConfigMap>(), "legacy-cm").await?;
    anyhow::ensure!(cm.data.unwrap_or_default().len() == 2);
    let received = RECEIVED
        .get()
        .unwrap()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    for url in [
        "https://nvcr.io/v2/nim/microsoft/phi-3-mini-4k-instruct/manifests/1.2.3",
        "https://authn.nvidia.com/token?service=ngc&",
    ] {
        anyhow::ensure!(received.iter().any(|r| r.url == url), "no request to {url}");
    }
    Ok(())
}

/// A key NVIDIA refuses: APIKeyValidation False / ApiKeyNotValidated / "api key failed
/// validation", AccountStatus False with the same message, the other types Unknown, and
/// nothing generated (V5 end to end).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_key_gives_the_failure_conditions() -> anyhow::Result<()> {
    running();
    let _traffic = TRAFFIC.read().await;
    let t = TestContext::new("nim-invalid").await?;
    create_account(&t, "nim", "nvapi-a-key-nvidia-does-not-know").await?;
    let account = eventually("the key fails validation", Timing::default(), || async {
        let account = serde_json::to_value(accounts(&t).get("nim").await?)?;
        anyhow::ensure!(
            condition_is(
                &account,
                "APIKeyValidation",
                "False",
                "ApiKeyNotValidated",
                "api key failed validation"
            ),
            "not failed yet: {}",
            account["status"]
        );
        Ok(account)
    })
    .await?;
    anyhow::ensure!(condition_is(
        &account,
        "AccountStatus",
        "False",
        "AccountNotSuccessful",
        "api key failed validation"
    ));
    for type_ in ["TemplateUpdate", "SecretUpdate", "ConfigMapUpdate"] {
        anyhow::ensure!(
            condition_is(
                &account,
                type_,
                "Unknown",
                "NotReconciled",
                "api key failed validation"
            ),
            "{type_}"
        );
    }
    anyhow::ensure!(account["status"]["lastAccountCheck"].is_string());
    anyhow::ensure!(t.api::<ConfigMap>().get_opt("nim-cm").await?.is_none());
    anyhow::ensure!(t.api::<Secret>().get_opt("nim-pull").await?.is_none());
    Ok(())
}

/// The plugin in the host's runtime on an in-memory cluster: an Account with the finalizer
/// and its API-key Secret.
fn reconcile_in_sandbox(grants: Grants, limits: Limits, key: &str) -> Outcome {
    let plugin = load_with("nim-account", |r| r.grants(grants).limits(limits));
    let mut cluster = MemoryCluster::default();
    let account = json!({
        "apiVersion": "nim.opendatahub.io/v1", "kind": "Account",
        "metadata": {"name": "sandboxed", "namespace": "ns", "uid": "u", "generation": 1,
                     "finalizers": ["runtimes.opendatahub.io/nim-cleanup-finalizer"]},
        "spec": {"apiKeySecret": {"name": "key"}}
    });
    cluster
        .insert(json!({"apiVersion": "v1", "kind": "Secret",
                       "metadata": {"name": "key", "namespace": "ns", "labels": {"opendatahub.io/managed": "true"}},
                       "data": {"api_key": base64_of(key)}}))
        .unwrap();
    let input = ReconcileInput {
        controller: "odh-nim-controller".into(),
        key: RequestKey {
            namespace: Some("ns".into()),
            name: "sandboxed".into(),
        },
        object: Some(account.to_string()),
    };
    plugin
        .reconcile_blocking(&input, &CallEnv::live(Arc::new(cluster)))
        .expect("an outcome")
}

fn base64_of(text: &str) -> String {
    use k8s_openapi::ByteString;
    serde_json::to_value(ByteString(text.as_bytes().to_vec()))
        .unwrap()
        .as_str()
        .unwrap()
        .to_string()
}

fn status_of(outcome: &Outcome) -> Value {
    outcome.status.clone().expect("a status")
}

/// Without the HTTP grant the plugin cannot reach the stand-in: the catalog request is
/// refused in the host (nothing arrives), the validation step fails "failed to fetch NIM
/// runtimes" and the outcome still carries that status.
#[test]
fn without_the_http_grant_nvidia_is_unreachable() {
    running();
    let _quiet = TRAFFIC.blocking_write();
    let received = RECEIVED.get().unwrap();
    let before = received.lock().unwrap_or_else(|e| e.into_inner()).len();
    let grants = Grants {
        http_hosts: Some(Default::default()),
        ..Grants::default()
    };
    let outcome = reconcile_in_sandbox(grants, Limits::default(), nvidia::PERSONAL_KEY);
    let status = status_of(&outcome);
    assert!(
        condition_is(
            &status_wrapper(&status),
            "APIKeyValidation",
            "False",
            "ApiKeyNotValidated",
            "failed to fetch NIM runtimes"
        ),
        "{status}"
    );
    assert!(outcome.error.is_some());
    assert_eq!(
        received.lock().unwrap_or_else(|e| e.into_inner()).len(),
        before,
        "a request reached the stand-in"
    );
    // With the grant the same call gets through.
    let outcome = reconcile_in_sandbox(Grants::default(), Limits::default(), nvidia::PERSONAL_KEY);
    let status = status_of(&outcome);
    assert!(
        condition_is(
            &status_wrapper(&status),
            "APIKeyValidation",
            "True",
            "ApiKeyValidated",
            "api key validated successfully"
        ),
        "{status}"
    );
}

fn status_wrapper(status: &Value) -> Value {
    json!({"status": status})
}

/// A stand-in that never answers the validation request: the request fails within the
/// plugin's HTTP timeout, and the outcome still holds the validation failure (upstream treats
/// a failed request as a failed validation) rather than the call failing as a whole.
#[test]
fn a_silent_nvidia_fails_validation_within_the_timeout() {
    running();
    let limits = Limits {
        http_timeout_ms: 1_000,
        ..Limits::default()
    };
    let started = Instant::now();
    let outcome = reconcile_in_sandbox(Grants::default(), limits, HANGING_KEY);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(8), "took {took:?}");
    assert!(took >= Duration::from_millis(900), "took {took:?}");
    let status = status_of(&outcome);
    assert!(
        condition_is(
            &status_wrapper(&status),
            "APIKeyValidation",
            "False",
            "ApiKeyNotValidated",
            "api key failed validation"
        ),
        "{status}"
    );
    assert!(
        condition_is(
            &status_wrapper(&status),
            "AccountStatus",
            "False",
            "AccountNotSuccessful",
            "api key failed validation"
        ),
        "{status}"
    );
}

/// U2 in the host's runtime: with `nimState: removed` (the built-in's `NIM_STATE`) the
/// referenced objects are deleted and the five conditions become Unknown "NIM has been
/// disabled", with no NVIDIA call and the finalizer kept.
#[test]
fn u2_nim_removed_cleans_up_in_the_sandbox() {
    let plugin = load_with("nim-account", |r| {
        r.settings(json!({"nimState": "removed"}))
    });
    let account = json!({
        "apiVersion": "nim.opendatahub.io/v1", "kind": "Account",
        "metadata": {"name": "disabled", "namespace": "ns", "uid": "u", "generation": 1,
                     "finalizers": ["runtimes.opendatahub.io/nim-cleanup-finalizer"]},
        "spec": {"apiKeySecret": {"name": "key"}},
        "status": {
            "nimConfig": {"kind": "ConfigMap", "apiVersion": "v1", "namespace": "ns", "name": "disabled-cm", "uid": "c"},
            "nimPullSecret": {"kind": "Secret", "apiVersion": "v1", "namespace": "ns", "name": "disabled-pull", "uid": "p"},
            "runtimeTemplate": {"kind": "Template", "apiVersion": "template.openshift.io/v1", "namespace": "ns", "name": "disabled-template", "uid": "t"}
        }
    });
    let input = ReconcileInput {
        controller: "odh-nim-controller".into(),
        key: RequestKey {
            namespace: Some("ns".into()),
            name: "disabled".into(),
        },
        object: Some(account.to_string()),
    };
    let outcome = plugin
        .reconcile_blocking(&input, &CallEnv::live(Arc::new(MemoryCluster::default())))
        .expect("an outcome");
    let deleted: Vec<String> = outcome
        .delete
        .iter()
        .map(|k| format!("{}/{}", k.gvk.kind, k.name))
        .collect();
    assert_eq!(
        deleted,
        [
            "Secret/disabled-pull",
            "ConfigMap/disabled-cm",
            "Template/disabled-template"
        ]
    );
    let status = json!({"status": status_of(&outcome)});
    for (type_, reason) in [
        ("AccountStatus", "AccountNotReconciled"),
        ("APIKeyValidation", "ApiKeyNotReconciled"),
        ("ConfigMapUpdate", "ConfigMapNotReconciled"),
        ("TemplateUpdate", "TemplateNotReconciled"),
        ("SecretUpdate", "SecretNotReconciled"),
    ] {
        assert!(
            condition_is(&status, type_, "Unknown", reason, "NIM has been disabled"),
            "{type_}: {status}"
        );
    }
    assert!(status["status"].get("nimConfig").is_none(), "{status}");
}

/// C3 with a cleanup delete the apiserver refuses (a ValidatingAdmissionPolicy denies deleting
/// the generated ConfigMap): the Account keeps its finalizer and stays while the delete fails,
/// the other generated objects go, and once the delete is allowed again the retry removes the
/// ConfigMap and then the Account — upstream's "error ⇒ retry, finalizer kept".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c3_a_refused_cleanup_delete_keeps_the_finalizer_until_it_succeeds() -> anyhow::Result<()> {
    running();
    let _traffic = TRAFFIC.read().await;
    let t = TestContext::new("nim-keep").await?;
    create_account(&t, "nim", nvidia::PERSONAL_KEY).await?;
    eventually(
        "the Account references its ConfigMap",
        Timing::default(),
        || async {
            let account = serde_json::to_value(accounts(&t).get("nim").await?)?;
            anyhow::ensure!(
                account["status"]["nimConfig"]["name"] == "nim-cm",
                "{}",
                account["status"]
            );
            anyhow::ensure!(
                account["status"]["nimPullSecret"]["name"] == "nim-pull",
                "{}",
                account["status"]
            );
            Ok(())
        },
    )
    .await?;
    exists(&t.api::<ConfigMap>(), "nim-cm").await?;

    let refusal = odh_test_support::refusal::Refusal::install(
        &t.client,
        &format!("{}-keep-nim-cm", t.namespace),
        ("", "configmaps", "DELETE"),
        &format!(
            "!(oldObject.metadata.namespace == '{}' && oldObject.metadata.name == 'nim-cm')",
            t.namespace
        ),
        "nim-cm is kept by the test",
    )
    .await?;
    // The policy is in force once a dry-run delete of the ConfigMap is refused.
    let dry_run = kube::api::DeleteParams {
        dry_run: true,
        ..Default::default()
    };
    eventually(
        "the policy refuses the delete",
        Timing::default(),
        || async {
            match t.api::<ConfigMap>().delete("nim-cm", &dry_run).await {
                Err(kube::Error::Api(s)) if s.message.contains("kept by the test") => Ok(()),
                other => anyhow::bail!("not refused yet: {:?}", other.map(|_| ())),
            }
        },
    )
    .await?;

    accounts(&t).delete("nim", &Default::default()).await?;
    absent(&t.api::<Secret>(), "nim-pull").await?;
    consistently(
        "the Account waits for its ConfigMap's delete",
        Timing::within(Duration::from_secs(3)),
        || async {
            let account = accounts(&t).get("nim").await?;
            anyhow::ensure!(account.metadata.deletion_timestamp.is_some());
            anyhow::ensure!(
                account.metadata.finalizers.as_deref().unwrap_or_default()
                    == ["runtimes.opendatahub.io/nim-cleanup-finalizer"],
                "finalizers {:?}",
                account.metadata.finalizers
            );
            anyhow::ensure!(t.api::<ConfigMap>().get_opt("nim-cm").await?.is_some());
            Ok(())
        },
    )
    .await?;

    refusal.remove().await?;
    absent(&t.api::<ConfigMap>(), "nim-cm").await?;
    absent(&accounts(&t), "nim").await?;
    Ok(())
}
