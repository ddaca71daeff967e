//! Native tests of the Model Registry sync against an in-memory registry.

use std::cell::RefCell;
use std::rc::Rc;

use odh_plugin_sdk::http::{self, Request, Response};
use odh_plugin_sdk::testing::FakeCluster;
use odh_plugin_sdk::{Error, Outcome, Value, core_gvk, json};
use odh_test_fixtures as fixtures;

use super::*;

const MR_NS: &str = "odh-model-registries";
const MR_BASE: &str = "http://model-registry.odh-model-registries.svc.cluster.local:8080";
const ISVC_NAME: &str = "dummy-inference-service";
const ISVC_NS: &str = "default";
const ISVC_UID: &str = "6b1c0a52-0000-4000-8000-000000000001";
const ODH_FINALIZER: &str = odh_kinds::finalizer::INFERENCE_SERVICE;

// ------------------------------------------------------------------------------------------
// A fake Model Registry: serves the few endpoints the sync uses; `http::Fake` records calls.

#[derive(Default)]
struct Registry {
    /// Shared id counter of the registry's context entities (RegisteredModel, ModelVersion,
    /// ServingEnvironment, InferenceService), as the real registry numbers them.
    last_id: RefCell<u64>,
    serving_environments: RefCell<Vec<Value>>,
    inference_services: RefCell<Vec<Value>>,
    /// `(method, path)` answered with this status instead.
    failures: RefCell<Vec<(String, String, u16)>>,
    /// Every request fails at the transport level.
    unreachable: bool,
}

/// The registry and the HTTP client the sync talks to it through.
struct FakeMr {
    registry: Rc<Registry>,
    http: http::Fake,
}

impl std::ops::Deref for FakeMr {
    type Target = Registry;
    fn deref(&self) -> &Registry {
        &self.registry
    }
}

impl FakeMr {
    fn over(registry: Registry) -> FakeMr {
        let registry = Rc::new(registry);
        let served = registry.clone();
        FakeMr {
            registry,
            http: http::Fake::new().handler(move |request| served.answer(request)),
        }
    }

    /// The registry of the e2e suite: RegisteredModel 1 and ModelVersion 2 exist.
    fn prefilled() -> FakeMr {
        Self::over(Registry {
            last_id: RefCell::new(2),
            ..Registry::default()
        })
    }

    fn empty() -> FakeMr {
        Self::over(Registry::default())
    }

    fn unreachable() -> FakeMr {
        Self::over(Registry {
            unreachable: true,
            last_id: RefCell::new(2),
            ..Registry::default()
        })
    }

    fn calls(&self) -> Vec<Request> {
        self.http.requests()
    }

    fn calls_summary(&self) -> Vec<String> {
        self.calls()
            .iter()
            .map(|c| {
                let path = c.url.split_once(API_PREFIX).map_or("?", |(_, p)| p);
                format!("{} {path}", c.method)
            })
            .collect()
    }
}

/// The JSON body of a recorded call.
fn body(call: &Request) -> Option<Value> {
    call.json().expect("a JSON body")
}

impl Registry {
    fn next_id(&self) -> String {
        let mut id = self.last_id.borrow_mut();
        *id += 1;
        id.to_string()
    }

    fn add_serving_environment(&self, name: &str) -> String {
        let id = self.next_id();
        self.serving_environments
            .borrow_mut()
            .push(json!({ "id": id, "name": name }));
        id
    }

    fn add_inference_service(&self, mut record: Value) -> String {
        let id = self.next_id();
        record["id"] = id.clone().into();
        self.inference_services.borrow_mut().push(record);
        id
    }

    fn fail(&self, method: &str, path: &str, status: u16) {
        self.failures
            .borrow_mut()
            .push((method.into(), path.into(), status));
    }

    fn inference_service(&self, id: &str) -> Option<Value> {
        self.inference_services
            .borrow()
            .iter()
            .find(|r| r["id"] == id)
            .cloned()
    }

