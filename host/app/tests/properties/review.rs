//! AdmissionReview decoding: whatever the body, an AdmissionInput or an error (a 400), never a
//! panic; a well-formed review gives back every field it carried; a required field that is
//! missing or of the wrong type is an error naming it.

use odh_model_controller::gvk::Gvk;
use odh_model_controller::plugin::wire::{Operation, RawJson};
use odh_model_controller::webhook::verdict::Verdict;
use odh_model_controller::webhook::{ADMISSION_API_VERSION, parse_review, review_response};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::json::{any_json, any_object};

/// The fields of one request, as generated.
#[derive(Debug, Clone)]
struct Fields {
    uid: String,
    gvk: Gvk,
    resource: String,
    sub_resource: Option<String>,
    operation: Operation,
    namespace: Option<String>,
    name: Option<String>,
    object: Option<Value>,
    old_object: Option<Value>,
    dry_run: Option<bool>,
    user_info: Option<Value>,
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z0-9]([a-z0-9.-]{0,20}[a-z0-9])?", "\\PC{1,12}"]
}

fn fields() -> impl Strategy<Value = Fields> {
    let operation = prop::sample::select(vec![
        Operation::Create,
        Operation::Update,
        Operation::Delete,
        Operation::Connect,
    ]);
    let gvk = (
        "[a-z.]{0,12}",
        "v[0-9](alpha[0-9]|beta[0-9])?",
        "[A-Z][A-Za-z]{0,12}",
    )
        .prop_map(|(group, version, kind)| Gvk {
            group,
            version,
            kind,
        });
    (
        (
            name(),
            gvk,
            "[a-z]{1,12}",
            prop::option::of("[a-z]{1,8}"),
            operation,
        ),
        (
            prop::option::of(name()),
            prop::option::of(name()),
            prop::option::of(any_object()),
            prop::option::of(any_object()),
            prop::option::of(any::<bool>()),
            prop::option::of(any_object()),
        ),
    )
        .prop_map(
            |(
                (uid, gvk, resource, sub_resource, operation),
                (namespace, name, object, old_object, dry_run, user_info),
            )| Fields {
                uid,
                gvk,
                resource,
                sub_resource,
                operation,
                namespace,
                name,
                object,
                old_object,
                dry_run,
                user_info,
            },
        )
}

/// The review as an API server would send it: absent optional fields either left out, empty
/// or `null` (all three mean "none"), plus unknown fields the host must ignore.
fn review(f: &Fields, absent_style: u8, extra: &Value) -> Value {
    let absent = |v: Option<Value>, empty: Value| match (v, absent_style % 3) {
        (Some(v), _) => Some(v),
        (None, 0) => None,
        (None, 1) => Some(empty),
        (None, _) => Some(Value::Null),
    };
    let s = |v: &Option<String>| v.clone().map(Value::String);
    let mut request = serde_json::Map::new();
    request.insert("uid".into(), json!(f.uid));
    request.insert(
        "kind".into(),
        json!({"group": f.gvk.group, "version": f.gvk.version, "kind": f.gvk.kind}),
    );
    request.insert(
        "resource".into(),
        json!({"group": f.gvk.group, "version": f.gvk.version, "resource": f.resource}),
    );
    request.insert(
        "operation".into(),
        serde_json::to_value(f.operation).unwrap(),
    );
    let optional = [
        ("subResource", absent(s(&f.sub_resource), json!(""))),
        ("namespace", absent(s(&f.namespace), json!(""))),
        ("name", absent(s(&f.name), json!(""))),
        ("object", absent(f.object.clone(), Value::Null)),
        ("oldObject", absent(f.old_object.clone(), Value::Null)),
        ("dryRun", absent(f.dry_run.map(Value::Bool), Value::Null)),
        ("userInfo", absent(f.user_info.clone(), Value::Null)),
    ];
    for (key, value) in optional {
        if let Some(v) = value {
            request.insert(key.into(), v);
        }
    }
    request.insert("x-unknown".into(), extra.clone());
    json!({
        "apiVersion": ADMISSION_API_VERSION,
        "kind": "AdmissionReview",
        "request": request,
        "x-unknown": extra,
    })
}

/// Where a required field sits, and whether it must hold an object (else a non-empty string).
const REQUIRED: [(&str, bool); 10] = [
    ("/apiVersion", false),
    ("/kind", false),
    ("/request", true),
    ("/request/uid", false),
    ("/request/kind", true),
    ("/request/kind/version", false),
    ("/request/kind/kind", false),
    ("/request/resource", true),
    ("/request/resource/resource", false),
    ("/request/operation", false),
];

/// `v` if it is of another JSON type than the field needs (an object, or a non-empty
/// string), else `v` in an array, which never is (mapping rather than filtering keeps long runs
/// free of rejected cases).
fn of_another_type(v: Value, object: bool) -> Value {
    let fits = match &v {
        Value::Object(_) => object,
        Value::String(s) => !object && !s.is_empty(),
        _ => false,
    };
    if fits { Value::Array(vec![v]) } else { v }
}

fn remove(doc: &mut Value, pointer: &str) {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    if let Some(Value::Object(m)) = doc.pointer_mut(parent) {
        m.remove(key);
    }
}

