//! A plugin of realistic size for `make bench`: it pulls in the `regex` crate to validate label
//! values, so its component (about 600 KiB) is as large as a real plugin.

use odh_plugin_sdk::Operation::{Create, Update};
use odh_plugin_sdk::{
    AdmissionDecision, AdmissionRequest, Ctx, Error, Manifest, NoSettings, Plugin, Webhook,
    core_gvk,
};

pub struct Heavy;

/// The default rule: label values are (Unicode) word characters, dots and dashes.
pub const DEFAULT_PATTERN: &str = r"^[\w.-]*$";

/// Labels whose values do not match `pattern`.
pub fn offending_labels(labels: &[(String, String)], pattern: &str) -> Result<Vec<String>, String> {
    let re = regex::Regex::new(pattern).map_err(|e| format!("invalid pattern: {e}"))?;
    Ok(labels
        .iter()
        .filter(|(_, v)| !re.is_match(v))
        .map(|(k, _)| k.clone())
        .collect())
}

impl Plugin for Heavy {
    type Settings = NoSettings;

    fn manifest() -> Manifest {
        Manifest::new("heavy", "0.1.0")
            .description("Validates ConfigMap label values against a regular expression")
            .webhook(Webhook::validating(
                "/validate-heavy",
                core_gvk("ConfigMap"),
                [Create, Update],
            ))
    }

    fn validate(
        request: &AdmissionRequest,
        _: &Ctx<NoSettings>,
    ) -> Result<AdmissionDecision, Error> {
        let Some(obj) = request.object()? else {
            return Ok(AdmissionDecision::allow());
        };
        let labels: Vec<(String, String)> = obj.labels().into_iter().collect();
        let bad = offending_labels(&labels, DEFAULT_PATTERN).map_err(Error::internal)?;
        Ok(if bad.is_empty() {
            AdmissionDecision::allow()
        } else {
            AdmissionDecision::deny(format!("label values not allowed: {}", bad.join(", ")))
        })
    }
}

odh_plugin_sdk::plugin!(Heavy);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_values_outside_the_pattern() {
        let labels = vec![
            ("ok".to_string(), "värde-1".to_string()),
            ("bad".to_string(), "a b".to_string()),
        ];
        assert_eq!(
            offending_labels(&labels, DEFAULT_PATTERN).unwrap(),
            vec!["bad".to_string()]
        );
        assert!(offending_labels(&labels, "(").is_err());
    }
}