    fn answer(&self, request: &Request) -> Result<Response, Error> {
        let (method, url) = (request.method.as_str(), request.url.as_str());
        if self.unreachable {
            return Err(Error::Transient(format!(
                "http: {method} {url}: connection refused"
            )));
        }
        let rest = url
            .split_once(API_PREFIX)
            .map(|(_, rest)| rest)
            .unwrap_or_else(|| panic!("not a registry URL: {url}"));
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let query: Vec<(String, String)> = query
            .split('&')
            .filter(|kv| !kv.is_empty())
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                let unescape = |s: &str| odh_plugin_sdk::go::query_unescape(s).expect("escaped");
                (unescape(k), unescape(v))
            })
            .collect();
        let forced = self
            .failures
            .borrow()
            .iter()
            .find(|(m, p, _)| m == method && p == path)
            .map(|(_, _, s)| *s);
        let (status, body) = match forced {
            Some(status) => (
                status,
                json!({ "code": status.to_string(), "message": "forced" }),
            ),
            None => self.serve(method, path, &query, request.json().expect("a JSON body")),
        };
        Ok(Response::with_json(status, &body))
    }

    fn serve(
        &self,
        method: &str,
        path: &str,
        query: &[(String, String)],
        body: Option<Value>,
    ) -> (u16, Value) {
        let param = |k: &str| query.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        let not_found = || (404, json!({ "code": "404", "message": "not found" }));
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        match (method, segments.as_slice()) {
            ("GET", ["serving_environment"]) => {
                let name = param("name");
                let envs = self.serving_environments.borrow();
                match envs.iter().find(|e| e["name"].as_str() == name) {
                    Some(e) => (200, e.clone()),
                    None => not_found(),
                }
            }
            ("POST", ["serving_environments"]) => {
                let mut record = body.unwrap_or_default();
                record["id"] = self.next_id().into();
                self.serving_environments.borrow_mut().push(record.clone());
                (201, record)
            }
            ("GET", ["inference_service"]) => {
                let (name, parent) = (param("name"), param("parentResourceId"));
                let all = self.inference_services.borrow();
                let found = all.iter().find(|r| {
                    r["name"].as_str() == name
                        && parent.is_none_or(|p| r["servingEnvironmentId"] == p)
                });
                match found {
                    Some(r) => (200, r.clone()),
                    None => not_found(),
                }
            }
            ("POST", ["inference_services"]) => {
                let mut record = body.unwrap_or_default();
                record["id"] = self.next_id().into();
                self.inference_services.borrow_mut().push(record.clone());
                (201, record)
            }
            ("GET", ["inference_services", id]) => match self.inference_service(id) {
                Some(r) => (200, r),
                None => not_found(),
            },
            ("PATCH", ["inference_services", id]) => {
                let mut all = self.inference_services.borrow_mut();
                let Some(record) = all.iter_mut().find(|r| r["id"] == *id) else {
                    return not_found();
                };
                for (k, v) in body
                    .unwrap_or_default()
                    .as_object()
                    .cloned()
                    .unwrap_or_default()
                {
                    record[k.as_str()] = v;
                }
                (200, record.clone())
            }
            _ => not_found(),
        }
    }
}

// ------------------------------------------------------------------------------------------
// Fixtures.

fn dsc(name: &str, registries_namespace: Value) -> Value {
    fixtures::data_science_cluster(name)
        .registries_namespace(registries_namespace)
        .build()
}

fn mr_service(name: &str, namespace: &str) -> Value {
    fixtures::model_registry_service(name, namespace).build()
}

/// A DSC pointing at [`MR_NS`] and one `model-registry` Service there.
fn cluster() -> FakeCluster {
    FakeCluster::new()
        .with(dsc("default-dsc", json!(MR_NS)))
        .with(mr_service("model-registry", MR_NS))
}

/// The e2e suite's InferenceService with these labels.
fn isvc(labels: &[(&str, &str)]) -> Value {
    fixtures::isvc(ISVC_NAME)
        .namespace(ISVC_NS)
        .uid(ISVC_UID)
        .labels(labels)
        .model(json!({
            "modelFormat": { "name": "onnx", "version": "1" },
            "runtime": "ovms-1.x",
            "storage": { "key": "aws-connection-models", "path": "path/to/model" },
        }))
        .build()
}

fn with_finalizers(mut isvc: Value, finalizers: &[&str]) -> Value {
    isvc["metadata"]["finalizers"] = json!(finalizers);
    isvc
}

fn deleting(mut isvc: Value) -> Value {
    isvc["metadata"]["deletionTimestamp"] = json!("2026-07-23T10:00:00Z");
    isvc
}

fn settings() -> ModelRegistrySettings {
    ModelRegistrySettings { enabled: true }
}

/// The sync for `isvc` (none: a request for a gone one), as the outcome it decides.
fn sync_with(
    isvc: Option<&Value>,
    cluster: &FakeCluster,
    mr: &FakeMr,
    settings: &ModelRegistrySettings,
) -> Result<Outcome, Error> {
    let mut plan = Plan::new();
    let isvc = isvc.cloned().map(Object);
    reconcile(isvc.as_ref(), cluster, &mr.http, settings, &mut plan)?;
    Ok(plan.into_outcome())
}

fn run(isvc: &Value, cluster: &FakeCluster, mr: &FakeMr) -> Result<Outcome, Error> {
    sync_with(Some(isvc), cluster, mr, &settings())
}

fn run_gone(cluster: &FakeCluster, mr: &FakeMr) -> Result<Outcome, Error> {
    sync_with(None, cluster, mr, &settings())
}

