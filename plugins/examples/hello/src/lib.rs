//! The example plugin: greets every ConfigMap labelled `hello.opendatahub.io/enabled=true` with
//! a `<name>-hello` ConfigMap, labels ConfigMaps on admission and forbids a `forbidden` key.

use odh_plugin_sdk::Operation::{Create, Update};
use odh_plugin_sdk::{AdmissionDecision, AdmissionRequest, Controller, Error, Manifest, Object};
use odh_plugin_sdk::{Outcome, Ownership, Plugin, ReconcileRequest, Webhook, core_gvk, json};

pub struct Hello;

impl Plugin for Hello {
    fn manifest() -> Manifest {
        let (cm, ops) = (core_gvk("ConfigMap"), [Create, Update]);
        Manifest::new("hello", "0.1.0")
            .description("Greets labelled ConfigMaps with a <name>-hello ConfigMap")
            .controller(
                Controller::new("hello", cm.clone())
                    .primary_label_selector("hello.opendatahub.io/enabled=true")
                    .owns(cm.clone()),
            )
            .webhook(Webhook::mutating(
                "/mutate-hello-configmap",
                cm.clone(),
                ops,
            ))
            .webhook(Webhook::validating(
                "/validate-hello-configmap",
                cm.clone(),
                ops,
            ))
            .reads([cm.clone()])
            .writes([cm])
    }

    fn reconcile(request: ReconcileRequest) -> Result<Outcome, Error> {
        let outcome = Outcome::default();
        Ok(match request.object()?.as_ref().and_then(greeting) {
            Some(greeting) => outcome.apply(greeting, Ownership::Controller),
            None => outcome,
        })
    }

    fn mutate(request: AdmissionRequest) -> Result<AdmissionDecision, Error> {
        Ok(match request.object()? {
            Some(cm) => AdmissionDecision::mutated(greeted(cm)),
            None => AdmissionDecision::allow(),
        })
    }

    fn validate(request: AdmissionRequest) -> Result<AdmissionDecision, Error> {
        Ok(match request.object()?.map(|cm| check(&cm)) {
            Some(Err(message)) => AdmissionDecision::deny(message),
            _ => AdmissionDecision::allow(),
        })
    }
}

odh_plugin_sdk::plugin!(Hello);

/// The ConfigMap `N-hello` greeting ConfigMap `N` (none for greetings themselves).
pub fn greeting(cm: &Object) -> Option<Object> {
    let name = cm.name();
    if name.ends_with("-hello") {
        return None;
    }
    let greeting = Object::new(
        &core_gvk("ConfigMap"),
        cm.namespace(),
        &format!("{name}-hello"),
    );
    Some(greeting.with("data", json!({ "greeting": format!("Hello, {name}!") })))
}

/// The object with the `hello.opendatahub.io/greeted` label.
pub fn greeted(mut cm: Object) -> Object {
    cm.set_label("hello.opendatahub.io/greeted", "true");
    cm
}

/// Rejects a `forbidden` key in `data`.
pub fn check(cm: &Object) -> Result<(), String> {
    match cm.at(&["data", "forbidden"]) {
        Some(_) => Err(r#"hello: the key "forbidden" is not allowed"#.into()),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use odh_plugin_sdk::{FinalizerAction, Value, WebhookType};

    fn cm(name: &str, data: Value) -> Object {
        Object(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "ns", "uid": "u-1",
                         "labels": {"hello.opendatahub.io/enabled": "true"}},
            "data": data,
            "extra": {"kept": 1},
        }))
    }

    #[test]
    fn manifest() {
        let m = Hello::manifest();
        assert_eq!((m.name.as_str(), m.version.as_str()), ("hello", "0.1.0"));
        let c = &m.controllers[0];
        assert_eq!(c.primary, core_gvk("ConfigMap"));
        assert_eq!(
            c.primary_label_selector.as_deref(),
            Some("hello.opendatahub.io/enabled=true")
        );
        assert_eq!(m.webhooks[0].type_, WebhookType::Mutating);
        assert_eq!(m.webhooks[1].path, "/validate-hello-configmap");
        assert_eq!(m.webhooks[1].operations, vec![Create, Update]);
    }

    #[test]
    fn reconcile_greets() {
        let o = Hello::reconcile(ReconcileRequest::for_object(
            "hello",
            &cm("world", json!({})),
        ))
        .unwrap();
        assert_eq!(o.apply.len(), 1);
        assert_eq!(o.apply[0].ownership, Ownership::Controller);
        let desired = Object::parse(&o.apply[0].object).unwrap();
        assert_eq!(
            desired.0,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "world-hello", "namespace": "ns"},
                   "data": {"greeting": "Hello, world!"}})
        );
        assert_eq!((o.status, o.finalizer), (None, FinalizerAction::Keep));
    }

    #[test]
    fn reconcile_skips_greetings_and_gone_objects() {
        let own = ReconcileRequest::for_object("hello", &cm("world-hello", json!({})));
        assert_eq!(Hello::reconcile(own), Ok(Outcome::default()));
        let gone = ReconcileRequest::new("hello", Some("ns"), "world");
        assert_eq!(Hello::reconcile(gone), Ok(Outcome::default()));
    }

    #[test]
    fn mutate_labels_and_keeps_fields() {
        let req =
            AdmissionRequest::for_object("/mutate-hello-configmap", Create, &cm("a", json!({})));
        let d = Hello::mutate(req).unwrap();
        assert!(d.allowed);
        let mutated = Object::parse(d.mutated.as_deref().unwrap()).unwrap();
        assert_eq!(mutated.label("hello.opendatahub.io/greeted"), Some("true"));
        assert_eq!(mutated["extra"], json!({"kept": 1}));
    }

    #[test]
    fn validate_forbids_the_key() {
        let path = "/validate-hello-configmap";
        let bad = AdmissionRequest::for_object(path, Update, &cm("a", json!({"forbidden": "x"})));
        let d = Hello::validate(bad).unwrap();
        assert!(!d.allowed);
        assert_eq!(
            d.message.as_deref(),
            Some(r#"hello: the key "forbidden" is not allowed"#)
        );
        let good = AdmissionRequest::for_object(path, Create, &cm("a", json!({"ok": "x"})));
        assert!(Hello::validate(good).unwrap().allowed);
    }
}
