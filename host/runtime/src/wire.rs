//! The host's own view of what crosses the plugin boundary: serde types with a stable JSON
//! form (what `plugin inspect` and `plugin eval` print, documented in docs/plugin-authors.md),
//! converted from the generated bindings with every JSON string parsed and checked.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::bindings::exports::odh::controller::webhook_selectors as ws;
use crate::bindings::{
    admission_types as adm, api_types as api, caller, manifest_types as mt, reconcile_types as rt,
    types,
};
use crate::gvk::Gvk;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub name: String,
    pub version: String,
    pub description: String,
    pub controllers: Vec<ControllerSpec>,
    pub webhooks: Vec<Webhook>,
    pub reads: Vec<Gvk>,
    pub writes: Vec<Gvk>,
    pub http_hosts: Vec<String>,
}

impl Manifest {
    /// What is wrong with a manifest the host cannot serve, if anything.
    pub fn validate(&self) -> Result<(), String> {
        let name_ok = !self.name.is_empty()
            && self.name.len() <= 63
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !name_ok {
            return Err(format!(
                "manifest name {:?} must be 1-63 characters of [a-z0-9-]",
                self.name
            ));
        }
        let mut paths = std::collections::BTreeSet::new();
        for w in &self.webhooks {
            if !w.path.starts_with('/') {
                return Err(format!("webhook path {:?} must start with '/'", w.path));
            }
            if !paths.insert(&w.path) {
                return Err(format!("webhook path {:?} is declared twice", w.path));
            }
        }
        for w in &self.webhooks {
            let selectors = [
                ("object", &w.object_selector),
                ("namespace", &w.namespace_selector),
            ];
            for (which, selector) in selectors {
                let Some(selector) = selector else { continue };
                odh_label_selector::LabelSelector::parse(selector)
                    .and_then(|s| s.check_values())
                    .map_err(|e| format!("webhook {:?}: {which} selector: {e}", w.path))?;
            }
        }
        let mut names = std::collections::BTreeSet::new();
        for c in &self.controllers {
            if !names.insert(&c.name) {
                return Err(format!("controller {:?} is declared twice", c.name));
            }
        }
        Ok(())
    }
}