fn transient(result: Result<Outcome, Error>) -> String {
    match result {
        Err(Error::Transient(message)) => message,
        other => panic!("expected a transient error, got {other:?}"),
    }
}

/// The metadata patch that links the ISVC to record `id` with these finalizers.
fn id_label_change(id: &str, finalizers: &[&str]) -> Value {
    json!({"labels": {INFERENCE_SERVICE_ID_LABEL: id}, "finalizers": finalizers})
}

/// The finalizers list of the outcome's metadata patch.
fn finalizers_of(outcome: &Outcome) -> Vec<String> {
    let patch = outcome.primary_metadata_patch().expect("a metadata patch");
    odh_plugin_sdk::serde_json::from_value(patch["finalizers"].clone()).expect("a finalizers list")
}

/// The ISVC as the host leaves it after the outcome's metadata patch.
fn patched(isvc: &Value, outcome: &Outcome) -> Value {
    outcome.patched_primary(&Object(isvc.clone())).into_value()
}

// ------------------------------------------------------------------------------------------
// Scenarios E-01 … E-05.

#[test]
fn e_01_model_version_only_creates_no_mr_inference_service() {
    let mr = FakeMr::empty();
    let isvc = isvc(&[(MODEL_VERSION_ID_LABEL, "2")]);
    let outcome = run(&isvc, &cluster(), &mr).unwrap();
    assert_eq!(outcome, Outcome::default());
    assert!(mr.calls().is_empty(), "{:?}", mr.calls_summary());
    assert!(mr.inference_service("4").is_none());
    assert!(mr.inference_services.borrow().is_empty());
}

#[test]
fn e_02_registered_model_and_version_create_mr_inference_service() {
    let mr = FakeMr::prefilled();
    let isvc = isvc(&[
        (REGISTERED_MODEL_ID_LABEL, "1"),
        (MODEL_VERSION_ID_LABEL, "2"),
    ]);
    let outcome = run(&isvc, &cluster(), &mr).unwrap();

    assert_eq!(
        mr.calls_summary(),
        [
            "GET /serving_environment?name=default",
            "POST /serving_environments",
            "GET /inference_service?name=dummy-inference-service%2F6b1c0a52-0000-4000-8000-000000000001&parentResourceId=3",
            "POST /inference_services",
        ]
    );
    assert!(mr.calls().iter().all(|c| c.url.starts_with(MR_BASE)));

    let record = mr.inference_service("4").expect("MR InferenceService 4");
    assert!(record["name"].as_str().unwrap().starts_with(ISVC_NAME));
    assert_eq!(record["name"], format!("{ISVC_NAME}/{ISVC_UID}"));
    assert_eq!(record["servingEnvironmentId"], "3");
    assert_eq!(record["registeredModelId"], "1");
    assert_eq!(record["modelVersionId"], "2");
    assert_eq!(record["runtime"], "ovms-1.x");
    assert_eq!(record["desiredState"], "DEPLOYED");
    assert!(
        record.get("customProperties").is_none(),
        "no status.url yet"
    );
    assert_eq!(
        mr.serving_environments.borrow()[0],
        json!({"id": "3", "name": ISVC_NS})
    );

    assert_eq!(
        outcome.primary_metadata_patch(),
        Some(id_label_change("4", &[MR_FINALIZER]))
    );
    assert_eq!(outcome.requeue_after_ms, None);

    let updated = Object(patched(&isvc, &outcome));
    assert_eq!(updated.label(INFERENCE_SERVICE_ID_LABEL), Some("4"));
    assert_eq!(updated.label(REGISTERED_MODEL_ID_LABEL), Some("1"));
    assert_eq!(updated.label(MODEL_VERSION_ID_LABEL), Some("2"));
    assert_eq!(updated.finalizers()[0], MR_FINALIZER);
}

#[test]
fn e_02_other_finalizers_are_kept_in_order() {
    let mr = FakeMr::prefilled();
    let isvc = with_finalizers(
        isvc(&[
            (REGISTERED_MODEL_ID_LABEL, "1"),
            (MODEL_VERSION_ID_LABEL, "2"),
        ]),
        &["z.example/last", ODH_FINALIZER],
    );
    let outcome = run(&isvc, &cluster(), &mr).unwrap();
    assert_eq!(
        finalizers_of(&outcome),
        ["z.example/last", ODH_FINALIZER, MR_FINALIZER]
    );
}

