//! The host loads components of older WIT releases of the same line unchanged: a `hello`
//! built against `odh:controller@0.1.0` (kept as a fixture) loads, reconciles and admits, and
//! serves no API (0.1.0 has no `http-api`); the same plugin built now (0.1.1) serves routes.

use std::sync::Arc;

use odh_model_controller::plugin::wire::{Operation, RequestKey, WebhookType};
use odh_model_controller::plugin::{
    CallEnv, LoadRequest, LoadedPlugin, MemoryCluster, ReconcileInput, Source,
};
use serde_json::json;

fn load_fixture() -> LoadedPlugin {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hello-wit-0.1.0.wasm");
    let bytes = std::fs::read(&path).expect("the 0.1.0 fixture");
    LoadedPlugin::load(
        &odh_test_support::host::engine(),
        LoadRequest::new(Source::File(path), &bytes),
    )
    .expect("a 0.1.0 component loads")
}

#[test]
fn a_component_of_wit_0_1_0_keeps_loading_and_serving() {
    let plugin = load_fixture();
    assert_eq!(plugin.manifest().name, "hello");
    assert!(plugin.routes().is_empty(), "0.1.0 serves no API");
    let env = CallEnv::live(Arc::new(MemoryCluster::default()));
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "demo", "namespace": "ns", "uid": "u"}, "data": {}});
    let outcome = plugin
        .reconcile_blocking(
            &ReconcileInput {
                controller: "hello".into(),
                key: RequestKey {
                    namespace: Some("ns".into()),
                    name: "demo".into(),
                },
                object: Some(cm.to_string()),
            },
            &env,
        )
        .expect("reconcile");
    assert_eq!(outcome.apply[0].object["data"]["greeting"], "Hello, demo!");
    let decision = plugin
        .admit_blocking(
            WebhookType::Validating,
            &odh_test_support::host::admission(
                "/validate-hello-configmap",
                Operation::Create,
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "demo", "namespace": "ns"}, "data": {"forbidden": "1"}}),
            ),
            &env,
        )
        .expect("validate");
    assert!(!decision.allowed);

    let current = odh_test_support::host::load("hello");
    assert_eq!(current.manifest().name, "hello");
    assert!(
        !current.routes().is_empty(),
        "built against 0.1.1 with the SDK's api-policy world"
    );
}
