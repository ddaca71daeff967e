//! controller-runtime's admission prologue and epilogue, for ports of its webhooks.
//!
//! Before a Go webhook's own code runs, controller-runtime decodes the request's object as the
//! webhook's kind and answers HTTP 400 when it cannot; after it, a handler's error is a 403
//! with the error's text. [`AdmissionRequest::decode_as`] is the first half,
//! [`AdmissionDecision::or_forbidden`] and [`AdmissionDecision::from_defaulted`] the second:
//!
//! ```
//! use odh_plugin_sdk::admission::{Defaulted, Expect};
//! use odh_plugin_sdk::{AdmissionDecision, AdmissionRequest, Object, Operation, json};
//!
//! const EXPECT: Expect = Expect::kind("Pod", "a Pod");
//!
//! fn mutate(request: &AdmissionRequest) -> AdmissionDecision {
//!     let decoded = match request.decode_as(&EXPECT) {
//!         Ok(Some(decoded)) => decoded,
//!         Ok(None) => return AdmissionDecision::allow(),
//!         Err(refused) => return refused,
//!     };
//!     let mut pod = decoded.object.into_value();
//!     pod["metadata"]["labels"] = json!({"seen": "yes"});
//!     AdmissionDecision::from_defaulted(pod, Defaulted::default())
//! }
//!
//! let cm = Object(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}));
//! let d = mutate(&AdmissionRequest::for_object("/mutate", Operation::Create, &cm));
//! assert_eq!(d.code, Some(400));
//! assert_eq!(d.message.as_deref(), Some("expected a Pod object but got v1, Kind=ConfigMap"));
//! let pod = Object(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}));
//! assert!(mutate(&AdmissionRequest::for_object("/mutate", Operation::Create, &pod)).mutated.is_some());
//! ```

use serde::Serialize;
use serde_json::Value;

use crate::log::{Level, log};
use crate::{AdmissionDecision, AdmissionRequest, Error, Object, Ownership};

/// HTTP 400: the request cannot be decoded as the webhook's kind.
pub const BAD_REQUEST: u16 = 400;
/// HTTP 403: the webhook's code refused the request or failed.
pub const FORBIDDEN: u16 = 403;

/// What a webhook expects of the objects under review, as controller-runtime's decoder checks
/// them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expect<'a> {
    kind: Option<(&'a str, &'a str)>,
    old_object: bool,
}

impl<'a> Expect<'a> {
    /// Any kind (a plugin whose webhooks serve several kinds dispatches itself); the object
    /// must decode.
    pub const fn any() -> Self {
        Expect {
            kind: None,
            old_object: false,
        }
    }

    /// Objects of `kind`. One of another kind is refused with upstream's
    /// `expected <named> object but got <apiVersion>, Kind=<kind>`, `named` being the kind
    /// as upstream's message names it (`a LLMInferenceService`, `an Pod`).
    pub const fn kind(kind: &'a str, named: &'a str) -> Self {
        Expect {
            kind: Some((kind, named)),
            old_object: false,
        }
    }

    /// The old object (UPDATE, DELETE) must decode too; [`Decoded::old_object`] holds it.
    pub const fn with_old_object(self) -> Self {
        Expect {
            old_object: true,
            ..self
        }
    }
}

/// The objects of a request that passed [`AdmissionRequest::decode`].
#[derive(Clone, Debug, PartialEq)]
pub struct Decoded {
    pub object: Object,
    /// The old object, when [`Expect::with_old_object`] asked for it and the request has one.
    pub old_object: Option<Object>,
    /// [`AdmissionRequest::namespace_of`] the object.
    pub namespace: String,
}

/// Why [`AdmissionRequest::decode`] refused a request.
#[derive(Clone, Debug, PartialEq)]
pub enum Refusal {
    /// An object does not decode; the decoding error.
    Undecodable(Error),
    /// The object is of another kind than the expected one.
    WrongKind(Object),
}

impl Refusal {
    /// controller-runtime's answer, a 400: the decoding error's message, or
    /// `expected <named> object but got <apiVersion>, Kind=<kind>`.
    pub fn answer(self, expect: &Expect) -> AdmissionDecision {
        let message = match self {
            Refusal::Undecodable(e) => e.message().to_string(),
            Refusal::WrongKind(object) => format!(
                "expected {} object but got {}, Kind={}",
                expect.kind.map(|(_, named)| named).unwrap_or_default(),
                object.api_version(),
                object.kind()
            ),
        };
        AdmissionDecision::bad_request(message)
    }
}

