//! The Model Registry REST client: what the generated Go `openapi.APIClient` does, over
//! the plugin's HTTP [`Client`].

use odh_plugin_sdk::go::{path_escape, query_escape, status_line};
use odh_plugin_sdk::http::{Request, SERVICE_ACCOUNT_HEADER};

use super::service_url::url_from_service;
use super::*;

/// The Model Registry REST client (what the generated Go `openapi.APIClient` does).
pub(super) struct MrClient<'a> {
    base: String,
    /// Ask the host to send the controller's identity (upstream sends its ServiceAccount token
    /// when the Model Registry is managed); the host sends it only to a Model Registry Service
    /// of a namespace the plugin is granted, never to a URL an InferenceService names.
    as_controller: bool,
    http: &'a dyn Client,
}

impl<'a> MrClient<'a> {
    /// `initModelRegistryService`: the base URL from the annotation, else from the Service.
    pub(super) fn connect(
        cluster: &dyn Cluster,
        http: &'a dyn Client,
        settings: &ModelRegistrySettings,
        name: &str,
        namespace: &str,
        url: &str,
    ) -> Result<MrClient<'a>, Error> {
        let base = if url.is_empty() {
            url_from_service(cluster, name, namespace)?
        } else {
            url.to_string()
        };
        Ok(MrClient {
            base: base.trim_end_matches('/').to_string(),
            as_controller: settings.enabled,
            http,
        })
    }

    /// One call: `path` under [`API_PREFIX`]; a status ≥ 300 is an error worded like the Go
    /// client's (`404 Not Found`); a 2xx body is parsed as JSON.
    pub(super) fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, String> {
        let url = format!("{}{API_PREFIX}{path}", self.base);
        let mut request = Request::new(method, &url).header("Accept", "application/json");
        if let Some(body) = body {
            request = request
                .header("Content-Type", "application/json")
                .body(body.to_string());
        }
        if self.as_controller {
            request = request.header(SERVICE_ACCOUNT_HEADER.0, SERVICE_ACCOUNT_HEADER.1);
        }
        let response = self
            .http
            .request(&request)
            .map_err(|e| e.message().to_string())?;
        if response.status >= 300 {
            return Err(status_line(response.status));
        }
        odh_plugin_sdk::serde_json::from_slice(&response.body)
            .map_err(|e| format!("{method} {url}: response is not the expected JSON: {e}"))
    }

    pub(super) fn get_inference_service(&self, id: &str) -> Result<Value, String> {
        self.call(
            "GET",
            &format!("/inference_services/{}", path_escape(id)),
            None,
        )
    }

    /// `onDeletion`: desiredState → `UNDEPLOYED` unless unset or already so.
    pub(super) fn undeploy(&self, mr_is: &Value) -> Result<(), String> {
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
    pub(super) fn update_url(&self, mr_is: &Value, url: &str) -> Result<(), String> {
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
    pub(super) fn get_or_create_serving_environment(
        &self,
        namespace: &str,
    ) -> Result<Value, Error> {
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
    pub(super) fn create_inference_service(
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
