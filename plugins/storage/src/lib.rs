//! The storage plugin (docs/plugins/storage.md): two controllers that prepare what KServe's
//! storage initializer reads in each namespace.
//!
//! * `core-configmap`: the ConfigMap `odh-kserve-custom-ca-bundle`, joined from
//!   `odh-trusted-ca-bundle` and `openshift-service-ca.crt`; a change deletes a managed
//!   `storage-config` so that it is rebuilt ([`ca_bundle`]).
//! * `secret`: the Secret `storage-config`, one JSON document per data connection, encoded as
//!   Go's `encoding/json` does ([`storage_config`], `odh_go_compat::json`).
//!
//! Neither controller owns what it writes (no owner references, as upstream): the objects are
//! per namespace, made from several sources.

pub mod ca_bundle;
pub mod names;
pub mod storage_config;

use odh_kinds::{gvk, selector};
use odh_plugin_sdk::{
    Controller, Ctx, Error, EventFilter, Manifest, NoSettings, Outcome, Plugin, ReconcileRequest,
};

use names::{CA_BUNDLE, CONFIGMAP_CONTROLLER, SECRET_CONTROLLER, SERVICE_CA, TRUSTED_CA_BUNDLE};

pub struct Storage;

impl Plugin for Storage {
    type Settings = NoSettings;

    fn manifest() -> Manifest {
        // Only three names' events reach the plugin (`event_filters`).
        let configmaps = Controller::new(CONFIGMAP_CONTROLLER, gvk::config_map());
        // Upstream caches only managed Secrets; the primary's selector is that cache filter.
        let secrets = Controller::new(SECRET_CONTROLLER, gvk::secret())
            .primary_label_selector(selector::MANAGED);
        Manifest::new("storage", env!("CARGO_PKG_VERSION"))
            .description("ConfigMap controller (KServe custom CA bundle odh-kserve-custom-ca-bundle) and Secret controller (storage-config from the data connections)")
            .controller(configmaps)
            .controller(secrets)
            .reads([gvk::config_map(), gvk::secret()])
            // The bundle and storage-config, neither owned by its primary.
            .writes([gvk::config_map(), gvk::secret()])
    }

    /// Upstream's name predicate of `core-configmap`: the two sources and the bundle. The host
    /// drops every other ConfigMap's events (and leaves them out of resyncs) before any call.
    fn event_filters() -> Vec<EventFilter> {
        vec![
            EventFilter::new(CONFIGMAP_CONTROLLER, gvk::config_map()).names([
                TRUSTED_CA_BUNDLE,
                CA_BUNDLE,
                SERVICE_CA,
            ]),
        ]
    }

    fn reconcile(request: &ReconcileRequest, cx: &Ctx<NoSettings>) -> Result<Outcome, Error> {
        match request.controller.as_str() {
            CONFIGMAP_CONTROLLER => ca_bundle::reconcile(request, cx.cluster),
            SECRET_CONTROLLER => storage_config::reconcile(request, cx.cluster),
            other => Err(Error::Invalid(format!("unknown controller {other:?}"))),
        }
    }
}

odh_plugin_sdk::plugin!(Storage);
