//! The Route sub-reconciler (scenarios U-R*, C-06/C-07 timeouts, D-01…D-08).

mod common;

use common::*;
use isvc::route;
use odh_plugin_sdk::testing::Applied;
use odh_plugin_sdk::testing::FakeCluster;
use odh_plugin_sdk::{Object, json};

fn svc(ports: odh_plugin_sdk::Value) -> Object {
    Object(service("pred", "test", "predictor", ports).build())
}

#[test]
fn u_r01_ssl_prefers_the_https_port() {
    let s = svc(json!([{"name": "http", "port": 80}, {"name": "https", "port": 443}]));
    assert_eq!(route::target_port(true, &s).unwrap(), json!("https"));
}

#[test]
fn u_r02_ssl_without_https_takes_the_first_named_port() {
    let s = svc(json!([{"name": "foo", "port": 1234}]));
    assert_eq!(route::target_port(true, &s).unwrap(), json!("foo"));
}

#[test]
fn u_r03_no_ssl_prefers_the_http_port() {
    let s = svc(json!([{"name": "http", "port": 80}, {"name": "foo", "port": 1234}]));
    assert_eq!(route::target_port(false, &s).unwrap(), json!("http"));
}

#[test]
fn u_r04_no_ssl_without_http_takes_the_first_named_port() {
    let s = svc(json!([{"name": "foo", "port": 1234}]));
    assert_eq!(route::target_port(false, &s).unwrap(), json!("foo"));
}

#[test]
fn u_r05_an_unnamed_port_is_used_by_number() {
    let s = svc(json!([{"port": 8080}]));
    assert_eq!(route::target_port(false, &s).unwrap(), json!(8080));
}

#[test]
fn u_r06_a_service_without_ports_is_an_error() {
    let err = route::target_port(false, &svc(json!([]))).unwrap_err();
    assert_eq!(err.message(), "service \"pred\" has no ports defined");
}

fn bare_route(target_port: odh_plugin_sdk::Value, to: &str) -> odh_plugin_sdk::Value {
    json!({"apiVersion": "route.openshift.io/v1", "kind": "Route",
           "metadata": {"name": "r", "namespace": NS},
           "spec": {"to": {"kind": "Service", "name": to}, "port": {"targetPort": target_port}}})
}

#[test]
fn u_r07_a_set_target_port_is_left_alone() {
    let cluster = cluster().with(service(
        "pred",
        "t",
        "predictor",
        json!([{"name": "http", "port": 80}]),
    ));
    let mut r = bare_route(json!("http"), "pred");
    let before = r.clone();
    route::check_target_port(&mut r, &cluster).unwrap();
    assert_eq!(r, before);
}

#[test]
fn u_r08_an_empty_target_port_is_filled_from_the_service() {
    let cluster = cluster().with(service(
        "pred",
        "t",
        "predictor",
        json!([{"name": "http", "port": 80}]),
    ));
    let mut r = bare_route(json!(""), "pred");
    route::check_target_port(&mut r, &cluster).unwrap();
    assert_eq!(r["spec"]["port"]["targetPort"], "http");
}

#[test]
fn u_r09_an_empty_target_port_with_the_service_missing_is_an_error() {
    let mut r = bare_route(json!(""), "pred");
    assert!(route::check_target_port(&mut r, &cluster()).is_err());
}

#[test]
fn u_r10_an_empty_target_port_with_a_portless_service_is_an_error() {
    let cluster = cluster().with(service("pred", "t", "predictor", json!([])));
    let mut r = bare_route(json!(""), "pred");
    let err = route::check_target_port(&mut r, &cluster).unwrap_err();
    assert!(err.message().contains("has no ports defined"), "{err:?}");
}

#[test]
fn u_r11_an_unexposed_inference_service_wants_no_route() {
    let cluster = cluster().with(predictor_service("test"));
    assert_eq!(
        route::desired(&Object(isvc("test").build()), &cluster).unwrap(),
        None
    );
}

fn port_http() -> odh_plugin_sdk::Value {
    json!([{"name": "http", "port": 80, "targetPort": 8080}])
}

#[test]
fn u_r12_a_transformer_service_wins() {
    let cluster = cluster()
        .with(service(
            "test-transformer",
            "test",
            "transformer",
            port_http(),
        ))
        .with(service("test-predictor", "test", "predictor", port_http()));
    let r = route::desired(&Object(isvc("test").exposed().build()), &cluster)
        .unwrap()
        .unwrap();
    assert_eq!(r["spec"]["to"]["name"], "test-transformer");
    assert_eq!(r["spec"]["port"]["targetPort"], "http");
}

#[test]
fn u_r13_the_service_named_after_the_predictor_wins_among_predictors() {
    let cluster = cluster()
        .with(service(
            "random-predictor",
            "test",
            "predictor",
            port_http(),
        ))
        .with(service("test-predictor", "test", "predictor", port_http()));
    let r = route::desired(&Object(isvc("test").exposed().build()), &cluster)
        .unwrap()
        .unwrap();
    assert_eq!(r["spec"]["to"]["name"], "test-predictor");
}

