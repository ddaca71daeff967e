//! odh-model-controller plugin: the LLMInferenceService controller and webhooks (part 1), the Gateway controller and the model-serving-api (part 2). Work in progress.
