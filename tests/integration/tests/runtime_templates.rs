//! The serving runtime Templates of `deploy/runtimes` (issue #32 item 2; core spec §4.5):
//!
//! * the rendered Templates are exactly the spec's 32 names, each one ServingRuntime named by
//!   the spec's rule, with upstream's labels and the dashboard's annotations where upstream has
//!   them, and the images of params.env's defaults;
//! * `deploy/runtimes/images` replaces every image from the `odh-model-controller-parameters`
//!   ConfigMap with upstream's keys (`-fast-N` keys for the fast variants);
//! * every ServingRuntime is accepted by the apiserver (KServe's CRD schema: we have no
//!   ServingRuntime webhook, nor has upstream), and an InferenceService on each runtime passes
//!   the isvc plugin's validating and mutating webhooks;
//! * the OpenShift overlay's server-side dry-run creates the 32 Templates.
//!
//! Rendering needs `kubectl` (as deploy_rbac.rs): without it the tests fail (`make test-deps`
//! installs one).

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;

use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use odh_model_controller::plugin::wire::{Operation, WebhookType};
use odh_model_controller::plugin::{CallEnv, MemoryCluster};
use odh_test_support::{TestContext, workspace_root};
use serde_json::{Value, json};

/// `kubectl kustomize <dir>` (relative to the workspace root), as YAML text.
fn render(kubectl: &str, dir: &str) -> String {
    let out = Command::new(kubectl)
        .arg("kustomize")
        .arg(workspace_root().join(dir))
        .output()
        .expect("running kubectl kustomize");
    assert!(
        out.status.success(),
        "kubectl kustomize {dir}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The Templates rendered from `dir`, by name.
fn templates(kubectl: &str, dir: &str) -> BTreeMap<String, Value> {
    odh_test_support::dev::yaml_documents(&render(kubectl, dir))
        .expect("rendered YAML parses")
        .into_iter()
        .filter(|d| d["kind"] == "Template")
        .map(|d| (d["metadata"]["name"].as_str().unwrap().to_string(), d))
        .collect()
}

/// The spec's 14 base Templates: (Template name, ServingRuntime name, image parameter,
/// recommended accelerator, `opendatahub.io/kserve-runtime`, model formats as
/// `name/version/autoSelect`).
struct Base {
    template: &'static str,
    runtime: &'static str,
    image_key: &'static str,
    accelerator: Option<&'static str>,
    kserve_runtime: Option<&'static str>,
    formats: &'static [&'static str],
    vllm: bool,
}

const fn base(
    template: &'static str,
    runtime: &'static str,
    image_key: &'static str,
    accelerator: Option<&'static str>,
    kserve_runtime: Option<&'static str>,
    formats: &'static [&'static str],
) -> Base {
    Base {
        template,
        runtime,
        image_key,
        accelerator,
        kserve_runtime,
        formats,
        vllm: false,
    }
}

const fn vllm(
    template: &'static str,
    runtime: &'static str,
    image_key: &'static str,
    accelerator: Option<&'static str>,
    formats: &'static [&'static str],
) -> Base {
    Base {
        template,
        runtime,
        image_key,
        accelerator,
        kserve_runtime: Some("vllm"),
        formats,
        vllm: true,
    }
}

const NVIDIA: Option<&str> = Some("nvidia.com/gpu");
const VLLM_AUTO: &[&str] = &["vLLM//true"];

