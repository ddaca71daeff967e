//! Model Registry synchronisation (docs/plugins/isvc.md, "Model Registry sync").
//!
//! Mirrors the external Go library `kubeflow/hub/pkg/inferenceservice-controller` (v0.3.9) as
//! wired by odh-model-controller: for every InferenceService request the single
//! `DataScienceCluster` supplies the default Model Registry namespace, then an ISVC labelled with a
//! Model Registry id is mirrored into the registry's REST API (OpenAPI `v1alpha3`) as a
//! `ServingEnvironment` (one per ISVC namespace) and an `InferenceService` record.
//!
//! The REST calls go out through the context's [`Client`] (the host's `wasi:http` in
//! production, a fake in tests), while the writes the Go library makes to the ISVC itself
//! (adding/removing the MR finalizer, setting the `inference-service-id` label, each a full
//! UPDATE there) become a patch of the primary's metadata in the [`Plan`]. The library never
//! asks for a requeue; if it did, [`Plan::requeue_within`] would keep the soonest, as
//! upstream merges the two results.

use odh_kinds::annotation::{MR_EXTERNAL_ADDRESS_REST, MR_URL};
use odh_kinds::finalizer::MODEL_REGISTRY as MR_FINALIZER;
use odh_kinds::label::{
    MR_INFERENCE_SERVICE_ID as INFERENCE_SERVICE_ID_LABEL,
    MR_MODEL_VERSION_ID as MODEL_VERSION_ID_LABEL, MR_NAME as MR_NAME_LABEL,
    MR_NAMESPACE as MR_NAMESPACE_LABEL, MR_REGISTERED_MODEL_ID as REGISTERED_MODEL_ID_LABEL,
};
use odh_kinds::{InferenceService, gvk};
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::http::Client;
use odh_plugin_sdk::json::nested_field;
use odh_plugin_sdk::{Error, Object, Plan, Value, json, log};

use crate::settings::ModelRegistrySettings;

mod client;
mod service_url;
#[cfg(test)]
mod tests;

use client::MrClient;

/// Path prefix of the Model Registry REST API.
pub const API_PREFIX: &str = "/api/model_registry/v1alpha3";
/// Name of the Model Registry Service port serving the REST API.
pub const HTTP_API_PORT_NAME: &str = "http-api";

/// The `DataScienceCluster` lookup (with upstream's exact error texts) followed by the Model
/// Registry reconcile. `isvc` is none when the request's ISVC does not exist (the
/// DSC lookup still runs and can still fail).
pub fn reconcile(
    isvc: Option<&Object>,
    cluster: &dyn Cluster,
    http: &dyn Client,
    settings: &ModelRegistrySettings,
    plan: &mut Plan,
) -> Result<(), Error> {
    let default_namespace = registries_namespace(cluster)?;
    let Some(isvc) = isvc else {
        log::debug!("Stop ModelRegistry InferenceService reconciliation, ISVC not found.");
        return Ok(());
    };
    sync(isvc, &default_namespace, cluster, http, settings, plan)
}

/// `spec.components.modelregistry.registriesNamespace` of the one `DataScienceCluster`.
pub fn registries_namespace(cluster: &dyn Cluster) -> Result<String, Error> {
    const GET_DSC: &str = "failed to get DataScienceCluster";
    const GET_NS: &str = "failed to get Model Registry Namespace from DataScienceCluster";
    let dscs = cluster
        .list(&gvk::data_science_cluster(), None, None)
        .map_err(|e| Error::Transient(format!("{GET_DSC}: {}", e.message())))?;
    let [dsc] = dscs.as_slice() else {
        return Err(Error::Transient(format!(
            "{GET_DSC}: only one DataScienceCluster is allowed"
        )));
    };
    let value = match nested_field(
        dsc,
        &["spec", "components", "modelregistry", "registriesNamespace"],
    ) {
        Ok(Some(value)) => value,
        // Go formats the nil error of a missing field with `%w`.
        Ok(None) => return Err(Error::Transient(format!("{GET_NS}: %!w(<nil>)"))),
        Err(e) => return Err(Error::Transient(format!("{GET_NS}: {e}"))),
    };
    match value.as_str() {
        Some(ns) if !ns.is_empty() => Ok(ns.to_string()),
        _ => Err(Error::Transient(format!("{GET_NS}: invalid namespace"))),
    }
}

