//! Helpers on the request records: parsing their JSON, and constructors for native tests.

use crate::{
    AdmissionRequest, Error, Gvk, Object, Operation, ReconcileRequest, WatchChange, WatchEvent,
};

fn parse_opt(json: Option<&str>) -> Result<Option<Object>, Error> {
    json.map(Object::parse).transpose()
}

impl ReconcileRequest {
    /// A request for `namespace/name` whose object is gone, settings `{}`.
    pub fn new(controller: &str, namespace: Option<&str>, name: &str) -> ReconcileRequest {
        ReconcileRequest {
            controller: controller.into(),
            key: crate::request_key(namespace, name),
            object: None,
            settings: "{}".into(),
        }
    }

    /// A request carrying `object` (key taken from its metadata), settings `{}`.
    pub fn for_object(controller: &str, object: &Object) -> ReconcileRequest {
        ReconcileRequest {
            object: Some(object.to_json()),
            ..Self::new(controller, object.namespace(), object.name())
        }
    }

    /// Replaces the settings JSON (the glue parses it into the plugin's settings).
    pub fn with_settings(mut self, settings: impl serde::Serialize) -> Self {
        self.settings = crate::outcome::to_json(settings);
        self
    }

    /// The primary object, or none when it no longer exists.
    pub fn object(&self) -> Result<Option<Object>, Error> {
        parse_opt(self.object.as_deref())
    }
}

impl AdmissionRequest {
    /// A request with no object, empty user info and settings `{}`.
    pub fn new(path: &str, gvk: Gvk, operation: Operation) -> AdmissionRequest {
        AdmissionRequest {
            uid: "00000000-0000-0000-0000-000000000000".into(),
            path: path.into(),
            resource: guess_resource(&gvk.kind),
            gvk,
            sub_resource: None,
            operation,
            namespace: None,
            name: None,
            object: None,
            old_object: None,
            dry_run: false,
            user_info: "{}".into(),
            settings: "{}".into(),
        }
    }

    /// A request reviewing `object` (kind, namespace and name taken from it).
    pub fn for_object(path: &str, operation: Operation, object: &Object) -> AdmissionRequest {
        AdmissionRequest {
            namespace: object.namespace().map(Into::into),
            name: Some(object.name())
                .filter(|n| !n.is_empty())
                .map(Into::into),
            object: Some(object.to_json()),
            ..Self::new(path, object.gvk(), operation)
        }
    }

    /// Sets the existing object (UPDATE and DELETE).
    pub fn with_old_object(mut self, old: &Object) -> Self {
        self.old_object = Some(old.to_json());
        self
    }

    /// Replaces the settings JSON (the glue parses it into the plugin's settings).
    pub fn with_settings(mut self, settings: impl serde::Serialize) -> Self {
        self.settings = crate::outcome::to_json(settings);
        self
    }

    /// The object under review (none for DELETE).
    pub fn object(&self) -> Result<Option<Object>, Error> {
        parse_opt(self.object.as_deref())
    }

    /// The existing object (UPDATE and DELETE).
    pub fn old_object(&self) -> Result<Option<Object>, Error> {
        parse_opt(self.old_object.as_deref())
    }

    /// The requesting user (`userInfo`) as JSON.
    pub fn user_info(&self) -> Result<serde_json::Value, Error> {
        serde_json::from_str(&self.user_info)
            .map_err(|e| Error::Invalid(format!("invalid userInfo JSON: {e}")))
    }

    /// Sets the namespace of the request (the admission request's own, which an object
    /// under CREATE may lack), builder style.
    pub fn with_namespace(mut self, namespace: &str) -> Self {
        self.namespace = Some(namespace.into());
        self
    }
}

impl WatchEvent {
    /// An event on `object`, settings `{}`.
    pub fn for_object(controller: &str, object: &Object, deleted: bool) -> WatchEvent {
        WatchEvent {
            controller: controller.into(),
            gvk: object.gvk(),
            object: object.to_json(),
            deleted,
            settings: "{}".into(),
        }
    }

    /// The watched object (its last known state for a deletion).
    pub fn object(&self) -> Result<Object, Error> {
        Object::parse(&self.object)
    }
}

impl WatchChange {
    /// A change of `old` (none: a creation) into `object`, settings `{}`.
    pub fn for_objects(
        controller: &str,
        old: Option<&Object>,
        object: &Object,
        deleted: bool,
    ) -> WatchChange {
        WatchChange {
            controller: controller.into(),
            gvk: object.gvk(),
            object: object.to_json(),
            old_object: old.map(Object::to_json),
            deleted,
            settings: "{}".into(),
        }
    }

