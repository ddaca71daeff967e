//! Constructors and builders for the WIT records: kinds, the manifest, reconcile outcomes and
//! admission decisions.

use std::time::Duration;

use serde::Serialize;

use crate::{
    AdmissionDecision, Controller, Desired, Error, Event, EventType, FinalizerAction, Gvk,
    Manifest, Mapping, ObjectKey, Operation, Outcome, Ownership, RequestKey, Watch, Webhook,
    WebhookType,
};

/// A Kubernetes type: `gvk("apps", "v1", "Deployment")`. The core API has group `""`.
pub fn gvk(group: &str, version: &str, kind: &str) -> Gvk {
    Gvk {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
    }
}

/// A core (`""`, `v1`) type: `core_gvk("ConfigMap")`.
pub fn core_gvk(kind: &str) -> Gvk {
    gvk("", "v1", kind)
}

/// One object's key.
pub fn object_key(gvk: &Gvk, namespace: Option<&str>, name: &str) -> ObjectKey {
    ObjectKey {
        gvk: gvk.clone(),
        namespace: namespace.map(Into::into),
        name: name.into(),
    }
}

/// A reconcile request key (namespace/name of a primary object).
pub fn request_key(namespace: Option<&str>, name: &str) -> RequestKey {
    RequestKey {
        namespace: namespace.map(Into::into),
        name: name.into(),
    }
}

pub(crate) fn to_json(value: impl Serialize) -> String {
    serde_json::to_string(&value).expect("value serializes to JSON (maps need string keys)")
}

impl Gvk {
    /// `group/version`, or `version` for the core group, as in `apiVersion`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Parses `apiVersion` and `kind`.
    pub fn from_api_version(api_version: &str, kind: &str) -> Gvk {
        match api_version.split_once('/') {
            Some((group, version)) => gvk(group, version, kind),
            None => gvk("", api_version, kind),
        }
    }
}

impl std::fmt::Display for Gvk {
    /// `Deployment.apps/v1`, `ConfigMap/v1`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() {
            write!(f, "{}/{}", self.kind, self.version)
        } else {
            write!(f, "{}.{}/{}", self.kind, self.group, self.version)
        }
    }
}

impl Manifest {
    /// A manifest with a name (`[a-z0-9-]+`) and a semver version, nothing else declared.
    pub fn new(name: &str, version: &str) -> Manifest {
        Manifest {
            name: name.into(),
            version: version.into(),
            description: String::new(),
            controllers: Vec::new(),
            webhooks: Vec::new(),
            reads: Vec::new(),
            writes: Vec::new(),
            http_hosts: Vec::new(),
        }
    }

    /// The one-line description shown by `plugin inspect`.
    pub fn description(mut self, description: &str) -> Self {
        self.description = description.into();
        self
    }

    /// Adds a reconcile loop.
    pub fn controller(mut self, controller: Controller) -> Self {
        self.controllers.push(controller);
        self
    }

    /// Adds an admission webhook endpoint.
    pub fn webhook(mut self, webhook: Webhook) -> Self {
        self.webhooks.push(webhook);
        self
    }

    /// Adds kinds the plugin reads through `cluster` (list every kind it reads).
    pub fn reads(mut self, kinds: impl IntoIterator<Item = Gvk>) -> Self {
        self.reads.extend(kinds);
        self
    }

    /// Adds kinds the plugin may ask the host to create, update or delete.
    pub fn writes(mut self, kinds: impl IntoIterator<Item = Gvk>) -> Self {
        self.writes.extend(kinds);
        self
    }

    /// Adds hosts (`api.example.com`, `api.example.com:8443`) for outgoing HTTP.
    pub fn http_hosts<S: Into<String>>(mut self, hosts: impl IntoIterator<Item = S>) -> Self {
        self.http_hosts.extend(hosts.into_iter().map(Into::into));
        self
    }
}

impl Controller {
    /// A controller reconciling objects of `primary`.
    pub fn new(name: &str, primary: Gvk) -> Controller {
        Controller {
            name: name.into(),
            primary,
            primary_label_selector: None,
            owns: Vec::new(),
            watches: Vec::new(),
            finalizer: None,
        }
    }

