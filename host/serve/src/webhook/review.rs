//! The AdmissionReview `admission.k8s.io/v1` wire format: a request read as raw JSON (so
//! nothing the host does not model is lost, and the object is passed on as the apiserver wrote
//! it) and the response written back.

use std::borrow::Cow;

use base64::Engine as _;
use hyper::body::Bytes;
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use odh_plugin_runtime::AdmissionInput;
use odh_plugin_runtime::gvk::Gvk;
use odh_plugin_runtime::wire::{Operation, RawJson};

use super::verdict::{Verdict, has_patch};

pub const ADMISSION_API_VERSION: &str = "admission.k8s.io/v1";
pub const ADMISSION_REVIEW_KIND: &str = "AdmissionReview";

/// Why a request body is not an AdmissionReview v1 request (answered with HTTP 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ReviewError(pub String);

fn bad(message: impl Into<String>) -> ReviewError {
    ReviewError(message.into())
}

/// Reads an AdmissionReview v1 request for the webhook at `path`, parsing the body once: the
/// envelope and the request's small fields become values, while `object`, `oldObject` and
/// `userInfo` stay text, views of `body`'s own buffer ([`RawJson`]) that the plugin receives
/// as they came. An 8 MiB object is neither copied nor turned into a tree here.
pub fn parse_review(body: &Bytes, path: &str) -> Result<AdmissionInput, ReviewError> {
    // One pass over the body: the request's members are read where they stand.
    let review: Envelope<'_> = match serde_json::from_slice(body) {
        Ok(review) => review,
        Err(_) => return Err(not_a_review_object(body)),
    };
    let api_version = small(review.api_version)?;
    let kind = small(review.kind)?;
    let (api_version, kind) = (
        api_version.as_ref().and_then(Value::as_str),
        kind.as_ref().and_then(Value::as_str),
    );
    if api_version != Some(ADMISSION_API_VERSION) || kind != Some(ADMISSION_REVIEW_KIND) {
        return Err(bad(format!(
            "expected apiVersion {ADMISSION_API_VERSION:?} and kind {ADMISSION_REVIEW_KIND:?}, \
             got apiVersion {} and kind {}",
            shown(api_version),
            shown(kind)
        )));
    }
    let raw_request = match review.request {
        Some(RequestMember::Object(members)) => members,
        Some(RequestMember::Other) => return Err(bad("request is not a JSON object")),
        None => return Err(bad("the AdmissionReview has no request")),
    };
    // The small fields as values, so they are checked as before; the objects stay text.
    let mut request = Map::new();
    for key in [
        "uid",
        "kind",
        "resource",
        "subResource",
        "operation",
        "namespace",
        "name",
        "dryRun",
    ] {
        if let Some(value) = small(raw_request.get(key))? {
            request.insert(key.to_string(), value);
        }
    }
    let request = &request;

    let uid = required_str(request, "uid")?.to_string();
    let kind = request
        .get("kind")
        .and_then(Value::as_object)
        .ok_or_else(|| bad("request.kind is missing"))?;
    let gvk = Gvk {
        group: optional_str(kind, "group").unwrap_or_default().to_string(),
        version: field_str(kind, "request.kind", "version")?.to_string(),
        kind: field_str(kind, "request.kind", "kind")?.to_string(),
    };
    let resource = request
        .get("resource")
        .and_then(Value::as_object)
        .ok_or_else(|| bad("request.resource is missing"))?;
    let resource = field_str(resource, "request.resource", "resource")?.to_string();
    let operation_text = required_str(request, "operation")?;
    let operation: Operation = serde_json::from_value(Value::String(operation_text.into()))
        .map_err(|_| {
            bad(format!(
                "request.operation {operation_text:?} is not one of CREATE, UPDATE, DELETE, CONNECT"
            ))
        })?;
    let dry_run = match request.get("dryRun") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(bad("request.dryRun is not a boolean")),
    };
    let text = |key: &str| {
        raw_request
            .get(key)
            .filter(|raw| raw.get() != "null")
            .map(|raw| RawJson::within(body, raw))
    };
    Ok(AdmissionInput {
        uid,
        path: path.to_string(),
        gvk,
        resource,
        sub_resource: non_empty(request, "subResource"),
        operation,
        namespace: non_empty(request, "namespace"),
        name: non_empty(request, "name"),
        object: text("object"),
        old_object: text("oldObject"),
        dry_run,
        user_info: text("userInfo").unwrap_or_else(RawJson::empty_object),
    })
}

