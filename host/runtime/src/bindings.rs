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
