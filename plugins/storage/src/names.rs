//! Upstream's names, keys and labels for the two controllers, exact.

/// The ConfigMap controller (upstream's `core-configmap`).
pub const CONFIGMAP_CONTROLLER: &str = "core-configmap";
/// The Secret controller (upstream's `secret`).
pub const SECRET_CONTROLLER: &str = "secret";

/// The bundle the ConfigMap controller writes and the Secret controller reads.
pub const CA_BUNDLE: &str = "odh-kserve-custom-ca-bundle";
/// The bundle's one key.
pub const CA_BUNDLE_KEY: &str = "cabundle.crt";
/// The platform-wide trusted CA bundle (created by the ODH operator).
pub const TRUSTED_CA_BUNDLE: &str = "odh-trusted-ca-bundle";
/// The OpenShift service CA (present in every namespace on OpenShift).
pub const SERVICE_CA: &str = "openshift-service-ca.crt";

/// `CABundleConfigMaps`: each source and the keys read from it, in the order they are joined
/// (sources by name, lexicographically; keys as listed).
pub const CA_SOURCES: [(&str, &[&str]); 2] = [
    (TRUSTED_CA_BUNDLE, &["ca-bundle.crt", "odh-ca-bundle.crt"]),
    (SERVICE_CA, &["service-ca.crt"]),
];

/// The merged data-connection Secret.
pub const STORAGE_CONFIG: &str = "storage-config";
/// Secrets the Secret controller ignores whatever their labels (the Ray TLS material).
pub const RAY_SECRETS: [&str; 2] = ["ray-ca-tls", "ray-tls"];

/// With `opendatahub.io/managed=true`, marks a data connection.
pub const DASHBOARD_LABEL: &str = "opendatahub.io/dashboard";
/// The data connections: managed and dashboard Secrets.
pub const DATA_CONNECTIONS: &str = "opendatahub.io/managed=true,opendatahub.io/dashboard=true";
/// A data connection's type, copied into the JSON `type` field.
pub const CONNECTION_TYPE: &str = "opendatahub.io/connection-type";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_in_lexicographic_order_of_name() {
        assert!(CA_SOURCES.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn data_connection_selector_names_both_labels() {
        assert_eq!(
            DATA_CONNECTIONS,
            format!("{}=true,{DASHBOARD_LABEL}=true", odh_kinds::label::MANAGED)
        );
    }
}
