//! `nim.opendatahub.io/v1` `Account`: an NVIDIA NGC account whose API key unlocks NIM
//! runtimes.

#[cfg(feature = "crd")]
use kube::CustomResource;
#[cfg(feature = "crd")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::meta::{Condition, ObjectReference, Time};

/// The API group.
pub const GROUP: &str = "nim.opendatahub.io";
/// The version.
pub const VERSION: &str = "v1";
/// The kind.
pub const KIND: &str = "Account";

/// Refresh rate used when a rate field is absent.
pub const DEFAULT_REFRESH_RATE: &str = "24h";

// `spec` of an Account. With feature `crd` it also derives the resource type `Account` (kube's
// `CustomResource`; the name is the kind's, which the CRD schema's title repeats). No doc
// comment on purpose: schemars would turn it into a description the shipped CRD lacks.
#[cfg_attr(feature = "crd", derive(CustomResource, JsonSchema))]
#[cfg_attr(
    feature = "crd",
    kube(
        group = "nim.opendatahub.io",
        version = "v1",
        kind = "Account",
        namespaced,
        status = "AccountStatus",
        printcolumn = r#"{"name":"Account Status","type":"string","jsonPath":".status.conditions[?(@.type==\"AccountStatus\")].status"}"#,
        printcolumn = r#"{"name":"Account Check","type":"date","jsonPath":".status.lastAccountCheck"}"#,
        printcolumn = r#"{"name":"Validation Rate","type":"string","jsonPath":".spec.validationRefreshRate"}"#,
        printcolumn = r#"{"name":"Last Successful Validation","type":"date","jsonPath":".status.lastSuccessfulValidation"}"#,
        printcolumn = r#"{"name":"Config Rate","type":"string","jsonPath":".spec.nimConfigRefreshRate"}"#,
        printcolumn = r#"{"name":"Last Successful Config","type":"date","jsonPath":".status.lastSuccessfulConfigRefresh"}"#
    )
)]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AccountSpec {
    /// Secret holding the NGC API key under data key `api_key`.
    pub api_key_secret: ObjectReference,
    /// ConfigMap whose data key `models` lists the NGC model names to restrict the catalog to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_list_config: Option<ObjectReference>,
    /// How often the API key is re-validated (Go duration); empty or invalid means 24h.
    #[serde(default = "default_refresh_rate")]
    #[cfg_attr(feature = "crd", schemars(extend("format" = "duration")))]
    pub validation_refresh_rate: String,
    /// How often the model-info ConfigMap is refreshed (Go duration); empty or invalid means 24h.
    #[serde(default = "default_refresh_rate")]
    #[cfg_attr(feature = "crd", schemars(extend("format" = "duration")))]
    pub nim_config_refresh_rate: String,
}

fn default_refresh_rate() -> String {
    DEFAULT_REFRESH_RATE.to_string()
}

// `status` of an Account (no doc comment, as for the spec).
#[cfg_attr(feature = "crd", derive(JsonSchema))]
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AccountStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_template: Option<ObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nim_config: Option<ObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nim_pull_secret: Option<ObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_successful_validation: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_successful_config_refresh: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_account_check: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}

#[cfg(feature = "crd")]
pub use crd::crd;

