//! The Pod mutation (docs/plugins/pod-mutator.md, "Webhook"): which Pods run Ray with TLS, and
//! what they get.

use odh_kinds::{Pod, label};
use odh_plugin_sdk::{Object, Value, json};

use crate::names::{
    CONTROL_PLANE_LABEL, INIT_CONTAINER, RAY_CONTAINERS, SECRET_MOUNT_PATH, TLS_MOUNT_PATH,
    TLS_SECRET, TLS_SECRET_VOLUME, TLS_VOLUME,
};
use crate::script::RAY_TLS_GENERATOR_SCRIPT;

/// The webhook's object selector: the label `serving.kserve.io/inferenceservice` exists (any
/// value) and `control-plane` does not.
pub static OBJECT_SELECTOR: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!("{},!{CONTROL_PLANE_LABEL}", label::INFERENCE_SERVICE_NAME)
});

/// Whether [`OBJECT_SELECTOR`] admits the Pod. The host already admits unselected Pods without
/// calling the plugin; `mutate` checks again so that a direct call (a native test, an embedder)
/// decides as the served webhook does.
pub fn selected(pod: &Object) -> bool {
    let labels = pod.at(&["metadata", "labels"]);
    let has = |key: &str| labels.and_then(|l| l.get(key)).is_some();
    has(label::INFERENCE_SERVICE_NAME) && !has(CONTROL_PLANE_LABEL)
}

fn named(container: &Value) -> Option<&str> {
    container.get("name").and_then(Value::as_str)
}

fn is_ray_container(container: &Value) -> bool {
    named(container).is_some_and(|n| RAY_CONTAINERS.contains(&n))
}

/// Upstream's `needToAddRayTLSGenerator`: no `ray-tls-generator` init container yet, and the
/// Pod runs Ray with TLS ([`Pod::uses_ray_tls`], the Pod controller's rule too).
pub fn needs_ray_tls_generator(pod: &Object) -> bool {
    let view = Pod::of(pod);
    let has_generator = view
        .init_containers()
        .iter()
        .any(|c| named(c) == Some(INIT_CONTAINER));
    !has_generator && view.uses_ray_tls()
}

/// The `ray-tls-generator` init container running `image`.
pub fn init_container(image: &str) -> Value {
    json!({
        "name": INIT_CONTAINER,
        "image": image,
        "command": ["sh", "-c", RAY_TLS_GENERATOR_SCRIPT],
        "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
        "volumeMounts": [
            {"name": TLS_VOLUME, "mountPath": TLS_MOUNT_PATH},
            {"name": TLS_SECRET_VOLUME, "mountPath": SECRET_MOUNT_PATH},
        ],
        "terminationMessagePolicy": "FallbackToLogsOnError",
    })
}

/// Appends `item` to the array at `key` of `parent`, creating it when absent (or null).
fn append(parent: &mut Value, key: &str, item: Value) {
    let Some(map) = parent.as_object_mut() else {
        return;
    };
    let slot = map.entry(key).or_insert_with(|| json!([]));
    if !slot.is_array() {
        *slot = json!([]);
    }
    if let Some(items) = slot.as_array_mut() {
        items.push(item);
    }
}

/// Adds what a Ray TLS Pod needs, as upstream does: the two volumes appended (no de-duplication, an
/// upstream quirk the doc keeps), the mount on the FIRST `kserve-container`/`worker-container`
/// only, and the init container after any existing ones. A Pod without a `spec` object is left as
/// it is ([`needs_ray_tls_generator`] is false for it).
pub fn add_ray_tls(pod: &mut Value, image: &str) {
    let Some(spec) = pod.get_mut("spec") else {
        return;
    };
    append(spec, "volumes", json!({"name": TLS_VOLUME, "emptyDir": {}}));
    append(
        spec,
        "volumes",
        json!({"name": TLS_SECRET_VOLUME, "secret": {"secretName": TLS_SECRET}}),
    );
    if let Some(container) = spec
        .get_mut("containers")
        .and_then(Value::as_array_mut)
        .and_then(|cs| cs.iter_mut().find(|c| is_ray_container(c)))
    {
        append(
            container,
            "volumeMounts",
            json!({"name": TLS_VOLUME, "mountPath": TLS_MOUNT_PATH}),
        );
    }
    append(spec, "initContainers", init_container(image));
}
