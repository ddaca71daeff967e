//! Cluster-side helpers shared by the test binaries: Events a controller reported, and an
//! admission policy that makes the apiserver refuse some writes (to test a failing write).

use k8s_openapi::api::events::v1::Event;
use kube::Client;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use serde_json::json;

/// Whether an Event with `reason` whose note contains `note` is among `events` (one look, for
/// [`crate::eventually`]); the error lists the (reason, note) pairs seen.
pub async fn event_with(events: &Api<Event>, reason: &str, note: &str) -> anyhow::Result<()> {
    let list = events.list(&Default::default()).await?;
    anyhow::ensure!(
        list.items
            .iter()
            .any(|e| e.reason.as_deref() == Some(reason)
                && e.note.as_deref().is_some_and(|n| n.contains(note))),
        "events: {:?}",
        list.items
            .iter()
            .map(|e| (&e.reason, &e.note))
            .collect::<Vec<_>>()
    );
    Ok(())
}

/// A ValidatingAdmissionPolicy, and its binding of the same name (`Deny`), making the
/// apiserver refuse writes of one resource: see [`refuse_writes`].
#[derive(Debug, Clone)]
pub struct RefuseWrites {
    name: String,
    group: String,
    version: String,
    resource: String,
    operations: Vec<String>,
    expression: String,
    message: String,
    reason: Option<String>,
    namespace: Option<String>,
}

/// Writes of `resource` (`group`/`version`, plural resource name) refused by a policy named
/// `name`: set the operations ([`RefuseWrites::on`]) and the CEL expression a write must
/// satisfy ([`RefuseWrites::unless`]), then [`RefuseWrites::install`] it. Policies are
/// cluster-wide: give each a name of its test's own, and scope it with
/// [`RefuseWrites::in_namespace`] when the resource is namespaced. The apiserver applies a new
/// policy after a short delay: probe until a write is refused.
pub fn refuse_writes(name: &str, group: &str, version: &str, resource: &str) -> RefuseWrites {
    RefuseWrites {
        name: name.into(),
        group: group.into(),
        version: version.into(),
        resource: resource.into(),
        operations: Vec::new(),
        expression: "false".into(),
        message: String::new(),
        reason: None,
        namespace: None,
    }
}

impl RefuseWrites {
    /// The operations refused (`CREATE`, `UPDATE`, `DELETE`).
    pub fn on(mut self, operations: &[&str]) -> Self {
        self.operations = operations.iter().map(|o| o.to_string()).collect();
        self
    }

    /// Refused unless the CEL `expression` holds (`object`, `oldObject`...), with `message`.
    pub fn unless(mut self, expression: &str, message: &str) -> Self {
        self.expression = expression.into();
        self.message = message.into();
        self
    }

    /// The refusal's reason (the apiserver's default is `Invalid`).
    pub fn reason(mut self, reason: &str) -> Self {
        self.reason = Some(reason.into());
        self
    }

    /// Only in `namespace` (the binding's namespace selector).
    pub fn in_namespace(mut self, namespace: &str) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Creates the policy and its binding.
    pub async fn install(self, client: &Client) -> anyhow::Result<Refusal> {
        let mut validation = json!({"expression": self.expression, "message": self.message});
        if let Some(reason) = &self.reason {
            validation["reason"] = json!(reason);
        }
        let mut binding_spec = json!({"policyName": self.name, "validationActions": ["Deny"]});
        if let Some(namespace) = &self.namespace {
            binding_spec["matchResources"] = json!({"namespaceSelector":
                {"matchLabels": {"kubernetes.io/metadata.name": namespace}}});
        }
        let refusal = Refusal {
            client: client.clone(),
            name: self.name.clone(),
        };
        refusal
            .policies()
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({
                    "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
                    "metadata": {"name": self.name},
                    "spec": {
                        "matchConstraints": {"resourceRules": [{"apiGroups": [self.group],
                            "apiVersions": [self.version], "operations": self.operations,
                            "resources": [self.resource]}]},
                        "validations": [validation],
                    },
                }))?,
            )
            .await?;
        refusal
            .bindings()
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({
                    "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
                    "metadata": {"name": self.name},
                    "spec": binding_spec,
                }))?,
            )
            .await?;
        Ok(refusal)
    }
}

/// An installed [`RefuseWrites`]: [`Refusal::remove`] lifts it.
pub struct Refusal {
    client: Client,
    name: String,
}

impl Refusal {
    /// Deletes the binding, then the policy.
    pub async fn remove(self) -> anyhow::Result<()> {
        self.bindings()
            .delete(&self.name, &DeleteParams::default())
            .await?;
        self.policies()
            .delete(&self.name, &DeleteParams::default())
            .await?;
        Ok(())
    }

    fn policies(&self) -> Api<DynamicObject> {
        self.api("ValidatingAdmissionPolicy", "validatingadmissionpolicies")
    }

    fn bindings(&self) -> Api<DynamicObject> {
        self.api(
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
        )
    }

    fn api(&self, kind: &str, plural: &str) -> Api<DynamicObject> {
        let gvk = GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind);
        Api::all_with(
            self.client.clone(),
            &ApiResource::from_gvk_with_plural(&gvk, plural),
        )
    }
}