#[cfg(feature = "crd")]
mod crd {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
        CustomResourceDefinition, JSON, JSONSchemaProps, JSONSchemaPropsOrArray,
    };
    use kube::CustomResourceExt;

    use super::Account;

    /// Upstream's descriptions (kubebuilder doc comments), by field.
    const DESCRIPTIONS: [(&str, &str, &str); 11] = [
        (
            "spec",
            "apiKeySecret",
            "A reference to the Secret containing the NGC API Key.",
        ),
        (
            "spec",
            "modelListConfig",
            "A reference to the ConfigMap containing the list of NIM models that are allowed to be deployed.",
        ),
        (
            "spec",
            "nimConfigRefreshRate",
            "Refresh rate for models data, defaults to 24h",
        ),
        (
            "spec",
            "validationRefreshRate",
            "Refresh Rate for validation, defaults to 24h",
        ),
        (
            "status",
            "lastAccountCheck",
            "The last time we checked the Account, failed or successful.",
        ),
        (
            "status",
            "lastSuccessfulConfigRefresh",
            "The last time we refresh the integration config successfully.",
        ),
        (
            "status",
            "lastSuccessfulValidation",
            "The last time we validated successfully.",
        ),
        (
            "status",
            "nimConfig",
            "A reference to the ConfigMap with data for NIM deployment.",
        ),
        (
            "status",
            "nimPullSecret",
            "A reference to the Secret for pulling NIM images.",
        ),
        (
            "status",
            "runtimeTemplate",
            "A reference to the Template for NIM ServingRuntime.",
        ),
        ("status", "conditions", ""),
    ];

    /// Upstream's printer column descriptions, by column name.
    const COLUMN_DESCRIPTIONS: [(&str, &str); 6] = [
        ("Account Status", "Status of the Account"),
        ("Account Check", "Last account check, failed or successful"),
        ("Validation Rate", "Validation refresh rate"),
        ("Last Successful Validation", "Last successful validation"),
        ("Config Rate", "Config refresh rate"),
        ("Last Successful Config", "Last successful config refresh"),
    ];

    /// metav1.Condition's validation, as controller-gen writes it.
    fn validate_conditions(conditions: &mut JSONSchemaProps) {
        let Some(item) = conditions.items.as_mut().and_then(|items| match items {
            JSONSchemaPropsOrArray::Schema(schema) => Some(schema.as_mut()),
            JSONSchemaPropsOrArray::Schemas(_) => None,
        }) else {
            return;
        };
        let Some(props) = item.properties.as_mut() else {
            return;
        };
        if let Some(message) = props.get_mut("message") {
            message.max_length = Some(32768);
        }
        if let Some(generation) = props.get_mut("observedGeneration") {
            generation.minimum = Some(0.0);
        }
        if let Some(reason) = props.get_mut("reason") {
            reason.max_length = Some(1024);
            reason.min_length = Some(1);
            reason.pattern = Some("^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$".to_string());
        }
        if let Some(status) = props.get_mut("status") {
            status.enum_ = Some(
                ["True", "False", "Unknown"]
                    .into_iter()
                    .map(|v| JSON(serde_json::Value::String(v.to_string())))
                    .collect(),
            );
        }
        if let Some(type_) = props.get_mut("type") {
            type_.max_length = Some(316);
            type_.pattern = Some(
                r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
                    .to_string(),
            );
        }
    }

    /// The CRD as upstream ships it (`deploy/crds/nim.opendatahub.io_accounts.yaml`): `spec`
    /// optional at the top level, object references atomic, upstream's descriptions and
    /// metav1.Condition validation (status enum, type and reason patterns, lengths).
    pub fn crd() -> CustomResourceDefinition {
        let mut crd = Account::crd();
        crd.spec.names.list_kind = Some("AccountList".to_string());
        for version in &mut crd.spec.versions {
            for column in version.additional_printer_columns.iter_mut().flatten() {
                if let Some((_, d)) = COLUMN_DESCRIPTIONS.iter().find(|(n, _)| *n == column.name) {
                    column.description = Some(d.to_string());
                }
            }
            let Some(schema) = version
                .schema
                .as_mut()
                .and_then(|s| s.open_api_v3_schema.as_mut())
            else {
                continue;
            };
            schema.required = None;
            schema.description =
                Some("Account is used for adopting a NIM Account for Open Data Hub.".to_string());
            let props = schema.properties.get_or_insert_default();
            for (section, description) in [
                (
                    "spec",
                    "AccountSpec defines the desired state of an Account object.",
                ),
                (
                    "status",
                    "AccountStatus defines the observed state of an Account object.",
                ),
            ] {
                if let Some(s) = props.get_mut(section) {
                    s.description = Some(description.to_string());
                }
            }
            for (section, field, description) in DESCRIPTIONS {
                let Some(field) = props
                    .get_mut(section)
                    .and_then(|s| s.properties.as_mut())
                    .and_then(|p| p.get_mut(field))
                else {
                    continue;
                };
                if description.is_empty() {
                    validate_conditions(field);
                } else {
                    field.description = Some(description.to_string());
                }
            }
            for (section, refs) in [
                ("spec", &["apiKeySecret", "modelListConfig"][..]),
                (
                    "status",
                    &["runtimeTemplate", "nimConfig", "nimPullSecret"][..],
                ),
            ] {
                let Some(section_props) =
                    props.get_mut(section).and_then(|s| s.properties.as_mut())
                else {
                    continue;
                };
                for name in refs {
                    if let Some(field) = section_props.get_mut(*name) {
                        field.x_kubernetes_map_type = Some("atomic".to_string());
                    }
                }
            }
        }
        crd
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rates_always_serialize_and_default_when_absent() {
        let spec: AccountSpec =
            serde_json::from_value(json!({"apiKeySecret": {"name": "k"}})).unwrap();
        assert_eq!(spec.validation_refresh_rate, "24h");
        let back = serde_json::to_value(&spec).unwrap();
        assert_eq!(back["nimConfigRefreshRate"], "24h");
        assert_eq!(back["apiKeySecret"], json!({"name": "k"}));
        assert!(back.get("modelListConfig").is_none());
    }

    #[test]
    fn status_round_trips_with_the_api_shape() {
        let status = json!({
            "nimPullSecret": {"kind": "Secret", "name": "ngc-pull", "namespace": "ns"},
            "lastAccountCheck": "2026-01-01T00:00:00Z",
            "conditions": [{
                "type": "AccountStatus", "status": "True", "reason": "AccountSuccessful",
                "message": "ok", "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 2,
            }],
        });
        let parsed: AccountStatus = serde_json::from_value(status.clone()).unwrap();
        assert_eq!(
            parsed.conditions.as_ref().unwrap()[0].type_,
            "AccountStatus"
        );
        assert_eq!(serde_json::to_value(&parsed).unwrap(), status);
        assert_eq!(
            serde_json::to_value(AccountStatus::default()).unwrap(),
            json!({})
        );
    }
}

