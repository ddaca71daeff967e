//! Serving HTTP routes through the host (the WIT `http-api` export): [`ApiRoute`],
//! [`ApiRequest`] and [`ApiResponse`] helpers.
//!
//! The host owns the server, TLS and authentication; it calls the plugin's
//! [`Plugin::handle`](crate::Plugin::handle) only for a declared path whose authentication
//! passed. On a `bearer` route, ask [`Ctx::caller`](crate::Ctx) what the caller may do.
//!
//! ```
//! use odh_plugin_sdk::{ApiRequest, ApiResponse, json};
//!
//! let request = ApiRequest::new("GET", "/api/v1/hello").with_query("name=a%20b");
//! let name = request.query_param("name").unwrap_or_default();
//! let response = ApiResponse::json(200, &json!({ "greeting": format!("Hello, {name}!") }));
//! assert_eq!(response.body, br#"{"greeting":"Hello, a b!"}"#);
//! ```

use serde::Serialize;

use crate::Error;
pub use crate::bindings::odh::controller::api_types::{ApiAuth, ApiRequest, ApiResponse, ApiRoute};

impl ApiRoute {
    /// A route anyone may call.
    pub fn public(path: &str) -> ApiRoute {
        ApiRoute {
            path: path.into(),
            auth: ApiAuth::None,
        }
    }

    /// A route that needs an `Authorization: Bearer` token (checked with the caller).
    pub fn bearer(path: &str) -> ApiRoute {
        ApiRoute {
            path: path.into(),
            auth: ApiAuth::Bearer,
        }
    }
}

impl ApiRequest {
    /// A request without query, headers or body, settings `{}` (for tests).
    pub fn new(method: &str, path: &str) -> ApiRequest {
        ApiRequest {
            method: method.into(),
            path: path.into(),
            query: String::new(),
            headers: Vec::new(),
            body: Vec::new(),
            settings: "{}".into(),
        }
    }

    /// Sets the raw query string (without `?`), builder style.
    pub fn with_query(mut self, query: &str) -> Self {
        self.query = query.into();
        self
    }

    /// Sets the body, builder style.
    pub fn with_body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// Replaces the settings JSON, builder style.
    pub fn with_settings(mut self, settings: impl Serialize) -> Self {
        self.settings = crate::outcome::to_json(settings);
        self
    }

    /// The first value of query parameter `name`, decoded (`+` and `%XX`); a value that does
    /// not decode is taken as written.
    pub fn query_param(&self, name: &str) -> Option<String> {
        self.query
            .split('&')
            .filter(|pair| !pair.is_empty())
            .map(|pair| pair.split_once('=').unwrap_or((pair, "")))
            .find(|(key, _)| crate::go::query_unescape(key).as_deref() == Some(name))
            .map(|(_, value)| crate::go::query_unescape(value).unwrap_or_else(|| value.into()))
    }

    /// The first value of a header (names arrive in lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON ([`Error::Invalid`] when it does not parse).
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, Error> {
        Ok(serde_json::from_slice(&self.body)?)
    }
}

impl ApiResponse {
    /// A JSON response (`content-type: application/json`).
    pub fn json(status: u16, body: &impl Serialize) -> ApiResponse {
        ApiResponse {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: serde_json::to_vec(body).expect("the body serializes to JSON"),
        }
    }

    /// `{"error": message}` with `status`, the shape the host's own errors have.
    pub fn error(status: u16, message: &str) -> ApiResponse {
        Self::json(status, &serde_json::json!({ "error": message }))
    }

    /// The body parsed as JSON (for tests).
    pub fn json_body<T: serde::de::DeserializeOwned>(&self) -> Result<T, Error> {
        Ok(serde_json::from_slice(&self.body)?)
    }

    /// The first value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn query_params_decode() {
        let r = ApiRequest::new("GET", "/p").with_query("a=1&name=x+y%21&flag&b=%zz&a=2");
        assert_eq!(r.query_param("a").as_deref(), Some("1"));
        assert_eq!(r.query_param("name").as_deref(), Some("x y!"));
        assert_eq!(r.query_param("flag").as_deref(), Some(""));
        assert_eq!(r.query_param("b").as_deref(), Some("%zz"));
        assert_eq!(r.query_param("missing"), None);
    }

    #[test]
    fn responses() {
        let r = ApiResponse::error(405, "method not allowed");
        assert_eq!(r.status, 405);
        assert_eq!(r.header("Content-Type"), Some("application/json"));
        assert_eq!(
            r.json_body::<Value>().unwrap(),
            json!({"error": "method not allowed"})
        );
        assert_eq!(ApiRoute::bearer("/x").auth, ApiAuth::Bearer);
        let req = ApiRequest::new("POST", "/x").with_body(r#"{"a":1}"#);
        assert_eq!(req.json::<Value>().unwrap(), json!({"a": 1}));
        assert!(
            ApiRequest::new("POST", "/x")
                .with_body("{")
                .json::<Value>()
                .is_err()
        );
    }
}
