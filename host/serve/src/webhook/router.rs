//! The axum `Router` of a [`WebhookTable`]: `POST <path>` takes an AdmissionReview v1, asks the
//! path's plugin and answers an AdmissionReview v1 with the same uid.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use tracing::{Instrument as _, debug, warn};

use super::in_flight::{AdmissionGate, InFlightLimit};
use super::review::{parse_review, review_response_bytes};
use super::table::{LiveWebhookTable, WebhookRoute, WebhookTable};
use super::verdict::Verdict;
use odh_host_metrics::Metrics;
use odh_plugin_runtime::dispatch;
use odh_plugin_runtime::wire::{AdmissionDecision, RawJson, WebhookType};
use odh_plugin_runtime::{AdmissionInput, CallEnv, ClusterView};
use odh_reconcile::side_effects::{SideEffectError, SideEffectSink};
use serde_json::Value;

/// What every webhook handler shares.
struct RouterState {
    table: LiveWebhookTable,
    cluster: Arc<dyn ClusterView>,
    side_effects: Arc<dyn SideEffectSink>,
}

/// `POST <path>` for every webhook path of `table`; any other path answers 404, any other
/// method 405. Plugins read the cluster through `cluster`; side effects of allowed, non-dry-run
/// decisions go to `side_effects`. The request body limit is applied by [`crate::tls::serve`]
/// (or [`crate::tls::with_body_limit`]); without it axum's default of 2 MB holds.
pub fn webhook_router(
    table: &WebhookTable,
    cluster: Arc<dyn ClusterView>,
    side_effects: Arc<dyn SideEffectSink>,
) -> Router {
    live_webhook_router(LiveWebhookTable::new(table.clone()), cluster, side_effects)
}

/// As [`webhook_router`], answering from whatever `table` holds at each request: plugins added
/// or removed at run time are served or dropped without rebinding the server. Requests in
/// flight are bounded by the default for the table's plugins ([`InFlightLimit::for_table`]).
pub fn live_webhook_router(
    table: LiveWebhookTable,
    cluster: Arc<dyn ClusterView>,
    side_effects: Arc<dyn SideEffectSink>,
) -> Router {
    let gate = AdmissionGate::new(InFlightLimit::for_table(&table.current()));
    gated_webhook_router(table, cluster, side_effects, gate)
}

/// As [`live_webhook_router`], holding at most what `gate` lets in at once: every request takes
/// its room there before its body is read ([`AdmissionGate`]).
pub fn gated_webhook_router(
    table: LiveWebhookTable,
    cluster: Arc<dyn ClusterView>,
    side_effects: Arc<dyn SideEffectSink>,
    gate: AdmissionGate,
) -> Router {
    let state = Arc::new(RouterState {
        table,
        cluster,
        side_effects,
    });
    let dispatch =
        move |method: Method, uri: Uri, headers: HeaderMap, body: Result<Bytes, BytesRejection>| {
            route_request(state.clone(), method, uri, headers, body)
        };
    // Routes rather than a fallback, so layers added to the router (the body limit) apply.
    Router::new()
        .route("/", any(dispatch.clone()))
        .route("/{*path}", any(dispatch))
        .layer(axum::middleware::from_fn(move |request, next| {
            gate.clone().admit(request, next)
        }))
}

async fn route_request(
    state: Arc<RouterState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let table = state.table.current();
    let Some(route) = table.route(uri.path()).cloned() else {
        if method == Method::POST && state.table.recently_retired(uri.path()) {
            return retired(uri.path(), body);
        }
        debug!(path = uri.path(), "request for a path no webhook serves");
        return (
            StatusCode::NOT_FOUND,
            format!("no webhook is served at {}\n", uri.path()),
        )
            .into_response();
    };
    if method != Method::POST {
        return (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "POST")]).into_response();
    }
    // controller-runtime's webhook metrics, by the path a webhook is registered at.
    let metrics = odh_host_metrics::Metrics::global();
    let request = metrics.webhook_request(&route.path);
    // The trace of the apiserver's request (W3C traceparent) continues here when it sends one.
    let span = tracing::info_span!(
        target: "odh_trace",
        "admission",
        otel.kind = "server",
        traceparent = headers.get("traceparent").and_then(|v| v.to_str().ok()),
        odh.plugin = route.plugin.name(),
        url.path = %route.path,
        odh.allowed = tracing::field::Empty,
        http.response.status_code = tracing::field::Empty,
    );
    let response = handle(state, route, body).instrument(span.clone()).await;
    span.record("http.response.status_code", response.status().as_u16());
    request.done(response.status().as_u16());
    response
}

/// A request to the path of a plugin just removed: admitted unchanged, as it would be once the
/// apiserver stops calling the path (with `failurePolicy: Fail` a 404 would deny it).
fn retired(path: &str, body: Result<Bytes, BytesRejection>) -> Response {
    let parsed = body
        .map_err(|r| r.body_text())
        .and_then(|b| parse_review(&b, path).map_err(|e| e.to_string()));
    match parsed {
        Ok(input) => {
            debug!(
                path,
                uid = input.uid,
                "admitting a request to a removed plugin's webhook"
            );
            answer(review_response_bytes(&input.uid, &Verdict::allow()))
        }
        Err(e) => (
            StatusCode::BAD_REQUEST,
            format!("malformed AdmissionReview: {e}\n"),
        )
            .into_response(),
    }
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
    tracing::Span::current().record("odh.allowed", verdict.allowed);
    if !verdict.allowed {
        debug!(plugin, path = %route.path, uid, code = verdict.code, message = verdict.message.as_deref().unwrap_or(""), "admission denied");
    }
    answer(review_response_bytes(&uid, &verdict))
}

/// An AdmissionReview answer as axum's `Json` sends one (200, `application/json`).
fn answer(body: Vec<u8>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

/// The object under review as a value, when the verdict needs it: a mutation that returned the
/// whole mutated object rather than a patch is diffed against it.
fn original_for_patch(
    kind: WebhookType,
    decision: &AdmissionDecision,
    original: Option<&RawJson>,
) -> serde_json::Result<Option<Value>> {
    match (kind, &decision.patch, &decision.mutated, original) {
        (WebhookType::Mutating, None, Some(_), Some(original)) => original.to_value().map(Some),
        _ => Ok(None),
    }
}

async fn decide(state: &RouterState, route: &WebhookRoute, input: AdmissionInput) -> Verdict {
    if !route.reviews(&input) {
        return Verdict::allow();
    }
    let (uid, dry_run) = (input.uid.clone(), input.dry_run);
    // A view of the body, not a copy: parsed after the call, and only if a patch needs it.
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
            if let Some((plugin, kind)) = e.refused_write() {
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
    let verdict = match original_for_patch(route.kind, &decision, original.as_ref()) {
        Ok(original) => Verdict::from_decision(route.kind, decision, original.as_ref()),
        Err(e) => {
            warn!(plugin = plugin.name(), path = %route.path, uid, "request.object is not JSON the host can read: {e}");
            Verdict::deny(
                400,
                format!("malformed AdmissionReview: request.object: {e}"),
            )
        }
    };
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
