//! The model-serving-api server's plugin routes: each path a plugin declares (`http-api`) is
//! served here over the host's TLS server, authenticated as the route asks, and answered by the
//! plugin through [`crate::dispatch`]. The host adds upstream's security headers to every
//! response and owns the caller's credentials: a plugin asks `caller.allowed` and the host
//! sends a `SelfSubjectAccessReview` with the caller's token, which never enters the sandbox.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use tracing::warn;

use odh_plugin_runtime::dispatch;
use odh_plugin_runtime::wire::{AccessAttributes, ApiAuth, ApiRequest};
use odh_plugin_runtime::{CallEnv, CallerView, ClusterView, GuestError, PluginSlot};

/// Paths the server answers itself; a plugin may not declare them.
pub const RESERVED_PATHS: [&str; 3] = ["/healthz", "/readyz", "/metrics"];

/// The largest request body a route receives.
const BODY_LIMIT: usize = 1024 * 1024;

/// Every API route of a set of plugin slots.
#[derive(Clone, Default)]
pub struct ApiRoutes {
    routes: BTreeMap<String, (PluginSlot, ApiAuth)>,
}

impl ApiRoutes {
    /// Collects the routes of the plugins serving in `slots`; a path declared twice, reserved,
    /// or not a plain path is an error.
    pub fn from_slots(slots: &[PluginSlot]) -> Result<Self, String> {
        let mut routes: BTreeMap<String, (PluginSlot, ApiAuth)> = BTreeMap::new();
        for slot in slots {
            let plugin = slot.current();
            for r in plugin.routes() {
                if !crate::webhook::routable(&r.path) || RESERVED_PATHS.contains(&r.path.as_str()) {
                    return Err(format!(
                        "plugin {:?} declares API route {:?}, which the server cannot route to it",
                        plugin.name(),
                        r.path
                    ));
                }
                if let Some((other, _)) = routes.get(&r.path) {
                    return Err(format!(
                        "API route {:?} is declared by both plugin {:?} and plugin {:?}",
                        r.path,
                        other.name(),
                        plugin.name()
                    ));
                }
                routes.insert(r.path.clone(), (slot.clone(), r.auth));
            }
        }
        Ok(Self { routes })
    }

    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.routes.keys().map(String::as_str)
    }

    /// One route per path, any method (the plugin answers 405 itself, after authentication,
    /// as upstream's handlers do).
    pub fn router(&self, cluster: Arc<dyn ClusterView>, reviewer: AccessReviewer) -> Router {
        let mut router = Router::new();
        for (path, (slot, auth)) in &self.routes {
            let (slot, auth, cluster, reviewer) =
                (slot.clone(), *auth, cluster.clone(), reviewer.clone());
            router = router.route(
                path,
                any(move |req: Request| {
                    serve(slot.clone(), auth, cluster.clone(), reviewer.clone(), req)
                }),
            );
        }
        router
    }
}

async fn serve(
    slot: PluginSlot,
    auth: ApiAuth,
    cluster: Arc<dyn ClusterView>,
    reviewer: AccessReviewer,
    req: Request,
) -> Response {
    let mut env = CallEnv::live(cluster);
    if auth == ApiAuth::Bearer {
        let Some(token) = bearer_token(&req) else {
            return secured(json_error(
                StatusCode::UNAUTHORIZED,
                "missing or invalid authorization header",
            ));
        };
        env = env.with_caller(Arc::new(reviewer.for_token(token)));
    }
    let (parts, body) = req.into_parts();
    let body = match axum::body::to_bytes(body, BODY_LIMIT).await {
        Ok(b) => b.to_vec(),
        Err(_) => {
            return secured(json_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "request body too large",
            ));
        }
    };
    let request = ApiRequest {
        method: parts.method.to_string(),
        path: parts.uri.path().to_string(),
        query: parts.uri.query().unwrap_or_default().to_string(),
        headers: plugin_headers(&parts.headers),
        body,
    };
    let plugin = slot.name().to_string();
    match dispatch::handle(&slot, request, env).await {
        Ok(response) => {
            let mut out = Response::new(Body::from(response.body));
            *out.status_mut() =
                StatusCode::from_u16(response.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            for (name, value) in &response.headers {
                if let (Ok(name), Ok(value)) = (
                    header::HeaderName::try_from(name.as_str()),
                    HeaderValue::try_from(value.as_str()),
                ) {
                    out.headers_mut().append(name, value);
                }
            }
            secured(out)
        }
        Err(e) => {
            warn!(plugin, path = %parts.uri.path(), "API call failed: {e}");
            secured(match e.guest_error() {
                Some(GuestError::Invalid(m)) => json_error(StatusCode::BAD_REQUEST, m),
                _ => json_error(StatusCode::INTERNAL_SERVER_ERROR, "internal server error"),
            })
        }
    }
}

