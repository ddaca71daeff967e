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

#[cfg(test)]
mod tests;

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

/// The Model Registry REST client (what the generated Go `openapi.APIClient` does).
struct MrClient<'a> {
    base: String,
    authorization: Option<String>,
    http: &'a dyn Http,
}

impl<'a> MrClient<'a> {
    /// `initModelRegistryService`: the base URL from the annotation, else from the Service.
    fn connect(
        cluster: &dyn Cluster,
        http: &'a dyn Http,
        config: &Config,
        name: &str,
        namespace: &str,
        url: &str,
    ) -> Result<MrClient<'a>, Error> {
        let base = if url.is_empty() {
            url_from_service(cluster, name, namespace)?
        } else {
            url.to_string()
        };
        let authorization = config
            .bearer_token
            .as_deref()
            .filter(|t| !t.is_empty())
            .map(|t| format!("Bearer {t}"));
        Ok(MrClient {
            base: base.trim_end_matches('/').to_string(),
            authorization,
            http,
        })
    }

    /// One call: `path` under [`API_PREFIX`]; a status ≥ 300 is an error worded like the Go
    /// client's (`404 Not Found`); a 2xx body is parsed as JSON.
    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, String> {
        let url = format!("{}{API_PREFIX}{path}", self.base);
        let mut headers = vec![("Accept", "application/json")];
        if body.is_some() {
            headers.push(("Content-Type", "application/json"));
        }
        if let Some(authorization) = &self.authorization {
            headers.push(("Authorization", authorization.as_str()));
        }
        let body = body.map(|b| b.to_string().into_bytes());
        let response = self
            .http
            .request(method, &url, &headers, body.as_deref())
            .map_err(|e| e.message().to_string())?;
        if response.status >= 300 {
            return Err(status_line(response.status));
        }
        odh_plugin_sdk::serde_json::from_slice(&response.body)
            .map_err(|e| format!("{method} {url}: response is not the expected JSON: {e}"))
    }

    fn get_inference_service(&self, id: &str) -> Result<Value, String> {
        self.call(
            "GET",
            &format!("/inference_services/{}", path_escape(id)),
            None,
        )
    }

    /// `onDeletion`: desiredState → `UNDEPLOYED` unless unset or already so.
    fn undeploy(&self, mr_is: &Value) -> Result<(), String> {
        let state = mr_is.get("desiredState").and_then(Value::as_str);
        if state.is_none_or(|s| s == "UNDEPLOYED") {
            return Ok(());
        }
        log::info!(
            "InferenceService going to be deleted from cluster, setting desired state to UNDEPLOYED in model registry"
        );
        let id = resource_id(mr_is).unwrap_or_default();
        self.call(
            "PATCH",
            &format!("/inference_services/{}", path_escape(&id)),
            Some(&json!({ "desiredState": "UNDEPLOYED" })),
        )
        .map(drop)
    }

    /// `updateMRInferenceService`: customProperties.url := `url`, other properties kept.
    fn update_url(&self, mr_is: &Value, url: &str) -> Result<(), String> {
        log::info!("Updating model registry InferenceService..");
        let mut properties = mr_is
            .get("customProperties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        properties.insert("url".into(), string_value(url));
        let id = resource_id(mr_is).unwrap_or_default();
        self.call(
            "PATCH",
            &format!("/inference_services/{}", path_escape(&id)),
            Some(&json!({ "customProperties": properties })),
        )
        .map(drop)
    }

    /// `getOrCreateServingEnvironment`: find by name, create on any find failure.
    fn get_or_create_serving_environment(&self, namespace: &str) -> Result<Value, Error> {
        let found = self.call(
            "GET",
            &format!("/serving_environment?name={}", query_escape(namespace)),
            None,
        );
        match found {
            Ok(environment) => Ok(environment),
            Err(_) => {
                log::info!("ServingEnvironment not found, creating it..");
                self.call(
                    "POST",
                    "/serving_environments",
                    Some(&json!({ "name": namespace })),
                )
                .map_err(|e| Error::Transient(format!("unable to create ServingEnvironment: {e}")))
            }
        }
    }

    /// `createMRInferenceService`: find `<isvc name>/<isvc uid>` in the serving environment,
    /// create it (DEPLOYED) on any find failure.
    fn create_inference_service(
        &self,
        isvc: &Object,
        serving_environment_id: &str,
        registered_model_id: &str,
        model_version_id: &str,
        status_url: Option<&str>,
    ) -> Result<Value, Error> {
        let is_name = format!("{}/{}", isvc.name(), isvc.uid().unwrap_or_default());
        let found = self.call(
            "GET",
            &format!(
                "/inference_service?name={}&parentResourceId={}",
                query_escape(&is_name),
                query_escape(serving_environment_id)
            ),
            None,
        );
        if let Ok(existing) = found {
            return Ok(existing);
        }
        log::info!(
            "Creating new model registry InferenceService {is_name} (registeredModelId {registered_model_id}, modelVersionId {model_version_id:?})"
        );
        // Go dereferences `spec.predictor.model` here and panics without it.
        let model = isvc
            .at(&["spec", "predictor", "model"])
            .filter(|m| m.is_object())
            .ok_or_else(|| {
                Error::Transient(format!(
                    "InferenceService {}/{} has no spec.predictor.model",
                    isvc.namespace().unwrap_or_default(),
                    isvc.name()
                ))
            })?;
        let mut create = json!({
            "name": is_name,
            "desiredState": "DEPLOYED",
            "registeredModelId": registered_model_id,
            "servingEnvironmentId": serving_environment_id,
        });
        if !model_version_id.is_empty() {
            create["modelVersionId"] = model_version_id.into();
        }
        if let Some(runtime) = model.get("runtime").and_then(Value::as_str) {
            create["runtime"] = runtime.into();
        }
        if let Some(url) = status_url {
            create["customProperties"] = json!({ "url": string_value(url) });
        }
        self.call("POST", "/inference_services", Some(&create))
            .map_err(Error::Transient)
    }
}