const BASES: &[Base] = &[
    base(
        "kserve-ovms",
        "kserve-ovms",
        "ovms-image",
        NVIDIA,
        Some("ovms"),
        &[
            "openvino_ir/opset13/true",
            "onnx/1/",
            "tensorflow/1/true",
            "tensorflow/2/true",
            "paddle/2/true",
            "pytorch/2/true",
        ],
    ),
    base(
        "mlserver-runtime-template",
        "mlserver-runtime",
        "mlserver-image",
        None,
        Some("mlserver"),
        &[
            "sklearn/0/",
            "sklearn/1/",
            "xgboost/1/",
            "xgboost/2/",
            "lightgbm/3/",
            "lightgbm/4/",
            "onnx/1/",
        ],
    ),
    base(
        "mlserver-cuda-runtime-template",
        "mlserver-cuda-runtime",
        "mlserver-cuda-image",
        NVIDIA,
        Some("mlserver"),
        &["onnx/1/"],
    ),
    base(
        "guardrails-detector-huggingface-serving-template",
        "guardrails-detector-huggingface-runtime",
        "guardrails-detector-huggingface-runtime-image",
        NVIDIA,
        None,
        &["guardrails-detector-hf-runtime//true"],
    ),
    base(
        "autogluon-runtime-template",
        "autogluon-runtime",
        "autogluon-image",
        None,
        Some("autogluon"),
        &["autogluon/1/true"],
    ),
    vllm(
        "vllm-cuda-runtime-template",
        "vllm-cuda-runtime",
        "vllm-cuda-image",
        NVIDIA,
        VLLM_AUTO,
    ),
    vllm(
        "vllm-rocm-runtime-template",
        "vllm-rocm-runtime",
        "vllm-rocm-image",
        Some("amd.com/gpu"),
        VLLM_AUTO,
    ),
    vllm(
        "vllm-gaudi-runtime-template",
        "vllm-gaudi-runtime",
        "vllm-gaudi-image",
        Some("habana.ai/gaudi"),
        &["vLLM//false"],
    ),
    vllm(
        "vllm-spyre-x86-runtime-template",
        "vllm-spyre-x86-runtime",
        "vllm-spyre-image",
        Some("ibm.com/spyre_pf"),
        VLLM_AUTO,
    ),
    vllm(
        "vllm-spyre-s390x-runtime-template",
        "vllm-spyre-s390x-runtime",
        "vllm-spyre-image",
        Some("ibm.com/spyre_vf"),
        VLLM_AUTO,
    ),
    vllm(
        "vllm-spyre-ppc64le-runtime-template",
        "vllm-spyre-ppc64le-runtime",
        "vllm-spyre-image",
        Some("ibm.com/spyre_pf"),
        VLLM_AUTO,
    ),
    vllm(
        "vllm-cpu-runtime-template",
        "vllm-cpu-runtime",
        "vllm-cpu-image",
        None,
        VLLM_AUTO,
    ),
    vllm(
        "vllm-cpu-x86-runtime-template",
        "vllm-cpu-x86-runtime",
        "vllm-cpu-x86-image",
        None,
        VLLM_AUTO,
    ),
    vllm(
        "vllm-multinode-runtime-template",
        "vllm-multinode-runtime",
        "vllm-cuda-image",
        NVIDIA,
        VLLM_AUTO,
    ),
];

/// params.env's defaults (core spec §4.5), the same for the -fast-N keys.
fn default_image(key: &str) -> &'static str {
    match key.trim_end_matches("-fast-1").trim_end_matches("-fast-2") {
        "ovms-image" => "quay.io/opendatahub/openvino_model_server:2025.1-release",
        "mlserver-image" => "quay.io/opendatahub/mlserver:fast",
        "mlserver-cuda-image" => "quay.io/opendatahub/mlserver-cuda:fast",
        "autogluon-image" => "quay.io/opendatahub/odh-kserve-autogluon-server:odh-stable",
        "vllm-cuda-image" => "quay.io/vllm/vllm-cuda:latest",
        "vllm-cpu-image" | "vllm-cpu-x86-image" | "vllm-spyre-image" => "quay.io/vllm/vllm:latest",
        "vllm-gaudi-image" => "quay.io/opendatahub/vllm:fast-gaudi",
        "vllm-rocm-image" => "quay.io/vllm/vllm-rocm:latest",
        "guardrails-detector-huggingface-runtime-image" => {
            "quay.io/trustyai/guardrails-detector-huggingface-runtime:latest"
        }
        other => panic!("no default for {other}"),
    }
}

/// One expected Template: the base facts, and the fast version (None for a base Template).
struct Expected<'a> {
    base: &'a Base,
    fast: Option<u8>,
}

impl Expected<'_> {
    fn suffix(&self) -> String {
        self.fast.map(|n| format!("-fast-{n}")).unwrap_or_default()
    }
    fn template(&self) -> String {
        format!("{}{}", self.base.template, self.suffix())
    }
    fn runtime(&self) -> String {
        format!("{}{}", self.base.runtime, self.suffix())
    }
    fn image_key(&self) -> String {
        format!("{}{}", self.base.image_key, self.suffix())
    }
}

