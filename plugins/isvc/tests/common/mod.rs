//! Runs the plugin's decisions natively, the way the host would call them. The objects come
//! from `odh-test-fixtures` (re-exported here).
#![allow(dead_code)]

use isvc::Isvc;
use isvc::settings::Settings;
use odh_plugin_sdk::testing::FakeCluster;
use odh_plugin_sdk::{Ctx, Object, Outcome, Plugin, ReconcileRequest, Value, http};
pub use odh_test_fixtures::*;

/// An empty cluster that, as the host does, refuses reads of kinds the manifest does not
/// declare.
pub fn cluster() -> FakeCluster {
    FakeCluster::for_manifest(&Isvc::manifest())
}

/// Reconciles `isvc` (or, `None`, a request for `test-ns/<gone>`) against `cluster` with the
/// default settings (no Model Registry, hence no HTTP), checking that every kind the outcome
/// writes is declared.
pub fn reconcile(cluster: &FakeCluster, isvc: Option<&Value>) -> Outcome {
    let request = match isvc {
        Some(v) => ReconcileRequest::for_object("inferenceservice", &Object(v.clone())),
        None => ReconcileRequest::new("inferenceservice", Some(NS), "gone"),
    };
    let settings = Settings::default();
    let no_http = http::Fake::new();
    let cx = Ctx::new(&settings, cluster).with_http(&no_http);
    let outcome = Isvc::reconcile(&request, &cx).expect("reconcile returns an outcome");
    assert!(
        no_http.requests().is_empty(),
        "no HTTP expected: {:?}",
        no_http.summary()
    );
    outcome.assert_declared(&Isvc::manifest());
    outcome
}
