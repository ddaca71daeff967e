//! The Pod mutating webhook as the host calls it (docs/plugins/pod-mutator.md, "Webhook";
//! scenarios PW-1..PW-6 and X-11): the plugin's `mutate` export over a fake cluster.

use odh_plugin_sdk::testing::{Case, FakeCluster};
use odh_plugin_sdk::{
    AdmissionDecision, AdmissionRequest, Ctx, Error, Object, Operation, Plugin, Value, json,
};
use pod_mutator::mutation::{add_ray_tls, init_container, needs_ray_tls_generator, selected};
use pod_mutator::names::PATH;
use pod_mutator::script::RAY_TLS_GENERATOR_SCRIPT;
use pod_mutator::settings::Settings;
use pod_mutator::{PodMutator, image};
use sha2::{Digest, Sha256};

/// The controller's namespace (upstream's tests: `POD_NAMESPACE=default`).
const CONTROLLER_NS: &str = "default";
const IMAGE: &str = "registry.redhat.io/ubi8/ubi-minimal:latest";

fn settings() -> Settings {
    Settings {
        pod_namespace: Some(CONTROLLER_NS.into()),
    }
}

fn params(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "odh-model-controller-parameters", "namespace": CONTROLLER_NS},
           "data": data})
}

/// A cluster holding upstream's test parameters ConfigMap; undeclared reads are refused.
fn cluster() -> FakeCluster {
    FakeCluster::for_manifest(&PodMutator::manifest())
        .with(params(json!({"ray-tls-generator-image": IMAGE})))
}

fn empty_cluster() -> FakeCluster {
    FakeCluster::for_manifest(&PodMutator::manifest())
}

fn container(name: &str, env: Value) -> Value {
    json!({"name": name, "image": "vllm", "env": env})
}

fn ray_tls(value: &str) -> Value {
    json!([{"name": "RAY_USE_TLS", "value": value}])
}

/// A Pod as KServe creates it for an InferenceService (the webhook's object selector holds).
fn pod(containers: Vec<Value>) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "user-ns",
                        "labels": {"serving.kserve.io/inferenceservice": "m", "component": "predictor"}},
           "spec": {"containers": containers}})
}

/// Upstream's test Pod: one `worker-container` with RAY_USE_TLS=1.
fn multinode_pod() -> Value {
    pod(vec![container("worker-container", ray_tls("1"))])
}

fn request(v: &Value) -> AdmissionRequest {
    AdmissionRequest::for_object(PATH, Operation::Create, &Object(v.clone()))
        .with_namespace("user-ns")
}

/// The `mutate` export, as the host calls it.
fn mutate_with(
    settings: &Settings,
    cluster: &FakeCluster,
) -> impl Fn(&AdmissionRequest) -> Result<AdmissionDecision, Error> {
    move |r| PodMutator::mutate(r, &Ctx::new(settings, cluster))
}

fn mutated(decision: &AdmissionDecision) -> Value {
    Object::parse(decision.mutated.as_deref().expect("a mutated object"))
        .unwrap()
        .into_value()
}

fn names(list: &Value) -> Vec<&str> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["name"].as_str())
        .collect()
}

/// PW-1: a multi-node Pod gets one `ray-tls-generator` init container, the volumes
/// `ray-tls` and `ray-tls-secret`, and a mount at `/etc/ray/tls` on container 0.
#[test]
fn pw_1_a_ray_tls_pod_gets_the_init_container_volumes_and_mount() {
    let s = settings();
    let c = cluster();
    let decision = Case::allowed("PW-1", request(&multinode_pod())).run(mutate_with(&s, &c));
    let pod = mutated(&decision);
    assert_eq!(names(&pod["spec"]["initContainers"]), ["ray-tls-generator"]);
    assert_eq!(
        pod["spec"]["volumes"],
        json!([{"name": "ray-tls", "emptyDir": {}},
               {"name": "ray-tls-secret", "secret": {"secretName": "ray-tls"}}])
    );
    assert_eq!(
        pod["spec"]["containers"][0]["volumeMounts"],
        json!([{"name": "ray-tls", "mountPath": "/etc/ray/tls"}])
    );
    assert_eq!(pod["spec"]["initContainers"][0], init_container(IMAGE));
}

