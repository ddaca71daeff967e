//! The MaaS RBAC cleanup of the `llm-gateway` plugin on the real apiserver
//! (docs/plugins/llm-gateway.md, "MaaS RBAC cleanup"; scenarios MR-01..MR-05). The legacy Roles and
//! RoleBindings are created as the 3.3 release left them: by the Go controller's field manager
//! `manager` (which the host takes over), labelled `app.kubernetes.io/managed-by:
//! odh-model-controller`. The cleanup is two controllers here (upstream: a one-shot runnable), so
//! objects made after start are removed too.

use k8s_openapi::api::core::v1::Event;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Api, PostParams};
use odh_test_support::host::{controllers_running, load};
use odh_test_support::namespace::unique_name;
use odh_test_support::{TestContext, Timing, absent, consistently};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The Go controller's field manager (controller-runtime's default: the binary's name).
const GO_MANAGER: &str = "manager";

fn start() {
    controllers_running(|| vec![load("llm-gateway")], 2);
}

fn labels(managed: bool) -> Value {
    if managed {
        json!({"app.kubernetes.io/managed-by": "odh-model-controller"})
    } else {
        json!({})
    }
}

async fn create_as<K>(api: &Api<K>, manager: &str, object: Value) -> anyhow::Result<K>
where
    K: kube::Resource + Clone + DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let params = PostParams {
        field_manager: Some(manager.into()),
        ..Default::default()
    };
    Ok(api
        .create(&params, &serde_json::from_value(object)?)
        .await?)
}

async fn role(
    t: &TestContext,
    ns: &str,
    name: &str,
    managed: bool,
    manager: &str,
) -> anyhow::Result<()> {
    let api: Api<Role> = Api::namespaced(t.client.clone(), ns);
    create_as(
        &api,
        manager,
        json!({"metadata": {"name": name, "labels": labels(managed)},
               "rules": [{"apiGroups": ["serving.kserve.io"], "resources": ["llminferenceservices"],
                          "verbs": ["post"], "resourceNames": ["my-llmisvc"]}]}),
    )
    .await?;
    Ok(())
}

async fn binding(
    t: &TestContext,
    ns: &str,
    name: &str,
    managed: bool,
    manager: &str,
) -> anyhow::Result<()> {
    let api: Api<RoleBinding> = Api::namespaced(t.client.clone(), ns);
    create_as(
        &api,
        manager,
        json!({"metadata": {"name": name, "labels": labels(managed)},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "my-llmisvc-model-post-access"},
               "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "tier-free"}]}),
    )
    .await?;
    Ok(())
}

fn roles(t: &TestContext, ns: &str) -> Api<Role> {
    Api::namespaced(t.client.clone(), ns)
}

fn bindings(t: &TestContext, ns: &str) -> Api<RoleBinding> {
    Api::namespaced(t.client.clone(), ns)
}

fn short() -> Timing {
    Timing::within(std::time::Duration::from_secs(2))
}

/// MR-01: the labelled legacy Role and RoleBinding are deleted.
#[tokio::test]
async fn mr_01_legacy_role_and_binding_are_deleted() -> anyhow::Result<()> {
    let t = TestContext::new("maas-mr01").await?;
    start();
    let ns = t.namespace.clone();
    role(&t, &ns, "my-llmisvc-model-post-access", true, GO_MANAGER).await?;
    binding(
        &t,
        &ns,
        "my-llmisvc-model-post-access-tier-binding",
        true,
        GO_MANAGER,
    )
    .await?;
    absent(&roles(&t, &ns), "my-llmisvc-model-post-access").await?;
    absent(
        &bindings(&t, &ns),
        "my-llmisvc-model-post-access-tier-binding",
    )
    .await
}

/// MR-02, MR-03: without the label, or with another name, they stay. A labelled legacy Role that
/// another field manager made goes like the Go controller's (upstream deletes by label and name;
/// ours through `writes.delete-unmanaged`, docs/plugins/llm-gateway.md).
#[tokio::test]
async fn mr_02_mr_03_others_stay() -> anyhow::Result<()> {
    let t = TestContext::new("maas-mr02").await?;
    start();
    let ns = t.namespace.clone();
    role(&t, &ns, "unmanaged-model-post-access", false, GO_MANAGER).await?;
    binding(
        &t,
        &ns,
        "unmanaged-model-post-access-tier-binding",
        false,
        GO_MANAGER,
    )
    .await?;
    role(&t, &ns, "some-other-role", true, GO_MANAGER).await?;
    role(&t, &ns, "by-hand-model-post-access", true, "kubectl-create").await?;
    // A legacy one made in the same namespace afterwards is removed: the cleanup has run.
    role(&t, &ns, "later-model-post-access", true, GO_MANAGER).await?;
    absent(&roles(&t, &ns), "later-model-post-access").await?;
    absent(&roles(&t, &ns), "by-hand-model-post-access").await?;
    consistently("the others stay", short(), || async {
        for name in ["unmanaged-model-post-access", "some-other-role"] {
            anyhow::ensure!(
                roles(&t, &ns).get_opt(name).await?.is_some(),
                "Role {name} is gone"
            );
        }
        anyhow::ensure!(
            bindings(&t, &ns)
                .get_opt("unmanaged-model-post-access-tier-binding")
                .await?
                .is_some(),
            "the unlabelled RoleBinding is gone"
        );
        Ok(())
    })
    .await
}

/// MR-04: with nothing to remove the cleanup reports nothing (no failure Events about a Role).
#[tokio::test]
async fn mr_04_nothing_to_remove_is_quiet() -> anyhow::Result<()> {
    let t = TestContext::new("maas-mr04").await?;
    start();
    let ns = t.namespace.clone();
    role(&t, &ns, "some-other-role", true, GO_MANAGER).await?;
    consistently("no failure is reported", short(), || async {
        let events: Api<Event> = Api::namespaced(t.client.clone(), &ns);
        let warnings: Vec<_> = events
            .list(&Default::default())
            .await?
            .items
            .into_iter()
            .filter(|e| e.type_.as_deref() == Some("Warning"))
            .collect();
        anyhow::ensure!(warnings.is_empty(), "{warnings:?}");
        anyhow::ensure!(
            roles(&t, &ns).get_opt("some-other-role").await?.is_some(),
            "deleted"
        );
        Ok(())
    })
    .await
}

/// MR-05: legacy Roles in two namespaces are both deleted.
#[tokio::test]
async fn mr_05_roles_in_several_namespaces() -> anyhow::Result<()> {
    let t = TestContext::new("maas-mr05").await?;
    start();
    let ns1 = t.namespace.clone();
    let ns2 = unique_name("maas-mr05-b");
    let namespace: k8s_openapi::api::core::v1::Namespace =
        serde_json::from_value(json!({"metadata": {"name": ns2}}))?;
    Api::<k8s_openapi::api::core::v1::Namespace>::all(t.client.clone())
        .create(&PostParams::default(), &namespace)
        .await?;
    role(&t, &ns1, "svc1-model-post-access", true, GO_MANAGER).await?;
    role(&t, &ns2, "svc2-model-post-access", true, GO_MANAGER).await?;
    absent(&roles(&t, &ns1), "svc1-model-post-access").await?;
    absent(&roles(&t, &ns2), "svc2-model-post-access").await
}
