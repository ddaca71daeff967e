//! The names, keys and strings upstream's NIM Account controller uses, exactly.

/// The controller's name.
pub const CONTROLLER: &str = "odh-nim-controller";
/// Held on every Account until its generated objects are cleaned up.
pub const FINALIZER: &str = "runtimes.opendatahub.io/nim-cleanup-finalizer";
/// On the API-key Secret: re-validate the key now, whatever the refresh rate says.
pub const FORCE_VALIDATION: &str = "runtimes.opendatahub.io/nim-force-validation";
/// On the Account: the API-key Secret resourceVersion whose force-validation annotation was
/// honoured (the plugin cannot remove a Secret annotation it does not own; see the docs).
pub const FORCE_VALIDATION_SEEN: &str = "runtimes.opendatahub.io/nim-force-validation-seen";
/// The common label on every generated object.
pub const MANAGED_LABEL: &str = "opendatahub.io/managed";
/// The API key's data key in its Secret.
pub const API_KEY_DATA: &str = "api_key";
/// The model list's data key in its ConfigMap.
pub const MODELS_DATA: &str = "models";
/// The marker annotation of the generated ServingRuntime.
pub const NIM_RUNTIME_ANNOTATION: &str = "runtimes.opendatahub.io/nvidia-nim";
/// The refresh used when a rate is empty or unparsable: 24 h.
pub const DEFAULT_REFRESH_SECS: u64 = 24 * 3600;

/// The validating webhook's path.
pub const WEBHOOK_PATH: &str = "/validate-nim-opendatahub-io-v1-account";

/// `<account>-cm`: the model-info ConfigMap.
pub fn config_map_name(account: &str) -> String {
    format!("{account}-cm")
}

/// `<account>-template`: the OpenShift Template holding the NIM ServingRuntime.
pub fn template_name(account: &str) -> String {
    format!("{account}-template")
}

/// `<account>-pull`: the image pull Secret for `nvcr.io`.
pub fn pull_secret_name(account: &str) -> String {
    format!("{account}-pull")
}

/// Condition types, in the canonical order upstream fills defaults in.
pub mod condition {
    pub const ACCOUNT_STATUS: &str = "AccountStatus";
    pub const TEMPLATE_UPDATE: &str = "TemplateUpdate";
    pub const SECRET_UPDATE: &str = "SecretUpdate";
    pub const CONFIG_MAP_UPDATE: &str = "ConfigMapUpdate";
    pub const API_KEY_VALIDATION: &str = "APIKeyValidation";
    pub const CANONICAL_ORDER: [&str; 5] = [
        ACCOUNT_STATUS,
        TEMPLATE_UPDATE,
        SECRET_UPDATE,
        CONFIG_MAP_UPDATE,
        API_KEY_VALIDATION,
    ];
}

/// Condition messages (exact).
pub mod message {
    pub const KEY_VALIDATED: &str = "api key validated successfully";
    pub const KEY_AIR_GAPPED: &str =
        "api key validation marked successful because NIM air-gapped mode is enabled";
    pub const FETCH_RUNTIMES_FAILED: &str = "failed to fetch NIM runtimes";
    pub const KEY_FAILED: &str = "api key failed validation";
    pub const CM_UPDATED: &str = "nim config reconciled successfully";
    pub const CM_AIR_GAPPED: &str =
        "configmap update marked successful because NIM air-gapped mode is enabled";
    pub const CM_FAILED: &str = "nim config reconciliation failed";
    pub const TEMPLATE_UPDATED: &str = "runtime template reconciled successfully";
    pub const TEMPLATE_FAILED: &str = "runtime template reconcile failed";
    pub const SECRET_UPDATED: &str = "pull secret reconciled successfully";
    pub const SECRET_FAILED: &str = "pull secret reconcile failed";
    pub const HEALTHY: &str = "the account is healthy";
    pub const SECRET_NOT_FOUND: &str = "api key secret not found";
    pub const SECRET_FETCH_FAILED: &str = "failed to fetch api key secret";
    pub const NO_KEY_DATA: &str = "failed to find api key data in secret";
    pub const DISABLED: &str = "NIM has been disabled";
}
