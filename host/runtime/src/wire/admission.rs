//! An admission decision: allowed or not, the mutated object, warnings, side effects.

use super::*;
use crate::bindings::admission_types as adm;

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionDecision {
    pub allowed: bool,
    pub message: Option<String>,
    pub code: Option<u16>,
    /// The whole mutated object, when the plugin returned one.
    pub mutated: Option<Value>,
    /// The RFC 6902 patch to send: the plugin's own, or derived from `mutated`.
    pub patch: Option<Value>,
    pub warnings: Vec<String>,
    pub side_effects: Vec<Desired>,
    /// `status.reason` of a denial that is an API error passed on (the host's, never the
    /// plugin's: the WIT decision has no reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl AdmissionDecision {
    /// A denial that is the API server's status, passed on.
    pub fn from_status(status: &crate::writes::ApiStatus) -> Self {
        AdmissionDecision {
            allowed: false,
            message: Some(status.message.clone()),
            code: Some(status.code),
            mutated: None,
            patch: None,
            warnings: Vec::new(),
            side_effects: Vec::new(),
            reason: Some(status.reason.clone()).filter(|r| !r.is_empty()),
        }
    }
}

impl TryFrom<adm::AdmissionDecision> for AdmissionDecision {
    type Error = String;

    fn try_from(d: adm::AdmissionDecision) -> Result<Self, String> {
        let patch = d
            .patch
            .as_deref()
            .map(|p| parse_json("patch", p))
            .transpose()?;
        if let Some(p) = &patch {
            serde_json::from_value::<json_patch::Patch>(p.clone())
                .map_err(|e| format!("patch is not an RFC 6902 JSON patch: {e}"))?;
        }
        Ok(AdmissionDecision {
            allowed: d.allowed,
            message: d.message,
            code: d.code,
            mutated: d
                .mutated
                .as_deref()
                .map(|m| parse_json("mutated", m))
                .transpose()?,
            patch,
            warnings: d.warnings,
            side_effects: d
                .side_effects
                .into_iter()
                .enumerate()
                .map(|(i, s)| desired_from(s, &format!("sideEffects[{i}].object")))
                .collect::<Result<_, _>>()?,
            reason: None,
        })
    }
}

/// The RFC 6902 patch of a mutating decision: the plugin's own patch as is, else the
/// difference from the request's object to the mutated one.
pub fn patch_for(
    patch: Option<Value>,
    mutated: Option<Value>,
    original: Option<&Value>,
) -> Option<Value> {
    patch.or_else(|| {
        let mutated = mutated?;
        let original = original.unwrap_or(&Value::Null);
        // The empty patch the diff would find, without walking both trees building pointers.
        if &mutated == original {
            return Some(Value::Array(Vec::new()));
        }
        Some(
            serde_json::to_value(json_patch::diff(original, &mutated))
                .unwrap_or(Value::Array(vec![])),
        )
    })
}
