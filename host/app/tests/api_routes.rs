//! A plugin serves HTTP routes through the host: the example plugin's routes on the
//! model-serving-api server over real HTTPS, with the host's bearer authentication and the
//! caller's access checked by a real `SelfSubjectAccessReview` with the caller's own token.

use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::PostParams;
use odh_model_controller::api_routes::{AccessReviewer, ApiRoutes};
use odh_model_controller::cache::{CacheFilters, Caches};
use odh_model_controller::plugin::PluginSlot;
use odh_model_controller::tls::{TlsServerConfig, serve_on};
use odh_serve::model_serving_api::router as model_serving_api_router;
use odh_test_support::TestContext;
use serde_json::{Value, json};

use odh_test_support::net::{Client, Reply, remove_dir, serving_cert};

fn json_body(reply: &Reply) -> Value {
    serde_json::from_str(&reply.body).unwrap_or(Value::Null)
}

fn assert_secured(reply: &Reply) {
    assert_eq!(reply.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(reply.header("x-frame-options"), Some("DENY"));
    assert_eq!(reply.header("cache-control"), Some("no-store"));
    assert_eq!(
        reply.header("strict-transport-security"),
        Some("max-age=63072000; includeSubDomains")
    );
}

async fn create<K>(t: &TestContext, object: Value) -> anyhow::Result<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    <K as kube::Resource>::DynamicType: Default,
{
    Ok(t.api::<K>()
        .create(&PostParams::default(), &serde_json::from_value(object)?)
        .await?)
}

/// A token of a fresh ServiceAccount of the test's namespace, from the TokenRequest API.
async fn service_account_token(t: &TestContext, name: &str) -> anyhow::Result<String> {
    create::<ServiceAccount>(t, json!({"metadata": {"name": name}})).await?;
    let request: TokenRequest =
        serde_json::from_value(json!({"spec": {"audiences": [], "expirationSeconds": 3600}}))?;
    let issued = t
        .api::<ServiceAccount>()
        .create_token_request(name, &PostParams::default(), &request)
        .await?;
    Ok(issued.status.expect("a token").token)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_plugin_serves_its_routes_over_https() -> anyhow::Result<()> {
    let t = TestContext::new("api-routes").await?;
    for name in ["first", "second"] {
        create::<ConfigMap>(&t, json!({"metadata": {"name": name}})).await?;
    }
    let slot = PluginSlot::new(odh_test_support::host::load("hello"));
    let routes = ApiRoutes::from_slots(std::slice::from_ref(&slot)).map_err(anyhow::Error::msg)?;
    assert_eq!(
        routes.paths().collect::<Vec<_>>(),
        ["/api/v1/hello", "/api/v1/hello/configmaps"]
    );
    let caches = Caches::new(t.client.clone(), CacheFilters::default());
    let router = model_serving_api_router(
        routes.router(caches, AccessReviewer::new(t.config.clone())?),
        Default::default(),
    );
    let (cert_dir, ca) = serving_cert("api-routes");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let config = TlsServerConfig {
        name: "model-serving-api",
        cert_dir: cert_dir.clone(),
        ..Default::default()
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve_on(listener, config, router, async move {
        let _ = stopped.await;
    }));
    let mut client = Client::connect(addr, &ca).await?;

    // A route without authentication.
    let r = client.send("GET", "/api/v1/hello?name=odh", &[]).await?;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(json_body(&r), json!({"greeting": "Hello, odh!"}));
    assert_secured(&r);
    let r = client.send("POST", "/api/v1/hello", &[]).await?;
    assert_eq!(r.status, 405);
    assert_eq!(json_body(&r), json!({"error": "method not allowed"}));

    // A route with bearer authentication: the host answers for a missing or malformed token.
    let path = format!("/api/v1/hello/configmaps?namespace={}", t.namespace);
    for headers in [
        vec![],
        vec![("authorization", "Basic dXNlcjpwYXNz")],
        vec![("authorization", "Bearer ")],
        vec![("authorization", "Bearertoken")],
    ] {
        let r = client.send("GET", &path, &headers).await?;
        assert_eq!(r.status, 401, "{headers:?}");
        assert_eq!(
            json_body(&r),
            json!({"error": "missing or invalid authorization header"})
        );
        assert_secured(&r);
    }

    // The plugin asks whether the caller may list ConfigMaps; the host asks the apiserver
    // with the caller's token.
    let token = service_account_token(&t, "api-caller").await?;
    let bearer = format!("Bearer {token}");
    let r = client
        .send("GET", &path, &[("authorization", &bearer)])
        .await?;
    assert_eq!(
        (r.status, json_body(&r)),
        (403, json!({"error": "forbidden"}))
    );

    create::<Role>(
        &t,
        json!({"metadata": {"name": "list-configmaps"}, "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]}),
    )
    .await?;
    create::<RoleBinding>(
        &t,
        json!({"metadata": {"name": "api-caller"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "list-configmaps"},
            "subjects": [{"kind": "ServiceAccount", "name": "api-caller", "namespace": t.namespace}]}),
    )
    .await?;
    let r = odh_test_support::eventually(
        "the caller's new permission is seen",
        odh_test_support::Timing::default(),
        || {
            let (path, bearer) = (path.clone(), bearer.clone());
            let client = Client::connect(addr, &ca);
            async move {
                let r = client
                    .await?
                    .send("GET", &path, &[("authorization", &bearer)])
                    .await?;
                anyhow::ensure!(r.status == 200, "{} {}", r.status, r.body);
                Ok(r)
            }
        },
    )
    .await?;
    let mut names: Vec<String> = json_body(&r)["configmaps"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|v| v.as_str().unwrap_or_default().to_string())
        .collect();
    names.sort();
    assert!(
        names.contains(&"first".to_string()) && names.contains(&"second".to_string()),
        "{names:?}"
    );

    // The server's own paths.
    let r = client.send("GET", "/healthz", &[]).await?;
    assert_eq!((r.status, r.body.as_str()), (200, r#"{"status":"ok"}"#));
    assert_secured(&r);
    let r = client.send("GET", "/nothing-here", &[]).await?;
    assert_eq!((r.status, r.body.as_str()), (404, "404 page not found\n"));
    assert_secured(&r);

    let _ = stop.send(());
    server.await??;
    remove_dir(&cert_dir);
    Ok(())
}

#[test]
fn two_plugins_may_not_serve_one_path() {
    let a = PluginSlot::new(odh_test_support::host::load("hello"));
    let b = PluginSlot::new(odh_test_support::host::load("hello"));
    let err = ApiRoutes::from_slots(&[a, b]).err().expect("a conflict");
    assert!(
        err.contains(
            r#"API route "/api/v1/hello" is declared by both plugin "hello" and plugin "hello""#
        ),
        "{err}"
    );
}

#[test]
fn a_route_call_is_traced_as_a_plugin_call() {
    use odh_model_controller::traces::OtlpLayer;
    use odh_model_controller::traces::proto::AttributeValue;
    use tracing_subscriber::layer::SubscriberExt;
    let plugin = odh_test_support::host::load("hello");
    // The exporter's own layer: what it records is what a collector would get.
    let (spans, exported) = std::sync::mpsc::sync_channel(64);
    let dropped = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let subscriber = tracing_subscriber::registry().with(OtlpLayer::new(spans, dropped));
    let request = odh_model_controller::plugin::wire::ApiRequest {
        method: "GET".into(),
        path: "/api/v1/hello".into(),
        query: "name=odh".into(),
        headers: vec![],
        body: vec![],
    };
    let env = odh_model_controller::plugin::CallEnv::read_only(std::sync::Arc::new(
        odh_model_controller::plugin::NoCluster,
    ));
    let answer =
        tracing::subscriber::with_default(subscriber, || plugin.handle_blocking(&request, &env))
            .expect("the route answers");
    assert_eq!(answer.status, 200);
    let spans: Vec<_> = exported.try_iter().collect();
    assert!(
        spans.iter().any(|s| s.name == "plugin.call"
            && s.attributes
                .contains(&("odh.op", AttributeValue::String("handle".into())))),
        "{spans:?}"
    );
}