#[test]
fn u_r14_any_predictor_service_is_used_when_none_is_named_after_it() {
    let cluster = cluster().with(service("some-predictor", "test", "predictor", port_http()));
    let r = route::desired(&Object(isvc("test").exposed().build()), &cluster)
        .unwrap()
        .unwrap();
    assert_eq!(r["spec"]["to"]["name"], "some-predictor");
}

#[test]
fn c_05_desired_route_shape_for_an_exposed_inference_service() {
    let name = "example-onnx-mnist";
    let cluster = cluster().with(predictor_service(name)).with(ovms_runtime());
    let d = reconcile(&cluster, Some(&isvc(name).exposed().build()));
    let Applied {
        object: r,
        ownership,
    } = d.applied("Route", name).expect("route applied");
    assert_eq!(ownership, odh_plugin_sdk::Ownership::Controller);
    assert_eq!(
        r["metadata"]["labels"],
        json!({"inferenceservice-name": name})
    );
    assert_eq!(
        r["metadata"]["annotations"],
        json!({"haproxy.router.openshift.io/timeout": "30s"})
    );
    assert_eq!(
        r["spec"],
        json!({
            "to": {"kind": "Service", "name": format!("{name}-predictor"), "weight": 100},
            "port": {"targetPort": "http"},
            "tls": {"termination": "edge", "insecureEdgeTerminationPolicy": "Redirect"},
            "wildcardPolicy": "None",
        })
    );
}

#[test]
fn c_06_timeouts_sum_over_components_and_the_annotation_wins() {
    let mut v = isvc("example-onnx-mnist").exposed().build();
    v["spec"]["predictor"]["timeout"] = json!(45);
    v["spec"]["transformer"] = json!({"timeout": 45, "containers": []});
    v["spec"]["explainer"] = json!({"timeout": 45});
    assert_eq!(route::timeout(&Object(v.clone())), "135s");
    let v = Object(v)
        .with_annotation("haproxy.router.openshift.io/timeout", "1m")
        .into_value();
    assert_eq!(route::timeout(&Object(v)), "1m");
}

#[test]
fn c_07_default_timeouts_are_thirty_seconds_per_component() {
    let mut v = isvc("example-onnx-mnist").exposed().build();
    v["spec"]["transformer"] = json!({"containers": []});
    v["spec"]["explainer"] = json!({"containers": []});
    assert_eq!(route::timeout(&Object(v)), "90s");
}

fn canary_cluster() -> FakeCluster {
    cluster()
        .with(service(
            "m-predictor",
            "m",
            "predictor",
            json!([{"name": "http", "port": 80, "targetPort": 8080}]),
        ))
        .with(service(
            "m-v2-predictor",
            "m-v2",
            "predictor",
            json!([{"name": "http", "port": 80}]),
        ))
        .with(service(
            "m-exp-predictor",
            "m-exp",
            "predictor",
            json!([{"name": "http", "port": 80}]),
        ))
}

fn with_canaries(canaries: odh_plugin_sdk::Value) -> odh_plugin_sdk::Value {
    let mut v = isvc("m").exposed().build();
    v["spec"]["canary"] = canaries;
    v
}

#[test]
fn d_01_canaries_split_traffic_with_alternate_backends() {
    let v = with_canaries(json!([
        {"trafficPercent": 25, "predictor": {"name": "v2"}},
        {"trafficPercent": 10, "predictor": {"name": "exp"}},
    ]));
    let r = route::desired(&Object(v), &canary_cluster())
        .unwrap()
        .unwrap();
    assert_eq!(
        r["spec"]["to"],
        json!({"kind": "Service", "name": "m-predictor", "weight": 65})
    );
    assert_eq!(
        r["spec"]["alternateBackends"],
        json!([
            {"kind": "Service", "name": "m-v2-predictor", "weight": 25},
            {"kind": "Service", "name": "m-exp-predictor", "weight": 10},
        ])
    );
    assert_eq!(r["spec"]["port"]["targetPort"], 8080);
}

#[test]
fn d_02_canary_percents_over_one_hundred_are_an_error() {
    let v = with_canaries(json!([
        {"trafficPercent": 60, "predictor": {"name": "v2"}},
        {"trafficPercent": 60, "predictor": {"name": "exp"}},
    ]));
    let err = route::desired(&Object(v), &canary_cluster()).unwrap_err();
    assert_eq!(
        err.message(),
        "canary traffic percents sum to 120 which exceeds 100; stable backend weight would be -20"
    );
}

#[test]
fn d_03_a_missing_canary_service_is_an_error() {
    let v = with_canaries(json!([{"trafficPercent": 10, "predictor": {"name": "gone"}}]));
    let err = route::desired(&Object(v), &canary_cluster()).unwrap_err();
    assert!(
        err.message()
            .starts_with("canary service \"m-gone-predictor\" not found:"),
        "{err:?}"
    );
}