/// The init container exactly as upstream builds it (the doc's step 3, "Mutate").
#[test]
fn pw_1_the_init_container_is_upstreams() {
    let c = init_container(IMAGE);
    assert_eq!(
        c,
        json!({
            "name": "ray-tls-generator",
            "image": IMAGE,
            "command": ["sh", "-c", RAY_TLS_GENERATOR_SCRIPT],
            "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
            "volumeMounts": [{"name": "ray-tls", "mountPath": "/etc/ray/tls"},
                             {"name": "ray-tls-secret", "mountPath": "/etc/ray-secret"}],
            "terminationMessagePolicy": "FallbackToLogsOnError",
        })
    );
    assert!(c.get("resources").is_none() && c.get("securityContext").is_none());
}

/// The script is upstream's byte for byte (its SHA-256, taken from `pod_webhook.go` at the
/// spec's snapshot), the counter typo included.
#[test]
fn the_init_script_is_upstreams_byte_for_byte() {
    let digest = Sha256::digest(RAY_TLS_GENERATOR_SCRIPT.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        hex,
        "60f07b79337bcfcb4ad453fb2a74427430e57f0bd845fd6130f99b89758f02ad"
    );
    assert_eq!(RAY_TLS_GENERATOR_SCRIPT.len(), 1547);
    assert!(RAY_TLS_GENERATOR_SCRIPT.starts_with("\nSECRET_DIR=\"/etc/ray-secret\"\n"));
    assert!(RAY_TLS_GENERATOR_SCRIPT.ends_with("    exit 1\nfi\n\n"));
    assert!(
        RAY_TLS_GENERATOR_SCRIPT
            .contains("for ((retires = 0; retries <= MAX_RETRIES; retries++)); do")
    );
    for message in [
        "Not found ca cert. Retrying in ${RETRY_INTERVAL} seconds... ($retries/$MAX_RETRIES)",
        "Error: CA Cert file not found!",
        "Cert file not generated yet. Retrying in ${RETRY_INTERVAL} seconds... ($retries/$MAX_RETRIES)",
        "Error: Cert file not generated!",
        "Certificate files created successfully!",
        "Error: Failed to create certificate files.",
    ] {
        assert!(RAY_TLS_GENERATOR_SCRIPT.contains(message), "{message}");
    }
}

/// PW-2 and PW-3: RAY_USE_TLS=0, or no env at all, leaves the Pod unchanged.
#[test]
fn pw_2_pw_3_no_ray_tls_leaves_the_pod_unchanged() {
    let s = settings();
    let c = cluster();
    for (name, env) in [("PW-2", ray_tls("0")), ("PW-3", Value::Null)] {
        let d = Case::allowed(
            name,
            request(&pod(vec![container("worker-container", env)])),
        )
        .run(mutate_with(&s, &c));
        assert_eq!(
            (d.mutated.as_deref(), d.patch.as_deref()),
            (None, None),
            "{name}"
        );
    }
}

/// PW-4..PW-6: `needToAddRayTLSGenerator` for RAY_USE_TLS=1, =0 and no env.
#[test]
fn pw_4_pw_5_pw_6_need_to_add_the_generator() {
    let need = |env: Value| {
        needs_ray_tls_generator(&Object(pod(vec![container("worker-container", env)])))
    };
    assert!(need(ray_tls("1")), "PW-4");
    assert!(!need(ray_tls("0")), "PW-5");
    assert!(!need(Value::Null), "PW-6");
}

/// The rule of the doc's step 1, "Decide" (the same as the Pod controller's): any literal value but
/// `0` counts, an empty one and a `valueFrom` too, at any position of `env`, only on
/// `kserve-container`/`worker-container`, only in the main containers.
#[test]
fn ray_tls_is_on_for_every_value_but_zero_on_the_ray_containers() {
    let need = |v: Value| needs_ray_tls_generator(&Object(v));
    let with_env = |name: &str, env: Value| pod(vec![container(name, env)]);
    assert!(need(with_env("kserve-container", ray_tls("1"))));
    assert!(need(with_env("kserve-container", ray_tls(""))));
    assert!(need(with_env("kserve-container", ray_tls("false"))));
    assert!(need(with_env(
        "kserve-container",
        json!([{"name": "A", "value": "0"},
               {"name": "RAY_USE_TLS", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}}])
    )));
    assert!(!need(with_env("agent", ray_tls("1"))), "another container");
    let mut init_only = with_env("kserve-container", Value::Null);
    init_only["spec"]["initContainers"] = json!([container("worker-container", ray_tls("1"))]);
    assert!(!need(init_only), "init containers are not checked");
    assert!(!need(
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})
    ));
}

