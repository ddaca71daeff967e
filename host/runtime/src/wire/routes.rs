//! The plugins' HTTP API: routes, requests, answers, and what a caller wants to do.

use super::*;
use crate::bindings::{api_types as api, caller};

use serde::{Deserialize, Serialize};

/// How the host authenticates an API route's requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApiAuth {
    None,
    Bearer,
}

/// One HTTP route a plugin serves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiRoute {
    pub path: String,
    pub auth: ApiAuth,
}

/// One request to a plugin's route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiRequest {
    pub method: String,
    pub path: String,
    pub query: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// A plugin's answer to an API request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// What an API caller wants to do (`caller.allowed`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessAttributes {
    pub namespace: Option<String>,
    pub verb: String,
    pub group: String,
    pub resource: String,
    pub subresource: Option<String>,
    pub name: Option<String>,
}

impl From<caller::AccessAttributes> for AccessAttributes {
    fn from(a: caller::AccessAttributes) -> Self {
        Self {
            namespace: a.namespace,
            verb: a.verb,
            group: a.group,
            resource: a.resource,
            subresource: a.subresource,
            name: a.name,
        }
    }
}

impl From<api::ApiRoute> for ApiRoute {
    fn from(r: api::ApiRoute) -> Self {
        Self {
            path: r.path,
            auth: match r.auth {
                api::ApiAuth::None => ApiAuth::None,
                api::ApiAuth::Bearer => ApiAuth::Bearer,
            },
        }
    }
}

impl From<api::ApiResponse> for ApiResponse {
    fn from(r: api::ApiResponse) -> Self {
        Self {
            status: r.status,
            headers: r.headers,
            body: r.body,
        }
    }
}

impl OutputSize for api::ApiResponse {
    fn output_size(&self) -> usize {
        self.body.len()
            + self
                .headers
                .iter()
                .map(|(n, v)| n.len() + v.len())
                .sum::<usize>()
    }
}

impl OutputSize for Vec<api::ApiRoute> {
    fn output_size(&self) -> usize {
        self.iter().map(|r| r.path.len()).sum()
    }
}
