//! `GET /api/v1/samples/llm-d?type=<t>[&topology=<topo>]` (no authentication;
//! docs/plugins/llm-gateway.md, "Endpoints"): one
//! embedded `LLMInferenceServiceConfig` sample as YAML.
//!
//! | # | condition | status | body |
//! |---|---|---|---|
//! | 1 | method other than GET | 405 | `{"error":"method not allowed"}` |
//! | 2 | `type` empty or absent | 400 | `{"error":"missing required query parameter: type"}` |
//! | 3 | no sample `<key>.yaml` | 404 | `{"error":"no sample found for type: <t>"}` |
//! | 5 | found | 200 | `Content-Type: application/yaml`, the file verbatim |
//!
//! The key is `type`, except that `type=router` with a `topology` ending in `-pd` is
//! `router-pd`. The files (`plugins/llm-gateway/samples/`) are this project's own texts.

use odh_plugin_sdk::{ApiRequest, ApiResponse};

/// The embedded samples: (key, file contents).
pub const SAMPLES: [(&str, &[u8]); 6] = [
    (
        "workload-single-node",
        include_bytes!("../../samples/workload-single-node.yaml"),
    ),
    (
        "workload-single-node-pd",
        include_bytes!("../../samples/workload-single-node-pd.yaml"),
    ),
    (
        "workload-multi-node-data-parallel",
        include_bytes!("../../samples/workload-multi-node-data-parallel.yaml"),
    ),
    (
        "workload-multi-node-data-parallel-pd",
        include_bytes!("../../samples/workload-multi-node-data-parallel-pd.yaml"),
    ),
    ("router", include_bytes!("../../samples/router.yaml")),
    ("router-pd", include_bytes!("../../samples/router-pd.yaml")),
];

/// The sample key for a `type` and `topology`.
pub fn key<'a>(sample_type: &'a str, topology: &str) -> &'a str {
    if sample_type == "router" && topology.ends_with("-pd") {
        "router-pd"
    } else {
        sample_type
    }
}

/// The sample stored under `key`, if any.
pub fn sample(key: &str) -> Option<&'static [u8]> {
    SAMPLES.iter().find(|(k, _)| *k == key).map(|(_, s)| *s)
}

pub fn handle(request: &ApiRequest) -> ApiResponse {
    if request.method != "GET" {
        return super::method_not_allowed();
    }
    let sample_type = request.query_param("type").unwrap_or_default();
    if sample_type.is_empty() {
        return super::error(400, "missing required query parameter: type");
    }
    let topology = request.query_param("topology").unwrap_or_default();
    match sample(key(&sample_type, &topology)) {
        Some(yaml) => ApiResponse {
            status: 200,
            headers: vec![("content-type".into(), "application/yaml".into())],
            body: yaml.to_vec(),
        },
        None => super::error(404, &format!("no sample found for type: {sample_type}")),
    }
}
