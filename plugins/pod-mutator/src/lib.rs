//! odh-model-controller plugin: the Pod mutating webhook (Ray TLS volumes and init container) (spec core.md). Work in progress.
