//! The health-probe and metrics servers over real TCP on 127.0.0.1:0 (the model-serving-api
//! server: `api_routes.rs`).

use std::net::SocketAddr;
use std::time::Duration;

use odh_model_controller::metrics::{Metrics, ReconcileResult};
use odh_model_controller::probes::{self, Server, bind_health, bind_metrics};
use tokio::net::TcpStream;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use odh_test_support::net::get;

/// Serves `server` until the returned sender fires (or is dropped).
fn spawn(server: Server) -> (oneshot::Sender<()>, JoinHandle<anyhow::Result<()>>) {
    let (stop, stopped) = oneshot::channel::<()>();
    let handle = tokio::spawn(server.serve(async move {
        let _ = stopped.await;
    }));
    (stop, handle)
}

fn loopback() -> SocketAddr {
    probes::parse_bind_address("127.0.0.1:0")
        .unwrap()
        .expect("not disabled")
}

#[tokio::test]
async fn healthz_is_ok_on_both_paths() -> anyhow::Result<()> {
    let (_ready_tx, ready) = watch::channel(false);
    let server = bind_health(loopback(), ready).await?;
    let addr = server.local_addr();
    assert_ne!(addr.port(), 0, "port 0 resolved to a real port");
    let (stop, handle) = spawn(server);

    for path in ["/healthz", "/healthz/", "/healthz/healthz"] {
        let r = get(addr, path).await?;
        assert_eq!((r.status, r.body.as_str()), (200, "ok"), "{path}");
    }
    let verbose = get(addr, "/healthz?verbose").await?;
    assert_eq!(verbose.status, 200);
    assert!(verbose.body.contains("[+]healthz ok"), "{}", verbose.body);
    assert_eq!(get(addr, "/healthz/other").await?.status, 404);
    assert_eq!(get(addr, "/nothing").await?.status, 404);

    stop.send(()).ok();
    handle.await??;
    Ok(())
}

#[tokio::test]
async fn readyz_flips_from_500_to_200_with_the_flag() -> anyhow::Result<()> {
    let (ready_tx, ready) = watch::channel(false);
    let server = bind_health(loopback(), ready).await?;
    let addr = server.local_addr();
    let (stop, handle) = spawn(server);

    let r = get(addr, "/readyz").await?;
    assert_eq!(r.status, 500);
    assert!(r.body.contains("[-]readyz failed"), "{}", r.body);
    let r = get(addr, "/readyz/readyz").await?;
    assert_eq!(r.status, 500);
    assert!(r.body.contains("not ready"), "{}", r.body);
    // Liveness does not depend on readiness.
    assert_eq!(get(addr, "/healthz").await?.status, 200);

    ready_tx.send_replace(true);
    for path in ["/readyz", "/readyz/", "/readyz/readyz"] {
        let r = get(addr, path).await?;
        assert_eq!((r.status, r.body.as_str()), (200, "ok"), "{path}");
    }

    ready_tx.send_replace(false);
    assert_eq!(get(addr, "/readyz").await?.status, 500, "and back");

    stop.send(()).ok();
    handle.await??;
    Ok(())
}

#[tokio::test]
async fn metrics_serve_recorded_reconciles_in_prometheus_text() -> anyhow::Result<()> {
    let metrics = Metrics::new();
    let server = bind_metrics(loopback(), metrics.clone()).await?;
    let addr = server.local_addr();
    let (stop, handle) = spawn(server);

    let before = get(addr, "/metrics").await?;
    assert_eq!(before.status, 200);
    assert!(
        !before.body.contains("controller_runtime_reconcile_total{"),
        "no series before any reconcile"
    );

    metrics.reconcile_done(
        "inferenceservice",
        ReconcileResult::Success,
        Duration::from_millis(12),
    );
    let r = get(addr, "/metrics").await?;
    assert_eq!(r.status, 200);
    let content_type = r.header("content-type").unwrap_or_default();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    assert!(
        r.body.contains(
            "controller_runtime_reconcile_total{controller=\"inferenceservice\",result=\"success\"} 1\n"
        ),
        "{}",
        r.body
    );
    assert!(
        r.body
            .contains("# TYPE controller_runtime_reconcile_total counter")
    );
    assert_eq!(get(addr, "/other").await?.status, 404);

    stop.send(()).ok();
    handle.await??;
    Ok(())
}