#[test]
fn e_03_removed_inference_service_id_label_is_restored() {
    let mr = FakeMr::prefilled();
    let cluster = cluster();
    let mut isvc = isvc(&[
        (REGISTERED_MODEL_ID_LABEL, "1"),
        (MODEL_VERSION_ID_LABEL, "2"),
    ]);
    isvc = patched(&isvc, &run(&isvc, &cluster, &mr).unwrap());
    assert_eq!(
        Object(isvc.clone()).label(INFERENCE_SERVICE_ID_LABEL),
        Some("4")
    );

    // Steady state: nothing to change, the record is read by id.
    mr.http.clear();
    assert_eq!(run(&isvc, &cluster, &mr).unwrap(), Outcome::default());
    assert_eq!(
        mr.calls_summary(),
        [
            "GET /serving_environment?name=default",
            "GET /inference_services/4"
        ]
    );

    // The user removes the id label: it is observed absent, then re-added with the same id.
    isvc["metadata"]["labels"]
        .as_object_mut()
        .unwrap()
        .remove(INFERENCE_SERVICE_ID_LABEL);
    mr.http.clear();
    let outcome = run(&isvc, &cluster, &mr).unwrap();
    assert_eq!(
        outcome.primary_metadata_patch(),
        Some(id_label_change("4", &[MR_FINALIZER]))
    );
    assert_eq!(
        mr.calls_summary(),
        [
            "GET /serving_environment?name=default",
            "GET /inference_service?name=dummy-inference-service%2F6b1c0a52-0000-4000-8000-000000000001&parentResourceId=3",
        ],
        "found by name, not created again"
    );
    assert_eq!(mr.inference_services.borrow().len(), 1);
    let isvc = Object(patched(&isvc, &outcome));
    assert_eq!(isvc.label(INFERENCE_SERVICE_ID_LABEL), Some("4"));
    assert_eq!(isvc.label(REGISTERED_MODEL_ID_LABEL), Some("1"));
    assert_eq!(isvc.label(MODEL_VERSION_ID_LABEL), Some("2"));
    assert_eq!(isvc.finalizers(), [MR_FINALIZER]);
}

#[test]
fn e_04_registered_model_only_creates_mr_inference_service_without_version() {
    let mr = FakeMr::prefilled();
    let isvc = isvc(&[(REGISTERED_MODEL_ID_LABEL, "1")]);
    let outcome = run(&isvc, &cluster(), &mr).unwrap();

    let record = mr.inference_service("4").expect("MR InferenceService 4");
    assert!(record["name"].as_str().unwrap().starts_with(ISVC_NAME));
    assert_eq!(record["servingEnvironmentId"], "3");
    assert_eq!(record["registeredModelId"], "1");
    assert!(record.get("modelVersionId").is_none(), "{record}");
    let create = mr.calls()[3].clone();
    assert_eq!(create.method, "POST");
    assert!(body(&create).unwrap().get("modelVersionId").is_none());

    assert_eq!(
        outcome.primary_metadata_patch(),
        Some(id_label_change("4", &[MR_FINALIZER]))
    );
    let isvc = Object(patched(&isvc, &outcome));
    assert_eq!(isvc.label(INFERENCE_SERVICE_ID_LABEL), Some("4"));
    assert_eq!(isvc.label(REGISTERED_MODEL_ID_LABEL), Some("1"));
    assert_eq!(isvc.label(MODEL_VERSION_ID_LABEL).unwrap_or(""), "");
    assert_eq!(isvc.finalizers()[0], MR_FINALIZER);
}

#[test]
fn e_05_deleted_isvc_undeploys_mr_inference_service_and_drops_finalizer() {
    let mr = FakeMr::prefilled();
    let env = mr.add_serving_environment(ISVC_NS);
    assert_eq!(env, "3");
    let id = mr.add_inference_service(json!({
        "name": "dummy-version",
        "desiredState": "DEPLOYED",
        "registeredModelId": "1",
        "servingEnvironmentId": "3",
    }));
    assert_eq!(id, "4");
    let isvc = deleting(with_finalizers(
        isvc(&[(INFERENCE_SERVICE_ID_LABEL, "4")]),
        &[ODH_FINALIZER, MR_FINALIZER, "z.example/last"],
    ));

    let outcome = run(&isvc, &cluster(), &mr).unwrap();

    assert_eq!(
        mr.calls_summary(),
        ["GET /inference_services/4", "PATCH /inference_services/4"]
    );
    assert_eq!(
        body(&mr.calls()[1]),
        Some(json!({ "desiredState": "UNDEPLOYED" }))
    );
    assert_eq!(
        mr.inference_service("4").unwrap()["desiredState"],
        "UNDEPLOYED"
    );
    assert_eq!(
        outcome.primary_metadata_patch(),
        Some(json!({"finalizers": [ODH_FINALIZER, "z.example/last"]}))
    );
    // The host then removes the last finalizers and the ISVC disappears: a NotFound request
    // is a no-op.
    assert_eq!(run_gone(&cluster(), &mr).unwrap(), Outcome::default());
}