/// a Pod that already has the `ray-tls-generator` init container is unchanged.
#[test]
fn x_11_a_pod_with_the_generator_is_unchanged() {
    let s = settings();
    let c = cluster();
    let mut v = multinode_pod();
    v["spec"]["initContainers"] = json!([{"name": "ray-tls-generator", "image": "mine"}]);
    let d = Case::allowed("X-11 present", request(&v)).run(mutate_with(&s, &c));
    assert!(d.mutated.is_none() && d.patch.is_none());
}

/// with two matching containers only the first (in spec order) gets the mount; the
/// volumes are appended after the Pod's own, without de-duplication, and the init container
/// after the existing ones; nothing else changes.
#[test]
fn x_11_only_the_first_ray_container_gets_the_mount_and_everything_appends() {
    let s = settings();
    let c = cluster();
    let mut v = pod(vec![
        container("agent", ray_tls("1")),
        container("kserve-container", ray_tls("1")),
        container("worker-container", ray_tls("1")),
    ]);
    v["spec"]["containers"][1]["volumeMounts"] = json!([{"name": "models", "mountPath": "/mnt"}]);
    v["spec"]["volumes"] = json!([{"name": "ray-tls", "emptyDir": {"medium": "Memory"}}]);
    v["spec"]["initContainers"] = json!([{"name": "storage-initializer", "image": "s"}]);
    let d = Case::allowed("X-11 two containers", request(&v)).run(mutate_with(&s, &c));
    let got = mutated(&d);
    let mounts = |i: usize| got["spec"]["containers"][i]["volumeMounts"].clone();
    assert_eq!(mounts(0), Value::Null, "agent");
    assert_eq!(
        mounts(1),
        json!([{"name": "models", "mountPath": "/mnt"}, {"name": "ray-tls", "mountPath": "/etc/ray/tls"}])
    );
    assert_eq!(mounts(2), Value::Null, "the second ray container");
    assert_eq!(
        names(&got["spec"]["volumes"]),
        ["ray-tls", "ray-tls", "ray-tls-secret"]
    );
    assert_eq!(
        names(&got["spec"]["initContainers"]),
        ["storage-initializer", "ray-tls-generator"]
    );
    // Only those three places differ from the request's Pod.
    let mut rest = got.clone();
    rest["spec"]["containers"][1]["volumeMounts"] =
        v["spec"]["containers"][1]["volumeMounts"].clone();
    rest["spec"]["volumes"] = v["spec"]["volumes"].clone();
    rest["spec"]["initContainers"] = v["spec"]["initContainers"].clone();
    assert_eq!(rest, v);
}

/// a missing parameters ConfigMap rejects the Pod with the cache's NotFound (404); a
/// missing key denies it (403). An unset controller namespace finds no ConfigMap either.
#[test]
fn x_11_a_missing_configmap_or_key_rejects_the_pod() {
    let s = settings();
    let empty = empty_cluster();
    let not_found = "ConfigMap \"odh-model-controller-parameters\" not found";
    Case::denied("X-11 no ConfigMap", request(&multinode_pod()), not_found)
        .code(404)
        .run(mutate_with(&s, &empty));
    let no_key = empty_cluster().with(params(json!({"other": "x"})));
    Case::denied(
        "X-11 no key",
        request(&multinode_pod()),
        "ray-tls-generator-image key not found in ConfigMap",
    )
    .code(403)
    .run(mutate_with(&s, &no_key));
    let no_data = empty_cluster().with(params(Value::Null));
    Case::denied(
        "X-11 no data",
        request(&multinode_pod()),
        "ray-tls-generator-image key not found in ConfigMap",
    )
    .code(403)
    .run(mutate_with(&s, &no_data));
    let c = cluster();
    for unset in [
        Settings::default(),
        Settings {
            pod_namespace: Some(String::new()),
        },
    ] {
        Case::denied("unset POD_NAMESPACE", request(&multinode_pod()), not_found)
            .code(404)
            .run(mutate_with(&unset, &c));
    }
    // The ConfigMap in another namespace is not the controller's.
    let elsewhere = Settings {
        pod_namespace: Some("opendatahub".into()),
    };
    Case::denied("another namespace", request(&multinode_pod()), not_found)
        .code(404)
        .run(mutate_with(&elsewhere, &c));
    // Pods that are not mutated never need the ConfigMap.
    Case::allowed(
        "no Ray TLS",
        request(&pod(vec![container("kserve-container", ray_tls("0"))])),
    )
    .run(mutate_with(&s, &empty));
}

