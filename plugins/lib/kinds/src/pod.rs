//! [`Pod`]: a view of a Pod.

use odh_plugin_sdk::Value;

use crate::view;

view! {
    /// A core `Pod`.
    Pod
}

impl<'a> Pod<'a> {
    /// `spec.containers`, empty when unset.
    pub fn containers(&self) -> &'a [Value] {
        self.object().array_at(&["spec", "containers"])
    }

    /// `spec.initContainers`, empty when unset.
    pub fn init_containers(&self) -> &'a [Value] {
        self.object().array_at(&["spec", "initContainers"])
    }

    /// The container named `name` in `spec.containers`.
    pub fn container(&self, name: &str) -> Option<&'a Value> {
        self.containers()
            .iter()
            .find(|c| c.get("name").and_then(Value::as_str) == Some(name))
    }

    /// `spec.serviceAccountName`.
    pub fn service_account(&self) -> Option<&'a str> {
        self.object().str_at(&["spec", "serviceAccountName"])
    }

    /// `status.phase`.
    pub fn phase(&self) -> Option<&'a str> {
        self.object().str_at(&["status", "phase"])
    }

    /// Whether the Pod runs Ray with TLS, upstream's rule for both the Pod controller and the
    /// Pod webhook: a main container named `kserve-container` or `worker-container` has an env
    /// entry `RAY_USE_TLS` whose literal `value` is not `"0"` (an empty value, and one taken
    /// from `valueFrom`, count as on). Init containers are not looked at.
    pub fn uses_ray_tls(&self) -> bool {
        self.containers().iter().any(|c| {
            let name = c.get("name").and_then(Value::as_str);
            name.is_some_and(|n| RAY_CONTAINERS.contains(&n))
                && c.get("env")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .any(|env| {
                        env.get("name").and_then(Value::as_str) == Some(RAY_USE_TLS)
                            && env.get("value").and_then(Value::as_str).unwrap_or("") != "0"
                    })
        })
    }
}

/// The containers whose `RAY_USE_TLS` counts: KServe's `InferenceServiceContainerName` and
/// upstream's `constants.WorkerContainerName`.
const RAY_CONTAINERS: [&str; 2] = ["kserve-container", "worker-container"];
/// The variable that turns Ray TLS on.
const RAY_USE_TLS: &str = "RAY_USE_TLS";

#[cfg(test)]
mod tests {
    use super::*;
    use odh_plugin_sdk::{Object, core_gvk, json};

    #[test]
    fn reads_containers() {
        let pod = Object::new(&core_gvk("Pod"), Some("ns"), "p").with(
            "spec",
            json!({"serviceAccountName": "sa", "containers": [{"name": "kserve-container"}, {"name": "agent"}]}),
        );
        let v = Pod::of(&pod);
        assert_eq!(v.containers().len(), 2);
        assert_eq!(v.container("agent"), Some(&json!({"name": "agent"})));
        assert_eq!(v.container("none"), None);
        assert!(v.init_containers().is_empty());
        assert_eq!((v.service_account(), v.phase()), (Some("sa"), None));
    }

    #[test]
    fn ray_tls_is_any_value_but_zero_on_the_ray_containers() {
        let pod = |containers: Value| {
            Object::new(&core_gvk("Pod"), Some("ns"), "p")
                .with("spec", json!({ "containers": containers }))
        };
        let env = |name: &str, env: Value| json!([{"name": name, "env": env}]);
        let on = |v: &str| json!([{"name": "RAY_USE_TLS", "value": v}]);
        for (case, containers, want) in [
            ("1", env("worker-container", on("1")), true),
            ("empty", env("kserve-container", on("")), true),
            (
                "no value",
                env("kserve-container", json!([{"name": "RAY_USE_TLS"}])),
                true,
            ),
            (
                "valueFrom, second entry",
                env(
                    "kserve-container",
                    json!([{"name": "A", "value": "0"},
                           {"name": "RAY_USE_TLS", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]),
                ),
                true,
            ),
            ("0", env("worker-container", on("0")), false),
            ("no env", env("worker-container", Value::Null), false),
            ("another container", env("agent", on("1")), false),
        ] {
            assert_eq!(Pod::of(&pod(containers)).uses_ray_tls(), want, "{case}");
        }
        let mut init_only = pod(json!([{"name": "kserve-container"}]));
        init_only.set(
            &["spec", "initContainers"],
            json!([{"name": "worker-container", "env": [{"name": "RAY_USE_TLS", "value": "1"}]}]),
        );
        assert!(!Pod::of(&init_only).uses_ray_tls(), "init containers");
    }
}
