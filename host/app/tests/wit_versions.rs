//! The host loads components of older WIT releases of the same line unchanged: a `hello`
//! built against `odh:controller@0.1.0` (kept as a fixture) loads, reconciles and admits, and
//! serves no API (0.1.0 has no `http-api`); one built against 0.1.1 (another fixture) serves
//! its routes and, without `webhook-selectors`, reviews every object; one built against 0.1.2
//! (another fixture: before `keys`), one built against 0.1.3 (before `event-filters` and
//! `change-mapping`) and one built against 0.1.4 (before `writes`) load, reconcile and admit in a
//! host of 0.1.5; plugins built now (0.1.5) scope their webhooks, declare their event filters,
//! and import `keys` and `writes` only when they use them.

use std::sync::Arc;

use odh_model_controller::plugin::wire::{Operation, RequestKey, WebhookType};
use odh_model_controller::plugin::{
    CallEnv, LoadRequest, LoadedPlugin, MemoryCluster, ReconcileInput, Source,
};
use serde_json::json;

fn load_fixture(version: &str) -> LoadedPlugin {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "../runtime/tests/fixtures/hello-wit-{version}.wasm"
    ));
    let bytes = std::fs::read(&path).expect("the fixture");
    LoadedPlugin::load(
        &odh_test_support::host::engine(),
        LoadRequest::new(Source::File(path), &bytes),
    )
    .unwrap_or_else(|e| panic!("a {version} component loads: {e}"))
}

fn unscoped(plugin: &LoadedPlugin) -> bool {
    plugin
        .manifest()
        .webhooks
        .iter()
        .all(|w| w.object_selector.is_none() && w.namespace_selector.is_none())
}

#[test]
fn a_component_of_wit_0_1_0_keeps_loading_and_serving() {
    let plugin = load_fixture("0.1.0");
    assert_eq!(plugin.manifest().name, "hello");
    assert!(plugin.routes().is_empty(), "0.1.0 serves no API");
    assert!(unscoped(&plugin));
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
        "built now with the SDK's scoped-policy world"
    );
}

#[test]
fn a_component_of_wit_0_1_1_serves_its_routes_and_reviews_every_object() {
    let plugin = load_fixture("0.1.1");
    assert_eq!(plugin.manifest().name, "hello");
    assert_eq!(plugin.routes()[0].path, "/api/v1/hello");
    assert!(unscoped(&plugin), "0.1.1 has no webhook-selectors");
    let env = CallEnv::live(Arc::new(MemoryCluster::default()));
    let decision = plugin
        .admit_blocking(
            WebhookType::Mutating,
            &odh_test_support::host::admission(
                "/mutate-hello-configmap",
                Operation::Create,
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "demo", "namespace": "ns"}}),
            ),
            &env,
        )
        .expect("mutate");
    assert!(
        decision.allowed && decision.mutated.is_some(),
        "{decision:?}"
    );

    // Built now, a plugin's selectors reach its manifest.
    let vendor =
        odh_test_support::host::load_with("vendor-runtime", |r| r.without_settings_check());
    let scopes: Vec<_> = vendor
        .manifest()
        .webhooks
        .iter()
        .map(|w| (w.path.as_str(), w.object_selector.as_deref()))
        .collect();
    assert_eq!(
        scopes,
        [
            (
                "/mutate-example-com-servingruntime",
                Some("runtimes.example.com/vendor=example")
            ),
            (
                "/validate-example-com-servingruntime",
                Some("runtimes.example.com/vendor=example")
            ),
        ]
    );
}

#[test]
fn a_component_of_wit_0_1_2_keeps_loading_and_serving() {
    reconciles_and_mutates(&load_fixture("0.1.2"));
}

/// Before `event-filters` and `change-mapping`: every event reaches it, mappings get no old
/// object.
#[test]
fn a_component_of_wit_0_1_3_keeps_loading_and_serving() {
    let plugin = load_fixture("0.1.3");
    assert!(!plugin.maps_changes(), "0.1.3 has no change-mapping");
    assert!(
        plugin
            .manifest()
            .controllers
            .iter()
            .all(|c| c.filters.is_empty()),
        "0.1.3 has no event-filters"
    );
    reconciles_and_mutates(&plugin);
}

/// Before `writes`: it does not import them, and its outcome is applied as before.
#[test]
fn a_component_of_wit_0_1_4_keeps_loading_and_serving() {
    let plugin = load_fixture("0.1.4");
    assert!(plugin.maps_changes(), "0.1.4 has change-mapping");
    reconciles_and_mutates(&plugin);
}

/// The hello fixture of 0.1.2 or later: its routes, a reconcile and a mutation.
fn reconciles_and_mutates(plugin: &LoadedPlugin) {
    assert_eq!(plugin.manifest().name, "hello");
    assert_eq!(plugin.routes()[0].path, "/api/v1/hello");
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
            WebhookType::Mutating,
            &odh_test_support::host::admission(
                "/mutate-hello-configmap",
                Operation::Create,
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "demo", "namespace": "ns"}}),
            ),
            &env,
        )
        .expect("mutate");
    assert!(
        decision.allowed && decision.mutated.is_some(),
        "{decision:?}"
    );
}

/// The component's import names, read from its component-type section: a plugin built now
/// that never calls `keys` does not ask for it, so a host without it would still link it.
#[test]
fn only_a_plugin_that_uses_keys_imports_them() {
    let imports = |name: &str| {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("../../target/plugins/{name}.wasm"));
        let bytes = std::fs::read(&path).expect("the built plugin (make plugins)");
        String::from_utf8_lossy(&bytes).contains("odh:controller/keys@0.1.")
    };
    assert!(imports("servingruntime"));
    assert!(!imports("hello"));
    assert!(!imports("isvc"));
}

/// The same for `writes` (0.1.5): only plugins that write while they reconcile import it.
#[test]
fn only_a_plugin_that_writes_now_imports_writes() {
    let imports = |name: &str| {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("../../target/plugins/{name}.wasm"));
        let bytes = std::fs::read(&path).expect("the built plugin (make plugins)");
        String::from_utf8_lossy(&bytes).contains("odh:controller/writes@0.1.")
    };
    assert!(imports("llm-gateway"));
    assert!(imports("nim-account"));
    assert!(!imports("hello"));
    assert!(!imports("storage"));
}

/// Plugins built now (0.1.4) hand the host their event filters at load, checked and attached to
/// their controllers, and map changes with the old object where they export it.
#[test]
fn plugins_built_now_declare_event_filters() {
    let storage = odh_test_support::host::load("storage");
    let configmaps = storage
        .manifest()
        .controllers
        .iter()
        .find(|c| c.name == "core-configmap")
        .expect("core-configmap");
    let filter = configmaps
        .filter_of(&configmaps.primary)
        .expect("a filter of the ConfigMaps");
    assert_eq!(
        filter.names,
        [
            "odh-trusted-ca-bundle",
            "odh-kserve-custom-ca-bundle",
            "openshift-service-ca.crt"
        ]
    );
    assert!(storage.maps_changes(), "the SDK exports change-mapping");
    let gateway = odh_test_support::host::load("llm-gateway");
    let bootstrap = gateway
        .manifest()
        .controllers
        .iter()
        .find(|c| c.name == "gateway-auth-bootstrap")
        .expect("gateway-auth-bootstrap");
    assert!(!bootstrap.filter_of(&bootstrap.primary).unwrap().delete);
    assert_eq!(bootstrap.filters.len(), 5);
}