impl AdmissionRequest {
    /// Decodes the object (and, when asked, the old object) as `expect` says: `Ok(None)` when
    /// the request has no object (DELETE). The object is decoded first, then the old object,
    /// then the kind is checked.
    pub fn decode(&self, expect: &Expect) -> Result<Option<Decoded>, Refusal> {
        let object = self.object().map_err(Refusal::Undecodable)?;
        let old_object = if expect.old_object {
            self.old_object().map_err(Refusal::Undecodable)?
        } else {
            None
        };
        let Some(object) = object else {
            return Ok(None);
        };
        if let Some((kind, _)) = expect.kind
            && object.kind() != kind
        {
            return Err(Refusal::WrongKind(object));
        }
        let namespace = self.namespace_of(&object);
        Ok(Some(Decoded {
            object,
            old_object,
            namespace,
        }))
    }

    /// The namespace of the admission: the request's, else `object`'s (an object under CREATE
    /// may lack its own); empty when neither has one.
    pub fn namespace_of(&self, object: &Object) -> String {
        self.namespace
            .clone()
            .or_else(|| object.namespace().map(str::to_string))
            .unwrap_or_default()
    }

    /// [`decode`](Self::decode), a refusal answered as controller-runtime answers it
    /// ([`Refusal::answer`], a 400).
    // The error is the answer, returned as it is by the caller: boxing it would only move it.
    #[allow(clippy::result_large_err)]
    pub fn decode_as(&self, expect: &Expect) -> Result<Option<Decoded>, AdmissionDecision> {
        self.decode(expect)
            .map_err(|refusal| refusal.answer(expect))
    }
}

/// What a defaulting (mutating) webhook decided besides editing the object.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Defaulted {
    /// Objects to create (applied unowned), even when the request is denied: upstream creates
    /// them before the step that fails.
    pub side_effects: Vec<Value>,
    /// Worth logging (at warning level), not shown to the client.
    pub warnings: Vec<String>,
    /// A failed step: the request is denied with its message.
    pub denied: Option<Error>,
}