impl Manifest {
    /// Scopes the webhooks by the plugin's `webhook-selectors` (checked by
    /// [`Manifest::validate`] afterwards): each entry must name a declared webhook, once.
    pub fn scope_webhooks(
        &mut self,
        scopes: impl IntoIterator<Item = WebhookScope>,
    ) -> Result<(), String> {
        let mut seen = std::collections::BTreeSet::new();
        for scope in scopes {
            let Some(w) = self.webhooks.iter_mut().find(|w| w.path == scope.path) else {
                return Err(format!(
                    "webhook-selectors names path {:?}, which the manifest does not declare",
                    scope.path
                ));
            };
            if !seen.insert(scope.path.clone()) {
                return Err(format!(
                    "webhook-selectors names path {:?} twice",
                    scope.path
                ));
            }
            w.object_selector = scope.object_selector.filter(|s| !s.trim().is_empty());
            w.namespace_selector = scope.namespace_selector.filter(|s| !s.trim().is_empty());
        }
        self.validate()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ControllerSpec {
    pub name: String,
    pub primary: Gvk,
    pub primary_label_selector: Option<String>,
    pub owns: Vec<Gvk>,
    pub watches: Vec<Watch>,
    pub finalizer: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Watch {
    pub gvk: Gvk,
    pub mapping: Mapping,
    pub label_selector: Option<String>,
    pub optional: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mapping {
    Owner,
    SameName,
    All,
    Custom,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Webhook {
    pub path: String,
    #[serde(rename = "type")]
    pub type_: WebhookType,
    pub gvk: Gvk,
    pub operations: Vec<Operation>,
    /// From the plugin's `webhook-selectors` export (0.1.2): only objects with matching labels
    /// are reviewed.
    #[serde(
        rename = "objectSelector",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub object_selector: Option<String>,
    /// Only objects in namespaces with matching labels (evaluated by the API server).
    #[serde(
        rename = "namespaceSelector",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub namespace_selector: Option<String>,
}

/// One entry of the `webhook-selectors` export.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookScope {
    pub path: String,
    pub object_selector: Option<String>,
    pub namespace_selector: Option<String>,
}

impl From<ws::WebhookSelector> for WebhookScope {
    fn from(w: ws::WebhookSelector) -> Self {
        WebhookScope {
            path: w.path,
            object_selector: w.object_selector,
            namespace_selector: w.namespace_selector,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WebhookType {
    Mutating,
    Validating,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "UPPERCASE")]
#[value(rename_all = "UPPERCASE")]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

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
}

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

impl From<mt::Manifest> for Manifest {
    fn from(m: mt::Manifest) -> Self {
        Manifest {
            name: m.name,
            version: m.version,
            description: m.description,
            controllers: m
                .controllers
                .into_iter()
                .map(|c| ControllerSpec {
                    name: c.name,
                    primary: c.primary.into(),
                    primary_label_selector: c.primary_label_selector,
                    owns: c.owns.into_iter().map(Into::into).collect(),
                    watches: c
                        .watches
                        .into_iter()
                        .map(|w| Watch {
                            gvk: w.gvk.into(),
                            mapping: match w.mapping {
                                mt::Mapping::Owner => Mapping::Owner,
                                mt::Mapping::SameName => Mapping::SameName,
                                mt::Mapping::All => Mapping::All,
                                mt::Mapping::Custom => Mapping::Custom,
                            },
                            label_selector: w.label_selector,
                            optional: w.optional,
                        })
                        .collect(),
                    finalizer: c.finalizer,
                })
                .collect(),
            webhooks: m
                .webhooks
                .into_iter()
                .map(|w| Webhook {
                    path: w.path,
                    type_: match w.type_ {
                        mt::WebhookType::Mutating => WebhookType::Mutating,
                        mt::WebhookType::Validating => WebhookType::Validating,
                    },
                    gvk: w.gvk.into(),
                    operations: w.operations.into_iter().map(Into::into).collect(),
                    object_selector: None,
                    namespace_selector: None,
                })
                .collect(),
            reads: m.reads.into_iter().map(Into::into).collect(),
            writes: m.writes.into_iter().map(Into::into).collect(),
            http_hosts: m.http_hosts,
        }
    }
}

fn desired(d: rt::Desired, what: &str) -> Result<Desired, String> {
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
                .map(|(i, d)| desired(d, &format!("apply[{i}].object")))
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
                .map(|(i, s)| desired(s, &format!("sideEffects[{i}].object")))
                .collect::<Result<_, _>>()?,
        })
    }
}

/// Bytes of plugin-produced text in a value, for the output size cap.
pub trait OutputSize {
    fn output_size(&self) -> usize;

    /// How many list entries (objects, deletions, events, keys, warnings) the output holds.
    /// Bounded apart from the bytes: a million empty entries are small but are each a write or
    /// a reconcile.
    fn entries(&self) -> usize {
        0
    }

    /// The most entries one output may hold.
    const MAX_ENTRIES: usize = usize::MAX;
}

/// The most objects, deletions and events one outcome (or side effects and warnings one
/// admission decision) may hold: far above any real plugin's (the largest built-in outcome has
/// a few dozen), far below what would flood the API server.
pub const MAX_OUTCOME_ENTRIES: usize = 10_000;

/// The most primary keys one `map` call may return: every InferenceService of a very large
/// cluster, affected by one shared object, fits.
pub const MAX_MAPPED_KEYS: usize = 100_000;

fn key_size(k: &types::ObjectKey) -> usize {
    k.name.len()
        + k.namespace.as_ref().map_or(0, String::len)
        + k.gvk.kind.len()
        + k.gvk.group.len()
}

impl OutputSize for rt::Outcome {
    fn output_size(&self) -> usize {
        self.apply.iter().map(|d| d.object.len()).sum::<usize>()
            + self.delete.iter().map(key_size).sum::<usize>()
            + self.status.as_ref().map_or(0, String::len)
            + self
                .events
                .iter()
                .map(|e| {
                    e.reason.len() + e.message.len() + e.regarding.as_ref().map_or(0, key_size)
                })
                .sum::<usize>()
            + self.primary_metadata.as_ref().map_or(0, String::len)
            + self.error.as_ref().map_or(0, |e| match e {
                types::Error::Invalid(m)
                | types::Error::Denied(m)
                | types::Error::Transient(m)
                | types::Error::Internal(m) => m.len(),
            })
    }

    fn entries(&self) -> usize {
        self.apply.len() + self.delete.len() + self.events.len()
    }

    const MAX_ENTRIES: usize = MAX_OUTCOME_ENTRIES;
}

impl OutputSize for adm::AdmissionDecision {
    fn output_size(&self) -> usize {
        self.message.as_ref().map_or(0, String::len)
            + self.mutated.as_ref().map_or(0, String::len)
            + self.patch.as_ref().map_or(0, String::len)
            + self.warnings.iter().map(String::len).sum::<usize>()
            + self
                .side_effects
                .iter()
                .map(|d| d.object.len())
                .sum::<usize>()
    }

    fn entries(&self) -> usize {
        self.side_effects.len() + self.warnings.len()
    }

    const MAX_ENTRIES: usize = MAX_OUTCOME_ENTRIES;
}

impl OutputSize for Vec<types::RequestKey> {
    fn output_size(&self) -> usize {
        self.iter()
            .map(|k| k.name.len() + k.namespace.as_ref().map_or(0, String::len))
            .sum()
    }

    fn entries(&self) -> usize {
        self.len()
    }

    const MAX_ENTRIES: usize = MAX_MAPPED_KEYS;
}

impl OutputSize for () {
    fn output_size(&self) -> usize {
        0
    }
}

/// How the host authenticates an API route's requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApiAuth {
    None,
    Bearer,
}

/// One HTTP route a plugin serves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiRoute {
    pub path: String,
    pub auth: ApiAuth,
}

