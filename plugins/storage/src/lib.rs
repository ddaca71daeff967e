//! odh-model-controller plugin: the ConfigMap controller (KServe custom CA bundle) and the Secret controller (storage-config) (spec core.md). Work in progress.
