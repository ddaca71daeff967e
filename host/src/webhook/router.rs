//! The axum `Router` of a [`WebhookTable`]: `POST <path>` takes an AdmissionReview v1, asks the
//! path's plugin and answers an AdmissionReview v1 with the same uid.

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use tracing::{debug, warn};

use super::review::{parse_review, review_response};
use super::side_effects::{SideEffectError, SideEffectSink};
use super::table::{WebhookRoute, WebhookTable};
use super::verdict::Verdict;
use crate::dispatch;
use crate::metrics::Metrics;
use crate::plugin::{AdmissionInput, CallEnv, CallError, ClusterView};

/// What every webhook handler shares.
struct RouterState {
    cluster: Arc<dyn ClusterView>,
    side_effects: Arc<dyn SideEffectSink>,
}

/// One `POST` route per webhook path of `table`; any other path answers 404, any other method
/// 405. Plugins read the cluster through `cluster`; side effects of allowed, non-dry-run
/// decisions go to `side_effects`. The request body limit is applied by [`super::serve`]
/// (or [`with_body_limit`]); without it axum's default of 2 MB holds.
pub fn webhook_router(
    table: &WebhookTable,
    cluster: Arc<dyn ClusterView>,
    side_effects: Arc<dyn SideEffectSink>,
) -> Router {
    let state = Arc::new(RouterState {
        cluster,
        side_effects,
    });
    let mut router = Router::new();
    for route in table.routes() {
        let (state, route) = (state.clone(), route.clone());
        let path = route.path.clone();
        router = router.route(
            &path,
            post(move |body: Result<Bytes, BytesRejection>| {
                handle(state.clone(), route.clone(), body)
            }),
        );
    }
    router.fallback(not_found)
}

/// Limits request bodies to `limit` bytes; a larger body is answered with 413.
pub fn with_body_limit(router: Router, limit: usize) -> Router {
    router.layer(axum::extract::DefaultBodyLimit::max(limit))
}

async fn not_found(uri: Uri) -> Response {
    debug!(path = uri.path(), "request for a path no webhook serves");
    (
        StatusCode::NOT_FOUND,
        format!("no webhook is served at {}\n", uri.path()),
    )
        .into_response()
}

async fn handle(
    state: Arc<RouterState>,
    route: Arc<WebhookRoute>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let plugin = route.plugin.name();
    let body = match body {
        Ok(b) => b,
        Err(rejection) => {
            warn!(plugin, path = %route.path, status = %rejection.status(), "admission request body rejected: {}", rejection.body_text());
            return (rejection.status(), format!("{}\n", rejection.body_text())).into_response();
        }
    };
    let input = match parse_review(&body, &route.path) {
        Ok(input) => input,
        Err(e) => {
            warn!(plugin, path = %route.path, "malformed AdmissionReview: {e}");
            return (
                StatusCode::BAD_REQUEST,
                format!("malformed AdmissionReview: {e}\n"),
            )
                .into_response();
        }
    };
    let uid = input.uid.clone();
    let verdict = decide(&state, &route, input).await;
    if !verdict.allowed {
        debug!(plugin, path = %route.path, uid, code = verdict.code, message = verdict.message.as_deref().unwrap_or(""), "admission denied");
    }
    Json(review_response(&uid, &verdict)).into_response()
}

async fn decide(state: &RouterState, route: &WebhookRoute, input: AdmissionInput) -> Verdict {
    if !route.handles(input.operation) {
        return Verdict::allow();
    }
    let (uid, dry_run) = (input.uid.clone(), input.dry_run);
    let original = input.object.clone();
    // The version serving now answers the whole request, even if a swap happens meanwhile.
    let (plugin, result) = dispatch::admit(
        &route.plugin,
        route.kind,
        input,
        CallEnv::live(state.cluster.clone()),
    )
    .await;
    let mut decision = match result {
        Ok(d) => d,
        Err(e) => {
            warn!(plugin = plugin.name(), path = %route.path, uid, kind = e.metric_label(), "admission call failed: {e}");
            if let CallError::WriteRefused { plugin, kind, .. } = &e {
                Metrics::global().refused_write(plugin, &kind.to_string());
            }
            if route.plugin.fail_open() {
                // failurePolicy Ignore: the failure is logged and counted, the request admitted.
                return Verdict::allow();
            }
            return Verdict::from_call_error(&e);
        }
    };
    let side_effects = std::mem::take(&mut decision.side_effects);
    let verdict = Verdict::from_decision(route.kind, decision, original.as_ref());
    // Side effects come first whatever the verdict: upstream creates the `<secret>-sa`
    // ServiceAccount before the HardwareProfile step that may still deny the request.
    if dry_run || side_effects.is_empty() {
        return verdict;
    }
    match state.side_effects.apply(plugin.name(), side_effects).await {
        Ok(()) => verdict,
        Err(e) => {
            warn!(plugin = plugin.name(), path = %route.path, uid, "admission side effect failed: {e}");
            match e {
                SideEffectError::Status(status) => Verdict::from_status(&status),
                SideEffectError::Failed(message) => Verdict::deny(403, message),
            }
        }
    }
}
