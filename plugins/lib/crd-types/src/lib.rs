//! Types of the custom resources odh-model-controller owns: the host generates their CRDs from
//! them (`deploy/crds/`), and the plugins read their specs with them (nim-account:
//! [`account::AccountSpec`], [`meta::ObjectReference`]).
//!
//! A plugin uses only the types whose Rust API is the same with and without feature `crd`:
//! building the workspace together unifies features, so a plugin built next to the host gets
//! the `crd` variants. `AccountSpec` and `ObjectReference` qualify; `AccountStatus` does not
//! (with `crd` its times and conditions are k8s-openapi's `Time` and `Condition`), so
//! nim-account writes the status with its own type (`nim-account/src/status.rs`), whose
//! conditions are the SDK's (`set_condition` semantics, lenient reads, fields serialized as
//! `type, status, observedGeneration, lastTransitionTime, reason, message`, where
//! [`meta::Condition`] writes them in k8s-openapi's alphabetical order).
//!
//! Without features the types are plain serde structs, light enough for a WebAssembly guest,
//! with the API's JSON shape: references, conditions and times are this crate's small
//! [`meta`] types. With feature `crd` (host only; it pulls kube's derive, k8s-openapi and
//! schemars) the same names are the k8s-openapi types and each resource also gets its
//! `CustomResourceDefinition` (`account::crd()`).

pub mod account;
pub mod meta;

/// Every CRD this project ships in `deploy/crds/`, keyed by the file it is written to.
#[cfg(feature = "crd")]
pub fn owned_crds() -> Vec<(
    &'static str,
    k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
)> {
    vec![("nim.opendatahub.io_accounts.yaml", account::crd())]
}
