//! The MaaS RBAC cleanup natively (docs/plugins/llm-gateway.md, "MaaS RBAC cleanup"; MR-01..MR-05
//! at the plugin level, the same
//! scenarios run on the real API server in `tests/integration/tests/maas_rbac_cleanup.rs`).

use llm_gateway::LlmGateway;
use llm_gateway::maas::{ROLE_BINDINGS, ROLES, SELECTOR};
use llm_gateway::settings::Settings;
use odh_kinds::gvk;
use odh_plugin_sdk::testing::{FakeCluster, FakeWrites};
use odh_plugin_sdk::{Ctx, Object, Outcome, Plugin, ReconcileRequest, Value, json};

fn object(kind: &str, ns: &str, name: &str, labelled: bool) -> Value {
    let labels = if labelled {
        json!({"app.kubernetes.io/managed-by": "odh-model-controller"})
    } else {
        json!({})
    };
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
           "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{name}"), "labels": labels}})
}

/// The outcome with the deletes made while running folded in; each of them was asked for
/// whoever made the object, as long as it still carries the cleanup's label.
fn run(controller: &str, v: &Value) -> Outcome {
    let cluster = FakeCluster::for_manifest(&LlmGateway::manifest());
    let request = ReconcileRequest::for_object(controller, &Object(v.clone()));
    let writes = FakeWrites::new();
    let settings = Settings::default();
    let cx = Ctx::new(&settings, &cluster).with_writes(&writes);
    let outcome = LlmGateway::reconcile(&request, &cx).unwrap();
    assert!(writes.deleted().is_empty());
    assert!(
        writes
            .deleted_unmanaged()
            .iter()
            .all(|(_, selector)| selector == SELECTOR)
    );
    let outcome = writes.folded_into(outcome);
    outcome.assert_declared(&LlmGateway::manifest());
    assert!(outcome.apply.is_empty() && outcome.events.is_empty() && outcome.error.is_none());
    outcome
}

fn deletes(controller: &str, v: &Value) -> bool {
    let outcome = run(controller, v);
    let name = v["metadata"]["name"].as_str().unwrap();
    match outcome.delete.as_slice() {
        [] => false,
        [key] => {
            assert_eq!(key.name, name);
            assert_eq!(
                key.namespace.as_deref(),
                v["metadata"]["namespace"].as_str()
            );
            assert_eq!(key.gvk.kind, v["kind"].as_str().unwrap());
            true
        }
        more => panic!("{more:?}"),
    }
}

/// MR-01, MR-05: labelled legacy Roles and RoleBindings (any namespace) are deleted.
#[test]
fn mr_01_mr_05_legacy_objects_are_deleted() {
    let role = object("Role", "ns", "my-llmisvc-model-post-access", true);
    let binding = object(
        "RoleBinding",
        "ns",
        "my-llmisvc-model-post-access-tier-binding",
        true,
    );
    assert!(deletes(ROLES, &role), "MR-01");
    assert!(deletes(ROLE_BINDINGS, &binding), "MR-01");
    for (ns, name) in [
        ("ns1", "svc1-model-post-access"),
        ("ns2", "svc2-model-post-access"),
    ] {
        assert!(
            deletes(ROLES, &object("Role", ns, name, true)),
            "MR-05 {name}"
        );
    }
}

/// MR-02: without the label nothing is touched.
#[test]
fn mr_02_unlabelled_objects_stay() {
    assert!(!deletes(
        ROLES,
        &object("Role", "ns", "unmanaged-model-post-access", false)
    ));
    let binding = object(
        "RoleBinding",
        "ns",
        "unmanaged-model-post-access-tier-binding",
        false,
    );
    assert!(!deletes(ROLE_BINDINGS, &binding));
    let other = object("Role", "ns", "x-model-post-access", false);
    let mut other_manager = other.clone();
    other_manager["metadata"]["labels"]["app.kubernetes.io/managed-by"] = "someone".into();
    assert!(!deletes(ROLES, &other_manager));
}

/// MR-03: other names stay, including a binding-suffixed Role and a Role-suffixed binding.
#[test]
fn mr_03_other_names_stay() {
    assert!(!deletes(
        ROLES,
        &object("Role", "ns", "some-other-role", true)
    ));
    assert!(!deletes(
        ROLES,
        &object("Role", "ns", "model-post-access-x", true)
    ));
    let binding = object("RoleBinding", "ns", "svc-model-post-access", true);
    assert!(!deletes(ROLE_BINDINGS, &binding));
    // The Role suffix is a suffix of the binding's, so a `-tier-binding` Role also goes.
    assert!(deletes(
        ROLES,
        &object(
            "Role",
            "ns",
            "svc-model-post-access-tier-binding-model-post-access",
            true
        )
    ));
}

/// MR-04: nothing to do (a gone object, one already being deleted) is success.
#[test]
fn mr_04_nothing_to_do() {
    let cluster = FakeCluster::for_manifest(&LlmGateway::manifest());
    for controller in [ROLES, ROLE_BINDINGS] {
        let request = ReconcileRequest::new(controller, Some("ns"), "gone-model-post-access");
        let outcome =
            LlmGateway::reconcile(&request, &Ctx::new(&Settings::default(), &cluster)).unwrap();
        assert_eq!(outcome, Outcome::default());
    }
    let mut deleting = object("Role", "ns", "svc-model-post-access", true);
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z".into();
    assert!(!deletes(ROLES, &deleting));
}

/// Two controllers on the leader, each limited to the labelled objects of its kind.
#[test]
fn manifest_declares_the_cleanup_controllers() {
    let manifest = LlmGateway::manifest();
    for (name, kind) in [(ROLES, gvk::role()), (ROLE_BINDINGS, gvk::role_binding())] {
        let c = manifest
            .controllers
            .iter()
            .find(|c| c.name == name)
            .unwrap();
        assert_eq!(c.primary, kind);
        assert_eq!(c.primary_label_selector.as_deref(), Some(SELECTOR));
        assert_eq!(
            SELECTOR,
            "app.kubernetes.io/managed-by=odh-model-controller"
        );
        assert!(c.watches.is_empty() && c.owns.is_empty() && c.finalizer.is_none());
        assert!(manifest.writes.contains(&kind));
    }
}

/// Upstream's per-item error text: a refused delete fails the reconcile with
/// `failed to delete Role <ns>/<name>: <the API server's message>` (the host retries it).
#[test]
fn a_refused_delete_names_the_object() {
    let cluster = FakeCluster::for_manifest(&LlmGateway::manifest());
    for (controller, kind, name, gvk) in [
        (ROLES, "Role", "svc-model-post-access", gvk::role()),
        (
            ROLE_BINDINGS,
            "RoleBinding",
            "svc-model-post-access-tier-binding",
            gvk::role_binding(),
        ),
    ] {
        let request =
            ReconcileRequest::for_object(controller, &Object(object(kind, "ns", name, true)));
        let writes = FakeWrites::new().fail(gvk, FakeWrites::refused(403, "Forbidden", "nope"));
        let settings = Settings::default();
        let cx = Ctx::new(&settings, &cluster).with_writes(&writes);
        let error = LlmGateway::reconcile(&request, &cx).unwrap_err();
        assert_eq!(
            error,
            odh_plugin_sdk::Error::Transient(format!("failed to delete {kind} ns/{name}: nope"))
        );
    }
}