/// The spec's 32: the 14 base Templates, then the nine vLLM ones as -fast-1 and -fast-2.
fn expected() -> Vec<Expected<'static>> {
    let mut all: Vec<Expected> = BASES
        .iter()
        .map(|b| Expected {
            base: b,
            fast: None,
        })
        .collect();
    for n in [1, 2] {
        all.extend(BASES.iter().filter(|b| b.vllm).map(|b| Expected {
            base: b,
            fast: Some(n),
        }));
    }
    all
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// Every image of a runtime: its containers', then its workerSpec's.
fn images(runtime: &Value) -> Vec<&str> {
    ["/spec/containers", "/spec/workerSpec/containers"]
        .iter()
        .filter_map(|p| runtime.pointer(p).and_then(Value::as_array))
        .flatten()
        .map(|c| c["image"].as_str().unwrap())
        .collect()
}

#[test]
fn the_runtime_templates_are_the_specs_32_with_upstreams_annotations() {
    let kubectl = odh_test_support::dev::kubectl().expect("kubectl");
    let rendered = templates(&kubectl, "deploy/runtimes");
    let expected = expected();
    assert_eq!(expected.len(), 32);
    let names: Vec<String> = expected.iter().map(Expected::template).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(
        rendered.keys().cloned().collect::<Vec<_>>(),
        sorted,
        "the Template names"
    );

    for e in &expected {
        let name = e.template();
        let t = &rendered[&name];
        assert_eq!(t["apiVersion"], "template.openshift.io/v1", "{name}");
        assert!(
            t.get("parameters").is_none(),
            "{name}: upstream's have no parameters"
        );
        let objects = t["objects"].as_array().unwrap();
        assert_eq!(objects.len(), 1, "{name}: one object");
        let sr = &objects[0];
        assert_eq!(sr["apiVersion"], "serving.kserve.io/v1alpha1", "{name}");
        assert_eq!(sr["kind"], "ServingRuntime", "{name}");
        assert_eq!(str_at(sr, "/metadata/name"), Some(&*e.runtime()), "{name}");

        // Labels: the dashboard's list filter, ootb, and odh-dashboard on the base ones only.
        let multinode = e.base.template.starts_with("vllm-multinode");
        let listed = if multinode { "false" } else { "true" };
        let labels = &t["metadata"]["labels"];
        assert_eq!(labels["opendatahub.io/dashboard"], listed, "{name}");
        assert_eq!(labels["opendatahub.io/ootb"], "true", "{name}");
        assert_eq!(
            sr["metadata"]["labels"]["opendatahub.io/dashboard"], listed,
            "{name}"
        );
        let dashboard_app = if e.fast.is_none() {
            json!("odh-dashboard")
        } else {
            Value::Null
        };
        assert_eq!(labels["app"], dashboard_app, "{name}");
        assert_eq!(labels["app.kubernetes.io/part-of"], dashboard_app, "{name}");

        // The dashboard's annotations.
        let ta = &t["metadata"]["annotations"];
        let sa = &sr["metadata"]["annotations"];
        assert_eq!(ta["opendatahub.io/apiProtocol"], "REST", "{name}");
        assert_eq!(
            ta["opendatahub.io/modelServingSupport"], r#"["single"]"#,
            "{name}"
        );
        let model_type = if e.base.vllm {
            r#"["generative"]"#
        } else {
            r#"["predictive"]"#
        };
        assert_eq!(ta["opendatahub.io/model-type"], model_type, "{name}");
        assert!(
            sa["openshift.io/display-name"].is_string(),
            "{name}: the runtime's display name"
        );
        // Upstream's ovms and guardrails Templates have no display name of their own.
        let template_named = ![
            "kserve-ovms",
            "guardrails-detector-huggingface-serving-template",
        ]
        .contains(&e.base.template);
        assert_eq!(
            ta["openshift.io/display-name"].is_string(),
            template_named,
            "{name}: the Template's display name"
        );
        assert_eq!(
            ta["openshift.io/provider-display-name"].is_string(),
            e.base.template != "kserve-ovms",
            "{name}: the provider's display name"
        );
        assert_eq!(
            sa.get("opendatahub.io/recommended-accelerators")
                .and_then(Value::as_str),
            e.base.accelerator.map(|a| format!(r#"["{a}"]"#)).as_deref(),
            "{name}: recommended accelerators"
        );
        let (support, version) = match e.fast {
            Some(n) => (json!("unsupported"), json!(n.to_string())),
            None => (Value::Null, Value::Null),
        };
        for (what, a) in [("Template", ta), ("ServingRuntime", sa)] {
            assert_eq!(a["opendatahub.io/support-status"], support, "{name} {what}");
            assert_eq!(a["opendatahub.io/fast-version"], version, "{name} {what}");
        }

        // The runtime itself.
        let spec = &sr["spec"];
        assert_eq!(spec["multiModel"], false, "{name}");
        assert_eq!(
            spec["annotations"]
                .get("opendatahub.io/kserve-runtime")
                .and_then(Value::as_str),
            e.base.kserve_runtime,
            "{name}"
        );
        assert_eq!(
            spec["annotations"]["prometheus.io/path"], "/metrics",
            "{name}"
        );
        let formats: Vec<String> = spec["supportedModelFormats"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                format!(
                    "{}/{}/{}",
                    f["name"].as_str().unwrap(),
                    f["version"].as_str().unwrap_or(""),
                    f["autoSelect"]
                        .as_bool()
                        .map(|b| b.to_string())
                        .unwrap_or_default()
                )
            })
            .collect();
        assert_eq!(formats, e.base.formats, "{name}: supported model formats");
        assert_eq!(spec["containers"][0]["name"], "kserve-container", "{name}");
        let want = default_image(&e.image_key());
        let expected_images = if multinode { vec![want; 2] } else { vec![want] };
        assert_eq!(images(sr), expected_images, "{name}: images");
        if multinode {
            let worker = &spec["workerSpec"];
            assert_eq!(
                worker["containers"][0]["name"], "worker-container",
                "{name}"
            );
            assert_eq!(worker["pipelineParallelSize"], 2, "{name}");
            assert_eq!(worker["tensorParallelSize"], 1, "{name}");
            assert_eq!(
                spec["annotations"]["multinode/executor-backend"], "mp",
                "{name}"
            );
            assert_eq!(spec["supportedModelFormats"][0]["priority"], 2, "{name}");
        }
        if e.base.template.starts_with("vllm-spyre") {
            assert_eq!(spec["schedulerName"], "spyre-scheduler", "{name}");
            assert_eq!(
                spec["containers"][0]["ports"][0]["containerPort"], 8000,
                "{name}"
            );
            assert_eq!(spec["annotations"]["prometheus.io/port"], "8080", "{name}");
        }
    }
}

/// The parameters fixture (tests/integration/runtime-images): `deploy/runtimes` with the
/// images Component and a ConfigMap whose every image is distinct from the defaults.
#[test]
fn the_images_come_from_the_parameters_configmap_with_upstreams_keys() {
    let kubectl = odh_test_support::dev::kubectl().expect("kubectl");
    let params_path = workspace_root().join("tests/integration/runtime-images/params.env");
    let params: BTreeMap<String, String> = std::fs::read_to_string(&params_path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    // The OpenShift overlay as a platform operator uses it, from a copy of deploy/ whose
    // params.env holds the fixture's value for every runtime image key.
    let copy = std::env::temp_dir().join(format!("odh-runtime-images-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&copy);
    let status = Command::new("cp")
        .arg("-r")
        .arg(workspace_root().join("deploy"))
        .arg(&copy)
        .status()
        .expect("cp");
    assert!(status.success());
    let base_params = copy.join("base/params.env");
    let mut lines: Vec<String> = std::fs::read_to_string(&base_params)
        .unwrap()
        .lines()
        .filter(|l| {
            l.split_once('=')
                .is_none_or(|(k, _)| !params.contains_key(k))
        })
        .map(str::to_string)
        .collect();
    lines.extend(params.iter().map(|(k, v)| format!("{k}={v}")));
    std::fs::write(&base_params, lines.join("\n") + "\n").unwrap();
    let rendered = templates(&kubectl, copy.join("overlays/openshift").to_str().unwrap());
    let _ = std::fs::remove_dir_all(&copy);
    assert_eq!(rendered.len(), 32);
    for e in expected() {
        let name = e.template();
        let key = e.image_key();
        let want = params
            .get(&key)
            .unwrap_or_else(|| panic!("{name}: no {key} in {}", params_path.display()));
        assert_ne!(want, default_image(&key), "the fixture changes every image");
        let sr = &rendered[&name]["objects"][0];
        for image in images(sr) {
            assert_eq!(image, want, "{name}: image from {key}");
        }
    }
}

/// Every embedded ServingRuntime is accepted by the apiserver (dry-run create: KServe's CRD
/// schema), and an InferenceService naming it passes the isvc plugin's webhooks and the
/// apiserver.
#[tokio::test]
async fn every_runtime_is_admitted_and_so_is_an_inference_service_on_it() -> anyhow::Result<()> {
    let kubectl = odh_test_support::dev::kubectl()?;
    let t = TestContext::new("runtime-templates").await?;
    let runtimes = t.dynamic(
        "serving.kserve.io",
        "v1alpha1",
        "ServingRuntime",
        "servingruntimes",
    );
    let isvcs = t.dynamic(
        "serving.kserve.io",
        "v1beta1",
        "InferenceService",
        "inferenceservices",
    );
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let isvc_plugin = odh_test_support::host::load("isvc");
    let env = CallEnv::live(Arc::new(MemoryCluster::default()));
    for (name, template) in templates(&kubectl, "deploy/runtimes") {
        let mut sr = template["objects"][0].clone();
        sr["metadata"]["namespace"] = json!(t.namespace);
        let runtime = sr["metadata"]["name"].as_str().unwrap().to_string();
        runtimes
            .create(
                &dry_run,
                &serde_json::from_value::<DynamicObject>(sr.clone())?,
            )
            .await
            .map_err(|e| anyhow::anyhow!("{name}: ServingRuntime {runtime} refused: {e}"))?;

        let format = sr["spec"]["supportedModelFormats"][0]["name"].clone();
        let isvc = json!({
            "apiVersion": "serving.kserve.io/v1beta1",
            "kind": "InferenceService",
            "metadata": {"name": "model", "namespace": t.namespace},
            "spec": {"predictor": {"model": {
                "modelFormat": {"name": format},
                "runtime": runtime,
                "storageUri": "s3://bucket/model",
            }}},
        });
        let mut admitted = isvc.clone();
        for (kind, path) in [
            (
                WebhookType::Mutating,
                "/mutate-serving-kserve-io-v1beta1-inferenceservice",
            ),
            (
                WebhookType::Validating,
                "/validate-serving-kserve-io-v1beta1-inferenceservice",
            ),
        ] {
            let input =
                odh_test_support::host::admission(path, Operation::Create, admitted.clone());
            let decision = isvc_plugin
                .admit_blocking(kind, &input, &env)
                .map_err(|e| anyhow::anyhow!("{name}: {path}: {e}"))?;
            anyhow::ensure!(
                decision.allowed,
                "{name}: {path} denied the InferenceService on {runtime}: {:?}",
                decision.message
            );
            if let Some(mutated) = decision.mutated {
                admitted = mutated;
            }
        }
        isvcs
            .create(
                &dry_run,
                &serde_json::from_value::<DynamicObject>(admitted)?,
            )
            .await
            .map_err(|e| anyhow::anyhow!("{name}: InferenceService on {runtime} refused: {e}"))?;
    }
    Ok(())
}

/// The acceptance of issue #32: the OpenShift overlay, server-side applied (dry-run) on the test
/// apiserver, creates the 32 Templates in the controller's namespace.
#[tokio::test]
async fn the_openshift_overlay_creates_the_32_templates() -> anyhow::Result<()> {
    let kubectl = odh_test_support::dev::kubectl()?;
    let t = TestContext::new("runtime-templates-overlay").await?;
    // The overlay's namespace (deploy_rbac.rs makes it the same way; either may come first).
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(t.client.clone());
    let _ = namespaces
        .patch(
            "opendatahub",
            &PatchParams::apply("runtime-templates-test"),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "opendatahub"}})),
        )
        .await;
    let kubeconfig = odh_test_support::cluster()?.kubeconfig.clone();
    let rendered = render(&kubectl, "deploy/overlays/openshift");
    let text = odh_test_support::dev::dry_run_apply(
        &kubectl,
        &kubeconfig,
        rendered.as_bytes(),
        "the OpenShift overlay",
    )?;
    let mut created: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("template.template.openshift.io/"))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    created.sort();
    let mut want: Vec<String> = expected().iter().map(Expected::template).collect();
    want.sort();
    assert_eq!(created, want, "the Templates the overlay creates:\n{text}");
    Ok(())
}