proptest! {
    #[test]
    fn arbitrary_bytes_are_an_error_not_a_panic(body in prop::collection::vec(any::<u8>(), 0..512)) {
        let err = parse_review(&body.into(), "/p").expect_err("random bytes are no review");
        prop_assert!(!err.to_string().is_empty());
    }

    #[test]
    fn arbitrary_json_is_an_error_not_a_panic(doc in any_json()) {
        let body = serde_json::to_vec(&doc).unwrap();
        let err = parse_review(&body.into(), "/p").expect_err("no apiVersion, no review");
        prop_assert!(!err.to_string().is_empty());
    }

    #[test]
    fn every_field_of_a_review_comes_back(
        f in fields(),
        absent_style in any::<u8>(),
        extra in any_json(),
    ) {
        let body = serde_json::to_vec(&review(&f, absent_style, &extra)).unwrap();
        let input = parse_review(&body.into(), "/mutate-x")
            .map_err(|e| TestCaseError::fail(format!("well-formed review refused: {e}")))?;
        prop_assert_eq!(&input.uid, &f.uid);
        prop_assert_eq!(&input.path, "/mutate-x");
        prop_assert_eq!(&input.gvk, &f.gvk);
        prop_assert_eq!(&input.resource, &f.resource);
        prop_assert_eq!(input.operation, f.operation);
        // Empty strings mean "none", as in the API server's Go structs.
        let some = |v: &Option<String>| v.clone().filter(|s| !s.is_empty());
        prop_assert_eq!(&input.sub_resource, &some(&f.sub_resource));
        prop_assert_eq!(&input.namespace, &some(&f.namespace));
        prop_assert_eq!(&input.name, &some(&f.name));
        // The objects come back as text, as written in the body.
        let value = |raw: &RawJson| raw.to_value().unwrap();
        prop_assert_eq!(&input.object.as_ref().map(value), &f.object);
        prop_assert_eq!(&input.old_object.as_ref().map(value), &f.old_object);
        prop_assert_eq!(input.dry_run, f.dry_run.unwrap_or(false));
        prop_assert_eq!(&value(&input.user_info), &f.user_info.clone().unwrap_or_else(|| json!({})));
    }

    #[test]
    fn a_missing_required_field_is_an_error(f in fields(), which in 0..REQUIRED.len()) {
        let mut doc = review(&f, 0, &Value::Null);
        let (pointer, _) = REQUIRED[which];
        remove(&mut doc, pointer);
        let err = parse_review(&serde_json::to_vec(&doc).unwrap().into(), "/p");
        prop_assert!(err.is_err(), "{} removed, yet accepted", pointer);
    }

    #[test]
    fn a_required_field_of_the_wrong_type_is_an_error_naming_it(
        f in fields(),
        which in 0..REQUIRED.len(),
        other in any_json(),
    ) {
        let (pointer, object) = REQUIRED[which];
        let wrong = of_another_type(other, object);
        let mut doc = review(&f, 0, &Value::Null);
        *doc.pointer_mut(pointer).unwrap() = wrong.clone();
        let err = parse_review(&serde_json::to_vec(&doc).unwrap().into(), "/p")
            .err()
            .ok_or_else(|| TestCaseError::fail(format!("{pointer} = {wrong} accepted")))?
            .to_string();
        // `/request/kind/version` is named `request.kind.version`.
        let field = pointer.trim_start_matches('/').replace('/', ".");
        prop_assert!(err.contains(&field), "{} = {}: {:?}", pointer, wrong, err);
    }

    #[test]
    fn a_wrong_api_version_is_refused_saying_which_is_expected(version in any_json()) {
        prop_assume!(version != json!(ADMISSION_API_VERSION));
        let mut doc = review(&fields_fixed(), 0, &Value::Null);
        doc["apiVersion"] = version;
        let err = parse_review(&serde_json::to_vec(&doc).unwrap().into(), "/p").unwrap_err();
        prop_assert!(
            err.to_string().contains("expected apiVersion \"admission.k8s.io/v1\""),
            "{}", err
        );
    }

    #[test]
    fn the_response_echoes_the_uid_and_the_verdict(
        uid in "\\PC{0,40}",
        allowed in any::<bool>(),
        code in 100u16..600,
        message in prop::option::of("\\PC{0,40}"),
        warnings in prop::collection::vec("\\PC{0,20}", 0..3),
    ) {
        let verdict = Verdict {
            allowed,
            code,
            message: message.clone(),
            warnings: warnings.clone(),
            ..Verdict::allow()
        };
        let review = review_response(&uid, &verdict);
        // Through the wire and back, as the API server reads it.
        let review: Value = serde_json::from_slice(&serde_json::to_vec(&review).unwrap()).unwrap();
        prop_assert_eq!(&review["apiVersion"], ADMISSION_API_VERSION);
        prop_assert_eq!(&review["kind"], "AdmissionReview");
        let response = &review["response"];
        prop_assert_eq!(&response["uid"], &json!(uid));
        prop_assert_eq!(&response["allowed"], &json!(allowed));
        let has_status = response.get("status").is_some();
        prop_assert_eq!(has_status, message.is_some() || !allowed);
        if has_status {
            prop_assert_eq!(&response["status"]["code"], &json!(code));
        }
        if warnings.is_empty() {
            prop_assert!(response.get("warnings").is_none());
        } else {
            prop_assert_eq!(&response["warnings"], &json!(warnings));
        }
        prop_assert!(response.get("patch").is_none());
    }
}

fn fields_fixed() -> Fields {
    Fields {
        uid: "u".into(),
        gvk: Gvk {
            group: String::new(),
            version: "v1".into(),
            kind: "Pod".into(),
        },
        resource: "pods".into(),
        sub_resource: None,
        operation: Operation::Create,
        namespace: None,
        name: None,
        object: None,
        old_object: None,
        dry_run: None,
        user_info: None,
    }
}
