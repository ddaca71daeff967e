//! The model-serving-api routes (spec §8): gateway discovery and the llm-d samples. The host
//! serves them over TLS, authenticates bearer routes and adds the security headers.

use odh_plugin_sdk::{ApiRequest, ApiResponse, ApiRoute, Ctx, Error, Manifest};

use crate::settings::Settings;

/// The API's part of the plugin's manifest (the kinds it reads).
pub fn declare(manifest: Manifest) -> Manifest {
    manifest
}

pub fn routes() -> Vec<ApiRoute> {
    Vec::new()
}

pub fn handle(_request: &ApiRequest, _cx: &Ctx<Settings>) -> Result<ApiResponse, Error> {
    Ok(ApiResponse::error(404, "404 page not found"))
}