/// A canary Service whose read fails (not "absent") keeps upstream's prefix (review D17).
#[test]
fn d17_a_failed_canary_service_read_is_prefixed_like_a_missing_one() {
    use odh_plugin_sdk::cluster::Cluster;
    struct CanaryReadFails(FakeCluster);
    impl Cluster for CanaryReadFails {
        fn get(
            &self,
            gvk: &odh_plugin_sdk::Gvk,
            namespace: Option<&str>,
            name: &str,
        ) -> Result<Option<odh_plugin_sdk::Value>, odh_plugin_sdk::Error> {
            if name == "m-v2-predictor" {
                return Err(odh_plugin_sdk::Error::Transient(
                    "etcdserver: request timed out".into(),
                ));
            }
            self.0.get(gvk, namespace, name)
        }
        fn list(
            &self,
            gvk: &odh_plugin_sdk::Gvk,
            namespace: Option<&str>,
            selector: Option<&str>,
        ) -> Result<Vec<odh_plugin_sdk::Value>, odh_plugin_sdk::Error> {
            self.0.list(gvk, namespace, selector)
        }
    }
    let v = with_canaries(json!([{"trafficPercent": 10, "predictor": {"name": "v2"}}]));
    let err = route::desired(&Object(v), &CanaryReadFails(canary_cluster())).unwrap_err();
    assert_eq!(
        err,
        odh_plugin_sdk::Error::Transient(
            "canary service \"m-v2-predictor\" not found: etcdserver: request timed out".into()
        )
    );
}

#[test]
fn d_04_without_canaries_the_route_has_full_weight_and_no_alternates() {
    let r = route::desired(&Object(with_canaries(json!([]))), &canary_cluster())
        .unwrap()
        .unwrap();
    assert_eq!(r["spec"]["to"]["weight"], 100);
    assert!(r["spec"].get("alternateBackends").is_none());
}

#[test]
fn d_06_auth_true_gives_reencrypt_on_the_https_port_but_no_binding() {
    let cluster = cluster().with(service(
        "m-predictor",
        "m",
        "predictor",
        json!([{"name": "http", "port": 80}, {"name": "https", "port": 8443}]),
    ));
    let v = isvc("m")
        .raw()
        .exposed()
        .annotation("security.opendatahub.io/enable-auth", "True")
        .build();
    let d = reconcile(&cluster, Some(&v));
    let r = d.applied_object("Route", "m");
    assert_eq!(r["spec"]["tls"]["termination"], "reencrypt");
    assert_eq!(r["spec"]["port"]["targetPort"], "https");
    assert!(
        d.applied("ClusterRoleBinding", "test-ns-default-auth-delegator")
            .is_none()
    );
}

fn existing_route(name: &str) -> odh_plugin_sdk::Value {
    json!({"apiVersion": "route.openshift.io/v1", "kind": "Route",
           "metadata": {"name": name, "namespace": NS}, "spec": {"to": {"kind": "Service", "name": "x"}}})
}

#[test]
fn d_07_removing_the_exposed_label_removes_the_route() {
    let cluster = cluster()
        .with(predictor_service("m"))
        .with(existing_route("m"));
    let d = reconcile(&cluster, Some(&isvc("m").raw().build()));
    assert!(d.deleted("Route", "m"));
}

#[test]
fn d_08_an_exposed_inference_service_without_services_loses_its_route() {
    let cluster = cluster().with(existing_route("m"));
    let d = reconcile(&cluster, Some(&isvc("m").raw().exposed().build()));
    assert!(d.deleted("Route", "m"));
    assert_eq!(d.error_message(), None);
}

#[test]
fn c_08_a_route_named_like_an_unexposed_inference_service_is_asked_away() {
    // The plugin asks for its removal; the host only deletes what it manages, so a
    // user-created Route survives (docs/divergences.md; the integration test checks that).
    let cluster = cluster()
        .with(predictor_service("m"))
        .with(existing_route("m"));
    assert!(reconcile(&cluster, Some(&isvc("m").raw().build())).deleted("Route", "m"));
}

#[test]
fn d9_a_failed_route_read_before_removal_is_an_error_unless_routes_are_not_served() {
    let mut plan = odh_plugin_sdk::Plan::new();
    let isvc = Object(isvc("test").build());
    let failing = cluster().with(predictor_service("test")).fail(
        odh_kinds::gvk::route(),
        odh_plugin_sdk::Error::Transient("etcdserver: request timed out".into()),
    );
    let err = route::reconcile(&isvc, &failing, &mut plan).unwrap_err();
    assert!(err.message().contains("timed out"), "{err:?}");
    let openshift_less = cluster().with(predictor_service("test")).fail(
        odh_kinds::gvk::route(),
        odh_plugin_sdk::Error::Transient(
            "no matches for kind \"Route\" in version \"route.openshift.io/v1\"".into(),
        ),
    );
    route::reconcile(&isvc, &openshift_less, &mut plan).unwrap();
    assert!(plan.outcome().delete.is_empty());
}
