//! The host's own view of what crosses the plugin boundary: serde types with a stable JSON
//! form (what `plugin inspect` and `plugin eval` print, documented in docs/plugin-authors.md),
//! converted from the generated bindings with every JSON string parsed and checked.

use serde_json::Value;

use crate::bindings::types;
use crate::gvk::Gvk;

mod admission;
mod event_filter;
mod manifest;
mod outcome;
mod raw;
mod routes;
mod size;

pub use admission::*;
pub use event_filter::*;
pub use manifest::*;
pub use outcome::*;
pub use raw::RawJson;
pub use routes::*;
pub use size::*;

/// Parses a JSON string a plugin returned; `what` names the field for the error message.
fn parse_json(what: &str, text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| format!("{what} is not valid JSON: {e}"))
}

impl From<types::Gvk> for Gvk {
    fn from(g: types::Gvk) -> Self {
        Gvk {
            group: g.group,
            version: g.version,
            kind: g.kind,
        }
    }
}

impl From<&Gvk> for types::Gvk {
    fn from(g: &Gvk) -> Self {
        types::Gvk {
            group: g.group.clone(),
            version: g.version.clone(),
            kind: g.kind.clone(),
        }
    }
}

impl From<types::ObjectKey> for ObjectKey {
    fn from(k: types::ObjectKey) -> Self {
        ObjectKey {
            gvk: k.gvk.into(),
            namespace: k.namespace,
            name: k.name,
        }
    }
}

impl From<types::RequestKey> for RequestKey {
    fn from(k: types::RequestKey) -> Self {
        RequestKey {
            namespace: k.namespace,
            name: k.name,
        }
    }
}

impl From<&RequestKey> for types::RequestKey {
    fn from(k: &RequestKey) -> Self {
        types::RequestKey {
            namespace: k.namespace.clone(),
            name: k.name.clone(),
        }
    }
}

impl From<types::Operation> for Operation {
    fn from(o: types::Operation) -> Self {
        match o {
            types::Operation::Create => Operation::Create,
            types::Operation::Update => Operation::Update,
            types::Operation::Delete => Operation::Delete,
            types::Operation::Connect => Operation::Connect,
        }
    }
}

impl From<Operation> for types::Operation {
    fn from(o: Operation) -> Self {
        match o {
            Operation::Create => types::Operation::Create,
            Operation::Update => types::Operation::Update,
            Operation::Delete => types::Operation::Delete,
            Operation::Connect => types::Operation::Connect,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::reconcile_types as rt;
    use serde_json::json;

    #[test]
    fn webhook_selectors_must_name_declared_webhooks_once_and_parse() {
        let manifest = || -> Manifest {
            serde_json::from_value(json!({
                "name": "p", "version": "1", "description": "", "controllers": [],
                "webhooks": [{"path": "/v", "type": "validating",
                    "gvk": {"group": "", "version": "v1", "kind": "ConfigMap"},
                    "operations": ["CREATE"]}],
                "reads": [], "writes": [], "httpHosts": [],
            }))
            .unwrap()
        };
        let scope = |path: &str, object: Option<&str>| WebhookScope {
            path: path.into(),
            object_selector: object.map(Into::into),
            namespace_selector: Some(String::new()),
        };
        let mut m = manifest();
        m.scope_webhooks([scope("/v", Some("a=b,!c"))]).unwrap();
        assert_eq!(m.webhooks[0].object_selector.as_deref(), Some("a=b,!c"));
        assert_eq!(m.webhooks[0].namespace_selector, None, "blank: none");
        assert_eq!(
            serde_json::to_value(&m.webhooks[0]).unwrap()["objectSelector"],
            "a=b,!c"
        );
        let refusals = [
            (
                vec![scope("/other", Some("a"))],
                r#"webhook-selectors names path "/other", which the manifest does not declare"#,
            ),
            (
                vec![scope("/v", Some("a")), scope("/v", Some("b"))],
                r#"webhook-selectors names path "/v" twice"#,
            ),
            (
                vec![scope("/v", Some("a=(b"))],
                r#"webhook "/v": object selector: invalid label selector "a=(b": "(b" is not a valid label value"#,
            ),
        ];
        for (scopes, message) in refusals {
            assert_eq!(manifest().scope_webhooks(scopes), Err(message.to_string()));
        }
    }

    #[test]
    fn outcome_with_bad_json_is_rejected_with_the_field_named() {
        let o = rt::Outcome {
            apply: vec![rt::Desired {
                object: "{not json".into(),
                ownership: rt::Ownership::Controller,
            }],
            delete: vec![],
            status: None,
            finalizer: rt::FinalizerAction::Keep,
            events: vec![],
            requeue_after_ms: None,
            primary_metadata: None,
            error: None,
        };
        let err = Outcome::try_from(o).unwrap_err();
        assert!(
            err.starts_with("apply[0].object is not valid JSON"),
            "{err}"
        );
    }

    #[test]
    fn wire_json_shape_is_stable() {
        let o = Outcome {
            apply: vec![Desired {
                object: json!({"kind": "ConfigMap"}),
                ownership: Ownership::Controller,
            }],
            delete: vec![],
            status: None,
            finalizer: FinalizerAction::Keep,
            events: vec![Event {
                type_: EventType::Normal,
                reason: "R".into(),
                message: "m".into(),
                regarding: None,
            }],
            requeue_after_ms: Some(5),
            primary_metadata: None,
            error: None,
        };
        assert_eq!(
            serde_json::to_value(&o).unwrap(),
            json!({"apply": [{"object": {"kind": "ConfigMap"}, "ownership": "controller"}], "delete": [],
                   "status": null, "finalizer": "keep",
                   "events": [{"type": "Normal", "reason": "R", "message": "m", "regarding": null}],
                   "requeueAfterMs": 5})
        );
    }
}