/// The Model Registry reconcile of one existing ISVC.
fn sync(
    isvc: &Object,
    default_namespace: &str,
    cluster: &dyn Cluster,
    http: &dyn Client,
    settings: &ModelRegistrySettings,
    plan: &mut Plan,
) -> Result<(), Error> {
    let labels = isvc.labels();
    let isvc_id = labels.get(INFERENCE_SERVICE_ID_LABEL).map(String::as_str);
    let registered_model_id = labels.get(REGISTERED_MODEL_ID_LABEL).map(String::as_str);
    let model_version_id = labels
        .get(MODEL_VERSION_ID_LABEL)
        .map(String::as_str)
        .unwrap_or_default();
    let mr_name = labels.get(MR_NAME_LABEL).map(String::as_str);
    let mr_url = isvc.annotation(MR_URL);
    let namespace = isvc.namespace().unwrap_or_default();
    let name = isvc.name();

    if isvc_id.is_none() && registered_model_id.is_none() {
        log::info!(
            "missing model registry specific label, unable to link ISVC to Model Registry, skipping InferenceService: {name}"
        );
        return Ok(());
    }
    let mr_namespace = labels
        .get(MR_NAMESPACE_LABEL)
        .map(String::as_str)
        .unwrap_or(default_namespace);
    if mr_name.is_none() && mr_url.is_none() {
        log::info!(
            "missing {MR_NAME_LABEL} or {MR_URL}, will try to connect to the Model Registry service in the namespace {mr_namespace}"
        );
    }
    let mr_name = mr_name.unwrap_or_default();
    let mr_url = mr_url.unwrap_or_default();
    let finalizers: Vec<String> = isvc.finalizers().into_iter().map(String::from).collect();

    if isvc.is_deleting() {
        if !finalizers.iter().any(|f| f == MR_FINALIZER) {
            return Ok(());
        }
        // Best effort: the finalizer goes even when the registry cannot be told.
        match MrClient::connect(cluster, http, settings, mr_name, mr_namespace, mr_url) {
            Err(e) => log::info!(
                "Model Registry service unavailable during deletion, skipping state update: {}",
                e.message()
            ),
            Ok(client) => {
                if let Some(id) = isvc_id {
                    match client.get_inference_service(id) {
                        Err(e) => log::info!(
                            "Unable to fetch InferenceService {id} from Model Registry during deletion: {e}"
                        ),
                        Ok(mr_is) => {
                            if let Err(e) = client.undeploy(&mr_is) {
                                log::error!(
                                    "Failed to update DesiredState to UNDEPLOYED, proceeding with finalizer removal: {e}"
                                );
                            }
                        }
                    }
                }
            }
        }
        log::info!("Removing Finalizer for modelRegistry");
        let finalizers: Vec<String> = finalizers
            .into_iter()
            .filter(|f| f != MR_FINALIZER)
            .collect();
        plan.set_primary_finalizers(&finalizers);
        return Ok(());
    }

    let client = MrClient::connect(cluster, http, settings, mr_name, mr_namespace, mr_url)?;

    let mut finalizers = finalizers;
    let mut finalizer_added = false;
    if !finalizers.iter().any(|f| f == MR_FINALIZER) {
        log::info!("Adding Finalizer for ModelRegistry");
        finalizers.push(MR_FINALIZER.to_string());
        finalizer_added = true;
    }

    let serving_environment = client.get_or_create_serving_environment(namespace)?;
    let status_url = InferenceService::of(isvc).status_url();

    let mr_is = if let Some(id) = isvc_id {
        log::info!("Retrieving model registry InferenceService by id {id}");
        let mr_is = client.get_inference_service(id).map_err(|e| {
            Error::Transient(format!(
                "unable to find InferenceService with id {id} in model registry: {e}"
            ))
        })?;
        let current_url = string_custom_property(&mr_is, "url").unwrap_or_default();
        if url_differs(status_url, current_url) {
            client
                .update_url(&mr_is, status_url.unwrap_or_default())
                .map_err(Error::Transient)?;
        }
        mr_is
    } else {
        let serving_environment_id = resource_id(&serving_environment).ok_or_else(|| {
            Error::Transient("the model registry ServingEnvironment has no id".into())
        })?;
        let registered_model_id = registered_model_id.unwrap_or_default();
        client.create_inference_service(
            isvc,
            &serving_environment_id,
            registered_model_id,
            model_version_id,
            status_url,
        )?
    };

    let Some(mr_is_id) = resource_id(&mr_is) else {
        return Err(Error::Transient(
            "unexpected nil model registry InferenceService".into(),
        ));
    };
    let id_changed = isvc_id != Some(mr_is_id.as_str());
    if id_changed {
        plan.set_primary_label(INFERENCE_SERVICE_ID_LABEL, Some(&mr_is_id));
    }
    // Go updates the whole object, finalizers included, whenever anything changed.
    if finalizer_added || id_changed {
        plan.set_primary_finalizers(&finalizers);
    }
    Ok(())
}

/// `checkURLDiff`: whether the registry's `url` property must follow the ISVC `status.url`.
fn url_differs(status_url: Option<&str>, mr_url: &str) -> bool {
    match status_url {
        None => !mr_url.is_empty(),
        Some(url) => url != mr_url,
    }
}

/// A `MetadataStringValue` custom property of a registry record.
fn string_custom_property<'a>(record: &'a Value, key: &str) -> Option<&'a str> {
    let property = record.get("customProperties")?.get(key)?;
    if property.get("metadataType").and_then(Value::as_str) != Some("MetadataStringValue") {
        return None;
    }
    property.get("string_value").and_then(Value::as_str)
}

/// The `id` of a registry record (a string in the API; a number is accepted too).
fn resource_id(record: &Value) -> Option<String> {
    match record.get("id")? {
        Value::String(id) => Some(id.clone()),
        Value::Number(id) => Some(id.to_string()),
        _ => None,
    }
}

/// A `MetadataStringValue` as the API encodes it.
fn string_value(value: &str) -> Value {
    json!({ "metadataType": "MetadataStringValue", "string_value": value })
}