/// The request's headers as the plugin sees them: all but the caller's credentials.
fn plugin_headers(headers: &http::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter(|(n, _)| !is_credential(n))
        .map(|(n, v)| {
            (
                n.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
}

/// Headers that carry the caller's credentials: they stay with the host (which checks the
/// bearer token itself and hands the plugin an access reviewer, never the token).
fn is_credential(name: &header::HeaderName) -> bool {
    name == header::AUTHORIZATION
        || name == header::PROXY_AUTHORIZATION
        || name == header::COOKIE
        // OpenShift's OAuth proxy forwards the user's token in this header.
        || name.as_str() == "x-forwarded-access-token"
}

/// The token of an `Authorization: Bearer <token>` header (exactly that prefix; the token
/// trimmed and non-empty), as upstream's middleware accepts it.
fn bearer_token(req: &Request) -> Option<String> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let token = value.strip_prefix("Bearer ")?.trim();
    (!token.is_empty()).then(|| token.to_string())
}

/// `{"error": message}` with `status`, as upstream's JSON helpers write errors.
pub fn json_error(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(serde_json::json!({ "error": message }))).into_response()
}

/// Upstream's security headers, on every response of the server.
pub fn secured(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::STRICT_TRANSPORT_SECURITY,
        HeaderValue::from_static("max-age=63072000; includeSubDomains"),
    );
    response
}

/// Sends access reviews with callers' tokens over one shared, credential-less client.
#[derive(Clone)]
pub struct AccessReviewer {
    client: kube::Client,
}

impl AccessReviewer {
    /// `config` is the process's own; its credentials are dropped, so a review is made with
    /// the caller's token alone.
    pub fn new(mut config: kube::Config) -> anyhow::Result<Self> {
        config.auth_info = Default::default();
        Ok(Self {
            client: kube::Client::try_from(config)?,
        })
    }

    fn for_token(&self, token: String) -> TokenCaller {
        TokenCaller {
            client: self.client.clone(),
            token,
        }
    }
}

/// The caller of one API request.
struct TokenCaller {
    client: kube::Client,
    token: String,
}

impl TokenCaller {
    async fn review(&self, attributes: &AccessAttributes) -> anyhow::Result<bool> {
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    namespace: attributes.namespace.clone(),
                    verb: Some(attributes.verb.clone()),
                    group: Some(attributes.group.clone()),
                    resource: Some(attributes.resource.clone()),
                    subresource: attributes.subresource.clone(),
                    name: attributes.name.clone(),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let request = http::Request::post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
            .header(header::AUTHORIZATION, format!("Bearer {}", self.token))
            .header(header::CONTENT_TYPE, "application/json")
            .body(serde_json::to_vec(&review)?)?;
        let answer: SelfSubjectAccessReview = self.client.request(request).await?;
        let status = answer.status.unwrap_or_default();
        if let Some(error) = status.evaluation_error.filter(|e| !e.is_empty()) {
            anyhow::bail!("the access review reports an evaluation error: {error}");
        }
        Ok(status.allowed)
    }
}

impl CallerView for TokenCaller {
    fn allowed(&self, attributes: &AccessAttributes, within: Duration) -> anyhow::Result<bool> {
        let handle = tokio::runtime::Handle::try_current()?;
        odh_plugin_runtime::host_wait::block_on(&handle, async {
            tokio::time::timeout(within, self.review(attributes))
                .await
                .map_err(|_| anyhow::anyhow!("no answer within {within:?}"))?
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_credential_of_the_caller_reaches_the_plugin() {
        let mut headers = http::HeaderMap::new();
        for (name, value) in [
            ("authorization", "Bearer caller-token"),
            ("proxy-authorization", "Basic dXNlcjpwYXNz"),
            ("cookie", "_oauth_proxy=session"),
            ("x-forwarded-access-token", "caller-token"),
            ("accept", "application/json"),
            ("x-gateway-model-name", "m"),
        ] {
            headers.append(
                header::HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        assert_eq!(
            plugin_headers(&headers),
            [
                ("accept".to_string(), "application/json".to_string()),
                ("x-gateway-model-name".to_string(), "m".to_string()),
            ]
        );
    }
}
