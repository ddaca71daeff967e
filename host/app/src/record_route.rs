//! `GET /debug/plugins/{name}/record` on the secure metrics server (`--metrics-secure`): the
//! calls a plugin's entry records, as JSON lines, oldest first — `plugin record export --url`
//! reads it from outside the pod. Authorized as the metrics are (TokenReview, then a
//! SubjectAccessReview of `get` on this path as a non-resource URL), so reading records takes a
//! grant of its own (`nonResourceURLs: ["/debug/plugins/*"]`): a metrics reader reads none.
//! Not served without `--metrics-secure`: records hold objects of the cluster.

use std::sync::Arc;

use axum::Router;
use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use odh_plugin_runtime::PluginSet;

pub const RECORD_PATH: &str = "/debug/plugins/{name}/record";

pub fn router(set: Arc<PluginSet>) -> Router {
    Router::new().route(
        RECORD_PATH,
        get(move |Path(name): Path<String>| {
            let set = set.clone();
            async move { record(&set, &name).await }
        }),
    )
}

async fn record(set: &PluginSet, name: &str) -> Response {
    let text = |status: StatusCode, body: String| {
        (
            status,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            body,
        )
            .into_response()
    };
    let Some(slot) = set.get(name) else {
        return text(
            StatusCode::NOT_FOUND,
            format!("no plugin {name:?} is served\n"),
        );
    };
    let Some(recorder) = slot.recorder() else {
        return text(
            StatusCode::NOT_FOUND,
            format!("plugin {name:?} keeps no record (its entry has no record)\n"),
        );
    };
    // Reading the record's files blocks.
    let lines = match tokio::task::spawn_blocking(move || recorder.all_lines()).await {
        Ok(lines) => lines,
        Err(e) => {
            return text(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("reading the record failed: {e}\n"),
            );
        }
    };
    let mut body = lines.join("\n");
    if !body.is_empty() {
        body.push('\n');
    }
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/jsonl")],
        body,
    )
        .into_response()
}
