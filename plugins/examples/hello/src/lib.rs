//! The example plugin: greets every ConfigMap labelled `hello.opendatahub.io/enabled=true` with
//! a `<name>-hello` ConfigMap, labels ConfigMaps on admission, forbids a `forbidden` key, and
//! serves two HTTP routes: a public greeting and, for callers allowed to list them, the
//! ConfigMaps of a namespace.

use odh_plugin_sdk::Operation::{Create, Update};
use odh_plugin_sdk::caller::AccessAttributes;
use odh_plugin_sdk::{
    AdmissionDecision, AdmissionRequest, ApiRequest, ApiResponse, ApiRoute, Controller, Ctx, Error,
    Manifest, NoSettings, Object, Outcome, Plan, Plugin, ReconcileRequest, Webhook, core_gvk, json,
    log,
};

/// `GET ?name=x`: `{"greeting": "Hello, x!"}` (anyone may call).
pub const HELLO_PATH: &str = "/api/v1/hello";
/// `GET ?namespace=ns`: `{"configmaps": [names]}` for callers who may list them there.
pub const CONFIGMAPS_PATH: &str = "/api/v1/hello/configmaps";

pub struct Hello;

impl Plugin for Hello {
    type Settings = NoSettings;

    fn manifest() -> Manifest {
        let (cm, ops) = (core_gvk("ConfigMap"), [Create, Update]);
        // Reads and writes of ConfigMaps follow from the controller.
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
            .webhook(Webhook::validating("/validate-hello-configmap", cm, ops))
    }

    fn reconcile(request: &ReconcileRequest, _: &Ctx<NoSettings>) -> Result<Outcome, Error> {
        let mut plan = Plan::new();
        if let Some(greeting) = request.object()?.as_ref().and_then(greeting) {
            plan.apply_owned(greeting);
        }
        Ok(plan.into_outcome())
    }

    fn mutate(request: &AdmissionRequest, _: &Ctx<NoSettings>) -> Result<AdmissionDecision, Error> {
        Ok(match request.object()? {
            Some(cm) => AdmissionDecision::mutated(greeted(cm)),
            None => AdmissionDecision::allow(),
        })
    }

    fn validate(
        request: &AdmissionRequest,
        _: &Ctx<NoSettings>,
    ) -> Result<AdmissionDecision, Error> {
        Ok(match request.object()?.map(|cm| check(&cm)) {
            Some(Err(message)) => AdmissionDecision::deny(message),
            _ => AdmissionDecision::allow(),
        })
    }

    fn routes() -> Vec<ApiRoute> {
        vec![
            ApiRoute::public(HELLO_PATH),
            ApiRoute::bearer(CONFIGMAPS_PATH),
        ]
    }

    fn handle(request: &ApiRequest, cx: &Ctx<NoSettings>) -> Result<ApiResponse, Error> {
        if request.method != "GET" {
            return Ok(ApiResponse::error(405, "method not allowed"));
        }
        match request.path.as_str() {
            HELLO_PATH => Ok(hello(request)),
            CONFIGMAPS_PATH => config_maps(request, cx),
            _ => Ok(ApiResponse::error(404, "not found")),
        }
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

/// `GET /api/v1/hello?name=x`; the name defaults to `world`.
fn hello(request: &ApiRequest) -> ApiResponse {
    let name = request
        .query_param("name")
        .unwrap_or_else(|| "world".into());
    ApiResponse::json(200, &json!({ "greeting": format!("Hello, {name}!") }))
}

/// `GET /api/v1/hello/configmaps?namespace=ns`: the names, if the caller may list ConfigMaps
/// there (asked of the cluster with the caller's own credentials).
fn config_maps(request: &ApiRequest, cx: &Ctx<NoSettings>) -> Result<ApiResponse, Error> {
    let Some(namespace) = request.query_param("namespace").filter(|ns| !ns.is_empty()) else {
        return Ok(ApiResponse::error(
            400,
            "the namespace query parameter is required",
        ));
    };
    let list = AccessAttributes::new("list", "", "configmaps").namespace(&namespace);
    match cx.caller.allowed(&list) {
        Ok(true) => {}
        Ok(false) => return Ok(ApiResponse::error(403, "forbidden")),
        Err(e) => {
            log::error!("hello: the access review failed: {e}");
            return Ok(ApiResponse::error(500, "internal server error"));
        }
    }
    let names: Vec<String> = cx
        .cluster
        .list_objects(&core_gvk("ConfigMap"), Some(&namespace), None)?
        .iter()
        .map(|cm| cm.name().to_string())
        .collect();
    Ok(ApiResponse::json(200, &json!({ "configmaps": names })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use odh_plugin_sdk::caller;
    use odh_plugin_sdk::testing::FakeCluster;
    use odh_plugin_sdk::{FinalizerAction, Ownership, Value, WebhookType};

    fn cm(name: &str, data: Value) -> Object {
        Object(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "ns", "uid": "u-1",
                         "labels": {"hello.opendatahub.io/enabled": "true"}},
            "data": data,
            "extra": {"kept": 1},
        }))
    }

    fn cx(cluster: &FakeCluster) -> Ctx<'_, NoSettings> {
        Ctx::new(&NoSettings, cluster)
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
        assert_eq!(
            (m.reads.clone(), m.writes.clone()),
            (vec![core_gvk("ConfigMap")], vec![core_gvk("ConfigMap")])
        );
    }