    /// The watched object (its last known state for a deletion).
    pub fn object(&self) -> Result<Object, Error> {
        Object::parse(&self.object)
    }

    /// The object before the change, when the host knew it.
    pub fn old_object(&self) -> Result<Option<Object>, Error> {
        parse_opt(self.old_object.as_deref())
    }

    /// The change as a [`WatchEvent`] (the new object alone), what [`Plugin::map`]
    /// (crate::Plugin::map) receives.
    pub fn to_event(&self) -> WatchEvent {
        WatchEvent {
            controller: self.controller.clone(),
            gvk: self.gvk.clone(),
            object: self.object.clone(),
            deleted: self.deleted,
            settings: self.settings.clone(),
        }
    }
}

/// The resource (plural) of a kind as kube-core's `to_plural` guesses it, which is what the
/// host's `ApiResource::from_gvk` uses: the kind lowercased; `endpoints` and `endpointslices`
/// unchanged, `nodemetrics` and `podmetrics` as `nodes` and `pods`; `-es` after `s`, `x`, `z`,
/// `ch`, `sh`; `y` after a consonant as `-ies`; `-s` otherwise.
pub(crate) fn guess_resource(kind: &str) -> String {
    let word = kind.to_ascii_lowercase();
    match word.as_str() {
        "endpoints" | "endpointslices" => return word,
        "nodemetrics" => return "nodes".into(),
        "podmetrics" => return "pods".into(),
        _ => {}
    }
    if ["s", "x", "z", "ch", "sh"]
        .iter()
        .any(|ending| word.ends_with(ending))
    {
        return format!("{word}es");
    }
    if let Some(stem) = word.strip_suffix('y') {
        // kube-core looks at the character whose index is the word's length in bytes minus
        // two (the one before the `y` for ASCII kinds); a lone `y` has none.
        let before = word.len().checked_sub(2).and_then(|i| word.chars().nth(i));
        if before.is_some_and(|c| !matches!(c, 'a' | 'e' | 'i' | 'o' | 'u')) {
            return format!("{stem}ies");
        }
    }
    format!("{word}s")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core_gvk;
    use serde_json::json;

    #[test]
    fn requests_round_trip() {
        let cm = Object::new(&core_gvk("ConfigMap"), Some("ns"), "c");
        let r = ReconcileRequest::for_object("ctl", &cm).with_settings(json!({"a": 1}));
        assert_eq!(r.key.namespace.as_deref(), Some("ns"));
        assert_eq!(r.object().unwrap(), Some(cm.clone()));
        assert_eq!(r.settings, r#"{"a":1}"#);
        let a = AdmissionRequest::for_object("/p", Operation::Create, &cm);
        assert_eq!(a.resource, "configmaps");
        assert_eq!(a.name.as_deref(), Some("c"));
        assert_eq!(a.object().unwrap(), Some(cm));
        assert_eq!(a.old_object().unwrap(), None);
        assert_eq!(
            a.with_namespace("other").namespace.as_deref(),
            Some("other")
        );
        assert_eq!(guess_resource("NetworkPolicy"), "networkpolicies");
        assert_eq!(guess_resource("Gateway"), "gateways");
        assert_eq!(guess_resource("Ingress"), "ingresses");
    }

    /// kube-core's `to_plural`, case by case, where a simpler rule would differ.
    #[test]
    fn plurals_are_kubes() {
        for (kind, plural) in [
            ("ConfigMap", "configmaps"),
            ("Pod", "pods"),
            ("InferenceService", "inferenceservices"),
            ("ServingRuntime", "servingruntimes"),
            ("LLMInferenceService", "llminferenceservices"),
            ("PodSecurityPolicy", "podsecuritypolicies"),
            ("CSIStorageCapacity", "csistoragecapacities"),
            ("ComponentStatus", "componentstatuses"),
            ("IngressClass", "ingressclasses"),
            ("Gateway", "gateways"),
            ("Key", "keys"),
            ("Alloy", "alloys"),
            ("Guy", "guys"),
            ("Box", "boxes"),
            // -ch, -sh, -z take -es.
            ("Patch", "patches"),
            ("Branch", "branches"),
            ("Mesh", "meshes"),
            ("Quiz", "quizes"),
            // A y after i is a vowel's y.
            ("Shiy", "shiys"),
            // The special cases.
            ("Endpoints", "endpoints"),
            ("EndpointSlice", "endpointslices"),
            ("NodeMetrics", "nodes"),
            ("PodMetrics", "pods"),
            // A lone y has nothing before it.
            ("Y", "ys"),
            ("", "s"),
        ] {
            assert_eq!(guess_resource(kind), plural, "{kind}");
        }
    }
}
