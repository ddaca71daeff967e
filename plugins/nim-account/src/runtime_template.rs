//! The NIM `ServingRuntime` the Account's OpenShift Template carries (docs/plugins/nim-account.md,
//! "Controller `odh-nim-controller`", step 5).

use odh_plugin_sdk::{Value, json};

use crate::names::NIM_RUNTIME_ANNOTATION;

/// Annotations of the Template (`opendatahub.io/modelServingSupport` is the JSON text).
pub const TEMPLATE_ANNOTATIONS: [(&str, &str); 2] = [
    ("opendatahub.io/apiProtocol", "REST"),
    ("opendatahub.io/modelServingSupport", r#"["single"]"#),
];

const CACHE_MOUNTS: [(&str, &str); 9] = [
    ("/dev/shm", "shm"),
    ("/mnt/models/cache", "nim-pvc"),
    ("/opt/nim/workspace", "nim-workspace"),
    ("/.cache", "nim-cache"),
    ("/opt/nim/nginx", "nim-nginx"),
    ("/opt/nim/generated_configs", "nim-generated-configs"),
    ("/opt/nim/.cache", "nim-dot-cache"),
    ("/opt/nim/.config", "nim-dot-config"),
    ("/opt/nim/.triton", "nim-dot-triton"),
];

const EMPTY_DIRS: [&str; 7] = [
    "nim-workspace",
    "nim-cache",
    "nim-nginx",
    "nim-generated-configs",
    "nim-dot-cache",
    "nim-dot-config",
    "nim-dot-triton",
];

/// The ServingRuntime `nvidia-nim-runtime`; air-gapped, without the NGC key and pull secret.
pub fn serving_runtime(air_gapped: bool) -> Value {
    let mut env = vec![json!({"name": "NIM_CACHE_PATH", "value": "/mnt/models/cache"})];
    if !air_gapped {
        env.push(json!({
            "name": "NGC_API_KEY",
            "valueFrom": {"secretKeyRef": {"name": "nvidia-nim-secrets", "key": "NGC_API_KEY"}}
        }));
    }
    let mounts: Vec<Value> = CACHE_MOUNTS
        .iter()
        .map(|(path, name)| json!({"name": name, "mountPath": path}))
        .collect();
    let mut volumes =
        vec![json!({"name": "nim-pvc", "persistentVolumeClaim": {"claimName": "nim-pvc"}})];
    volumes.extend(
        EMPTY_DIRS
            .iter()
            .map(|name| json!({"name": name, "emptyDir": {}})),
    );
    let mut spec = json!({
        "annotations": {"prometheus.io/path": "/v1/metrics", "prometheus.io/port": "8000"},
        "containers": [{
            "name": "kserve-container",
            "env": env,
            "ports": [{"containerPort": 8000, "protocol": "TCP"}],
            "resources": {
                "limits": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "2"},
                "requests": {"cpu": "1", "memory": "4Gi", "nvidia.com/gpu": "2"}
            },
            "volumeMounts": mounts
        }],
        "multiModel": false,
        "protocolVersions": ["grpc-v2", "v2"],
        "supportedModelFormats": [{"name": "replace-me"}],
        "volumes": volumes
    });
    if !air_gapped {
        spec["imagePullSecrets"] = json!([{"name": "ngc-secret"}]);
    }
    json!({
        "apiVersion": "serving.kserve.io/v1alpha1",
        "kind": "ServingRuntime",
        "metadata": {
            "name": "nvidia-nim-runtime",
            "labels": {"opendatahub.io/dashboard": "true"},
            "annotations": {
                "opendatahub.io/recommended-accelerators": r#"["nvidia.com/gpu"]"#,
                "openshift.io/display-name": "NVIDIA NIM",
                NIM_RUNTIME_ANNOTATION: "true"
            }
        },
        "spec": spec
    })
}
