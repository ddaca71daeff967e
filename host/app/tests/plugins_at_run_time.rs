//! A vendor's plugin goes live from the plugins ConfigMap alone, through the real apiserver: a
//! host started with the default built-ins and `--sync-webhook-configurations` registers its
//! webhooks; an entry for the example vendor plugin (`plugins/examples/vendor-runtime`:
//! controller, mutating and validating webhook on ServingRuntimes), which the host does not
//! serve, brings the plugin's webhook configuration entries, the apiserver calls them on a
//! create and its controller reconciles; removing the entry removes the entries and stops the
//! controller. No restart, and the built-in webhooks answer every request meanwhile.
//!
//! The webhook configurations are cluster-wide, so this test runs on an apiserver of its own.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use common::{gzip, sha};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use odh_model_controller::builtins::DEPLOYMENT;
use odh_test_support::process::ServingHost;
use odh_test_support::{Timing, absent, consistently, eventually, exists};
use serde_json::json;

const VENDOR_MUTATING: &str =
    "mutate-example-com-servingruntime.vendor-runtime.plugins.odh-model-controller.opendatahub.io";
const VENDOR_VALIDATING: &str = "validate-example-com-servingruntime.vendor-runtime.plugins.odh-model-controller.opendatahub.io";
const MIN_REPLICAS: &str = "runtimes.example.com/min-replicas";
const ISVC_VALIDATING: &str = "validating.isvc.odh-model-controller.opendatahub.io";

fn configurations(client: &kube::Client, kind: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind);
    Api::all_with(client.clone(), &ApiResource::from_gvk(&gvk))
}

/// The entry names of a webhook configuration (none when it does not exist).
async fn entries(api: &Api<DynamicObject>, name: &str) -> anyhow::Result<Vec<String>> {
    Ok(api
        .get_opt(name)
        .await?
        .and_then(|o| o.data["webhooks"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|w| w["name"].as_str().map(str::to_string))
        .collect())
}

/// A ServingRuntime of the vendor's (labelled) with one container image.
fn runtime(name: &str, image: &str) -> anyhow::Result<DynamicObject> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "serving.kserve.io/v1alpha1", "kind": "ServingRuntime",
        "metadata": {"name": name, "labels": {"runtimes.example.com/vendor": "example"}},
        "spec": {
            "supportedModelFormats": [{"name": "onnx", "version": "1"}],
            "containers": [{"name": "kserve-container", "image": image}],
        },
    }))?)
}

/// Creates vendor runtimes named `<prefix>-1`, `<prefix>-2`… until one comes back with the
/// min-replicas annotation `annotation` (`None`: without it): the apiserver sees a webhook
/// configuration change a moment after it is written. Returns the last name.
async fn create_until(
    what: &str,
    runtimes: &Api<DynamicObject>,
    prefix: &str,
    annotation: Option<&str>,
) -> anyhow::Result<String> {
    let mut attempt = 0;
    eventually(what, Timing::default(), || {
        attempt += 1;
        let name = format!("{prefix}-{attempt}");
        async move {
            let created = runtimes
                .create(&PostParams::default(), &runtime(&name, IMAGE)?)
                .await?;
            let annotations = created.metadata.annotations.unwrap_or_default();
            let got = annotations.get(MIN_REPLICAS).map(String::as_str);
            anyhow::ensure!(got == annotation, "{name}: {annotations:?}");
            Ok(name)
        }
    })
    .await
}