/// An empty image value is a value (upstream checks only that the key exists).
#[test]
fn an_empty_image_is_used_as_is() {
    let c = empty_cluster().with(params(json!({"ray-tls-generator-image": ""})));
    assert_eq!(
        image::ray_tls_generator_image(Some(CONTROLLER_NS), &c),
        Ok(String::new())
    );
}

/// A failed read of the ConfigMap is a 403 denial with its text (upstream: `Denied(err)`),
/// not a crash or a silent pass.
#[test]
fn a_failed_read_denies_with_its_text() {
    let s = settings();
    let failing = cluster().fail(
        odh_kinds::gvk::config_map(),
        Error::Transient("cache not synced".into()),
    );
    let d = mutate_with(&s, &failing)(&request(&multinode_pod())).unwrap();
    assert!(!d.allowed);
    assert_eq!(d.code, Some(403));
    assert!(
        d.message.as_deref().unwrap().contains("cache not synced"),
        "{d:?}"
    );
}

/// The webhook's object selector, applied by the plugin too: the `serving.kserve.io/
/// inferenceservice` label must exist and `control-plane` must not.
#[test]
fn pods_outside_the_object_selector_are_unchanged() {
    let s = settings();
    let c = cluster();
    let mut unlabelled = multinode_pod();
    unlabelled["metadata"]["labels"] = json!({"component": "predictor"});
    let mut control_plane = multinode_pod();
    control_plane["metadata"]["labels"]["control-plane"] = json!("");
    let mut empty_value = multinode_pod();
    empty_value["metadata"]["labels"]["serving.kserve.io/inferenceservice"] = json!("");
    assert!(!selected(&Object(unlabelled.clone())));
    assert!(!selected(&Object(control_plane.clone())));
    assert!(selected(&Object(empty_value.clone())), "Exists: any value");
    for (name, v) in [
        ("no isvc label", unlabelled),
        ("control-plane", control_plane),
    ] {
        let d = Case::allowed(name, request(&v)).run(mutate_with(&s, &c));
        assert!(d.mutated.is_none(), "{name}");
    }
    let d = Case::allowed("empty label value", request(&empty_value)).run(mutate_with(&s, &c));
    assert!(d.mutated.is_some());
}

/// Bad input never crashes: an object that is not a Pod, or not JSON, is a 400; odd shapes
/// of a Pod's lists are mutated without panicking.
#[test]
fn bad_input_is_answered_not_crashed() {
    let s = settings();
    let c = cluster();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
    let d = mutate_with(&s, &c)(&request(&cm)).unwrap();
    assert_eq!(
        (d.allowed, d.code, d.message.as_deref()),
        (
            false,
            Some(400),
            Some("expected an Pod object but got v1, Kind=ConfigMap")
        )
    );
    let mut garbled = request(&multinode_pod());
    garbled.object = Some("{not json".into());
    let d = mutate_with(&s, &c)(&garbled).unwrap();
    assert_eq!((d.allowed, d.code), (false, Some(400)));
    let mut odd = multinode_pod();
    odd["spec"]["volumes"] = Value::Null;
    odd["spec"]["initContainers"] = json!("not a list");
    let mut v = odd.clone();
    add_ray_tls(&mut v, IMAGE);
    assert_eq!(names(&v["spec"]["volumes"]), ["ray-tls", "ray-tls-secret"]);
    assert_eq!(names(&v["spec"]["initContainers"]), ["ray-tls-generator"]);
}

/// The manifest: one mutating webhook on Pods, CREATE only, reading ConfigMaps, writing
/// nothing.
#[test]
fn manifest_declares_the_pod_webhook() {
    let m = PodMutator::manifest();
    assert_eq!(m.name, "pod-mutator");
    assert_eq!(m.webhooks.len(), 1);
    let w = &m.webhooks[0];
    assert_eq!(w.path, "/mutate--v1-pod");
    assert_eq!(w.type_, odh_plugin_sdk::WebhookType::Mutating);
    assert_eq!(
        (
            w.gvk.group.as_str(),
            w.gvk.version.as_str(),
            w.gvk.kind.as_str()
        ),
        ("", "v1", "Pod")
    );
    assert_eq!(w.operations, vec![Operation::Create]);
    assert!(m.controllers.is_empty() && m.writes.is_empty() && m.http_hosts.is_empty());
    assert_eq!(m.reads, vec![odh_kinds::gvk::config_map()]);
}
