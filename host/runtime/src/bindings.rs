//! Host-side bindings generated from `wit/controller.wit`: the `staged-policy` world, a
//! superset of `filtered-policy`, `keyed-policy`, `scoped-policy`, `api-policy` and `policy`. A component of an
//! older world lacks the exports added since: without `http-api` (0.1.0) it serves no routes,
//! without `webhook-selectors` (0.1.0, 0.1.1) its webhooks review every object of their kinds,
//! without `event-filters` and `change-mapping` (before 0.1.4) every event reaches it and its
//! mappings see only the new object. Imports added since (`keys`, 0.1.3; `writes`, 0.1.5) are
//! simply not asked for by older components.

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "staged-policy",
});

pub use odh::controller::{
    admission_types, api_types, caller, keys, manifest_types, reconcile_types, types, writes,
};

/// The WIT package (name and version) the host was built against.
pub const WIT_PACKAGE: &str = "odh:controller@0.1.5";

/// The exports again, called asynchronously: an admission call on the executor's own thread
/// runs on a fiber (`call_async`) that yields at every epoch tick. The imports are the ones
/// above (same Rust types, same host implementation).
pub mod inline {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "staged-policy",
        exports: { default: async },
        with: {
            "odh:controller/types": super::odh::controller::types,
            "odh:controller/manifest-types": super::odh::controller::manifest_types,
            "odh:controller/reconcile-types": super::odh::controller::reconcile_types,
            "odh:controller/admission-types": super::odh::controller::admission_types,
            "odh:controller/api-types": super::odh::controller::api_types,
            "odh:controller/cluster": super::odh::controller::cluster,
            "odh:controller/log": super::odh::controller::log,
            "odh:controller/caller": super::odh::controller::caller,
            "odh:controller/keys": super::odh::controller::keys,
            "odh:controller/writes": super::odh::controller::writes,
        },
    });
}
