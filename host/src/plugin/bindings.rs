//! Host-side bindings generated from `wit/controller.wit`: the `api-policy` world, a superset
//! of `policy`. A component of world `policy` (0.1.0) lacks the `http-api` export, which the
//! host then treats as "no routes".

wasmtime::component::bindgen!({
    path: "../wit",
    world: "api-policy",
});

pub use odh::controller::{
    admission_types, api_types, caller, manifest_types, reconcile_types, types,
};

/// The WIT package (name and version) the host was built against.
pub const WIT_PACKAGE: &str = "odh:controller@0.1.1";
