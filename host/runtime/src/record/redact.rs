//! What a record never holds: a Secret's `data`/`stringData` (as the shadow report hides them),
//! the tokens of TokenRequests and TokenReviews, annotation values whose key names a credential,
//! and the `extra` values of the requesting user (they may carry credential ids). Replay sees
//! the redacted values, the same on both sides of a comparison.

use serde_json::Value;

use crate::shadow_report::redacted;
use crate::wire::{AdmissionDecision, Outcome};

pub const REDACTED: &str = "<redacted>";

/// Words in an annotation's key that make its value a credential.
const CREDENTIAL_WORDS: [&str; 5] = ["token", "authorization", "password", "secret", "apikey"];

/// `value` with every Secret's contents, token and credential annotation redacted.
pub fn redact_value(value: &Value) -> Value {
    let mut copy = redacted(value);
    redact_tokens(&mut copy);
    copy
}

fn redact_tokens(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let kind = map.get("kind").and_then(Value::as_str).unwrap_or_default();
            if matches!(kind, "TokenRequest" | "TokenReview") {
                for part in ["spec", "status"] {
                    if let Some(Value::Object(p)) = map.get_mut(part)
                        && let Some(token) = p.get_mut("token")
                    {
                        *token = Value::String(REDACTED.into());
                    }
                }
            }
            if let Some(Value::Object(annotations)) = map
                .get_mut("metadata")
                .and_then(|m| m.get_mut("annotations"))
            {
                for (key, v) in annotations.iter_mut() {
                    if names_a_credential(key) {
                        *v = Value::String(REDACTED.into());
                    }
                }
            }
            map.values_mut().for_each(redact_tokens);
        }
        Value::Array(items) => items.iter_mut().for_each(redact_tokens),
        _ => {}
    }
}

fn names_a_credential(key: &str) -> bool {
    let key = key.to_ascii_lowercase().replace(['-', '_'], "");
    CREDENTIAL_WORDS.iter().any(|w| key.contains(w))
}

/// The requesting user with the values of `extra` redacted.
pub fn redact_user_info(user: &Value) -> Value {
    let mut copy = user.clone();
    if let Some(Value::Object(extra)) = copy.get_mut("extra") {
        for v in extra.values_mut() {
            *v = Value::String(REDACTED.into());
        }
    }
    copy
}

/// A decision as recorded: objects redacted; for a Secret under review, the values of patch
/// operations on its contents too.
pub fn redact_decision(decision: &AdmissionDecision, secret: bool) -> AdmissionDecision {
    let mut d = decision.clone();
    d.mutated = d.mutated.as_ref().map(redact_value);
    for effect in &mut d.side_effects {
        effect.object = redact_value(&effect.object);
    }
    if secret && let Some(Value::Array(ops)) = &mut d.patch {
        for op in ops {
            let contents = op
                .get("path")
                .and_then(Value::as_str)
                .is_some_and(|p| p.starts_with("/data") || p.starts_with("/stringData"));
            if contents && let Some(v) = op.get_mut("value") {
                *v = Value::String(REDACTED.into());
            }
        }
    }
    d
}

/// An outcome as recorded: every object it applies redacted.
pub fn redact_outcome(outcome: &Outcome) -> Outcome {
    let mut o = outcome.clone();
    for desired in &mut o.apply {
        desired.object = redact_value(&desired.object);
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_tokens_and_credential_annotations_are_redacted() {
        let review = json!({
            "kind": "Secret", "apiVersion": "v1",
            "metadata": {"name": "s", "annotations": {
                "example.com/api-key": "k1", "openshift.io/token-secret.value": "k2",
                "Authorization": "Bearer k3", "team": "ml"}},
            "data": {"password": "aHVudGVyMg=="}, "stringData": {"token": "k4"}
        });
        let out = redact_value(&review).to_string();
        for secret in ["k1", "k2", "k3", "k4", "aHVudGVyMg=="] {
            assert!(!out.contains(secret), "{secret} leaked: {out}");
        }
        assert!(out.contains("\"team\":\"ml\""), "{out}");
        let token =
            json!({"kind": "TokenRequest", "spec": {"token": "t1"}, "status": {"token": "t2"}});
        let out = redact_value(&json!([token])).to_string();
        assert!(!out.contains("t1") && !out.contains("t2"), "{out}");
        let user = json!({"username": "u", "extra": {"authentication.kubernetes.io/credential-id": ["X"]}});
        assert_eq!(
            redact_user_info(&user)["extra"]["authentication.kubernetes.io/credential-id"],
            REDACTED
        );
    }

    #[test]
    fn a_secrets_patch_values_are_redacted() {
        let d = AdmissionDecision {
            allowed: true,
            message: None,
            code: None,
            mutated: None,
            patch: Some(json!([
                {"op": "add", "path": "/data/key", "value": "c2VjcmV0"},
                {"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}
            ])),
            warnings: vec![],
            side_effects: vec![],
            reason: None,
        };
        let r = redact_decision(&d, true);
        let patch = r.patch.unwrap();
        assert_eq!(patch[0]["value"], REDACTED);
        assert_eq!(patch[1]["value"], json!({"a": "b"}));
        assert_eq!(redact_decision(&d, false).patch, d.patch);
    }
}
