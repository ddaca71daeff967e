//! Kubernetes label selectors in their string form, written once for the host and the plugin
//! SDK (`odh-label-selector`).

pub use odh_label_selector::{LabelSelector, SelectorError};
