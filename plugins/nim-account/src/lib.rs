//! odh-model-controller plugin: the NVIDIA NIM Account controller and webhook. Work in progress.
