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
}

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
}
