//! Turning a plugin's answer (or its failure) into what the webhook responds.

use serde_json::{Value, json};

use odh_plugin_runtime::wire::{AdmissionDecision, WebhookType};
use odh_plugin_runtime::{CallError, GuestError};

/// What the webhook answers to one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub allowed: bool,
    /// `status.code`; sent (with `message`) when there is a message or a denial.
    pub code: u16,
    pub message: Option<String>,
    /// `status.reason`; sent with a denial (derived from the code when none is set).
    pub reason: Option<String>,
    /// `status.details`, as the API server's own error gave it.
    pub details: Option<Value>,
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
            reason: None,
            details: None,
            warnings: Vec::new(),
            patch: None,
        }
    }

    pub fn deny(code: u16, message: impl Into<String>) -> Self {
        Self {
            allowed: false,
            code,
            message: Some(message.into()),
            reason: None,
            details: None,
            warnings: Vec::new(),
            patch: None,
        }
    }

    /// The plugin's decision. A denial without a code gets 403; a patch is kept only for a
    /// mutating webhook: the plugin's own, or derived from the mutated object it returned
    /// against `original`, the object exactly as the request carried it (so fields the plugin
    /// does not model are compared, not dropped).
    pub fn from_decision(
        kind: WebhookType,
        decision: AdmissionDecision,
        original: Option<&Value>,
    ) -> Self {
        let code = if decision.allowed {
            200
        } else {
            decision.code.unwrap_or(403)
        };
        Self {
            allowed: decision.allowed,
            code,
            message: decision.message,
            reason: decision.reason,
            details: None,
            warnings: decision.warnings,
            patch: match kind {
                WebhookType::Mutating => patch_for(decision.patch, decision.mutated, original),
                WebhookType::Validating => None,
            },
        }
    }

    /// The API server's own error status, answered unchanged (controller-runtime answers an
    /// error that wraps an API status with that status).
    pub fn from_status(status: &kube::core::Status) -> Self {
        Self {
            reason: Some(status.reason.clone()).filter(|r| !r.is_empty()),
            details: status
                .details
                .as_ref()
                .and_then(|d| serde_json::to_value(d).ok()),
            ..Self::deny(status.code, status.message.clone())
        }
    }

    /// `status.reason` and `status.details` of the answer. A denial without its own reason
    /// gets controller-runtime's: 403 is `Forbidden` (`admission.Denied`), 422 is `Invalid`
    /// (apimachinery's `NewInvalid`, whose field errors the message spells out), 404 is
    /// `NotFound` (an API error passed through as the answer); other codes (`admission.Errored`)
    /// carry none.
    pub fn status_reason(&self) -> (Option<&str>, Option<Value>) {
        if self.reason.is_some() || self.allowed {
            return (self.reason.as_deref(), self.details.clone());
        }
        match self.code {
            403 => (Some("Forbidden"), self.details.clone()),
            422 => (
                Some("Invalid"),
                self.details
                    .clone()
                    .or_else(|| self.message.as_deref().and_then(super::invalid::details)),
            ),
            // An API NotFound a plugin passes on (`<Kind> "<name>" not found`).
            404 => (
                Some("NotFound"),
                self.details
                    .clone()
                    .or_else(|| self.message.as_deref().and_then(not_found_details)),
            ),
            _ => (None, self.details.clone()),
        }
    }

    /// A failed call. The guest's own `invalid` (400) and `denied` (403) errors are shown with
    /// the guest's message, as the contract says; anything else is a 500 whose message names
    /// the plugin (the `CallError`'s own text).
    pub fn from_call_error(error: &CallError) -> Self {
        match error.guest_error() {
            Some(GuestError::Invalid(m)) => Self::deny(400, m.clone()),
            Some(GuestError::Denied(m)) => Self::deny(403, m.clone()),
            _ => Self::deny(500, error.for_clients()),
        }
    }
}

pub use odh_plugin_runtime::wire::patch_for;

/// Whether the plugin asked for a patch that would actually change something.
pub fn has_patch(patch: Option<&Value>) -> bool {
    patch
        .and_then(Value::as_array)
        .is_some_and(|ops| !ops.is_empty())
}

