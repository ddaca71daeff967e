//! Model Registry synchronisation (spec isvc.md §1.4 step 2 and §1.8).
//!
//! Mirrors the external Go library `kubeflow/hub/pkg/inferenceservice-controller` (v0.3.9) as
//! wired by odh-model-controller: for every InferenceService request the single
//! `DataScienceCluster` supplies the default Model Registry namespace, then an ISVC labelled with a
//! Model Registry id is mirrored into the registry's REST API (OpenAPI `v1alpha3`) as a
//! `ServingEnvironment` (one per ISVC namespace) and an `InferenceService` record.
//!
//! The plugin only decides: the REST calls go out through [`Http`] (the host's `wasi:http`
//! in production, a fake in tests), while the writes the Go library makes to the ISVC itself
//! (adding/removing the MR finalizer, setting the `inference-service-id` label, each a full
//! UPDATE there) are returned as one [`IsvcChange`] for the host to apply.

use std::collections::BTreeMap;

use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::http::Response;
use odh_plugin_sdk::{Error, Gvk, Object, Value, core_gvk, gvk, json, log};

mod client;
mod service_url;
#[cfg(test)]
mod tests;

use client::MrClient;

/// ISVC label holding the id of the Model Registry `InferenceService` record.
pub const INFERENCE_SERVICE_ID_LABEL: &str = "modelregistry.opendatahub.io/inference-service-id";
/// ISVC label holding the id of the registered model to serve.
pub const REGISTERED_MODEL_ID_LABEL: &str = "modelregistry.opendatahub.io/registered-model-id";
/// ISVC label holding the id of the model version to serve (optional).
pub const MODEL_VERSION_ID_LABEL: &str = "modelregistry.opendatahub.io/model-version-id";
/// ISVC label overriding the namespace of the Model Registry.
pub const MR_NAMESPACE_LABEL: &str = "modelregistry.opendatahub.io/namespace";
/// ISVC label naming the Model Registry Service.
pub const MR_NAME_LABEL: &str = "modelregistry.opendatahub.io/name";
/// ISVC annotation giving the Model Registry base URL directly.
pub const MR_URL_ANNOTATION: &str = "modelregistry.opendatahub.io/url";
/// Finalizer the sync puts on every ISVC it mirrors.
pub const MR_FINALIZER: &str = "modelregistry.opendatahub.io/finalizer";
/// Model Registry Service annotation with the external REST address (`https://` is prepended).
pub const SERVICE_URL_ANNOTATION: &str = "routing.opendatahub.io/external-address-rest";
/// Path prefix of the Model Registry REST API.
pub const API_PREFIX: &str = "/api/model_registry/v1alpha3";
/// Name of the Model Registry Service port serving the REST API.
pub const HTTP_API_PORT_NAME: &str = "http-api";

/// `datasciencecluster.opendatahub.io/v1` `DataScienceCluster` (cluster-scoped).
pub fn dsc_gvk() -> Gvk {
    gvk(
        "datasciencecluster.opendatahub.io",
        "v1",
        "DataScienceCluster",
    )
}

/// Outgoing HTTP, abstracted so the sync can be tested natively.
pub trait Http {
    /// One request; any HTTP status is an `Ok` response, transport failures are errors.
    fn request(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Result<Response, Error>;
}

/// [`Http`] through the plugin host (`odh_plugin_sdk::http::request`).
#[derive(Clone, Copy, Debug, Default)]
pub struct HostHttp;

impl Http for HostHttp {
    fn request(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Result<Response, Error> {
        odh_plugin_sdk::http::request(method, url, headers, body)
    }
}

/// Settings of the Model Registry client.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    /// Sent as `Authorization: Bearer <token>` on every Model Registry call, only when non-empty.
    pub bearer_token: Option<String>,
}

/// What the sync wants done to the ISVC itself (applied by the host as a metadata update of
/// the primary).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IsvcChange {
    /// Labels to set (`Some`) or remove (`None`); labels not listed are left alone.
    pub labels: BTreeMap<String, Option<String>>,
    /// The complete desired `metadata.finalizers` list (other finalizers kept in their order).
    pub finalizers: Vec<String>,
}

impl IsvcChange {
    /// Applies the change to an ISVC held as JSON (what the host does; handy in tests).
    pub fn apply_to(&self, isvc: &mut Value) {
        let mut object = Object(std::mem::take(isvc));
        for (key, value) in &self.labels {
            match value {
                Some(value) => object.set_label(key, value),
                None => {
                    object.remove_label(key);
                }
            }
        }
        object.set(&["metadata", "finalizers"], json!(self.finalizers));
        *isvc = object.into_value();
    }
}

/// Result of one Model Registry reconcile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MrOutcome {
    /// The ISVC update to make, if any.
    pub change: Option<IsvcChange>,
    /// Requeue after this many milliseconds (the Go library never asks for one; kept for the
    /// merge rule of §1.4 step 2.3).
    pub requeue_after_ms: Option<u64>,
}

/// Step 2 of §1.4 (the `DataScienceCluster` lookup, with its exact error texts) followed by the
/// Model Registry reconcile of §1.8. `isvc` is none when the request's ISVC does not exist (the
/// DSC lookup still runs and can still fail).
pub fn reconcile(
    isvc: Option<&Value>,
    cluster: &dyn Cluster,
    http: &dyn Http,
    config: &Config,
) -> Result<MrOutcome, Error> {
    let default_namespace = registries_namespace(cluster)?;
    let Some(isvc) = isvc else {
        log::debug!("Stop ModelRegistry InferenceService reconciliation, ISVC not found.");
        return Ok(MrOutcome::default());
    };
    sync(
        &Object(isvc.clone()),
        &default_namespace,
        cluster,
        http,
        config,
    )
}

