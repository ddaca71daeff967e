//! The NIM Account validating webhook (built-in `nim-account`, spec nim-process §1.14)
//! through the real apiserver and the real binary: `odh-model-controller run` with its default
//! plugins serves `/validate-nim-opendatahub-io-v1-account`, registered as upstream's
//! kustomize output registers it (CREATE and UPDATE of accounts, failurePolicy Fail). W1 as a
//! client sees it: a second Account in a namespace is denied, 403 Forbidden, with upstream's
//! message.

mod common;

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use base64::Engine;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use odh_test_support::{TestContext, Timing, eventually};
use serde_json::{Value, json};

const WEBHOOK: &str = "validating.nim.account.odh-model-controller.opendatahub.io";

struct Host(Child);

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Upstream's webhook entry, with the test's URL, CA and namespace scope.
fn account_webhook(port: u16, ca_pem: &str, namespace: &str) -> Value {
    json!({
        "name": WEBHOOK,
        "clientConfig": {
            "url": format!("https://127.0.0.1:{port}/validate-nim-opendatahub-io-v1-account"),
            "caBundle": base64::engine::general_purpose::STANDARD.encode(ca_pem),
        },
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
    let (cert_dir, _) = common::serving_cert("nim-webhook");
    let ca_pem = std::fs::read_to_string(cert_dir.join("tls.crt"))?;
    let webhook_port = common::free_port();
    let health_port = common::free_port();
    let log = std::env::temp_dir().join(format!("nim-webhook-e2e-{}.log", std::process::id()));
    let log_file = std::fs::File::create(&log)?;
    let _host = Host(
        Command::new(env!("CARGO_BIN_EXE_odh-model-controller"))
            .args(["run", "--zap-devel=false", "--metrics-bind-address=0"])
            .arg(format!(
                "--kubeconfig={}",
                odh_test_support::cluster()?.kubeconfig.display()
            ))
            .arg(format!("--webhook-cert-dir={}", cert_dir.display()))
            .arg(format!("--webhook-bind-address=127.0.0.1:{webhook_port}"))
            .arg(format!(
                "--health-probe-bind-address=127.0.0.1:{health_port}"
            ))
            .env("POD_NAMESPACE", &ns)
            .env_remove("ODH_PLATFORM_TYPE")
            .env_remove("ENABLE_WEBHOOKS")
            .env_remove("NIM_STATE")
            .stdin(Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file)
            .spawn()?,
    );
    let with_log = |e: anyhow::Error| {
        anyhow::anyhow!(
            "{e}; log: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        )
    };
    eventually("the host is ready", Timing::default(), || async {
        let reply = common::get(([127, 0, 0, 1], health_port).into(), "/readyz").await?;
        anyhow::ensure!(reply.status == 200, "{}: {}", reply.status, reply.body);
        Ok(())
    })
    .await
    .map_err(with_log)?;

    let configuration = format!("nim-webhook-e2e-{ns}");
    let vwcs = Api::<ValidatingWebhookConfiguration>::all(client.clone());
    vwcs.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "metadata": {"name": configuration},
            "webhooks": [account_webhook(webhook_port, &ca_pem, &ns)],
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