/// Why a body that is not a JSON object is no review: not JSON at all (serde_json's message,
/// as when the whole body is parsed), or JSON of another type.
fn not_a_review_object(body: &[u8]) -> ReviewError {
    match serde_json::from_slice::<Value>(body) {
        Err(e) => bad(format!("the body is not JSON: {e}")),
        Ok(_) => bad("the body is not a JSON object"),
    }
}

/// An AdmissionReview's top level as written: `apiVersion` and `kind` as text, `request`'s
/// members when it is an object; a key written twice keeps its last value.
struct Envelope<'a> {
    api_version: Option<&'a RawValue>,
    kind: Option<&'a RawValue>,
    request: Option<RequestMember<'a>>,
}

/// What `request` holds.
enum RequestMember<'a> {
    Object(Members<'a>),
    /// Any other JSON value.
    Other,
}

impl<'de> Deserialize<'de> for Envelope<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Object;
        impl<'de> Visitor<'de> for Object {
            type Value = Envelope<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut envelope = Envelope {
                    api_version: None,
                    kind: None,
                    request: None,
                };
                while let Some(Key(key)) = map.next_key()? {
                    match &*key {
                        "apiVersion" => envelope.api_version = Some(map.next_value()?),
                        "kind" => envelope.kind = Some(map.next_value()?),
                        "request" => envelope.request = Some(map.next_value()?),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(envelope)
            }
        }
        deserializer.deserialize_map(Object)
    }
}

impl<'de> Deserialize<'de> for RequestMember<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Any;
        impl<'de> Visitor<'de> for Any {
            type Value = RequestMember<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                members(map).map(RequestMember::Object)
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(RequestMember::Other)
            }

            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(RequestMember::Other)
            }

            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(RequestMember::Other)
            }

            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(RequestMember::Other)
            }

            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(RequestMember::Other)
            }

            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(RequestMember::Other)
            }

            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(RequestMember::Other)
            }
        }
        deserializer.deserialize_any(Any)
    }
}

/// The members of a JSON object as written, parsed without building a map: keys borrowed from
/// the body unless they hold an escape, values left as text. A key written twice keeps its last
/// value, as a map would.
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'a> Members<'a> {
    fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| *v)
    }
}

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Object;
        impl<'de> Visitor<'de> for Object {
            type Value = Members<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                members(map)
            }
        }
        deserializer.deserialize_map(Object)
    }
}

fn members<'de, A: MapAccess<'de>>(mut map: A) -> Result<Members<'de>, A::Error> {
    let mut members = Vec::with_capacity(map.size_hint().unwrap_or(12));
    while let Some(Key(key)) = map.next_key()? {
        members.push((key, map.next_value()?));
    }
    Ok(Members(members))
}

/// An object's key: borrowed from the input when it can be.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text;
        impl<'de> Visitor<'de> for Text {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }

            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }

            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(Text)
    }
}

/// A member's text as a value (a small field).
fn small(raw: Option<&RawValue>) -> Result<Option<Value>, ReviewError> {
    raw.map(|raw| serde_json::from_str(raw.get()))
        .transpose()
        .map_err(|e| bad(format!("the body is not JSON: {e}")))
}

fn shown(v: Option<&str>) -> String {
    v.map_or_else(|| "(none)".to_string(), |s| format!("{s:?}"))
}

fn optional_str<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    m.get(key).and_then(Value::as_str)
}

