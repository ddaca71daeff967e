//! `nim.opendatahub.io/v1` `Account`: an NVIDIA NGC account whose API key unlocks NIM runtimes.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Refresh rate used when a rate field is absent.
pub const DEFAULT_REFRESH_RATE: &str = "24h";

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
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
)]
#[serde(rename_all = "camelCase")]
pub struct AccountSpec {
    /// Secret holding the NGC API key under data key `api_key`.
    pub api_key_secret: ObjectReference,
    /// ConfigMap whose data key `models` lists the NGC model names to restrict the catalog to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_list_config: Option<ObjectReference>,
    /// How often the API key is re-validated (Go duration); empty or invalid means 24h.
    #[serde(default = "default_refresh_rate")]
    #[schemars(extend("format" = "duration"))]
    pub validation_refresh_rate: String,
    /// How often the model-info ConfigMap is refreshed (Go duration); empty or invalid means 24h.
    #[serde(default = "default_refresh_rate")]
    #[schemars(extend("format" = "duration"))]
    pub nim_config_refresh_rate: String,
}

fn default_refresh_rate() -> String {
    DEFAULT_REFRESH_RATE.to_string()
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
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

/// The CRD as upstream ships it: `spec` optional at the top level, object references atomic.
pub fn crd() -> CustomResourceDefinition {
    let mut crd = Account::crd();
    crd.spec.names.list_kind = Some("AccountList".to_string());
    for version in &mut crd.spec.versions {
        let Some(schema) = version
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
        else {
            continue;
        };
        schema.required = None;
        let props = schema.properties.get_or_insert_default();
        for (section, refs) in [
            ("spec", &["apiKeySecret", "modelListConfig"][..]),
            (
                "status",
                &["runtimeTemplate", "nimConfig", "nimPullSecret"][..],
            ),
        ] {
            let Some(section_props) = props.get_mut(section).and_then(|s| s.properties.as_mut())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn schema_props(
        crd: &CustomResourceDefinition,
    ) -> &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps {
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
    }

    #[test]
    fn printer_columns_are_upstreams() {
        let crd = crd();
        let cols: Vec<(String, String, String)> = crd.spec.versions[0]
            .additional_printer_columns
            .iter()
            .flatten()
            .map(|c| (c.name.clone(), c.type_.clone(), c.json_path.clone()))
            .collect();
        let expected = [
            (
                "Account Status",
                "string",
                ".status.conditions[?(@.type==\"AccountStatus\")].status",
            ),
            ("Account Check", "date", ".status.lastAccountCheck"),
            ("Validation Rate", "string", ".spec.validationRefreshRate"),
            (
                "Last Successful Validation",
                "date",
                ".status.lastSuccessfulValidation",
            ),
            ("Config Rate", "string", ".spec.nimConfigRefreshRate"),
            (
                "Last Successful Config",
                "date",
                ".status.lastSuccessfulConfigRefresh",
            ),
        ];
        let expected: Vec<(String, String, String)> = expected
            .iter()
            .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
            .collect();
        assert_eq!(cols, expected);
    }

    #[test]
    fn spec_schema_requires_only_api_key_secret_and_defaults_rates() {
        let crd = crd();
        let root = schema_props(&crd);
        assert!(
            root.required.is_none(),
            "spec must be optional at the top level"
        );
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
    fn rates_always_serialize_and_default_when_absent() {
        let spec: AccountSpec =
            serde_json::from_value(serde_json::json!({"apiKeySecret": {"name": "k"}})).unwrap();
        assert_eq!(spec.validation_refresh_rate, "24h");
        let back = serde_json::to_value(&spec).unwrap();
        assert_eq!(back["nimConfigRefreshRate"], "24h");
        assert!(back.get("modelListConfig").is_none());
    }

    #[test]
    fn shipped_manifest_matches_the_types() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../deploy/crds/nim.opendatahub.io_accounts.yaml"
        );
        let shipped =
            std::fs::read_to_string(path).expect("deploy/crds/nim.opendatahub.io_accounts.yaml");
        assert_eq!(
            shipped,
            super::super::to_manifest(&crd()).unwrap(),
            "deploy/crds is stale: run `make crds`"
        );
    }
}