/// One request to a plugin's route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiRequest {
    pub method: String,
    pub path: String,
    pub query: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// A plugin's answer to an API request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// What an API caller wants to do (`caller.allowed`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessAttributes {
    pub namespace: Option<String>,
    pub verb: String,
    pub group: String,
    pub resource: String,
    pub subresource: Option<String>,
    pub name: Option<String>,
}

impl From<caller::AccessAttributes> for AccessAttributes {
    fn from(a: caller::AccessAttributes) -> Self {
        Self {
            namespace: a.namespace,
            verb: a.verb,
            group: a.group,
            resource: a.resource,
            subresource: a.subresource,
            name: a.name,
        }
    }
}

impl From<api::ApiRoute> for ApiRoute {
    fn from(r: api::ApiRoute) -> Self {
        Self {
            path: r.path,
            auth: match r.auth {
                api::ApiAuth::None => ApiAuth::None,
                api::ApiAuth::Bearer => ApiAuth::Bearer,
            },
        }
    }
}

impl From<api::ApiResponse> for ApiResponse {
    fn from(r: api::ApiResponse) -> Self {
        Self {
            status: r.status,
            headers: r.headers,
            body: r.body,
        }
    }
}

impl OutputSize for api::ApiResponse {
    fn output_size(&self) -> usize {
        self.body.len()
            + self
                .headers
                .iter()
                .map(|(n, v)| n.len() + v.len())
                .sum::<usize>()
    }
}

impl OutputSize for Vec<api::ApiRoute> {
    fn output_size(&self) -> usize {
        self.iter().map(|r| r.path.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