#[test]
fn e_05_already_undeployed_is_not_patched_again() {
    let mr = FakeMr::prefilled();
    mr.add_serving_environment(ISVC_NS);
    mr.add_inference_service(json!({
        "name": "x", "desiredState": "UNDEPLOYED", "registeredModelId": "1", "servingEnvironmentId": "3",
    }));
    let isvc = deleting(with_finalizers(
        isvc(&[(INFERENCE_SERVICE_ID_LABEL, "4")]),
        &[MR_FINALIZER],
    ));
    let outcome = run(&isvc, &cluster(), &mr).unwrap();
    assert_eq!(mr.calls_summary(), ["GET /inference_services/4"]);
    assert_eq!(finalizers_of(&outcome), Vec::<String>::new());
}

#[test]
fn e_05_deletion_is_best_effort_when_the_registry_is_unavailable() {
    // No Model Registry Service at all: the finalizer is still removed, without any call.
    let mr = FakeMr::prefilled();
    let bare = FakeCluster::new().with(dsc("dsc", json!(MR_NS)));
    let isvc = deleting(with_finalizers(
        isvc(&[(INFERENCE_SERVICE_ID_LABEL, "4")]),
        &[MR_FINALIZER, ODH_FINALIZER],
    ));
    let outcome = run(&isvc, &bare, &mr).unwrap();
    assert!(mr.calls().is_empty());
    assert_eq!(finalizers_of(&outcome), [ODH_FINALIZER]);

    // The registry answers with errors: logged, finalizer still removed.
    let mr = FakeMr::prefilled();
    mr.fail("GET", "/inference_services/4", 500);
    let outcome = run(&isvc, &cluster(), &mr).unwrap();
    assert_eq!(mr.calls_summary(), ["GET /inference_services/4"]);
    assert_eq!(finalizers_of(&outcome), [ODH_FINALIZER]);

    // Transport failure.
    let mr = FakeMr::unreachable();
    let outcome = run(&isvc, &cluster(), &mr).unwrap();
    assert_eq!(finalizers_of(&outcome), [ODH_FINALIZER]);
}

#[test]
fn deleting_isvc_without_mr_finalizer_or_without_mr_labels_is_left_alone() {
    let mr = FakeMr::prefilled();
    let isvc = deleting(with_finalizers(
        isvc(&[(INFERENCE_SERVICE_ID_LABEL, "4")]),
        &[ODH_FINALIZER],
    ));
    assert_eq!(run(&isvc, &cluster(), &mr).unwrap(), Outcome::default());
    // [QUIRK] no MR id labels: ignored before the deletion branch, finalizer kept.
    let isvc = deleting(with_finalizers(isvc_no_labels(), &[MR_FINALIZER]));
    assert_eq!(run(&isvc, &cluster(), &mr).unwrap(), Outcome::default());
    assert!(mr.calls().is_empty());
}

fn isvc_no_labels() -> Value {
    isvc(&[])
}

#[test]
fn isvc_without_mr_labels_is_ignored() {
    let mr = FakeMr::prefilled();
    let outcome = run(&isvc_no_labels(), &cluster(), &mr).unwrap();
    assert_eq!(outcome, Outcome::default());
    assert!(mr.calls().is_empty());
}

// ------------------------------------------------------------------------------------------
// The DataScienceCluster lookup.

#[test]
fn dsc_list_error_text() {
    let cluster = cluster().deny(gvk::data_science_cluster());
    let message = transient(run_gone(&cluster, &FakeMr::empty()));
    assert!(
        message.starts_with("failed to get DataScienceCluster: reading "),
        "{message}"
    );
}

#[test]
fn dsc_none_or_several_error_text() {
    let expected = "failed to get DataScienceCluster: only one DataScienceCluster is allowed";
    let none = FakeCluster::new().with(mr_service("model-registry", MR_NS));
    let mr = FakeMr::prefilled();
    let labelled = isvc(&[(REGISTERED_MODEL_ID_LABEL, "1")]);
    assert_eq!(transient(run(&labelled, &none, &mr)), expected);
    // Also for a NotFound request and for an ISVC the registry ignores.
    assert_eq!(transient(run_gone(&none, &mr)), expected);
    assert_eq!(transient(run(&isvc_no_labels(), &none, &mr)), expected);
    let two = cluster().with(dsc("second", json!("other")));
    assert_eq!(transient(run(&labelled, &two, &mr)), expected);
    assert!(mr.calls().is_empty());
}