/// `getMRUrlFromService`: the Model Registry Service (by name, or the unique one labelled
/// `component=model-registry`) turned into a base URL.
fn url_from_service(cluster: &dyn Cluster, name: &str, namespace: &str) -> Result<String, Error> {
    let service = find_service(cluster, name, namespace)
        .map_err(|e| Error::Transient(format!("unable to find the Model Registry service: {e}")))?;
    let service = Object(service);
    if let Some(address) = service.annotation(SERVICE_URL_ANNOTATION) {
        return Ok(format!("https://{address}"));
    }
    let port = service
        .at(&["spec", "ports"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|p| p.get("name").and_then(Value::as_str) == Some(HTTP_API_PORT_NAME))
        .and_then(|p| p.get("port"))
        .and_then(Value::as_i64)
        .ok_or_else(|| {
            Error::Transient("unable to find the http port in the Model Registry service".into())
        })?;
    Ok(format!(
        "http://{}.{}.svc.cluster.local:{port}",
        service.name(),
        service.namespace().unwrap_or_default()
    ))
}

/// `getMRService` (its errors unwrapped, as text).
fn find_service(cluster: &dyn Cluster, name: &str, namespace: &str) -> Result<Value, String> {
    let service_gvk = core_gvk("Service");
    if name.is_empty() {
        // An empty namespace lists every namespace, as controller-runtime's `InNamespace("")`.
        let scope = Some(namespace).filter(|ns| !ns.is_empty());
        let mut services = cluster
            .list(&service_gvk, scope, Some("component=model-registry"))
            .map_err(|e| {
                format!(
                    "unable to list services in the namespace {namespace}: {}",
                    e.message()
                )
            })?;
        return match services.len() {
            0 => Err(format!(
                "no model registry services found in the namespace {namespace}"
            )),
            1 => Ok(services.remove(0)),
            _ => Err(format!(
                "more than one model registry service found in the namespace {namespace}, consider to specify the name in the label {MR_NAME_LABEL}"
            )),
        };
    }
    match cluster.get(&service_gvk, Some(namespace), name) {
        Ok(Some(service)) => Ok(service),
        Ok(None) => Err(format!("services \"{name}\" not found")),
        Err(e) => Err(e.message().to_string()),
    }
}

/// Go's `resp.Status` for a code: `404 Not Found`.
fn status_line(status: u16) -> String {
    let reason = match status {
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    };
    format!("{status} {reason}").trim_end().to_string()
}

/// Go's `url.QueryEscape` (space as `+`).
fn query_escape(s: &str) -> String {
    escape(s, b"", true)
}

/// Go's `url.PathEscape` (one path segment).
fn path_escape(s: &str) -> String {
    escape(s, b"$&+,:;=@", false)
}

fn escape(s: &str, also_keep: &[u8], space_as_plus: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) || also_keep.contains(&b) {
            out.push(b as char);
        } else if b == b' ' && space_as_plus {
            out.push('+');
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
