//! Builders for [`AdmissionDecision`].

use serde::Serialize;

use crate::outcome::to_json;
use crate::{AdmissionDecision, Desired, Ownership};

impl AdmissionDecision {
    /// Allowed, unchanged.
    pub fn allow() -> Self {
        AdmissionDecision {
            allowed: true,
            message: None,
            code: None,
            mutated: None,
            patch: None,
            warnings: Vec::new(),
            side_effects: Vec::new(),
        }
    }

    /// Denied with a message (the host answers HTTP 403).
    pub fn deny(message: impl Into<String>) -> Self {
        AdmissionDecision {
            allowed: false,
            message: Some(message.into()),
            ..Self::allow()
        }
    }

    /// Denied with a message and an HTTP status code.
    pub fn deny_with_code(message: impl Into<String>, code: u16) -> Self {
        AdmissionDecision {
            code: Some(code),
            ..Self::deny(message)
        }
    }

    /// Allowed, with the whole mutated object (the host derives the JSON patch).
    pub fn mutated(object: impl Serialize) -> Self {
        AdmissionDecision {
            mutated: Some(to_json(object)),
            ..Self::allow()
        }
    }

    /// Allowed, with an RFC 6902 patch (a JSON array) returned as is.
    pub fn patched(patch: impl Serialize) -> Self {
        AdmissionDecision {
            patch: Some(to_json(patch)),
            ..Self::allow()
        }
    }

    /// Adds a warning shown to the client.
    pub fn warn(mut self, warning: impl Into<String>) -> Self {
        self.warnings.push(warning.into());
        self
    }

    /// Sets the message (a reason when allowed).
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// Adds an object to apply as a side effect (never on a dry-run request).
    pub fn side_effect(mut self, object: impl Serialize, ownership: Ownership) -> Self {
        self.side_effects.push(Desired::new(object, ownership));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn decisions() {
        assert!(AdmissionDecision::allow().allowed);
        let d = AdmissionDecision::deny("no");
        assert!(!d.allowed);
        assert_eq!((d.message.as_deref(), d.code), (Some("no"), None));
        assert_eq!(
            AdmissionDecision::deny_with_code("bad", 422).code,
            Some(422)
        );
        let m = AdmissionDecision::mutated(json!({"a": 1})).warn("careful");
        assert!(m.allowed);
        assert_eq!(
            serde_json::from_str::<Value>(m.mutated.as_deref().unwrap()).unwrap(),
            json!({"a": 1})
        );
        assert_eq!(m.warnings, vec!["careful".to_string()]);
        let s = AdmissionDecision::allow()
            .side_effect(json!({"kind": "ServiceAccount"}), Ownership::None);
        assert_eq!(s.side_effects[0].object, r#"{"kind":"ServiceAccount"}"#);
    }
}