#[test]
fn dsc_registries_namespace_error_texts() {
    let mr = FakeMr::prefilled();
    let check = |dsc: Value, expected: &str| {
        let cluster = FakeCluster::new().with(dsc);
        assert_eq!(transient(run_gone(&cluster, &mr)), expected);
    };
    let prefix = "failed to get Model Registry Namespace from DataScienceCluster";
    let mut missing = dsc("dsc", json!("x"));
    missing["spec"]["components"]["modelregistry"]
        .as_object_mut()
        .unwrap()
        .remove("registriesNamespace");
    check(missing, &format!("{prefix}: %!w(<nil>)"));
    let mut no_spec = dsc("dsc", json!("x"));
    no_spec.as_object_mut().unwrap().remove("spec");
    check(no_spec, &format!("{prefix}: %!w(<nil>)"));
    check(
        dsc("dsc", json!("")),
        &format!("{prefix}: invalid namespace"),
    );
    check(
        dsc("dsc", json!(42)),
        &format!("{prefix}: invalid namespace"),
    );
    check(
        dsc("dsc", Value::Null),
        &format!("{prefix}: invalid namespace"),
    );
    let mut bad_components = dsc("dsc", json!("x"));
    bad_components["spec"]["components"] = json!("oops");
    check(
        bad_components,
        &format!(
            "{prefix}: .spec.components accessor error: oops is of the type string, expected map[string]interface{{}}"
        ),
    );
}

#[test]
fn dsc_namespace_is_the_default_mr_namespace_and_the_label_overrides_it() {
    let cluster = FakeCluster::new()
        .with(dsc("dsc", json!("from-dsc")))
        .with(mr_service("registry-a", "from-dsc"))
        .with(mr_service("registry-b", "from-label"));
    let mr = FakeMr::prefilled();
    run(&isvc(&[(REGISTERED_MODEL_ID_LABEL, "1")]), &cluster, &mr).unwrap();
    assert!(mr.calls()[0].url.starts_with(
        "http://registry-a.from-dsc.svc.cluster.local:8080/api/model_registry/v1alpha3/"
    ));
    let mr = FakeMr::prefilled();
    let labelled = isvc(&[
        (REGISTERED_MODEL_ID_LABEL, "1"),
        (MR_NAMESPACE_LABEL, "from-label"),
    ]);
    run(&labelled, &cluster, &mr).unwrap();
    assert!(
        mr.calls()[0]
            .url
            .starts_with("http://registry-b.from-label.svc.cluster.local:8080/")
    );
}

// ------------------------------------------------------------------------------------------
// The Model Registry base URL.

fn first_url(isvc: &Value, cluster: &FakeCluster) -> Result<String, Error> {
    let mr = FakeMr::prefilled();
    run(isvc, cluster, &mr)?;
    Ok(mr.calls()[0].url.clone())
}

#[test]
fn url_from_annotation_needs_no_service() {
    let mut isvc = isvc(&[(REGISTERED_MODEL_ID_LABEL, "1")]);
    isvc["metadata"]["annotations"][MR_URL] = json!("https://mr.example.com:8443");
    let bare = FakeCluster::new().with(dsc("dsc", json!(MR_NS)));
    assert_eq!(
        first_url(&isvc, &bare).unwrap(),
        "https://mr.example.com:8443/api/model_registry/v1alpha3/serving_environment?name=default"
    );
    // An empty annotation counts as unset.
    isvc["metadata"]["annotations"][MR_URL] = json!("");
    assert!(first_url(&isvc, &cluster()).unwrap().starts_with(MR_BASE));
}

#[test]
fn url_from_service_by_name() {
    let cluster = cluster()
        .with(mr_service("second-registry", MR_NS))
        .with(mr_service("elsewhere", "other-ns"));
    let named = isvc(&[
        (REGISTERED_MODEL_ID_LABEL, "1"),
        (MR_NAME_LABEL, "second-registry"),
    ]);
    assert!(
        first_url(&named, &cluster)
            .unwrap()
            .starts_with("http://second-registry.odh-model-registries.svc.cluster.local:8080/")
    );
    let missing = isvc(&[(REGISTERED_MODEL_ID_LABEL, "1"), (MR_NAME_LABEL, "nope")]);
    assert_eq!(
        transient(run(&missing, &cluster, &FakeMr::prefilled())),
        "unable to find the Model Registry service: services \"nope\" not found"
    );
}

#[test]
fn url_from_the_unique_model_registry_service() {
    let mut unlabelled = mr_service("not-a-registry", MR_NS);
    unlabelled["metadata"]["labels"] = json!({ "component": "something-else" });
    let cluster = cluster().with(unlabelled);
    let isvc = isvc(&[(REGISTERED_MODEL_ID_LABEL, "1")]);
    assert!(first_url(&isvc, &cluster).unwrap().starts_with(MR_BASE));
}

