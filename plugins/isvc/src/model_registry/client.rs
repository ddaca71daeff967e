//! The Model Registry REST client: what the generated Go `openapi.APIClient` does, over
//! the plugin's [`Http`].

use super::service_url::url_from_service;
use super::*;

/// The Model Registry REST client (what the generated Go `openapi.APIClient` does).
pub(super) struct MrClient<'a> {
    base: String,
    authorization: Option<String>,
    http: &'a dyn Http,
}

impl<'a> MrClient<'a> {
    /// `initModelRegistryService`: the base URL from the annotation, else from the Service.
    pub(super) fn connect(
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
    pub(super) fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, String> {
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

/// Go's `resp.Status` for a code: `404 Not Found`.
pub(super) fn status_line(status: u16) -> String {
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
pub(super) fn query_escape(s: &str) -> String {
    escape(s, b"", true)
}

/// Go's `url.PathEscape` (one path segment).
pub(super) fn path_escape(s: &str) -> String {
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
