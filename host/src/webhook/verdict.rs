//! Turning a plugin's answer (or its failure) into what the webhook responds.

use serde_json::Value;

use crate::plugin::wire::{AdmissionDecision, WebhookType};
use crate::plugin::{CallError, GuestError};

/// What the webhook answers to one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub allowed: bool,
    /// `status.code`; sent (with `message`) when there is a message or a denial.
    pub code: u16,
    pub message: Option<String>,
    pub warnings: Vec<String>,
    /// An RFC 6902 patch (a JSON array); sent only when allowed and non-empty.
    pub patch: Option<Value>,
}

impl Verdict {
    pub fn allow() -> Self {
        Self {
            allowed: true,
            code: 200,
            message: None,
            warnings: Vec::new(),
            patch: None,
        }
    }

    pub fn deny(code: u16, message: impl Into<String>) -> Self {
        Self {
            allowed: false,
            code,
            message: Some(message.into()),
            warnings: Vec::new(),
            patch: None,
        }
    }

    /// The plugin's decision. A denial without a code gets 403; a patch is kept only for a
    /// mutating webhook.
    pub fn from_decision(kind: WebhookType, decision: AdmissionDecision) -> Self {
        let code = if decision.allowed {
            200
        } else {
            decision.code.unwrap_or(403)
        };
        Self {
            allowed: decision.allowed,
            code,
            message: decision.message,
            warnings: decision.warnings,
            patch: match kind {
                WebhookType::Mutating => decision.patch,
                WebhookType::Validating => None,
            },
        }
    }

    /// A failed call. The guest's own `invalid` (400) and `denied` (403) errors are shown with
    /// the guest's message, as the contract says; anything else is a 500 whose message names
    /// the plugin (the `CallError`'s own text).
    pub fn from_call_error(error: &CallError) -> Self {
        match error.guest_error() {
            Some(GuestError::Invalid(m)) => Self::deny(400, m.clone()),
            Some(GuestError::Denied(m)) => Self::deny(403, m.clone()),
            _ => Self::deny(500, error.to_string()),
        }
    }
}

/// Whether the plugin asked for a patch that would actually change something.
pub fn has_patch(patch: Option<&Value>) -> bool {
    patch
        .and_then(Value::as_array)
        .is_some_and(|ops| !ops.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decision(allowed: bool, code: Option<u16>) -> AdmissionDecision {
        AdmissionDecision {
            allowed,
            message: Some("m".into()),
            code,
            mutated: None,
            patch: Some(json!([{"op": "remove", "path": "/a"}])),
            warnings: vec![],
            side_effects: vec![],
        }
    }

    #[test]
    fn denial_codes_default_to_403_and_validating_webhooks_never_patch() {
        let v = Verdict::from_decision(WebhookType::Validating, decision(false, None));
        assert_eq!((v.allowed, v.code, v.patch), (false, 403, None));
        let v = Verdict::from_decision(WebhookType::Mutating, decision(false, Some(422)));
        assert_eq!(v.code, 422);
        let v = Verdict::from_decision(WebhookType::Mutating, decision(true, Some(422)));
        assert_eq!(v.code, 200);
        assert!(has_patch(v.patch.as_ref()));
    }

    #[test]
    fn call_errors_map_to_codes() {
        let guest = |error| CallError::Guest {
            plugin: "p".into(),
            op: "validate",
            error,
        };
        let v = Verdict::from_call_error(&guest(GuestError::Invalid("bad".into())));
        assert_eq!((v.code, v.message.as_deref()), (400, Some("bad")));
        let v = Verdict::from_call_error(&guest(GuestError::Denied("no".into())));
        assert_eq!((v.code, v.message.as_deref()), (403, Some("no")));
        let v = Verdict::from_call_error(&guest(GuestError::Transient("later".into())));
        assert_eq!(v.code, 500);
        assert_eq!(
            v.message.as_deref(),
            Some(r#"plugin "p" validate failed (transient): later"#)
        );
        let v = Verdict::from_call_error(&CallError::Trap {
            plugin: "misbehave".into(),
            op: "mutate",
            message: "unreachable".into(),
        });
        assert_eq!(
            (v.allowed, v.code, v.message.as_deref()),
            (
                false,
                500,
                Some(r#"plugin "misbehave" mutate trapped: unreachable"#)
            )
        );
    }
}
