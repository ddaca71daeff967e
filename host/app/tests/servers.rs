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
    use odh_model_controller::metrics_auth::MetricsAuth;
    use odh_test_support::net::Client;
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
    let reader = odh_test_support::service_account::token(&t.client, &ns, "reader").await?;
    let stranger = odh_test_support::service_account::token(&t.client, &ns, "stranger").await?;

    let metrics = Metrics::new();
    metrics.reconcile_done("widget", ReconcileResult::Success, Duration::from_millis(3));
    let server =
        probes::bind_secure_metrics(loopback(), metrics, MetricsAuth::new(t.client.clone()))
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

    stop.send(()).ok();
    handle.await??;
    bindings
        .delete(&role_name, &DeleteParams::default())
        .await?;
    roles.delete(&role_name, &DeleteParams::default()).await?;
    Ok(())
}
