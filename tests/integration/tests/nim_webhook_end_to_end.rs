//! The NIM Account validating webhook (built-in `nim-account`, docs/plugins/nim-account.md,
//! "Webhook") through the real apiserver and the real binary: `odh-model-controller run` with its
//! default plugins serves `/validate-nim-opendatahub-io-v1-account`, registered as upstream's
//! kustomize output registers it (CREATE and UPDATE of accounts, failurePolicy Fail). W1 as a
//! client sees it: a second Account in a namespace is denied, 403 Forbidden, with upstream's
//! message.

use std::sync::atomic::{AtomicU32, Ordering};

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use odh_test_support::process::ServingHost;
use odh_test_support::{TestContext, Timing, eventually};
use serde_json::{Value, json};

const WEBHOOK: &str = "validating.nim.account.odh-model-controller.opendatahub.io";

/// Upstream's webhook entry, with the test host's URL and CA and the namespace scope.
fn account_webhook(host: &ServingHost, namespace: &str) -> Value {
    json!({
        "name": WEBHOOK,
        "clientConfig": host.client_config("/validate-nim-opendatahub-io-v1-account"),
        "rules": [{"apiGroups": ["nim.opendatahub.io"], "apiVersions": ["v1"],
                   "resources": ["accounts"], "operations": ["CREATE", "UPDATE"]}],
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "namespaceSelector": {"matchExpressions": [{
            "key": "kubernetes.io/metadata.name", "operator": "In", "values": [namespace],
        }]},
        "timeoutSeconds": 10,
    })
}

/// An Account whose API-key Secret does not exist, so its controller stops without calling
/// NVIDIA.
fn account(namespace: &str, name: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "nim.opendatahub.io/v1", "kind": "Account",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"apiKeySecret": {"name": "no-such-secret"}}
    }))
    .expect("an Account")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn w1_a_second_account_in_a_namespace_is_denied_over_https() -> anyhow::Result<()> {
    let t = TestContext::new("nim-webhook").await?;
    let ns = t.namespace.clone();
    let client = t.client.clone();
    // The Accounts name a missing Secret: the host's controller stops without calling NVIDIA.
    let host = ServingHost::start("nim-webhook-e2e", &[("POD_NAMESPACE", ns.as_str())]).await?;
    let with_log = |e: anyhow::Error| host.with_log(e);

    let configuration = format!("nim-webhook-e2e-{ns}");
    let vwcs = Api::<ValidatingWebhookConfiguration>::all(client.clone());
    vwcs.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "metadata": {"name": configuration},
            "webhooks": [account_webhook(&host, &ns)],
        }))?,
    )
    .await?;

    let accounts = t.dynamic("nim.opendatahub.io", "v1", "Account", "accounts");
    accounts
        .create(&PostParams::default(), &account(&ns, "nim-account"))
        .await?;
    // Until the apiserver calls the webhook (and the host's cache holds the first Account) a
    // second one may get through; it is deleted and the next one tried.
    let counter = AtomicU32::new(0);
    let (name, status) = eventually(
        "the second Account is denied",
        Timing::default(),
        || async {
            let name = format!(
                "new-nim-account-{}",
                counter.fetch_add(1, Ordering::Relaxed)
            );
            match accounts
                .create(&PostParams::default(), &account(&ns, &name))
                .await
            {
                Err(kube::Error::Api(s)) => Ok((name, s)),
                Ok(_) => {
                    accounts.delete(&name, &DeleteParams::default()).await?;
                    anyhow::bail!("{name} admitted")
                }
                Err(e) => Err(e.into()),
            }
        },
    )
    .await
    .map_err(with_log)?;
    let _ = vwcs.delete(&configuration, &DeleteParams::default()).await;
    assert_eq!(status.code, 403, "{status:?}");
    assert_eq!(status.reason, "Forbidden", "{status:?}");
    assert_eq!(
        status.message,
        format!(
            "admission webhook \"{WEBHOOK}\" denied the request: rejecting creation of Account {name} in namespace {ns} because there is already an Account created in the namespace"
        )
    );
    Ok(())
}
