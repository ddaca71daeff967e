//! The Account's spec, typed as `odh-crd-types` declares it for the CRD ([`AccountSpec`]).

use odh_crd_types::account::{AccountSpec, DEFAULT_REFRESH_RATE};
use odh_plugin_sdk::{Object, Value};
use serde::de::DeserializeOwned;

/// The Account's spec. Each field is read on its own and one that does not read (which the
/// CRD's schema prevents) counts as absent: an absent reference is empty, an absent rate the
/// schema's default, `24h` (an empty or unparsable rate means 24h as well,
/// [`crate::time::refresh_rate_secs`]).
pub fn spec(account: &Object) -> AccountSpec {
    let spec = account.at(&["spec"]).unwrap_or(&Value::Null);
    let rate = |name: &str| read(spec, name).unwrap_or_else(|| DEFAULT_REFRESH_RATE.to_string());
    AccountSpec {
        api_key_secret: read(spec, "apiKeySecret").unwrap_or_default(),
        model_list_config: read(spec, "modelListConfig"),
        validation_refresh_rate: rate("validationRefreshRate"),
        nim_config_refresh_rate: rate("nimConfigRefreshRate"),
    }
}

fn read<T: DeserializeOwned>(spec: &Value, name: &str) -> Option<T> {
    spec.get(name)
        .and_then(|value| serde_json::from_value(value.clone()).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use odh_plugin_sdk::json;

    fn account(spec: Value) -> Object {
        Object(
            json!({"apiVersion": "nim.opendatahub.io/v1", "kind": "Account",
                      "metadata": {"name": "a"}, "spec": spec}),
        )
    }

    #[test]
    fn fields_read_as_the_crd_declares_them() {
        let s = spec(&account(json!({
            "apiKeySecret": {"name": "key", "namespace": "other"},
            "modelListConfig": {"name": "models"},
            "validationRefreshRate": "1h",
            "nimConfigRefreshRate": "2h",
        })));
        assert_eq!(s.api_key_secret.name.as_deref(), Some("key"));
        assert_eq!(s.api_key_secret.namespace.as_deref(), Some("other"));
        assert_eq!(
            s.model_list_config.and_then(|r| r.name).as_deref(),
            Some("models")
        );
        assert_eq!(
            (
                s.validation_refresh_rate.as_str(),
                s.nim_config_refresh_rate.as_str()
            ),
            ("1h", "2h")
        );
    }

    #[test]
    fn what_does_not_read_is_absent() {
        for bad in [
            Value::Null,
            json!({}),
            json!({"apiKeySecret": "k", "modelListConfig": null, "validationRefreshRate": 5}),
        ] {
            let s = spec(&account(bad.clone()));
            assert_eq!(s.api_key_secret.name, None, "{bad}");
            assert_eq!(s.model_list_config, None, "{bad}");
            assert_eq!(s.validation_refresh_rate, "24h", "{bad}");
            assert_eq!(s.nim_config_refresh_rate, "24h", "{bad}");
        }
        let s = spec(&account(
            json!({"apiKeySecret": {"name": "k"}, "nimConfigRefreshRate": ""}),
        ));
        assert_eq!(s.api_key_secret.name.as_deref(), Some("k"));
        assert_eq!(s.nim_config_refresh_rate, "");
    }
}