fn required_str<'a>(m: &'a Map<String, Value>, key: &str) -> Result<&'a str, ReviewError> {
    field_str(m, "request", key)
}

fn field_str<'a>(
    m: &'a Map<String, Value>,
    parent: &str,
    key: &str,
) -> Result<&'a str, ReviewError> {
    match m.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        Some(Value::String(_)) | None | Some(Value::Null) => {
            Err(bad(format!("{parent}.{key} is missing")))
        }
        Some(_) => Err(bad(format!("{parent}.{key} is not a string"))),
    }
}

fn non_empty(m: &Map<String, Value>, key: &str) -> Option<String> {
    optional_str(m, key)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// The AdmissionReview v1 response to the request `uid`.
pub fn review_response(uid: &str, verdict: &Verdict) -> Value {
    serde_json::to_value(Answer::of(uid, verdict)).unwrap_or(Value::Null)
}

/// [`review_response`] written out: the same bytes as serialising it, without building the
/// value first (the webhook server's answer).
pub fn review_response_bytes(uid: &str, verdict: &Verdict) -> Vec<u8> {
    serde_json::to_vec(&Answer::of(uid, verdict)).unwrap_or_default()
}

/// The answer as written: members in the order a `serde_json::Value` writes them (sorted), so
/// both ways give the same text.
#[derive(serde::Serialize)]
struct Answer<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    response: AnswerResponse<'a>,
}

#[derive(serde::Serialize)]
struct AnswerResponse<'a> {
    allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch: Option<String>,
    #[serde(rename = "patchType", skip_serializing_if = "Option::is_none")]
    patch_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<Value>,
    uid: &'a str,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    warnings: &'a [String],
}

