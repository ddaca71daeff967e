//! The manifest: what a plugin serves (controllers, webhooks, API routes aside), what it reads,
//! writes and reaches; and the webhook scopes of `webhook-selectors`.

use crate::bindings::exports::odh::controller::webhook_selectors as ws;
use crate::bindings::manifest_types as mt;
use crate::gvk::Gvk;

use serde::{Deserialize, Serialize};

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
    /// From the plugin's `event-filters` export (0.1.4): which events of each kind reach it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<super::EventFilter>,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
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
                    filters: Vec::new(),
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