const IMAGE: &str = "registry.example.com/runtimes/example-server:2.1";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_added_in_the_configmap_serves_without_a_restart_and_leaves_with_its_entry()
-> anyhow::Result<()> {
    odh_test_support::isolated_cluster("plugins-at-run-time")?;
    let t = odh_test_support::TestContext::new("run-time").await?;
    let mut host =
        ServingHost::start_with("run-time", true, &[("POD_NAMESPACE", t.namespace.as_str())])
            .await?;
    let mutating = configurations(&t.client, "MutatingWebhookConfiguration");
    let validating = configurations(&t.client, "ValidatingWebhookConfiguration");
    eventually(
        "the built-in webhooks are registered",
        Timing::default(),
        || async {
            let names = entries(&validating, DEPLOYMENT.validating_configuration).await?;
            anyhow::ensure!(names.iter().any(|n| n == ISVC_VALIDATING), "{names:?}");
            Ok(())
        },
    )
    .await
    .map_err(|e| host.with_log(e))?;

    // The built-in InferenceService webhooks are called on every dry-run create meanwhile (in a
    // namespace of its own: the controller's namespace is protected from InferenceServices).
    let apps = odh_test_support::TestContext::new("run-time-apps").await?;
    let isvcs = apps.dynamic(
        "serving.kserve.io",
        "v1beta1",
        "InferenceService",
        "inferenceservices",
    );
    let isvc: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
        "metadata": {"name": "probe"},
        "spec": {"predictor": {"model": {"modelFormat": {"name": "onnx"}}}},
    }))?;
    let dry_run = PostParams {
        dry_run: true,
        ..Default::default()
    };
    isvcs
        .create(&dry_run, &isvc)
        .await
        .map_err(|e| host.with_log(e.into()))?;
    let (stop, admitted, failed) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    let probe = {
        let (stop, admitted, failed) = (stop.clone(), admitted.clone(), failed.clone());
        let (isvcs, isvc, dry_run) = (isvcs.clone(), isvc.clone(), dry_run.clone());
        tokio::spawn(async move {
            let mut errors = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                match isvcs.create(&dry_run, &isvc).await {
                    Ok(_) => admitted.fetch_add(1, Ordering::Relaxed),
                    Err(e) => {
                        errors.push(e.to_string());
                        failed.fetch_add(1, Ordering::Relaxed)
                    }
                };
            }
            errors
        })
    };

    // The vendor's plugin: its component and its entry in the plugins ConfigMap (primary and
    // owned kinds only, so no grants).
    let (_, component) = odh_test_support::host::component("vendor-runtime");
    let cms: Api<ConfigMap> = t.api();
    let component_cm = ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some("vendor-runtime-0.1.0".into()),
            ..Default::default()
        },
        binary_data: Some(BTreeMap::from([(
            "plugin.wasm.gz".to_string(),
            ByteString(gzip(&component)),
        )])),
        ..Default::default()
    };
    cms.create(&PostParams::default(), &component_cm).await?;
    let configure = |yaml: String| {
        let cms = cms.clone();
        async move {
            let body = json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "odh-model-controller-plugins"},
                "data": {"plugins.yaml": yaml},
            });
            cms.patch(
                "odh-model-controller-plugins",
                &PatchParams::apply("admin").force(),
                &Patch::Apply(&body),
            )
            .await
        }
    };
    configure(format!(
        "plugins:\n  vendor-runtime:\n    source: configmap://vendor-runtime-0.1.0/plugin.wasm.gz\n    sha256: {}\n    settings:\n      imageRegistry: registry.example.com/runtimes\n      defaultMinReplicas: 2\n",
        sha(&component)
    ))
    .await?;
    eventually(
        "the vendor plugin's webhooks are registered",
        Timing::default(),
        || async {
            let m = entries(&mutating, DEPLOYMENT.mutating_configuration).await?;
            let v = entries(&validating, DEPLOYMENT.validating_configuration).await?;
            anyhow::ensure!(
                m.iter().any(|n| n == VENDOR_MUTATING) && v.iter().any(|n| n == VENDOR_VALIDATING),
                "{m:?} {v:?}"
            );
            Ok(())
        },
    )
    .await
    .map_err(|e| host.with_log(e))?;
    // Scoped by the plugin's object selectors, written as the API server's LabelSelector.
    for (api, configuration, entry) in [
        (
            &mutating,
            DEPLOYMENT.mutating_configuration,
            VENDOR_MUTATING,
        ),
        (
            &validating,
            DEPLOYMENT.validating_configuration,
            VENDOR_VALIDATING,
        ),
    ] {
        let webhooks = api.get(configuration).await?.data["webhooks"].clone();
        let vendor = webhooks
            .as_array()
            .and_then(|w| w.iter().find(|w| w["name"] == entry))
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            vendor["objectSelector"],
            json!({"matchExpressions": [{"key": "runtimes.example.com/vendor",
                "operator": "In", "values": ["example"]}]}),
            "{entry}: {vendor}"
        );
        // Never the cluster's own namespaces, nor the controller's.
        assert_eq!(
            vendor["namespaceSelector"],
            json!({"matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                 "values": ["kube-system", "kube-public", "kube-node-lease", t.namespace]},
                {"key": "openshift.io/run-level", "operator": "DoesNotExist"}]}),
            "{entry}: {vendor}"
        );
    }

    // The apiserver calls its mutating webhook (it may take a moment to see the new
    // configuration) and its controller reconciles the runtime.
    let runtimes = apps.dynamic(
        "serving.kserve.io",
        "v1alpha1",
        "ServingRuntime",
        "servingruntimes",
    );
    let served = create_until(
        "the apiserver calls the vendor plugin's mutating webhook",
        &runtimes,
        "served",
        Some("2"),
    )
    .await
    .map_err(|e| host.with_log(e))?;
    let app_cms: Api<ConfigMap> = apps.api();
    let info = format!("{served}-vendor-info");
    eventually(
        "the vendor plugin's controller reconciles",
        Timing::default(),
        || exists(&app_cms, &info),
    )
    .await
    .map_err(|e| host.with_log(e))?;
    let refused = runtimes
        .create(
            &PostParams::default(),
            &runtime("foreign", "quay.io/someone/else:1")?,
        )
        .await
        .expect_err("the vendor plugin's validating webhook refuses a foreign image");
    assert!(
        refused
            .to_string()
            .contains("container images must come from the vendor registry"),
        "{refused}"
    );

    // Another vendor's runtime is outside the selectors: the API server does not ask the
    // plugin, so neither the image check nor the defaulting applies.
    let mut other = runtime("other-vendor", "quay.io/someone/else:1")?;
    other.metadata.labels = Some(
        [(
            "runtimes.example.com/vendor".to_string(),
            "other".to_string(),
        )]
        .into(),
    );
    let other = runtimes.create(&PostParams::default(), &other).await?;
    let annotations = other.metadata.annotations.unwrap_or_default();
    assert!(
        !annotations.contains_key("runtimes.example.com/min-replicas"),
        "not defaulted: {annotations:?}"
    );

    // The cluster's own namespaces are never the plugin's: a vendor runtime with a foreign
    // image in kube-system is neither checked nor defaulted (the apiserver does not call it).
    let system_runtimes = Api::<DynamicObject>::namespaced_with(
        t.client.clone(),
        "kube-system",
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("serving.kserve.io", "v1alpha1", "ServingRuntime"),
            "servingruntimes",
        ),
    );
    let system = system_runtimes
        .create(
            &PostParams::default(),
            &runtime("system-foreign", "quay.io/someone/else:1")?,
        )
        .await
        .map_err(|e| host.with_log(e.into()))?;
    assert!(
        !system
            .metadata
            .annotations
            .unwrap_or_default()
            .contains_key(MIN_REPLICAS),
        "the vendor plugin was called in kube-system"
    );
    system_runtimes
        .delete("system-foreign", &Default::default())
        .await?;

    // Without its entry the plugin goes: its webhook entries, then its controller.
    configure("plugins: {}\n".into()).await?;
    eventually(
        "the vendor plugin's webhooks are removed, the built-ins stay",
        Timing::default(),
        || async {
            let m = entries(&mutating, DEPLOYMENT.mutating_configuration).await?;
            let v = entries(&validating, DEPLOYMENT.validating_configuration).await?;
            anyhow::ensure!(
                !m.iter().any(|n| n == VENDOR_MUTATING)
                    && !v.iter().any(|n| n == VENDOR_VALIDATING),
                "{m:?} {v:?}"
            );
            anyhow::ensure!(v.iter().any(|n| n == ISVC_VALIDATING), "{v:?}");
            Ok(())
        },
    )
    .await
    .map_err(|e| host.with_log(e))?;
    let after = create_until(
        "the apiserver stops calling the vendor plugin",
        &runtimes,
        "after",
        None,
    )
    .await?;
    let no_info = format!("{after}-vendor-info");
    consistently(
        "the vendor plugin's controller no longer reconciles",
        Timing::within(std::time::Duration::from_secs(3)),
        || absent(&app_cms, &no_info),
    )
    .await
    .map_err(|e| host.with_log(e))?;

    stop.store(true, Ordering::Relaxed);
    let errors = probe.await?;
    assert!(
        errors.is_empty(),
        "built-in admissions failed meanwhile: {errors:?}"
    );
    assert!(admitted.load(Ordering::Relaxed) > 0);
    assert_eq!(failed.load(Ordering::Relaxed), 0);
    assert!(
        host.process.child.try_wait()?.is_none(),
        "the host kept running: {}",
        host.process.output()
    );
    Ok(())
}