    /// Only primary objects with these labels (`key=value,key2=value2`) are reconciled.
    pub fn primary_label_selector(mut self, selector: &str) -> Self {
        self.primary_label_selector = Some(selector.into());
        self
    }

    /// A kind this controller creates with an owner reference to the primary.
    pub fn owns(mut self, kind: Gvk) -> Self {
        self.owns.push(kind);
        self
    }

    /// Another kind whose changes trigger reconciles.
    pub fn watches(mut self, watch: Watch) -> Self {
        self.watches.push(watch);
        self
    }

    /// The finalizer the host keeps on primary objects when the outcome asks for it.
    pub fn finalizer(mut self, finalizer: &str) -> Self {
        self.finalizer = Some(finalizer.into());
        self
    }
}

impl Watch {
    /// A required watch on `gvk` mapped to primaries with `mapping`.
    pub fn new(gvk: Gvk, mapping: Mapping) -> Watch {
        Watch {
            gvk,
            mapping,
            label_selector: None,
            optional: false,
        }
    }

    /// Only objects with these labels are watched.
    pub fn label_selector(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Skip the watch (instead of disabling the controller) when the kind is not served.
    pub fn optional(mut self) -> Self {
        self.optional = true;
        self
    }
}

impl Webhook {
    /// A mutating webhook at `path` (exactly as the webhook configuration names it).
    pub fn mutating(
        path: &str,
        gvk: Gvk,
        operations: impl IntoIterator<Item = Operation>,
    ) -> Webhook {
        Webhook {
            path: path.into(),
            type_: WebhookType::Mutating,
            gvk,
            operations: operations.into_iter().collect(),
        }
    }

