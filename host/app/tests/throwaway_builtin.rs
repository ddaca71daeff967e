//! A built-in plugin is its crate, the workspace member and one registration entry: everything
//! the host derives about it — the RBAC and webhook manifests, the names its webhooks are
//! registered with live, the profiles it serves in, its starting settings, limits and grants —
//! comes from that entry and the plugin's own manifest. Here a throwaway entry registers the
//! example `vendor-runtime` plugin (two webhooks, writes that need a `bind`) and nothing else
//! of the host is touched.

use odh_model_controller::builtins::{Builtin, FromProcess, RbacNeeds, Webhook};
use odh_model_controller::deploy_manifests::{PluginInfo, generate};
use odh_model_controller::profile::Profile;
use serde_json::json;

const MUTATE: &str = "/mutate-example-com-servingruntime";
const VALIDATE: &str = "/validate-example-com-servingruntime";

static THROWAWAY: Builtin = Builtin {
    settings: &[("/registry", FromProcess::Env("THROWAWAY_REGISTRY"))],
    webhook_only_kinds: &["ServingRuntime"],
    webhooks: &[Webhook {
        path: VALIDATE,
        name: "validating.runtimes.vendor.example.com",
        side_effects: "None",
    }],
    rbac: RbacNeeds {
        binds: &[("ClusterRole", "vendor-runtime-viewer")],
        holds: &[("", &["pods"], &["get"], "the vendor's Role")],
    },
    limits: &[("reconcileTimeoutMs", 7_000)],
    secure_random: true,
    service_account_namespaces: &["vendor-system"],
    ..Builtin::named("vendor-runtime")
};

fn generated() -> Vec<(String, String)> {
    let plugin =
        odh_test_support::host::load_with("vendor-runtime", |r| r.without_settings_check());
    generate(&[PluginInfo {
        builtin: &THROWAWAY,
        manifest: plugin.manifest().clone(),
    }])
    .expect("manifests generate")
}

fn file<'a>(files: &'a [(String, String)], path: &str) -> &'a str {
    files
        .iter()
        .find(|(p, _)| p == path)
        .map(|(_, c)| c.as_str())
        .unwrap_or_else(|| panic!("{path} is not generated"))
}

#[test]
fn the_manifests_follow_the_entry_and_the_plugins_manifest() {
    let files = generated();
    let rbac = file(&files, "generated/full/rbac.yaml");
    // From the plugin's manifest: its reads and writes.
    assert!(
        rbac.contains("vendor-runtime: reads ServingRuntime"),
        "{rbac}"
    );
    assert!(rbac.contains("vendor-runtime: writes ConfigMap"), "{rbac}");
    // From the entry: what its writes need.
    assert!(
        rbac.contains("vendor-runtime: binds ClusterRole vendor-runtime-viewer"),
        "{rbac}"
    );
    assert!(
        rbac.contains("resourceNames: [vendor-runtime-viewer]"),
        "{rbac}"
    );
    assert!(rbac.contains("vendor-runtime: the vendor's Role"), "{rbac}");

    let webhooks = file(&files, "generated/full/webhooks.yaml");
    // A listed path keeps the entry's name and side effects; another gets the derived name.
    assert!(
        webhooks.contains("- name: validating.runtimes.vendor.example.com"),
        "{webhooks}"
    );
    let derived = format!(
        "- name: mutate-example-com-servingruntime.vendor-runtime.{}",
        odh_model_controller::builtins::DEPLOYMENT.plugin_webhook_domain
    );
    assert!(webhooks.contains(&derived), "{webhooks}");
    assert!(webhooks.contains(&format!("path: {MUTATE}")), "{webhooks}");

    // The entry keeps ServingRuntime webhooks in the webhook-only profile.
    let webhook_only = Profile::WebhookOnly.deploy_dir();
    let xks = file(&files, &format!("{webhook_only}/webhooks.yaml"));
    assert!(xks.contains(&format!("path: {VALIDATE}")), "{xks}");
}

#[test]
fn the_live_registration_and_the_starting_point_follow_the_entry() {
    let names = odh_model_controller::builtins::webhook_names_for([&THROWAWAY]);
    let listed = names.registration("vendor-runtime", VALIDATE);
    assert_eq!(
        (listed.name.as_str(), listed.side_effects),
        ("validating.runtimes.vendor.example.com", "None")
    );
    assert_eq!(
        names.registration("vendor-runtime", MUTATE).side_effects,
        "NoneOnDryRun"
    );

    assert!(Profile::WebhookOnly.serves_webhook_of(Some(&THROWAWAY), "ServingRuntime"));
    assert!(!Profile::WebhookOnly.serves_webhook_of(Some(&THROWAWAY), "ConfigMap"));
    assert!(!Profile::WebhookOnly.serves_webhook_of(None, "ServingRuntime"));

    assert_eq!(THROWAWAY.limits().reconcile_timeout_ms, 7_000);
    assert!(THROWAWAY.grants().secure_random);
    assert_eq!(
        THROWAWAY.grants().service_account_namespaces,
        ["vendor-system".to_string()].into()
    );
    assert_eq!(
        THROWAWAY.starting_settings(
            |k| (k == "THROWAWAY_REGISTRY").then(|| "quay.io/vendor".to_string())
        ),
        json!({"registry": "quay.io/vendor"})
    );
}