#[test]
fn url_zero_or_several_services_errors() {
    let isvc = isvc(&[(REGISTERED_MODEL_ID_LABEL, "1")]);
    let none = FakeCluster::new().with(dsc("dsc", json!(MR_NS)));
    assert_eq!(
        transient(run(&isvc, &none, &FakeMr::prefilled())),
        "unable to find the Model Registry service: no model registry services found in the namespace odh-model-registries"
    );
    let two = cluster().with(mr_service("another", MR_NS));
    assert_eq!(
        transient(run(&isvc, &two, &FakeMr::prefilled())),
        "unable to find the Model Registry service: more than one model registry service found in the namespace odh-model-registries, consider to specify the name in the label modelregistry.opendatahub.io/name"
    );
    let denied = cluster().deny(core_gvk("Service"));
    let message = transient(run(&isvc, &denied, &FakeMr::prefilled()));
    assert!(
        message.starts_with(
            "unable to find the Model Registry service: unable to list services in the namespace odh-model-registries: "
        ),
        "{message}"
    );
}

#[test]
fn url_service_without_http_api_port() {
    let mut service = mr_service("model-registry", MR_NS);
    service["spec"]["ports"] = json!([{ "name": "grpc-api", "port": 9090 }]);
    let cluster = FakeCluster::new()
        .with(dsc("dsc", json!(MR_NS)))
        .with(service);
    let mr = FakeMr::prefilled();
    assert_eq!(
        transient(run(
            &isvc(&[(REGISTERED_MODEL_ID_LABEL, "1")]),
            &cluster,
            &mr
        )),
        "unable to find the http port in the Model Registry service"
    );
    assert!(mr.calls().is_empty());
}

#[test]
fn url_external_address_annotation_means_https() {
    let mut service = mr_service("model-registry", MR_NS);
    service["metadata"]["annotations"] =
        json!({ MR_EXTERNAL_ADDRESS_REST: "model-registry-rest.apps.example.com:443" });
    service["spec"]["ports"] = json!([]);
    let cluster = FakeCluster::new()
        .with(dsc("dsc", json!(MR_NS)))
        .with(service);
    let isvc = isvc(&[(REGISTERED_MODEL_ID_LABEL, "1")]);
    assert!(first_url(&isvc, &cluster).unwrap().starts_with(
        "https://model-registry-rest.apps.example.com:443/api/model_registry/v1alpha3/"
    ));
}

// ------------------------------------------------------------------------------------------
// Records in the registry.

fn linked_registry(url: Option<&str>) -> FakeMr {
    let mr = FakeMr::prefilled();
    mr.add_serving_environment(ISVC_NS);
    let mut record = json!({
        "name": format!("{ISVC_NAME}/{ISVC_UID}"),
        "desiredState": "DEPLOYED",
        "registeredModelId": "1",
        "servingEnvironmentId": "3",
        "customProperties": { "team": { "metadataType": "MetadataIntValue", "int_value": "7" } },
    });
    if let Some(url) = url {
        record["customProperties"]["url"] =
            json!({ "metadataType": "MetadataStringValue", "string_value": url });
    }
    mr.add_inference_service(record);
    mr
}

fn linked_isvc(status_url: Option<&str>) -> Value {
    let mut isvc = with_finalizers(
        isvc(&[
            (INFERENCE_SERVICE_ID_LABEL, "4"),
            (REGISTERED_MODEL_ID_LABEL, "1"),
        ]),
        &[ODH_FINALIZER, MR_FINALIZER],
    );
    if let Some(url) = status_url {
        isvc["status"] = json!({ "url": url });
    }
    isvc
}

#[test]
fn url_custom_property_is_patched_when_status_url_differs() {
    let mr = linked_registry(Some("http://old.example"));
    let outcome = run(&linked_isvc(Some("http://new.example")), &cluster(), &mr).unwrap();
    assert_eq!(
        outcome,
        Outcome::default(),
        "labels and finalizer already right"
    );
    assert_eq!(
        mr.calls_summary(),
        [
            "GET /serving_environment?name=default",
            "GET /inference_services/4",
            "PATCH /inference_services/4"
        ]
    );
    assert_eq!(
        body(&mr.calls()[2]),
        Some(json!({ "customProperties": {
            "team": { "metadataType": "MetadataIntValue", "int_value": "7" },
            "url": { "metadataType": "MetadataStringValue", "string_value": "http://new.example" },
        } }))
    );
    assert_eq!(
        mr.inference_service("4").unwrap()["customProperties"]["url"]["string_value"],
        "http://new.example"
    );
}

#[test]
fn url_custom_property_follows_status_url_both_ways() {
    // Equal: no PATCH.
    let mr = linked_registry(Some("http://same"));
    run(&linked_isvc(Some("http://same")), &cluster(), &mr).unwrap();
    assert!(!mr.calls_summary().iter().any(|c| c.starts_with("PATCH")));
    // Both empty: no PATCH.
    let mr = linked_registry(None);
    run(&linked_isvc(None), &cluster(), &mr).unwrap();
    assert!(!mr.calls_summary().iter().any(|c| c.starts_with("PATCH")));
    // Registry has a URL, the ISVC none any more: cleared to "".
    let mr = linked_registry(Some("http://gone"));
    run(&linked_isvc(None), &cluster(), &mr).unwrap();
    assert_eq!(
        body(mr.calls().last().unwrap()).unwrap()["customProperties"]["url"],
        json!({ "metadataType": "MetadataStringValue", "string_value": "" })
    );
    // Registry has none, the ISVC has one: set.
    let mr = linked_registry(None);
    run(&linked_isvc(Some("http://isvc")), &cluster(), &mr).unwrap();
    assert_eq!(
        mr.inference_service("4").unwrap()["customProperties"]["url"]["string_value"],
        "http://isvc"
    );
}

