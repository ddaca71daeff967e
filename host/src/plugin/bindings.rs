//! Host-side bindings generated from `wit/controller.wit`.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "policy",
});

pub use odh::controller::{admission_types, manifest_types, reconcile_types, types};

/// The WIT package (name and version) the host was built against.
pub const WIT_PACKAGE: &str = "odh:controller@0.1.1";