#[cfg(all(test, feature = "crd"))]
mod crd_tests {
    use super::crd;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
        CustomResourceDefinition, JSONSchemaProps,
    };

    fn schema_props(crd: &CustomResourceDefinition) -> &JSONSchemaProps {
        crd.spec.versions[0]
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
            .expect("schema")
    }

    #[test]
    fn crd_names_scope_and_subresources_match_upstream() {
        let crd = crd();
        assert_eq!(
            crd.metadata.name.as_deref(),
            Some("accounts.nim.opendatahub.io")
        );
        assert_eq!(crd.spec.scope, "Namespaced");
        assert_eq!(crd.spec.names.kind, "Account");
        assert_eq!(crd.spec.names.list_kind.as_deref(), Some("AccountList"));
        assert_eq!(crd.spec.names.singular.as_deref(), Some("account"));
        assert!(crd.spec.names.short_names.is_none());
        assert_eq!(crd.spec.versions.len(), 1);
        let v = &crd.spec.versions[0];
        assert!(v.served && v.storage);
        assert!(
            v.subresources
                .as_ref()
                .and_then(|s| s.status.as_ref())
                .is_some()
        );
        assert_eq!(
            crd.spec.versions[0]
                .additional_printer_columns
                .as_ref()
                .map(Vec::len),
            Some(6)
        );
    }

    #[test]
    fn spec_schema_requires_only_api_key_secret_and_defaults_rates() {
        let crd = crd();
        let root = schema_props(&crd);
        assert!(
            root.required.is_none(),
            "spec must be optional at the top level"
        );
        assert_eq!(root.title.as_deref(), Some("Account"));
        let spec = &root.properties.as_ref().unwrap()["spec"];
        assert_eq!(
            spec.required.as_deref(),
            Some(&["apiKeySecret".to_string()][..])
        );
        let props = spec.properties.as_ref().unwrap();
        for rate in ["validationRefreshRate", "nimConfigRefreshRate"] {
            assert_eq!(props[rate].format.as_deref(), Some("duration"), "{rate}");
            assert_eq!(
                props[rate].default.as_ref().map(|d| d.0.clone()),
                Some(serde_json::json!("24h")),
                "{rate}"
            );
        }
        assert_eq!(
            props["apiKeySecret"].x_kubernetes_map_type.as_deref(),
            Some("atomic")
        );
    }

    #[test]
    fn the_shipped_manifest_is_this_crd() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../deploy/crds/nim.opendatahub.io_accounts.yaml"
        );
        let shipped =
            std::fs::read_to_string(path).expect("deploy/crds/nim.opendatahub.io_accounts.yaml");
        // The file starts with the host's "generated by" comment line; the rest is the CRD.
        let (header, body) = shipped.split_once('\n').expect("a header line");
        assert!(header.starts_with("# Generated by"), "{header}");
        assert_eq!(body, serde_yaml::to_string(&crd()).unwrap());
    }
}
