//! The model-serving-api routes (docs/plugins/llm-gateway.md, "model-serving-api"): gateway
//! discovery ([`gateways`]) and the llm-d samples ([`samples`]). The host serves them over TLS,
//! authenticates the bearer route (a missing or malformed `Authorization` header never reaches the
//! plugin), answers `/healthz` and `/readyz`, and adds the security headers; everything the routes
//! decide is here.

pub mod gateways;
pub mod samples;

use odh_go_compat::json as go_json;
use odh_kinds::gvk;
use odh_plugin_sdk::{ApiRequest, ApiResponse, ApiRoute, Ctx, Error, Manifest};

use crate::settings::Settings;

/// Gateway discovery (bearer authentication).
pub const GATEWAYS_PATH: &str = "/api/v1/gateways";
/// The llm-d `LLMInferenceServiceConfig` samples (no authentication).
pub const SAMPLES_PATH: &str = "/api/v1/samples/llm-d";

/// The API's part of the plugin's manifest: the kinds discovery reads (Gateways cluster-wide,
/// the caller's Namespace for `Selector` listeners).
pub fn declare(manifest: Manifest) -> Manifest {
    manifest.reads([gvk::gateway(), gvk::namespace()])
}

pub fn routes() -> Vec<ApiRoute> {
    vec![
        ApiRoute::bearer(GATEWAYS_PATH),
        ApiRoute::public(SAMPLES_PATH),
    ]
}

pub fn handle(request: &ApiRequest, cx: &Ctx<Settings>) -> Result<ApiResponse, Error> {
    Ok(match request.path.as_str() {
        GATEWAYS_PATH => gateways::handle(request, cx),
        SAMPLES_PATH => samples::handle(request),
        // The host routes only the declared paths here.
        _ => not_found(),
    })
}

/// Go's `http.NotFound`: 404 `404 page not found` as plain text.
fn not_found() -> ApiResponse {
    ApiResponse {
        status: 404,
        headers: vec![
            ("content-type".into(), "text/plain; charset=utf-8".into()),
            ("x-content-type-options".into(), "nosniff".into()),
        ],
        body: b"404 page not found\n".to_vec(),
    }
}

/// `{"error":"<message>"}` with `status`, encoded as upstream's JSON helper does.
pub fn error(status: u16, message: &str) -> ApiResponse {
    json(
        status,
        format!("{{\"error\":{}}}", go_json::string_before_go_1_22(message)),
    )
}

/// A compact JSON body with `Content-Type: application/json`.
pub fn json(status: u16, body: String) -> ApiResponse {
    ApiResponse {
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.into_bytes(),
    }
}

/// Upstream's 405 body, shared by both routes.
pub fn method_not_allowed() -> ApiResponse {
    error(405, "method not allowed")
}