#[test]
fn create_carries_status_url() {
    let mr = FakeMr::prefilled();
    let mut isvc = isvc(&[(REGISTERED_MODEL_ID_LABEL, "1")]);
    isvc["status"] = json!({ "url": "https://dummy.apps.example.com" });
    run(&isvc, &cluster(), &mr).unwrap();
    assert_eq!(
        mr.inference_service("4").unwrap()["customProperties"],
        json!({ "url": { "metadataType": "MetadataStringValue", "string_value": "https://dummy.apps.example.com" } })
    );
}

#[test]
fn unknown_inference_service_id_error_text() {
    let mr = FakeMr::prefilled();
    let isvc = isvc(&[(INFERENCE_SERVICE_ID_LABEL, "9")]);
    assert_eq!(
        transient(run(&isvc, &cluster(), &mr)),
        "unable to find InferenceService with id 9 in model registry: 404 Not Found"
    );
}

#[test]
fn serving_environment_create_error_text() {
    let mr = FakeMr::prefilled();
    mr.fail("POST", "/serving_environments", 500);
    let isvc = isvc(&[(REGISTERED_MODEL_ID_LABEL, "1")]);
    assert_eq!(
        transient(run(&isvc, &cluster(), &mr)),
        "unable to create ServingEnvironment: 500 Internal Server Error"
    );
    // An existing environment is reused.
    let mr = FakeMr::prefilled();
    mr.add_serving_environment(ISVC_NS);
    run(&isvc, &cluster(), &mr).unwrap();
    assert_eq!(mr.serving_environments.borrow().len(), 1);
    assert_eq!(
        mr.inference_service("4").unwrap()["servingEnvironmentId"],
        "3"
    );
}

#[test]
fn isvc_without_predictor_model_is_an_error_not_a_panic() {
    let mr = FakeMr::prefilled();
    let mut isvc = isvc(&[(REGISTERED_MODEL_ID_LABEL, "1")]);
    isvc["spec"]["predictor"] =
        json!({ "containers": [{ "name": "kserve-container", "image": "x" }] });
    assert_eq!(
        transient(run(&isvc, &cluster(), &mr)),
        "InferenceService default/dummy-inference-service has no spec.predictor.model"
    );
    assert!(mr.inference_services.borrow().is_empty());
}

#[test]
fn model_without_runtime_omits_runtime() {
    let mr = FakeMr::prefilled();
    let mut isvc = isvc(&[(REGISTERED_MODEL_ID_LABEL, "1")]);
    isvc["spec"]["predictor"]["model"]
        .as_object_mut()
        .unwrap()
        .remove("runtime");
    run(&isvc, &cluster(), &mr).unwrap();
    assert!(mr.inference_service("4").unwrap().get("runtime").is_none());
}

// ------------------------------------------------------------------------------------------
// Headers.

#[test]
fn the_controllers_identity_is_asked_for_and_never_carried() {
    let isvc = isvc(&[
        (REGISTERED_MODEL_ID_LABEL, "1"),
        (MODEL_VERSION_ID_LABEL, "2"),
    ]);
    let mr = FakeMr::prefilled();
    sync_with(Some(&isvc), &cluster(), &mr, &settings()).unwrap();
    assert_eq!(mr.calls().len(), 4);
    for call in mr.calls() {
        // The host replaces the request header with the token, where the grant allows it.
        assert_eq!(
            call.header_value("odh-authorization"),
            Some("service-account"),
            "{call:?}"
        );
        assert_eq!(call.header_value("authorization"), None, "{call:?}");
        assert_eq!(call.header_value("accept"), Some("application/json"));
        assert_eq!(
            call.header_value("content-type"),
            body(&call).as_ref().map(|_| "application/json")
        );
    }
    // Not managed: no identity asked for.
    let mr = FakeMr::prefilled();
    let unmanaged = ModelRegistrySettings { enabled: false };
    sync_with(Some(&isvc), &cluster(), &mr, &unmanaged).unwrap();
    assert_eq!(mr.calls().len(), 4);
    assert!(
        mr.calls()
            .iter()
            .all(|c| c.header_value("odh-authorization").is_none()
                && c.header_value("authorization").is_none())
    );
}
