//! What odh-model-controller plugins share about the objects they handle:
//!
//! * [`gvk`]: constructors for every KServe, ODH, OpenShift, KEDA, monitoring, Gateway API,
//!   Kuadrant and core kind the plugins touch (one spelling of each group and version);
//! * [`label`], [`annotation`], [`finalizer`] and [`selector`]: the well-known keys, with
//!   upstream's exact strings;
//! * typed views over [`Object`](odh_plugin_sdk::Object): [`InferenceService`],
//!   [`ServingRuntime`], [`Pod`], [`Secret`], [`DscInitialization`]. A view borrows the object
//!   and reads it; it never rebuilds it, so fields nobody models survive.
//!
//! ```
//! use odh_kinds::{InferenceService, gvk};
//! use odh_plugin_sdk::{Object, json};
//!
//! let object = Object(json!({
//!     "apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
//!     "metadata": {"name": "m", "labels": {"networking.kserve.io/visibility": "exposed"}},
//!     "spec": {"predictor": {"model": {"runtime": "ovms"}}},
//! }));
//! let isvc = InferenceService::of(&object);
//! assert!(isvc.is_exposed());
//! assert_eq!((isvc.runtime_name(), isvc.service_account()), (Some("ovms"), "default"));
//! assert_eq!(object.gvk(), gvk::inference_service());
//! ```

pub mod claim;
pub mod gvk;
mod inference_service;
mod keys;
mod platform;
mod pod;
mod secret;
mod serving_runtime;

pub use inference_service::InferenceService;
pub use keys::{annotation, finalizer, label, selector};
pub use platform::DscInitialization;
pub use pod::Pod;
pub use secret::Secret;
pub use serving_runtime::{NO_SUITABLE_RUNTIME, ServingRuntime, resolve_runtime};

/// A view: a borrowed [`Object`](odh_plugin_sdk::Object) that reads as its kind and
/// dereferences to the object for everything else.
macro_rules! view {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug)]
        pub struct $name<'a>(&'a odh_plugin_sdk::Object);

        impl<'a> $name<'a> {
            /// The view of `object` (its kind is not checked).
            pub fn of(object: &'a odh_plugin_sdk::Object) -> Self {
                $name(object)
            }

            /// The object viewed.
            pub fn object(&self) -> &'a odh_plugin_sdk::Object {
                self.0
            }
        }

        impl std::ops::Deref for $name<'_> {
            type Target = odh_plugin_sdk::Object;
            fn deref(&self) -> &odh_plugin_sdk::Object {
                self.0
            }
        }
    };
}
pub(crate) use view;
