//! A ValidatingAdmissionPolicy (and its binding) that makes the API server refuse requests: for
//! tests of what the host and its plugins do with a refused write.

use kube::Client;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams};
use serde_json::json;

/// A refusal in force until [`Refusal::remove`].
pub struct Refusal {
    client: Client,
    name: String,
}

fn api(client: &Client, kind: &str, plural: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind);
    Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(&gvk, plural),
    )
}

impl Refusal {
    /// Refuses `operation` (`CREATE`, `DELETE`, ...) of `resource` in API group `group` (`""` for
    /// the core group) whenever the CEL `expression` is false, with `message`. The API server
    /// applies a new policy asynchronously: wait for it (e.g. with a dry run) before relying on it.
    pub async fn install(
        client: &Client,
        name: &str,
        (group, resource, operation): (&str, &str, &str),
        expression: &str,
        message: &str,
    ) -> anyhow::Result<Refusal> {
        let policy = json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{"apiGroups": [group], "apiVersions": ["*"],
                    "operations": [operation], "resources": [resource]}]},
                "validations": [{"expression": expression, "message": message}]
            }
        });
        let binding = json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": name, "validationActions": ["Deny"]}
        });
        let params = PostParams::default();
        api(
            client,
            "ValidatingAdmissionPolicy",
            "validatingadmissionpolicies",
        )
        .create(&params, &serde_json::from_value(policy)?)
        .await?;
        api(
            client,
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
        )
        .create(&params, &serde_json::from_value(binding)?)
        .await?;
        Ok(Refusal {
            client: client.clone(),
            name: name.to_string(),
        })
    }

    /// Lifts the refusal (binding first).
    pub async fn remove(self) -> anyhow::Result<()> {
        let params = DeleteParams::default();
        api(
            &self.client,
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
        )
        .delete(&self.name, &params)
        .await?;
        api(
            &self.client,
            "ValidatingAdmissionPolicy",
            "validatingadmissionpolicies",
        )
        .delete(&self.name, &params)
        .await?;
        Ok(())
    }
}