/// `spec.components.modelregistry.registriesNamespace` of the one `DataScienceCluster`.
pub fn registries_namespace(cluster: &dyn Cluster) -> Result<String, Error> {
    const GET_DSC: &str = "failed to get DataScienceCluster";
    const GET_NS: &str = "failed to get Model Registry Namespace from DataScienceCluster";
    let dscs = cluster
        .list(&dsc_gvk(), None, None)
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

/// `unstructured.NestedFieldNoCopy`: the value at `fields` (none when a step is absent or
/// null), or the accessor error when a step is not a map.
fn nested_field<'a>(object: &'a Value, fields: &[&str]) -> Result<Option<&'a Value>, String> {
    let mut value = object;
    for (i, field) in fields.iter().enumerate() {
        if value.is_null() {
            return Ok(None);
        }
        let Some(map) = value.as_object() else {
            let (text, type_name) = go_value(value);
            return Err(format!(
                ".{} accessor error: {text} is of the type {type_name}, expected map[string]interface{{}}",
                fields[..i].join(".")
            ));
        };
        match map.get(*field) {
            Some(next) => value = next,
            None => return Ok(None),
        }
    }
    Ok(Some(value))
}

/// A JSON value as Go's `%v` and `%T` print it after unstructured decoding.
fn go_value(value: &Value) -> (String, &'static str) {
    match value {
        Value::Null => ("<nil>".into(), "<nil>"),
        Value::Bool(b) => (b.to_string(), "bool"),
        Value::Number(n) => match n.as_i64() {
            Some(i) => (i.to_string(), "int64"),
            None => (n.to_string(), "float64"),
        },
        Value::String(s) => (s.clone(), "string"),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(|v| go_value(v).0).collect();
            (format!("[{}]", items.join(" ")), "[]interface {}")
        }
        Value::Object(map) => {
            let entries: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{k}:{}", go_value(v).0))
                .collect();
            (
                format!("map[{}]", entries.join(" ")),
                "map[string]interface {}",
            )
        }
    }
}

/// §1.8 for one existing ISVC.
fn sync(
    isvc: &Object,
    default_namespace: &str,
    cluster: &dyn Cluster,
    http: &dyn Http,
    config: &Config,
) -> Result<MrOutcome, Error> {
    let labels = isvc.labels();
    let isvc_id = labels.get(INFERENCE_SERVICE_ID_LABEL).map(String::as_str);
    let registered_model_id = labels.get(REGISTERED_MODEL_ID_LABEL).map(String::as_str);
    let model_version_id = labels
        .get(MODEL_VERSION_ID_LABEL)
        .map(String::as_str)
        .unwrap_or_default();
    let mr_name = labels.get(MR_NAME_LABEL).map(String::as_str);
    let mr_url = isvc.annotation(MR_URL_ANNOTATION);
    let namespace = isvc.namespace().unwrap_or_default();
    let name = isvc.name();

    if isvc_id.is_none() && registered_model_id.is_none() {
        log::info!(
            "missing model registry specific label, unable to link ISVC to Model Registry, skipping InferenceService: {name}"
        );
        return Ok(MrOutcome::default());
    }
    let mr_namespace = labels
        .get(MR_NAMESPACE_LABEL)
        .map(String::as_str)
        .unwrap_or(default_namespace);
    if mr_name.is_none() && mr_url.is_none() {
        log::info!(
            "missing {MR_NAME_LABEL} or {MR_URL_ANNOTATION}, will try to connect to the Model Registry service in the namespace {mr_namespace}"
        );
    }
    let mr_name = mr_name.unwrap_or_default();
    let mr_url = mr_url.unwrap_or_default();
    let finalizers: Vec<String> = isvc.finalizers().into_iter().map(String::from).collect();

    if isvc.is_deleting() {
        if !finalizers.iter().any(|f| f == MR_FINALIZER) {
            return Ok(MrOutcome::default());
        }
        // Best effort: the finalizer goes even when the registry cannot be told.
        match MrClient::connect(cluster, http, config, mr_name, mr_namespace, mr_url) {
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
        let finalizers = finalizers
            .into_iter()
            .filter(|f| f != MR_FINALIZER)
            .collect();
        return Ok(MrOutcome {
            change: Some(IsvcChange {
                labels: BTreeMap::new(),
                finalizers,
            }),
            requeue_after_ms: None,
        });
    }

    let client = MrClient::connect(cluster, http, config, mr_name, mr_namespace, mr_url)?;

    let mut finalizers = finalizers;
    let mut finalizer_added = false;
    if !finalizers.iter().any(|f| f == MR_FINALIZER) {
        log::info!("Adding Finalizer for ModelRegistry");
        finalizers.push(MR_FINALIZER.to_string());
        finalizer_added = true;
    }

    let serving_environment = client.get_or_create_serving_environment(namespace)?;
    let status_url = isvc.str_at(&["status", "url"]);

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
    let mut label_changes = BTreeMap::new();
    if isvc_id != Some(mr_is_id.as_str()) {
        label_changes.insert(INFERENCE_SERVICE_ID_LABEL.to_string(), Some(mr_is_id));
    }
    let change = (finalizer_added || !label_changes.is_empty()).then_some(IsvcChange {
        labels: label_changes,
        finalizers,
    });
    Ok(MrOutcome {
        change,
        requeue_after_ms: None,
    })
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
