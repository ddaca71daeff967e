//! The Kubernetes types the resources embed: k8s-openapi's with feature `crd`, otherwise
//! light serde structs with the same JSON shape.

#[cfg(feature = "crd")]
pub use k8s_openapi::api::core::v1::ObjectReference;
#[cfg(feature = "crd")]
pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

#[cfg(not(feature = "crd"))]
pub use light::{Condition, ObjectReference, Time};

#[cfg(not(feature = "crd"))]
mod light {
    use serde::{Deserialize, Serialize};

    /// A point in time, RFC 3339 (`2026-01-01T00:00:00Z`), as `metav1.Time` serializes.
    pub type Time = String;

    /// `corev1.ObjectReference`.
    #[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
    #[serde(rename_all = "camelCase")]
    pub struct ObjectReference {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub api_version: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub field_path: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub kind: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub namespace: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub resource_version: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub uid: Option<String>,
    }

    /// `metav1.Condition` (every field but `observedGeneration` required, as in the API).
    #[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
    #[serde(rename_all = "camelCase")]
    pub struct Condition {
        pub last_transition_time: Time,
        pub message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub observed_generation: Option<i64>,
        pub reason: String,
        pub status: String,
        #[serde(rename = "type")]
        pub type_: String,
    }
}