impl<'a> Answer<'a> {
    fn of(uid: &'a str, verdict: &'a Verdict) -> Self {
        let status = (verdict.message.is_some() || !verdict.allowed).then(|| {
            let mut status = Map::new();
            status.insert("code".into(), json!(verdict.code));
            if let Some(m) = &verdict.message {
                status.insert("message".into(), json!(m));
            }
            let (reason, details) = verdict.status_reason();
            if let Some(r) = reason {
                status.insert("reason".into(), json!(r));
            }
            if let Some(d) = details {
                status.insert("details".into(), d);
            }
            Value::Object(status)
        });
        let patch = verdict
            .patch
            .as_ref()
            .filter(|patch| verdict.allowed && has_patch(Some(patch)))
            .map(|patch| {
                let bytes = serde_json::to_vec(patch).unwrap_or_default();
                base64::engine::general_purpose::STANDARD.encode(bytes)
            });
        Answer {
            api_version: ADMISSION_API_VERSION,
            kind: ADMISSION_REVIEW_KIND,
            response: AnswerResponse {
                allowed: verdict.allowed,
                patch_type: patch.is_some().then_some("JSONPatch"),
                patch,
                status,
                uid,
                warnings: &verdict.warnings,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn review(request: Value) -> Bytes {
        serde_json::to_vec(&json!({"apiVersion": ADMISSION_API_VERSION, "kind": "AdmissionReview", "request": request}))
            .unwrap()
            .into()
    }

    #[test]
    fn a_full_request_maps_every_field() {
        let body = review(json!({
            "uid": "u-1",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "subResource": "status",
            "operation": "UPDATE",
            "namespace": "ns", "name": "p",
            "object": {"kind": "Pod", "x-unknown": [1]},
            "oldObject": {"kind": "Pod"},
            "dryRun": true,
            "userInfo": {"username": "alice", "groups": ["g"]},
        }));
        let input = parse_review(&body, "/mutate--v1-pod").unwrap();
        assert_eq!(input.uid, "u-1");
        assert_eq!(input.path, "/mutate--v1-pod");
        assert_eq!(input.gvk, Gvk::new("", "v1", "Pod"));
        assert_eq!(input.resource, "pods");
        assert_eq!(input.sub_resource.as_deref(), Some("status"));
        assert_eq!(input.operation, Operation::Update);
        assert_eq!(
            (input.namespace.as_deref(), input.name.as_deref()),
            (Some("ns"), Some("p"))
        );
        let object = input.object.clone().unwrap().to_value().unwrap();
        assert_eq!(object["x-unknown"], json!([1]));
        assert!(input.old_object.is_some());
        assert!(input.dry_run);
        let user = input.user_info.to_value().unwrap();
        assert_eq!(user["username"], "alice");
    }

    /// The objects are parsed once, as part of the body, and handed on as the very bytes the
    /// body holds: no copy, no re-serialization (key order and spacing as written).
    #[test]
    fn the_objects_are_views_of_the_body_as_written() {
        let body = Bytes::from_static(
            br#"{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
                "uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "resource": {"group": "", "version": "v1", "resource": "pods"},
                "operation": "UPDATE",
                "object": {"spec": {"b": 1, "a": "\u00e9"}, "kind": "Pod"},
                "oldObject": {"kind": "Pod"}, "userInfo": {"username": "alice"}}}"#,
        );
        let input = parse_review(&body, "/p").unwrap();
        let within = |raw: &RawJson| body.as_ptr_range().contains(&raw.as_bytes().as_ptr());
        let object = input.object.as_ref().unwrap();
        assert_eq!(
            object.as_str(),
            r#"{"spec": {"b": 1, "a": "\u00e9"}, "kind": "Pod"}"#
        );
        assert!(
            within(object),
            "the object is a view of the body, not a copy"
        );
        assert!(within(input.old_object.as_ref().unwrap()));
        assert!(within(&input.user_info));
        assert_eq!(input.user_info.as_str(), r#"{"username": "alice"}"#);
    }

    #[test]
    fn a_minimal_delete_has_no_object_and_empty_user_info() {
        let body = review(json!({
            "uid": "u-2",
            "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
            "resource": {"group": "apps", "version": "v1", "resource": "deployments"},
            "operation": "DELETE", "name": "", "subResource": "",
        }));
        let input = parse_review(&body, "/x").unwrap();
        assert_eq!(input.gvk, Gvk::new("apps", "v1", "Deployment"));
        assert_eq!(
            (input.name, input.sub_resource, input.object),
            (None, None, None)
        );
        assert!(!input.dry_run);
        assert_eq!(input.user_info.to_value().unwrap(), json!({}));
    }

    /// Read in one pass as a map would read it: the last of a key written twice counts, a key
    /// written with escapes is the same key, and a request of any other JSON type is refused.
    #[test]
    fn the_envelope_reads_as_a_map_would() {
        let request = r#"{"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"}, "operation": "CREATE"}"#;
        let body = format!(
            r#"{{"apiVersion": "v0", "ignored": [1, {{"a": null}}], "kind": "AdmissionReview",
                "request": 7, "apiVersion": "admission.k8s.io/v1", "req\u0075est": {request}}}"#
        );
        let input = parse_review(&Bytes::from(body), "/p").unwrap();
        assert_eq!(
            (input.uid.as_str(), input.operation),
            ("u", Operation::Create)
        );
        let twice = request.replace(r#""uid": "u""#, r#""uid": "first", "uid": "u""#);
        let body = format!(
            r#"{{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {twice}}}"#
        );
        assert_eq!(parse_review(&Bytes::from(body), "/p").unwrap().uid, "u");
        for other in ["null", "[1, 2]", "\"x\"", "5", "-1.5", "true"] {
            let body = format!(
                r#"{{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {other}}}"#
            );
            let err = parse_review(&Bytes::from(body), "/p").unwrap_err();
            assert_eq!(err.to_string(), "request is not a JSON object", "{other}");
        }
    }

    #[test]
    fn malformed_reviews_are_explained() {
        let cases: [(&[u8], &str); 6] = [
            (b"not json", "not JSON"),
            (b"[1]", "not a JSON object"),
            (
                br#"{"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {}}"#,
                r#"got apiVersion "admission.k8s.io/v1beta1""#,
            ),
            (
                br#"{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}"#,
                "has no request",
            ),
            (
                br#"{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u"}}"#,
                "request.kind is missing",
            ),
            (
                br#"{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u",
                   "kind": {"version": "v1", "kind": "Pod"}, "resource": {"resource": "pods"}, "operation": "PATCH"}}"#,
                r#"request.operation "PATCH""#,
            ),
        ];
        for (body, expected) in cases {
            let err = parse_review(&Bytes::from_static(body), "/x")
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(expected),
                "{err:?} should contain {expected:?}"
            );
        }
    }

    /// The server writes the answer without building a value: the same text either way.
    #[test]
    fn the_written_answer_is_the_value_written_out() {
        let verdicts = [
            Verdict::allow(),
            Verdict::deny(403, "no"),
            Verdict::deny(
                422,
                r#"Widget.example.com "m" is invalid: metadata.name: Invalid value: "m": too long"#,
            ),
            Verdict::deny(500, "boom"),
            Verdict {
                warnings: vec!["w".into(), "\"quoted\"".into()],
                patch: Some(json!([{"op": "add", "path": "/a", "value": {"z": 1, "b": [2]}}])),
                ..Verdict::allow()
            },
            Verdict {
                patch: Some(json!([])),
                ..Verdict::allow()
            },
        ];
        for verdict in &verdicts {
            assert_eq!(
                String::from_utf8(review_response_bytes("u-\u{e9}", verdict)).unwrap(),
                serde_json::to_string(&review_response("u-\u{e9}", verdict)).unwrap()
            );
        }
    }

    #[test]
    fn responses_carry_status_warnings_and_patch_only_when_due() {
        let plain = review_response("u", &Verdict::allow());
        assert_eq!(
            plain,
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                   "response": {"uid": "u", "allowed": true}})
        );
        let denied = review_response("u", &Verdict::deny(403, "no"));
        assert_eq!(
            denied["response"],
            json!({"uid": "u", "allowed": false,
                   "status": {"code": 403, "message": "no", "reason": "Forbidden"}})
        );
        // D12: a 422 is `Invalid`, with the causes its message spells out; codes
        // controller-runtime's `Errored` answers with carry no reason.
        let invalid = review_response(
            "u",
            &Verdict::deny(
                422,
                r#"Widget.example.com "m" is invalid: metadata.name: Invalid value: "m": too long"#,
            ),
        );
        let status = &invalid["response"]["status"];
        assert_eq!(status["reason"], "Invalid");
        assert_eq!(status["details"]["kind"], "Widget");
        assert_eq!(status["details"]["causes"][0]["field"], "metadata.name");
        let errored = review_response("u", &Verdict::deny(500, "boom"));
        assert!(errored["response"]["status"].get("reason").is_none());
        let passed_on = review_response(
            "u",
            &Verdict::from_status(
                &kube::core::Status::failure("sa \"x\" is forbidden", "Forbidden").with_code(403),
            ),
        );
        assert_eq!(
            passed_on["response"]["status"],
            json!({"code": 403, "message": "sa \"x\" is forbidden", "reason": "Forbidden"})
        );
        let patch = json!([{"op": "add", "path": "/a", "value": 1}]);
        let mutated = review_response(
            "u",
            &Verdict {
                warnings: vec!["w".into()],
                patch: Some(patch.clone()),
                ..Verdict::allow()
            },
        );
        let r = &mutated["response"];
        assert_eq!(r["patchType"], "JSONPatch");
        assert_eq!(r["warnings"], json!(["w"]));
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(r["patch"].as_str().unwrap())
            .unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&decoded).unwrap(), patch);
        let empty = review_response(
            "u",
            &Verdict {
                patch: Some(json!([])),
                ..Verdict::allow()
            },
        );
        assert!(empty["response"].get("patch").is_none());
        assert!(empty["response"].get("patchType").is_none());
    }
}