    /// A validating webhook at `path`.
    pub fn validating(
        path: &str,
        gvk: Gvk,
        operations: impl IntoIterator<Item = Operation>,
    ) -> Webhook {
        Webhook {
            path: path.into(),
            type_: WebhookType::Validating,
            gvk,
            operations: operations.into_iter().collect(),
        }
    }
}

impl Desired {
    /// An object to apply (`apiVersion`, `kind` and `metadata.name` required).
    pub fn new(object: impl Serialize, ownership: Ownership) -> Desired {
        Desired {
            object: to_json(object),
            ownership,
        }
    }
}

impl Default for Outcome {
    /// Nothing to do: no objects, status untouched, finalizers kept, no requeue.
    fn default() -> Self {
        Outcome {
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

impl Outcome {
    /// Asks the host to make `object` exist with these fields (server-side apply).
    pub fn apply(mut self, object: impl Serialize, ownership: Ownership) -> Self {
        self.apply.push(Desired::new(object, ownership));
        self
    }

    /// Asks the host to delete an object if it exists and the host manages it.
    pub fn delete(mut self, key: ObjectKey) -> Self {
        self.delete.push(key);
        self
    }

    /// Sets the primary's whole `status`.
    pub fn status(mut self, status: impl Serialize) -> Self {
        self.status = Some(to_json(status));
        self
    }

    /// Makes sure the manifest's finalizer is on the primary.
    pub fn add_finalizer(mut self) -> Self {
        self.finalizer = FinalizerAction::Add;
        self
    }

    /// Removes the manifest's finalizer: cleanup is done, deletion may proceed.
    pub fn remove_finalizer(mut self) -> Self {
        self.finalizer = FinalizerAction::Remove;
        self
    }

    /// Records a Normal Event on the primary.
    pub fn event_normal(self, reason: &str, message: impl Into<String>) -> Self {
        self.event(EventType::Normal, reason, message, None)
    }

    /// Records a Warning Event on the primary.
    pub fn event_warning(self, reason: &str, message: impl Into<String>) -> Self {
        self.event(EventType::Warning, reason, message, None)
    }

    /// Records an Event; `regarding` none means the primary.
    pub fn event(
        mut self,
        type_: EventType,
        reason: &str,
        message: impl Into<String>,
        regarding: Option<ObjectKey>,
    ) -> Self {
        self.events.push(Event {
            type_,
            reason: reason.into(),
            message: message.into(),
            regarding,
        });
        self
    }

    /// Reconcile again after `after` even if nothing changes (millisecond precision).
    pub fn requeue_after(mut self, after: Duration) -> Self {
        self.requeue_after_ms = Some(u64::try_from(after.as_millis()).unwrap_or(u64::MAX));
        self
    }

    /// Merge-patches the primary's own `metadata` (labels, annotations, the whole
    /// `finalizers` list) with its resourceVersion as a precondition.
    pub fn primary_metadata(mut self, patch: impl Serialize) -> Self {
        self.primary_metadata = Some(to_json(patch));
        self
    }

    /// Marks the reconcile as failed part-way: everything decided is still applied, then the
    /// host reports `error` and retries with back-off. Several failures are joined.
    pub fn fail(mut self, error: Error) -> Self {
        self.error = Some(match self.error.take() {
            None => error,
            Some(first) => joined(first, error),
        });
        self
    }
}

/// Two failures as one: the more urgent kind wins (`transient` keeps retrying), the messages
/// are joined with a newline as Go's `errors.Join` does.
fn joined(first: Error, second: Error) -> Error {
    let message = format!("{}\n{}", first.message(), second.message());
    match (&first, &second) {
        (Error::Transient(_), _) | (_, Error::Transient(_)) => Error::Transient(message),
        (Error::Internal(_), _) | (_, Error::Internal(_)) => Error::Internal(message),
        (Error::Denied(_), _) | (_, Error::Denied(_)) => Error::Denied(message),
        _ => Error::Invalid(message),
    }
}

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
    fn gvk_helpers() {
        assert_eq!(gvk("apps", "v1", "Deployment").api_version(), "apps/v1");
        assert_eq!(core_gvk("ConfigMap").api_version(), "v1");
        assert_eq!(
            Gvk::from_api_version("apps/v1", "Deployment"),
            gvk("apps", "v1", "Deployment")
        );
        assert_eq!(Gvk::from_api_version("v1", "Pod"), core_gvk("Pod"));
        assert_eq!(
            gvk("apps", "v1", "Deployment").to_string(),
            "Deployment.apps/v1"
        );
    }

    #[test]
    fn manifest_builder() {
        let cm = core_gvk("ConfigMap");
        let m = Manifest::new("p", "1.0.0")
            .description("d")
            .controller(
                Controller::new("c", cm.clone())
                    .primary_label_selector("a=b")
                    .owns(cm.clone())
                    .watches(Watch::new(core_gvk("Secret"), Mapping::SameName).optional())
                    .finalizer("p/f"),
            )
            .webhook(Webhook::validating("/v", cm.clone(), [Operation::Create]))
            .reads([cm.clone()])
            .writes([cm.clone()])
            .http_hosts(["example.com"]);
        assert_eq!(
            m.controllers[0].primary_label_selector.as_deref(),
            Some("a=b")
        );
        assert!(m.controllers[0].watches[0].optional);
        assert_eq!(m.controllers[0].finalizer.as_deref(), Some("p/f"));
        assert_eq!(m.webhooks[0].type_, WebhookType::Validating);
        assert_eq!(m.http_hosts, vec!["example.com".to_string()]);
    }

    #[test]
    fn outcome_builder() {
        let o = Outcome::default()
            .apply(json!({"kind": "ConfigMap"}), Ownership::Controller)
            .delete(object_key(&core_gvk("Secret"), Some("ns"), "s"))
            .status(json!({"ready": true}))
            .add_finalizer()
            .event_normal("Created", "made it")
            .requeue_after(Duration::from_secs(30));
        assert_eq!(o.apply[0].object, r#"{"kind":"ConfigMap"}"#);
        assert_eq!(o.apply[0].ownership, Ownership::Controller);
        assert_eq!(o.delete[0].name, "s");
        assert_eq!(o.status.as_deref(), Some(r#"{"ready":true}"#));
        assert_eq!(o.finalizer, FinalizerAction::Add);
        assert_eq!(o.events[0].type_, EventType::Normal);
        assert_eq!(o.requeue_after_ms, Some(30_000));
    }

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
    }
}