/// `status.details` of apimachinery's `NewNotFound` message, `<resource>[.<group>] "<name>" not
/// found` (a cached read names the Kind as the resource).
fn not_found_details(message: &str) -> Option<Value> {
    let (qualified, rest) = message.split_once(" \"")?;
    let name = rest.strip_suffix("\" not found")?;
    if qualified.contains(' ') || name.contains('"') {
        return None;
    }
    let (kind, group) = qualified.split_once('.').unwrap_or((qualified, ""));
    Some(json!({"name": name, "group": group, "kind": kind}))
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
            reason: None,
        }
    }

    #[test]
    fn derived_patch_keeps_unknown_fields_untouched() {
        let original =
            json!({"metadata": {"name": "p", "labels": {"a": "1"}}, "spec": {"x-unknown": [1, 2]}});
        let mut mutated = original.clone();
        mutated["metadata"]["labels"]["b"] = json!("2");
        let patch = patch_for(None, Some(mutated.clone()), Some(&original)).unwrap();
        assert_eq!(
            patch,
            json!([{"op": "add", "path": "/metadata/labels/b", "value": "2"}])
        );
        let mut applied = original.clone();
        json_patch::patch(
            &mut applied,
            &serde_json::from_value::<json_patch::Patch>(patch).unwrap(),
        )
        .unwrap();
        assert_eq!(applied, mutated);
        let own = json!([{"op": "remove", "path": "/a"}]);
        assert_eq!(
            patch_for(Some(own.clone()), Some(mutated), Some(&original)),
            Some(own),
            "a plugin's own patch wins"
        );
    }

    /// An object returned as it came is the empty patch the diff would give, found without it;
    /// one changed deep down still gets its patch.
    #[test]
    fn an_unchanged_object_is_the_empty_patch() {
        let original = json!({"metadata": {"name": "p"}, "spec": {"a": [1, {"b": null}]}});
        let same = patch_for(None, Some(original.clone()), Some(&original)).unwrap();
        assert_eq!(same, json!([]));
        assert!(!has_patch(Some(&same)));
        let mut changed = original.clone();
        changed["spec"]["a"][1]["b"] = json!(0);
        assert_eq!(
            patch_for(None, Some(changed), Some(&original)).unwrap(),
            json!([{"op": "replace", "path": "/spec/a/1/b", "value": 0}])
        );
    }

    #[test]
    fn denial_codes_default_to_403_and_validating_webhooks_never_patch() {
        let v = Verdict::from_decision(WebhookType::Validating, decision(false, None), None);
        assert_eq!((v.allowed, v.code, v.patch), (false, 403, None));
        let v = Verdict::from_decision(WebhookType::Mutating, decision(false, Some(422)), None);
        assert_eq!(v.code, 422);
        let v = Verdict::from_decision(WebhookType::Mutating, decision(true, Some(422)), None);
        assert_eq!(v.code, 200);
        assert!(has_patch(v.patch.as_ref()));
    }

    #[test]
    fn a_passed_on_not_found_keeps_its_reason_and_details() {
        let v = Verdict::deny(
            404,
            r#"ConfigMap "odh-model-controller-parameters" not found"#,
        );
        let (reason, details) = v.status_reason();
        assert_eq!(reason, Some("NotFound"));
        assert_eq!(
            details,
            Some(
                json!({"name": "odh-model-controller-parameters", "group": "", "kind": "ConfigMap"})
            )
        );
        let v = Verdict::deny(404, "no such thing here");
        assert_eq!(v.status_reason(), (Some("NotFound"), None));
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
            stderr: None,
        });
        assert_eq!(
            (v.allowed, v.code, v.message.as_deref()),
            (
                false,
                500,
                Some(r#"plugin "misbehave" mutate trapped: unreachable"#)
            )
        );
        // A panic's stderr (it may quote what the plugin handled) stays in the log.
        let v = Verdict::from_call_error(&CallError::Trap {
            plugin: "misbehave".into(),
            op: "mutate",
            message: "wasm trap: unreachable".into(),
            stderr: Some("panicked at: token=s3cr3t".into()),
        });
        assert_eq!(
            v.message.as_deref(),
            Some(r#"plugin "misbehave" mutate trapped: wasm trap: unreachable"#)
        );
    }
}
