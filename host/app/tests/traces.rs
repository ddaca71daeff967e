//! OpenTelemetry traces (issue #34 item 7): `odh-model-controller run` with
//! `OTEL_EXPORTER_OTLP_ENDPOINT` exports its spans over OTLP/gRPC to a collector — here a gRPC
//! receiver in the test, over HTTP/2 without TLS (`http://`). An admission review carrying the
//! apiserver's W3C `traceparent` becomes an `admission` server span continuing that trace, with
//! the plugin's call as its child; reconciles (of a ConfigMap the test makes) get a `reconcile`
//! span with theirs.

use std::convert::Infallible;
use std::time::Duration;

use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use odh_model_controller::traces::proto::read::{ReadSpan, spans};
use odh_test_support::net::Client;
use odh_test_support::process::ServingHost;
use serde_json::json;
use tokio::sync::mpsc;

/// A gRPC `TraceService/Export` receiver on loopback: every span it is sent goes to the channel.
async fn receiver() -> anyhow::Result<(u16, mpsc::UnboundedReceiver<(String, Vec<ReadSpan>)>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let service =
                    hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
                        let tx = tx.clone();
                        async move {
                            let path = request.uri().path().to_string();
                            let body = request.into_body().collect().await.map(|b| b.to_bytes());
                            // gRPC framing: a compression flag, a 4-byte length, the message.
                            let decoded = body.ok().and_then(|b| spans(b.get(5..)?));
                            let status = if decoded.is_some() { "0" } else { "3" };
                            if let Some(decoded) = decoded {
                                let _ = tx.send((path, decoded));
                            }
                            let response = hyper::Response::builder()
                                .header("content-type", "application/grpc")
                                .header("grpc-status", status)
                                .body(Full::new(Bytes::new()))
                                .expect("a valid response");
                            Ok::<_, Infallible>(response)
                        }
                    });
                let _ =
                    hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                        .serve_connection(hyper_util::rt::TokioIo::new(tcp), service)
                        .await;
            });
        }
    });
    Ok((port, rx))
}

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const APISERVER_SPAN: &str = "00f067aa0ba902b7";

#[tokio::test(flavor = "multi_thread")]
async fn spans_of_admissions_reconciles_and_plugin_calls_reach_the_collector() -> anyhow::Result<()>
{
    let (port, mut received) = receiver().await?;
    let endpoint = format!("http://127.0.0.1:{port}");
    let host = ServingHost::start_as_with_args(
        &odh_test_support::cluster()?.kubeconfig,
        "traces",
        false,
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_SERVICE_NAME", "odh-under-test"),
        ],
    )
    .await?;
    let mut client = Client::connect_unverified(([127, 0, 0, 1], host.webhook_port).into()).await?;
    let review = json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "trace-1",
            "kind": {"group": "serving.kserve.io", "version": "v1beta1", "kind": "InferenceService"},
            "resource": {"group": "serving.kserve.io", "version": "v1beta1", "resource": "inferenceservices"},
            "operation": "CREATE", "namespace": "traced", "name": "m",
            "object": odh_test_fixtures::isvc("m").build(),
            "userInfo": {"username": "tester"}, "dryRun": false,
        },
    });
    let (status, answer) = client
        .post_with(
            "/validate-serving-kserve-io-v1beta1-inferenceservice",
            &[("traceparent", &format!("00-{TRACE_ID}-{APISERVER_SPAN}-01"))],
            &review,
        )
        .await?;
    assert_eq!(status, 200, "{answer}");
    // A reconcile to trace: the storage plugin's `core-configmap` reconciles one of its three
    // names (other ConfigMaps never reach it).
    let t = odh_test_support::TestContext::new("traces").await?;
    let bundle: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "odh-trusted-ca-bundle"}, "data": {"ca-bundle.crt": ""}}),
    )?;
    t.api::<k8s_openapi::api::core::v1::ConfigMap>()
        .create(&Default::default(), &bundle)
        .await?;

    let mut seen: Vec<ReadSpan> = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let complete = |seen: &[ReadSpan]| {
        let admission = seen
            .iter()
            .find(|s| s.name == "admission" && s.trace_id == TRACE_ID)?;
        let call = seen.iter().find(|s| {
            s.name == "plugin.call" && s.parent_span_id.as_deref() == Some(&admission.span_id)
        })?;
        let reconcile = seen.iter().find(|s| s.name == "reconcile")?;
        let reconcile_call = seen.iter().find(|s| {
            s.name == "plugin.call" && s.parent_span_id.as_deref() == Some(&reconcile.span_id)
        })?;
        Some((
            admission.clone(),
            call.clone(),
            reconcile.clone(),
            reconcile_call.clone(),
        ))
    };
    let (admission, call, reconcile, reconcile_call) = loop {
        if let Some(found) = complete(&seen) {
            break found;
        }
        match tokio::time::timeout_at(deadline, received.recv()).await {
            Ok(Some((path, spans))) => {
                assert_eq!(
                    path,
                    "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
                );
                seen.extend(spans);
            }
            _ => panic!(
                "the collector did not get the spans in 60 s; got {seen:#?}\nlog: {}",
                host.process.output()
            ),
        }
    };
    assert_eq!(admission.parent_span_id.as_deref(), Some(APISERVER_SPAN));
    assert_eq!(admission.attribute("odh.plugin"), Some("isvc"));
    let allowed = answer["response"]["allowed"].as_bool().expect("an answer");
    assert_eq!(
        admission.attribute("odh.allowed"),
        Some(if allowed { "1" } else { "0" }),
        "{answer}"
    );
    assert_eq!(
        admission.attribute("http.response.status_code"),
        Some("200")
    );
    assert_eq!(
        admission.attribute("url.path"),
        Some("/validate-serving-kserve-io-v1beta1-inferenceservice")
    );
    assert_eq!(call.trace_id, TRACE_ID);
    assert_eq!(call.attribute("odh.plugin"), Some("isvc"));
    assert_eq!(call.attribute("odh.op"), Some("validate"));
    assert_eq!(call.attribute("odh.outcome"), Some("ok"));
    assert!(
        reconcile.attribute("odh.controller").is_some(),
        "{reconcile:?}"
    );
    assert!(reconcile.attribute("odh.result").is_some(), "{reconcile:?}");
    assert_eq!(reconcile_call.trace_id, reconcile.trace_id);
    assert_ne!(
        reconcile.trace_id, TRACE_ID,
        "a reconcile starts a trace of its own"
    );
    Ok(())
}