impl AdmissionDecision {
    /// Denied with HTTP 400 and `message`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::deny_with_code(message, BAD_REQUEST)
    }

    /// Denied with HTTP 403 and `message`.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::deny_with_code(message, FORBIDDEN)
    }

    /// A webhook's result as upstream's webhooks answer it: an error, whatever its case (a
    /// failed read included), is a 403 with the error's bare message rather than a failed call.
    pub fn or_forbidden(result: Result<AdmissionDecision, Error>) -> AdmissionDecision {
        result.unwrap_or_else(|e| Self::forbidden(e.message()))
    }

    /// A defaulting webhook's answer: the warnings logged, then the defaulted `object` (or a
    /// 403 with the failed step's message), with the side effects applied unowned either way.
    pub fn from_defaulted(object: impl Serialize, defaulted: Defaulted) -> AdmissionDecision {
        Self::from_defaulted_with(defaulted, || Self::mutated(object))
    }

    /// [`from_defaulted`](Self::from_defaulted) when the defaulting left the object as it came:
    /// the same answer (no patch) without the object written out for the host to diff.
    pub fn from_defaulted_unchanged(defaulted: Defaulted) -> AdmissionDecision {
        Self::from_defaulted_with(defaulted, Self::allow)
    }

    fn from_defaulted_with(defaulted: Defaulted, answer: impl FnOnce() -> Self) -> Self {
        for warning in &defaulted.warnings {
            log(Level::Warn, warning);
        }
        let mut decision = match &defaulted.denied {
            Some(e) => Self::forbidden(e.message()),
            None => answer(),
        };
        for object in defaulted.side_effects {
            decision = decision.side_effect(object, Ownership::None);
        }
        decision
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Operation, core_gvk, json};

    fn pod() -> Object {
        Object(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}))
    }

    #[test]
    fn decode_follows_controller_runtime() {
        const POD: Expect = Expect::kind("Pod", "an Pod");
        let request = AdmissionRequest::for_object("/p", Operation::Create, &pod());
        let decoded = request.decode_as(&POD).unwrap().unwrap();
        assert_eq!(decoded.object, pod());
        assert_eq!((decoded.old_object, decoded.namespace.as_str()), (None, ""));
        // The request's namespace first, the object's when the request has none.
        let decoded = request
            .clone()
            .with_namespace("ns")
            .decode_as(&POD)
            .unwrap()
            .unwrap();
        assert_eq!(decoded.namespace, "ns");
        let mut own = pod();
        own.0["metadata"]["namespace"] = json!("own");
        let r = AdmissionRequest::for_object("/p", Operation::Create, &own);
        assert_eq!(r.decode_as(&POD).unwrap().unwrap().namespace, "own");
        // No object: nothing to decide.
        let none = AdmissionRequest::new("/p", core_gvk("Pod"), Operation::Delete);
        assert_eq!(none.decode_as(&POD), Ok(None));
        // Another kind, and an object that does not decode: 400.
        let cm = Object::new(&core_gvk("ConfigMap"), None, "c");
        let r = AdmissionRequest::for_object("/p", Operation::Create, &cm);
        let d = r.decode_as(&POD).unwrap_err();
        assert_eq!(
            (d.allowed, d.code, d.message.as_deref()),
            (
                false,
                Some(400),
                Some("expected an Pod object but got v1, Kind=ConfigMap")
            )
        );
        assert!(r.decode_as(&Expect::any()).unwrap().is_some());
        let mut garbled = request.clone();
        garbled.object = Some("{not json".into());
        let d = garbled.decode_as(&Expect::any()).unwrap_err();
        assert_eq!(d.code, Some(400));
        assert!(
            d.message
                .as_deref()
                .unwrap()
                .starts_with("invalid object JSON: "),
            "{d:?}"
        );
    }

    #[test]
    fn the_old_object_is_decoded_only_when_asked_and_first() {
        let mut request =
            AdmissionRequest::for_object("/p", Operation::Update, &pod()).with_old_object(&pod());
        assert_eq!(
            request
                .decode_as(&Expect::any())
                .unwrap()
                .unwrap()
                .old_object,
            None
        );
        let with_old = Expect::kind("Pod", "a Pod").with_old_object();
        assert_eq!(
            request.decode_as(&with_old).unwrap().unwrap().old_object,
            Some(pod())
        );
        request.old_object = Some("[".into());
        assert!(request.decode_as(&Expect::any()).is_ok());
        // A bad old object is refused before the kind is looked at.
        request.object = Some(Object::new(&core_gvk("ConfigMap"), None, "c").to_json());
        assert!(matches!(
            request.decode(&with_old),
            Err(Refusal::Undecodable(_))
        ));
        assert!(matches!(
            request.decode(&Expect::kind("Pod", "a Pod")),
            Err(Refusal::WrongKind(_))
        ));
    }

    #[test]
    fn errors_are_forbidden_and_defaulted_answers_carry_side_effects() {
        let d = AdmissionDecision::or_forbidden(Err(Error::Transient("api down".into())));
        assert_eq!(
            (d.allowed, d.code, d.message.as_deref()),
            (false, Some(403), Some("api down"))
        );
        assert!(AdmissionDecision::or_forbidden(Ok(AdmissionDecision::allow())).allowed);
        let account = json!({"kind": "ServiceAccount"});
        let d = AdmissionDecision::from_defaulted(
            json!({"a": 1}),
            Defaulted {
                side_effects: vec![account.clone()],
                warnings: vec!["logged".into()],
                denied: None,
            },
        );
        assert!(d.allowed && d.mutated.is_some());
        assert_eq!(d.side_effects[0].ownership, Ownership::None);
        let d = AdmissionDecision::from_defaulted(
            json!({"a": 1}),
            Defaulted {
                side_effects: vec![account],
                warnings: Vec::new(),
                denied: Some(Error::Denied("no profile".into())),
            },
        );
        assert_eq!(
            (d.allowed, d.code, d.message.as_deref(), d.mutated.is_none()),
            (false, Some(403), Some("no profile"), true)
        );
        assert_eq!(d.side_effects.len(), 1);
    }
}
