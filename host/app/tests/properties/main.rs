//! Property tests of the host's parsers of untrusted input (issue #18): AdmissionReview
//! decoding, the plugins ConfigMap, and the JSON patch a mutating webhook answers with.
//!
//! Each property runs proptest's 256 cases in `cargo test`; a long run sets the count, e.g.
//! `PROPTEST_CASES=1000000 cargo test -p odh-model-controller --test properties`
//! (docs/reliability.md). A failure prints the minimal input and is kept in
//! `*.proptest-regressions` beside the module, to be committed with its fix.

mod json;
mod patch;
mod registry_config;
mod review;