#[tokio::test]
async fn shutdown_stops_the_server_and_frees_the_port() -> anyhow::Result<()> {
    let (_ready_tx, ready) = watch::channel(true);
    let server = bind_health(loopback(), ready).await?;
    let addr = server.local_addr();
    let (stop, handle) = spawn(server);
    assert_eq!(get(addr, "/healthz").await?.status, 200);

    stop.send(()).ok();
    tokio::time::timeout(Duration::from_secs(5), handle).await???;
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "nothing listens after shutdown"
    );
    // The same port can be bound again.
    let again = bind_health(addr, watch::channel(true).1).await?;
    assert_eq!(again.local_addr(), addr);
    Ok(())
}

#[tokio::test]
async fn binding_a_taken_port_fails_with_the_server_name() -> anyhow::Result<()> {
    let first = bind_metrics(loopback(), Metrics::new()).await?;
    let err = bind_metrics(first.local_addr(), Metrics::new())
        .await
        .unwrap_err();
    let msg = format!("{err:#}");
    assert!(
        msg.contains("metrics server") && msg.contains(&first.local_addr().to_string()),
        "{msg}"
    );
    Ok(())
}

/// `--metrics-secure` as upstream's: HTTPS, and `/metrics` only for a caller whose bearer token
/// the API server authenticates (TokenReview) and whose user may `get` the non-resource URL
/// (SubjectAccessReview). Real ServiceAccount tokens: one bound to a role with that rule gets
/// the metrics, one without gets 403, no token 401.
#[tokio::test]
async fn secure_metrics_need_a_token_the_api_server_authorizes() -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::ServiceAccount;
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
    use kube::api::{Api, DeleteParams, PostParams};
    use odh_model_controller::dispatch;
    use odh_model_controller::metrics_auth::MetricsAuth;
    use odh_model_controller::plugin::record::{RecordConfig, Recorder};
    use odh_model_controller::plugin::wire::RequestKey;
    use odh_model_controller::plugin::{CallEnv, NoCluster, PluginSet, PluginSlot, ReconcileInput};
    use odh_test_support::net::Client;
    use std::sync::Arc;
    let t = odh_test_support::TestContext::new("metrics-secure").await?;
    let ns = t.namespace.clone();
    let accounts: Api<ServiceAccount> = t.api();
    for name in ["reader", "stranger"] {
        accounts
            .create(
                &PostParams::default(),
                &serde_json::from_value(serde_json::json!({"metadata": {"name": name}}))?,
            )
            .await?;
    }
    accounts
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({"metadata": {"name": "recorder"}}))?,
        )
        .await?;
    let role_name = format!("metrics-reader-{ns}");
    let roles: Api<ClusterRole> = Api::all(t.client.clone());
    roles
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({
                "metadata": {"name": role_name},
                "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
            }))?,
        )
        .await?;
    let bindings: Api<ClusterRoleBinding> = Api::all(t.client.clone());
    bindings
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({
                "metadata": {"name": role_name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role_name},
                "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": ns}],
            }))?,
        )
        .await?;
    let records_role = format!("record-reader-{ns}");
    roles
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({
                "metadata": {"name": records_role},
                "rules": [{"nonResourceURLs": ["/debug/plugins/*"], "verbs": ["get"]}],
            }))?,
        )
        .await?;
    bindings
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({
                "metadata": {"name": records_role},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": records_role},
                "subjects": [{"kind": "ServiceAccount", "name": "recorder", "namespace": ns}],
            }))?,
        )
        .await?;
    let recorder = odh_test_support::service_account::token(&t.client, &ns, "recorder").await?;
    let reader = odh_test_support::service_account::token(&t.client, &ns, "reader").await?;
    let stranger = odh_test_support::service_account::token(&t.client, &ns, "stranger").await?;

    let metrics = Metrics::new();
    metrics.reconcile_done("widget", ReconcileResult::Success, Duration::from_millis(3));
    // A plugin recording its calls, one reconcile recorded.
    let slot = PluginSlot::new(odh_test_support::host::load("misbehave"));
    slot.set_recorder(Some(Recorder::new(
        RecordConfig {
            sample_rate: 1.0,
            ..RecordConfig::default()
        },
        None,
    )?));
    let input = ReconcileInput {
        controller: "misbehave".into(),
        key: RequestKey {
            namespace: Some("ns".into()),
            name: "recorded".into(),
        },
        object: None,
    };
    let (_, done) =
        dispatch::reconcile(&slot, input, CallEnv::read_only(Arc::new(NoCluster))).await;
    done?;
    let set = PluginSet::new([slot]);
    let server = probes::bind_secure_metrics_with(
        loopback(),
        metrics,
        MetricsAuth::new(t.client.clone()),
        odh_model_controller::record_route::router(set),
    )
    .await?;
    let addr = server.local_addr();
    let (stop, handle) = spawn(server);

    assert_ne!(
        get(addr, "/metrics").await.map(|r| r.status).ok(),
        Some(200),
        "no plain HTTP"
    );
    let mut client = Client::connect_unverified(addr).await?;
    let anonymous = client.send("GET", "/metrics", &[]).await?;
    assert_eq!(
        (anonymous.status, anonymous.body.as_str()),
        (401, "Unauthorized\n")
    );
    let bearer = |token: &str| format!("Bearer {token}");
    let denied = client
        .send("GET", "/metrics", &[("authorization", &bearer(&stranger))])
        .await?;
    assert_eq!(denied.status, 403, "{}", denied.body);
    assert_eq!(
        denied.body,
        format!("Authorization denied for user system:serviceaccount:{ns}:stranger\n")
    );
    let forged = client
        .send(
            "GET",
            "/metrics",
            &[("authorization", "Bearer not-a-token")],
        )
        .await?;
    assert_eq!(forged.status, 401);
    let allowed = client
        .send("GET", "/metrics", &[("authorization", &bearer(&reader))])
        .await?;
    assert_eq!(allowed.status, 200, "{}", allowed.body);
    assert!(
        allowed.body.contains(
            "controller_runtime_reconcile_total{controller=\"widget\",result=\"success\"} 1"
        ),
        "{}",
        allowed.body
    );

    // The record route: a grant of its own, a metrics reader reads none.
    let route = "/debug/plugins/misbehave/record";
    let metrics_only = client
        .send("GET", route, &[("authorization", &bearer(&reader))])
        .await?;
    assert_eq!(metrics_only.status, 403, "{}", metrics_only.body);
    let records = client
        .send("GET", route, &[("authorization", &bearer(&recorder))])
        .await?;
    assert_eq!(records.status, 200, "{}", records.body);
    let lines: Vec<&str> = records.body.lines().collect();
    assert_eq!(lines.len(), 1, "{}", records.body);
    let line: serde_json::Value = serde_json::from_str(lines[0])?;
    assert_eq!(
        (line["kind"].as_str(), line["plugin"]["name"].as_str()),
        (Some("reconcile"), Some("misbehave"))
    );
    let unknown = client
        .send(
            "GET",
            "/debug/plugins/nothing/record",
            &[("authorization", &bearer(&recorder))],
        )
        .await?;
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    // `plugin record export --url` reads it from outside the pod.
    let dir = std::env::temp_dir().join(format!("odh-record-route-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let out = {
        let (dir, token) = (dir.clone(), recorder.clone());
        tokio::task::spawn_blocking(move || export_record(addr, &dir, &token)).await??
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8(out.stdout)?.trim(), lines[0]);
    let refused = {
        let (dir, token) = (dir.clone(), reader.clone());
        tokio::task::spawn_blocking(move || export_record(addr, &dir, &token)).await??
    };
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("403"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);

    stop.send(()).ok();
    handle.await??;
    for name in [&role_name, &records_role] {
        bindings.delete(name, &DeleteParams::default()).await?;
        roles.delete(name, &DeleteParams::default()).await?;
    }
    Ok(())
}

/// `plugin record export --url` of misbehave's record from the metrics server at `addr`, with
/// `token` in a file of `dir`.
fn export_record(
    addr: SocketAddr,
    dir: &std::path::Path,
    token: &str,
) -> std::io::Result<std::process::Output> {
    let token_file = dir.join("token");
    std::fs::write(&token_file, token)?;
    std::process::Command::new(env!("CARGO_BIN_EXE_odh-model-controller"))
        .args(["plugin", "record", "export", "--plugin", "misbehave"])
        .arg(format!("--url=https://{addr}"))
        .arg("--token-file")
        .arg(&token_file)
        .arg("--insecure-skip-tls-verify")
        .output()
}