    #[test]
    fn reconcile_greets() {
        let cluster = FakeCluster::for_manifest(&Hello::manifest());
        let o = Hello::reconcile(
            &ReconcileRequest::for_object("hello", &cm("world", json!({}))),
            &cx(&cluster),
        )
        .unwrap();
        o.assert_declared(&Hello::manifest());
        let greeting = o.applied("ConfigMap", "world-hello").unwrap();
        assert_eq!(greeting.ownership, Ownership::Controller);
        assert_eq!(
            greeting.object.0,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "world-hello", "namespace": "ns"},
                   "data": {"greeting": "Hello, world!"}})
        );
        assert_eq!((o.status, o.finalizer), (None, FinalizerAction::Keep));
    }

    #[test]
    fn reconcile_skips_greetings_and_gone_objects() {
        let cluster = FakeCluster::new();
        let own = ReconcileRequest::for_object("hello", &cm("world-hello", json!({})));
        assert_eq!(
            Hello::reconcile(&own, &cx(&cluster)),
            Ok(Outcome::default())
        );
        let gone = ReconcileRequest::new("hello", Some("ns"), "world");
        assert_eq!(
            Hello::reconcile(&gone, &cx(&cluster)),
            Ok(Outcome::default())
        );
    }

    #[test]
    fn mutate_labels_and_keeps_fields() {
        let req =
            AdmissionRequest::for_object("/mutate-hello-configmap", Create, &cm("a", json!({})));
        let d = Hello::mutate(&req, &cx(&FakeCluster::new())).unwrap();
        assert!(d.allowed);
        let mutated = Object::parse(d.mutated.as_deref().unwrap()).unwrap();
        assert_eq!(mutated.label("hello.opendatahub.io/greeted"), Some("true"));
        assert_eq!(mutated["extra"], json!({"kept": 1}));
    }

    #[test]
    fn validate_forbids_the_key() {
        let path = "/validate-hello-configmap";
        let cluster = FakeCluster::new();
        let bad = AdmissionRequest::for_object(path, Update, &cm("a", json!({"forbidden": "x"})));
        let d = Hello::validate(&bad, &cx(&cluster)).unwrap();
        assert!(!d.allowed);
        assert_eq!(
            d.message.as_deref(),
            Some(r#"hello: the key "forbidden" is not allowed"#)
        );
        let good = AdmissionRequest::for_object(path, Create, &cm("a", json!({"ok": "x"})));
        assert!(Hello::validate(&good, &cx(&cluster)).unwrap().allowed);
    }

    fn body(response: &ApiResponse) -> Value {
        response.json_body().unwrap()
    }

    #[test]
    fn the_routes_are_a_public_greeting_and_an_authenticated_listing() {
        assert_eq!(
            Hello::routes(),
            [
                ApiRoute::public("/api/v1/hello"),
                ApiRoute::bearer("/api/v1/hello/configmaps")
            ]
        );
    }

    #[test]
    fn hello_greets_by_name_on_get_only() {
        let cluster = FakeCluster::new();
        let get = ApiRequest::new("GET", HELLO_PATH).with_query("name=x");
        let r = Hello::handle(&get, &cx(&cluster)).unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(body(&r), json!({"greeting": "Hello, x!"}));
        let anonymous = Hello::handle(&ApiRequest::new("GET", HELLO_PATH), &cx(&cluster)).unwrap();
        assert_eq!(body(&anonymous), json!({"greeting": "Hello, world!"}));
        for method in ["POST", "PUT", "DELETE"] {
            let r = Hello::handle(&ApiRequest::new(method, HELLO_PATH), &cx(&cluster)).unwrap();
            assert_eq!(
                (r.status, body(&r)),
                (405, json!({"error": "method not allowed"})),
                "{method}"
            );
        }
    }

    #[test]
    fn configmaps_are_listed_for_callers_allowed_to_list_them() {
        let cluster = FakeCluster::for_manifest(&Hello::manifest())
            .with(cm("a", json!({})))
            .with(cm("b", json!({})))
            .with(Object::new(&core_gvk("ConfigMap"), Some("other"), "c"));
        let list_in_ns = AccessAttributes::new("list", "", "configmaps").namespace("ns");
        let allowed = caller::Fake::new().allow(list_in_ns.clone());
        let request = ApiRequest::new("GET", CONFIGMAPS_PATH).with_query("namespace=ns");
        let r = Hello::handle(&request, &cx(&cluster).with_caller(&allowed)).unwrap();
        assert_eq!(
            (r.status, body(&r)),
            (200, json!({"configmaps": ["a", "b"]}))
        );
        assert_eq!(allowed.asked(), [list_in_ns]);

        let other = ApiRequest::new("GET", CONFIGMAPS_PATH).with_query("namespace=other");
        let r = Hello::handle(&other, &cx(&cluster).with_caller(&allowed)).unwrap();
        assert_eq!((r.status, body(&r)), (403, json!({"error": "forbidden"})));
    }

    #[test]
    fn a_failed_review_is_a_500_and_a_missing_namespace_a_400() {
        let cluster = FakeCluster::new();
        let failing = caller::Fake::new().fail(Error::transient("the review could not be made"));
        let request = ApiRequest::new("GET", CONFIGMAPS_PATH).with_query("namespace=ns");
        let r = Hello::handle(&request, &cx(&cluster).with_caller(&failing)).unwrap();
        assert_eq!(
            (r.status, body(&r)),
            (500, json!({"error": "internal server error"}))
        );
        let r = Hello::handle(&ApiRequest::new("GET", CONFIGMAPS_PATH), &cx(&cluster)).unwrap();
        assert_eq!(r.status, 400);
        let r = Hello::handle(&ApiRequest::new("POST", CONFIGMAPS_PATH), &cx(&cluster)).unwrap();
        assert_eq!(r.status, 405);
    }
}
