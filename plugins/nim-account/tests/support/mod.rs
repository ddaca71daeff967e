//! What the native tests share: the NVIDIA stand-in as an `http::Fake`, the objects of
//! upstream's handler tests (Account named after its namespace, API-key Secret
//! `<name>-api-key`, rates 24h) and a clock.

#![allow(dead_code)]

pub mod nvidia;

use nim_account::reconcile::Pass;
use nim_account::settings::Settings;
use nim_account::status::Status;
use odh_plugin_sdk::conditions::{find_condition, rfc3339};
use odh_plugin_sdk::http::{self, Response};
use odh_plugin_sdk::testing::FakeCluster;
use odh_plugin_sdk::{Error, Object, Plan, Plugin, Value, json};

/// "Now" in every test: 2026-12-01T12:00:00Z.
pub const NOW_SECS: u64 = 1_796_126_400;

pub fn now() -> String {
    rfc3339(NOW_SECS)
}

/// `secs` seconds before now.
pub fn ago(secs: u64) -> String {
    rfc3339(NOW_SECS - secs)
}

/// `secs` seconds after now.
pub fn later(secs: u64) -> String {
    rfc3339(NOW_SECS + secs)
}

/// NVIDIA as upstream's test double stubs it: anything unstubbed fails like a transport error.
pub fn nvidia() -> http::Fake {
    http::Fake::new().handler(|request| {
        let header = |name: &str| request.header_value(name).map(str::to_string);
        let call = nvidia::Call {
            method: &request.method,
            url: &request.url,
            header: &header,
            body: request.body.as_deref().unwrap_or_default(),
        };
        match nvidia::answer(&call) {
            Some((status, body)) => Ok(Response::new(status, body)),
            None => Err(Error::Transient(
                "if not intentional, perhaps you forgot to stub something".into(),
            )),
        }
    })
}

/// The Account `<ns>` in namespace `<ns>`, with the finalizer, API-key Secret `<ns>-api-key`.
pub fn account(ns: &str) -> Object {
    Object(json!({
        "apiVersion": "nim.opendatahub.io/v1",
        "kind": "Account",
        "metadata": {
            "name": ns, "namespace": ns, "uid": format!("uid-{ns}"), "generation": 1,
            "resourceVersion": "1",
            "finalizers": ["runtimes.opendatahub.io/nim-cleanup-finalizer"]
        },
        "spec": {
            "apiKeySecret": {"name": format!("{ns}-api-key")},
            "validationRefreshRate": "24h",
            "nimConfigRefreshRate": "24h"
        }
    }))
}

/// The managed API-key Secret of `account(ns)` holding `key`.
pub fn api_key_secret(ns: &str, key: &str) -> Object {
    Object(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": format!("{ns}-api-key"), "namespace": ns, "resourceVersion": "7",
                     "labels": {"opendatahub.io/managed": "true"}},
        "data": {"api_key": odh_plugin_sdk::base64::encode(key)}
    }))
}

/// `account` with `status` merged in.
pub fn with_status(mut account: Object, status: Value) -> Object {
    account.set(&["status"], status);
    account
}

/// A True/False condition as upstream's tests write them.
pub fn condition(type_: &str, status: &str, at: &str) -> Value {
    json!({"type": type_, "status": status, "reason": "Test", "message": "test",
           "lastTransitionTime": at, "observedGeneration": 1})
}

/// A reference to an object in a status.
pub fn reference(kind: &str, api_version: &str, ns: &str, name: &str, uid: &str) -> Value {
    json!({"kind": kind, "apiVersion": api_version, "namespace": ns, "name": name, "uid": uid})
}

pub fn cluster() -> FakeCluster {
    FakeCluster::for_manifest(&nim_account::NimAccount::manifest())
}

pub fn settings() -> Settings {
    Settings::default()
}

/// A handler of the reconcile.
#[derive(Clone, Copy)]
pub enum H {
    Validation,
    ConfigMap,
    Template,
    PullSecret,
}

/// Runs one handler on a fresh pass, as upstream's handler tests call `Handle`.
pub fn handle(
    account: &Object,
    cluster: &FakeCluster,
    http: &http::Fake,
    handler: H,
) -> (nim_account::reconcile::Flow, Plan, Status) {
    handle_writing(account, cluster, http, None, handler)
}

/// [`handle`] with the host's writes (objects applied while the pass runs).
pub fn handle_writing(
    account: &Object,
    cluster: &FakeCluster,
    http: &http::Fake,
    writes: Option<&dyn odh_plugin_sdk::writes::Writes>,
    handler: H,
) -> (nim_account::reconcile::Flow, Plan, Status) {
    let settings = settings();
    let now = now();
    let mut pass = Pass::new(account, cluster, http, &settings, &now).with_writes(writes);
    let mut plan = Plan::new();
    let flow = match handler {
        H::Validation => pass.validation(&mut plan, false),
        H::ConfigMap => pass.config_map(&mut plan, false),
        H::Template => pass.template(&mut plan, false),
        H::PullSecret => pass.pull_secret(&mut plan, false),
    };
    let status = pass
        .status_to_write()
        .cloned()
        .unwrap_or_else(|| Status::of(account));
    (flow, plan, status)
}

pub fn is_true(status: &Status, type_: &str) -> bool {
    status.is_true(type_)
}

pub fn cond<'a>(status: &'a Status, type_: &str) -> &'a odh_plugin_sdk::conditions::Condition {
    find_condition(&status.conditions, type_).unwrap_or_else(|| panic!("no {type_} condition"))
}
