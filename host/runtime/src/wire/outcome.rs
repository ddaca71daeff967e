//! A reconcile's outcome: the objects to apply and delete, status, finalizer, events.

use super::*;
use crate::bindings::reconcile_types as rt;
use crate::gvk::Gvk;

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectKey {
    pub gvk: Gvk,
    pub namespace: Option<String>,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RequestKey {
    pub namespace: Option<String>,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub apply: Vec<Desired>,
    pub delete: Vec<ObjectKey>,
    pub status: Option<Value>,
    pub finalizer: FinalizerAction,
    pub events: Vec<Event>,
    pub requeue_after_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary_metadata: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<crate::errors::GuestError>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Desired {
    pub object: Value,
    pub ownership: Ownership,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ownership {
    None,
    Controller,
    Owner,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FinalizerAction {
    #[default]
    Keep,
    Add,
    Remove,
}

impl Default for Outcome {
    fn default() -> Self {
        Self {
            apply: Vec::new(),
            delete: Vec::new(),
            status: None,
            finalizer: FinalizerAction::Keep,
            events: Vec::new(),
            requeue_after_ms: None,
            primary_metadata: None,
            error: None,
        }
    }
}

/// `Normal` or `Warning`, as Kubernetes spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventType {
    Normal,
    Warning,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "Normal",
            Self::Warning => "Warning",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    #[serde(rename = "type")]
    pub type_: EventType,
    pub reason: String,
    pub message: String,
    pub regarding: Option<ObjectKey>,
}

/// A WIT `desired`, parsed (`what` names it in the error).
pub fn desired_from(d: rt::Desired, what: &str) -> Result<Desired, String> {
    let object = parse_json(what, &d.object)?;
    if !object.is_object() {
        return Err(format!("{what} is not a JSON object"));
    }
    let ownership = match d.ownership {
        rt::Ownership::None => Ownership::None,
        rt::Ownership::Controller => Ownership::Controller,
        rt::Ownership::Owner => Ownership::Owner,
    };
    Ok(Desired { object, ownership })
}

impl TryFrom<rt::Outcome> for Outcome {
    type Error = String;

    fn try_from(o: rt::Outcome) -> Result<Self, String> {
        Ok(Outcome {
            apply: o
                .apply
                .into_iter()
                .enumerate()
                .map(|(i, d)| desired_from(d, &format!("apply[{i}].object")))
                .collect::<Result<_, _>>()?,
            delete: o.delete.into_iter().map(Into::into).collect(),
            status: o
                .status
                .as_deref()
                .map(|s| parse_json("status", s))
                .transpose()?,
            finalizer: match o.finalizer {
                rt::FinalizerAction::Keep => FinalizerAction::Keep,
                rt::FinalizerAction::Add => FinalizerAction::Add,
                rt::FinalizerAction::Remove => FinalizerAction::Remove,
            },
            events: o
                .events
                .into_iter()
                .map(|e| Event {
                    type_: match e.type_ {
                        rt::EventType::Normal => EventType::Normal,
                        rt::EventType::Warning => EventType::Warning,
                    },
                    reason: e.reason,
                    message: e.message,
                    regarding: e.regarding.map(Into::into),
                })
                .collect(),
            requeue_after_ms: o.requeue_after_ms,
            primary_metadata: o
                .primary_metadata
                .as_deref()
                .map(|s| parse_json("primaryMetadata", s))
                .transpose()?,
            error: o.error.map(Into::into),
        })
    }
}
