//! Types of the custom resources odh-model-controller owns, shared by the host (which ships
//! their CRDs) and the plugins (which read and write their objects).
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
