//! The `llm-gateway` plugin's `llminferenceservice` controller on the real apiserver
//! (docs/plugins/llm-gateway.md, "Controller `llminferenceservice`"; scenarios LC-02, LC-03,
//! LC-06, LC-08, LC-11, LC-12, AP-01, AP-02 and CP-01..CP-05): one host running the built
//! `target/plugins/llm-gateway.wasm` for the whole test binary, each test in a namespace of its
//! own. The AuthPolicy, HTTPRoute and LLMInferenceService CRDs come from `tests/crds`.

use std::time::Duration;

use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use odh_test_support::host::{RunningControllers, controllers_running, load, quiet};
use odh_test_support::{TestContext, Timing, absent, consistently, eventually, exists};
use serde_json::{Value, json};

const ENABLE_AUTH: &str = "security.opendatahub.io/enable-auth";
const GROUP: &str = "serving.kserve.io/routing-group";

/// The controllers, once per test binary. Called after the test's `TestContext` exists, so the
/// CRDs it installs are served before the host first resolves their kinds.
fn start() -> &'static RunningControllers {
    controllers_running(|| vec![load("llm-gateway")], 2)
}

fn services(t: &TestContext) -> Api<DynamicObject> {
    t.dynamic(
        "serving.kserve.io",
        "v1alpha2",
        "LLMInferenceService",
        "llminferenceservices",
    )
}

fn policies(t: &TestContext) -> Api<DynamicObject> {
    t.dynamic("kuadrant.io", "v1", "AuthPolicy", "authpolicies")
}

fn routes(t: &TestContext) -> Api<DynamicObject> {
    t.dynamic("gateway.networking.k8s.io", "v1", "HTTPRoute", "httproutes")
}

async fn create_route(t: &TestContext, name: &str) -> anyhow::Result<()> {
    t.create(
        &routes(t),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
               "metadata": {"name": name}, "spec": {}}),
    )
    .await?;
    Ok(())
}

/// An LLMInferenceService with these annotations, labels and route refs.
async fn create_service(
    t: &TestContext,
    name: &str,
    annotations: Value,
    labels: Value,
    route_refs: &[&str],
) -> anyhow::Result<DynamicObject> {
    let mut spec = json!({"model": {"uri": "hf://facebook/opt-125m"}});
    if !route_refs.is_empty() {
        let refs: Vec<Value> = route_refs.iter().map(|r| json!({"name": r})).collect();
        spec["router"] = json!({"route": {"http": {"refs": refs}}});
    }
    t.create(
        &services(t),
        json!({"apiVersion": "serving.kserve.io/v1alpha2", "kind": "LLMInferenceService",
               "metadata": {"name": name, "annotations": annotations, "labels": labels},
               "spec": spec}),
    )
    .await
}

async fn set_annotation(t: &TestContext, name: &str, key: &str, value: &str) -> anyhow::Result<()> {
    services(t)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {key: value}}})),
        )
        .await?;
    Ok(())
}

fn short() -> Timing {
    Timing::within(Duration::from_secs(2))
}

/// LC-02, then LC-03: auth off gets the anonymous policy for the default HTTPRoute, owned by
/// the service alone; auth turned on deletes it and it stays away.
#[tokio::test]
async fn lc_02_lc_03_auth_off_makes_the_policy_and_auth_on_deletes_it() -> anyhow::Result<()> {
    let t = TestContext::new("llm-lc02").await?;
    start();
    create_route(&t, "test-llmisvc-kserve-route").await?;
    let svc = create_service(
        &t,
        "test-llmisvc",
        json!({ENABLE_AUTH: "false"}),
        json!({}),
        &[],
    )
    .await?;
    let policy = exists(&policies(&t), "test-llmisvc-kserve-route-authn").await?;
    let owners = policy.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(owners.len(), 1, "{owners:?}");
    assert_eq!(owners[0].kind, "LLMInferenceService");
    assert_eq!(owners[0].api_version, "serving.kserve.io/v1alpha2");
    assert_eq!(owners[0].name, "test-llmisvc");
    assert_eq!(Some(owners[0].uid.as_str()), svc.metadata.uid.as_deref());
    assert_eq!(owners[0].controller, Some(true));
    assert_eq!(
        policy.data["spec"]["targetRef"]["name"],
        "test-llmisvc-kserve-route"
    );
    assert_eq!(
        policy.data["spec"]["rules"]["authentication"]["public"]["overrides"]["fairness"]["value"],
        "unauthenticated"
    );
    assert_eq!(
        policy.metadata.labels.as_ref().unwrap()["app.kubernetes.io/managed-by"],
        "odh-model-controller"
    );

    set_annotation(&t, "test-llmisvc", ENABLE_AUTH, "true").await?;
    absent(&policies(&t), "test-llmisvc-kserve-route-authn").await?;
    consistently("the policy stays deleted", short(), || async {
        anyhow::ensure!(
            policies(&t)
                .get_opt("test-llmisvc-kserve-route-authn")
                .await?
                .is_none(),
            "re-created"
        );
        Ok(())
    })
    .await
}

/// LC-06, LC-08: a custom route's policy targets it; deleted, it is made again (the
/// AuthPolicy watch maps it back to its service).
#[tokio::test]
async fn lc_06_lc_08_custom_route_policy_is_restored_after_deletion() -> anyhow::Result<()> {
    let t = TestContext::new("llm-lc06").await?;
    start();
    create_route(&t, "custom-httproute-1").await?;
    create_service(
        &t,
        "test-llmisvc",
        json!({ENABLE_AUTH: "false"}),
        json!({}),
        &["custom-httproute-1"],
    )
    .await?;
    let policy = exists(&policies(&t), "custom-httproute-1-authn").await?;
    assert_eq!(
        policy.data["spec"]["targetRef"]["name"],
        "custom-httproute-1"
    );
    let first_uid = policy.metadata.uid.clone();
    policies(&t)
        .delete("custom-httproute-1-authn", &DeleteParams::default())
        .await?;
    eventually("the policy is made again", Timing::default(), || async {
        let again = policies(&t).get_opt("custom-httproute-1-authn").await?;
        match again {
            Some(p) if p.metadata.uid != first_uid && p.metadata.deletion_timestamp.is_none() => {
                Ok(())
            }
            _ => anyhow::bail!("not yet"),
        }
    })
    .await
}

/// How many times Warnings of `reason` were reported in the namespace (an Event series counts
/// each occurrence).
async fn reported(t: &TestContext, reason: &str) -> anyhow::Result<i32> {
    let events: Api<Event> = t.api();
    Ok(events
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(reason) && e.type_.as_deref() == Some("Warning"))
        .map(|e| e.series.map_or(1, |s| s.count))
        .sum())
}

/// The notes of the Warnings of `reason` in the namespace.
async fn warnings(t: &TestContext, reason: &str) -> anyhow::Result<Vec<String>> {
    let events: Api<Event> = t.api();
    Ok(events
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(reason) && e.type_.as_deref() == Some("Warning"))
        .map(|e| e.note.unwrap_or_default())
        .collect())
}

/// LC-11: with the HTTPRoute gone the reconcile fails (a `ReconcileError` Event); once the
/// service is stopped, no new such Event appears. Race-free: once the stop is in and the
/// controllers are quiet (no retry of the failure left), the service is changed again, which
/// reconciles it at once (a watch event, no back-off); the count of Events must not move.
#[tokio::test]
async fn lc_11_stopped_service_stops_failing() -> anyhow::Result<()> {
    let t = TestContext::new("llm-lc11").await?;
    let running = start();
    create_service(
        &t,
        "test-llmisvc",
        json!({ENABLE_AUTH: "false"}),
        json!({}),
        &[],
    )
    .await?;
    eventually(
        "the missing route is reported",
        Timing::default(),
        || async {
            let found = warnings(&t, "ReconcileError").await?;
            anyhow::ensure!(
                found.iter().any(|m| m.contains(
                    "failed to get HTTPRoute for AuthPolicy test-llmisvc-kserve-route-authn"
                )),
                "{found:?}"
            );
            Ok(())
        },
    )
    .await?;
    set_annotation(&t, "test-llmisvc", "serving.kserve.io/stop", "true").await?;
    // A retry already under way when the stop lands may still report once.
    quiet(&running.ctx, Timing::within(Duration::from_secs(60))).await?;
    let settled = reported(&t, "ReconcileError").await?;
    let before = running.ctx.reconcile_count();
    set_annotation(&t, "test-llmisvc", "example.com/touched", "yes").await?;
    eventually(
        "the touched service is reconciled",
        Timing::default(),
        || async {
            anyhow::ensure!(running.ctx.reconcile_count() > before, "no reconcile yet");
            Ok(())
        },
    )
    .await?;
    quiet(&running.ctx, Timing::within(Duration::from_secs(60))).await?;
    let now = reported(&t, "ReconcileError").await?;
    anyhow::ensure!(
        now == settled,
        "a stopped service reported ReconcileError again: {now} != {settled}"
    );
    Ok(())
}

/// AP-02, and AP-01 for the agreeing group: two services of one routing group with mixed auth
/// produce the Warning; a group that agrees produces none.
#[tokio::test]
async fn ap_01_ap_02_routing_group_auth_posture() -> anyhow::Result<()> {
    let t = TestContext::new("llm-ap02").await?;
    start();
    for route in [
        "llama-v1-kserve-route",
        "llama-v2-kserve-route",
        "same-a-kserve-route",
        "same-b-kserve-route",
    ] {
        create_route(&t, route).await?;
    }
    create_service(
        &t,
        "same-a",
        json!({ENABLE_AUTH: "true"}),
        json!({GROUP: "same"}),
        &[],
    )
    .await?;
    create_service(
        &t,
        "same-b",
        json!({ENABLE_AUTH: "true"}),
        json!({GROUP: "same"}),
        &[],
    )
    .await?;
    create_service(
        &t,
        "llama-v1",
        json!({ENABLE_AUTH: "true"}),
        json!({GROUP: "llama"}),
        &[],
    )
    .await?;
    create_service(
        &t,
        "llama-v2",
        json!({ENABLE_AUTH: "false"}),
        json!({GROUP: "llama"}),
        &[],
    )
    .await?;
    let expected = "auth posture mismatch in group \"llama\": [llama-v1] have enable-auth=true, [llama-v2] have enable-auth=false";
    eventually("the mismatch is reported", Timing::default(), || async {
        let found = warnings(&t, "AuthPostureMismatch").await?;
        anyhow::ensure!(found.iter().any(|m| m == expected), "{found:?}");
        Ok(())
    })
    .await?;
    consistently("the agreeing group is not reported", short(), || async {
        let found = warnings(&t, "AuthPostureMismatch").await?;
        anyhow::ensure!(found.iter().all(|m| m.contains("\"llama\"")), "{found:?}");
        Ok(())
    })
    .await
}

/// CP-01..CP-05 (the AuthPolicy comparator, docs/plugins/llm-gateway.md, "Writes: apply and
/// claim") as the cluster sees it: an identical policy
/// is not rewritten when the service reconciles again (CP-01, CP-03: the template's `priority:
/// 0` and `metrics: false` compare equal with what is stored), labels a user adds stay (CP-04),
/// and a templated label that differs (CP-02) or is missing (CP-05) is restored.
#[tokio::test]
async fn cp_01_to_05_policy_comparison_on_the_cluster() -> anyhow::Result<()> {
    let t = TestContext::new("llm-cp").await?;
    start();
    create_route(&t, "test-llmisvc-kserve-route").await?;
    create_service(
        &t,
        "test-llmisvc",
        json!({ENABLE_AUTH: "false"}),
        json!({}),
        &[],
    )
    .await?;
    let name = "test-llmisvc-kserve-route-authn";
    let settled = exists(&policies(&t), name).await?;
    let version = settled.metadata.resource_version.clone();
    set_annotation(&t, "test-llmisvc", "touched", "1").await?;
    consistently("an identical policy is not rewritten", short(), || async {
        let now = policies(&t).get(name).await?;
        anyhow::ensure!(now.metadata.resource_version == version, "rewritten");
        Ok(())
    })
    .await?;

    let component = "app.kubernetes.io/component";
    let part_of = "app.kubernetes.io/part-of";
    let extra = "kubectl.kubernetes.io/last-applied-configuration";
    policies(&t)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {
                component: "changed",
                part_of: null,
                extra: "x",
            }}})),
        )
        .await?;
    eventually(
        "the templated labels are restored",
        Timing::default(),
        || async {
            let now = policies(&t).get(name).await?;
            let labels = now.metadata.labels.unwrap_or_default();
            anyhow::ensure!(
                labels.get(component).map(String::as_str) == Some("llminferenceservice-policies")
                    && labels.get(part_of).map(String::as_str) == Some("llminferenceservice"),
                "{labels:?}"
            );
            anyhow::ensure!(
                labels.get(extra).map(String::as_str) == Some("x"),
                "{labels:?}"
            );
            Ok(())
        },
    )
    .await
}

/// LC-12 (part 1's side): the routes come from a `baseRefs` config of the service's namespace,
/// read through the host, when the service names none itself.
#[tokio::test]
async fn lc_12_routes_from_a_base_config() -> anyhow::Result<()> {
    let t = TestContext::new("llm-lc12").await?;
    start();
    let configs = t.dynamic(
        "serving.kserve.io",
        "v1alpha2",
        "LLMInferenceServiceConfig",
        "llminferenceserviceconfigs",
    );
    t.create(
        &configs,
        json!({"apiVersion": "serving.kserve.io/v1alpha2", "kind": "LLMInferenceServiceConfig",
               "metadata": {"name": "test-config"},
               "spec": {"router": {"route": {"http": {"refs": [{"name": "cfg-route"}]}}}}}),
    )
    .await?;
    create_route(&t, "cfg-route").await?;
    t.create(
        &services(&t),
        json!({"apiVersion": "serving.kserve.io/v1alpha2", "kind": "LLMInferenceService",
               "metadata": {"name": "test-llmisvc", "annotations": {ENABLE_AUTH: "false"}},
               "spec": {"baseRefs": [{"name": "test-config"}],
                        "model": {"uri": "hf://facebook/opt-125m"}}}),
    )
    .await?;
    let policy = exists(&policies(&t), "cfg-route-authn").await?;
    assert_eq!(policy.data["spec"]["targetRef"]["name"], "cfg-route");
    consistently("no policy for the default route", short(), || async {
        anyhow::ensure!(
            policies(&t)
                .get_opt("test-llmisvc-kserve-route-authn")
                .await?
                .is_none(),
            "made for the default route"
        );
        Ok(())
    })
    .await
}

/// A CRD installed after the controllers started: the `llminferenceservice` controller waits
/// for its primary kind (looking again with back-off, as upstream's manager restarts until it
/// exists) and reconciles once the LLMInferenceService CRD is there, with no restart. On an
/// apiserver of its own: the shared one has every CRD from the start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_installed_after_start_gets_its_controller_without_a_restart() -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::Namespace;
    use kube::api::PostParams;
    use odh_test_support::RestartableApiserver;
    const LATE: &str = "llminferenceservices.serving.kserve.io";
    let server = RestartableApiserver::start("late-crd")?;
    let client = kube::Client::try_from(server.config().await?)?;
    let dirs = odh_test_support::crd_dirs();
    odh_test_support::crds::install_where(&client, &dirs, |name| name != LATE).await?;
    let ns = "late-crd";
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": ns}}))?,
        )
        .await?;
    let shutdown = tokio_util::sync::CancellationToken::new();
    let _controllers = odh_test_support::host::start_controllers(
        client.clone(),
        vec![load("llm-gateway")],
        1,
        shutdown.clone(),
    )
    .await?;

    let installed =
        odh_test_support::crds::install_where(&client, &dirs, |name| name == LATE).await?;
    assert_eq!(installed, [LATE]);
    let dynamic = |group: &str, version: &str, kind: &str, plural: &str| {
        let resource = kube::api::ApiResource {
            group: group.into(),
            version: version.into(),
            api_version: format!("{group}/{version}"),
            kind: kind.into(),
            plural: plural.into(),
        };
        Api::<DynamicObject>::namespaced_with(client.clone(), ns, &resource)
    };
    let create = |api: Api<DynamicObject>, object: Value| async move {
        api.create(&PostParams::default(), &serde_json::from_value(object)?)
            .await
            .map_err(anyhow::Error::from)
    };
    create(
        dynamic("gateway.networking.k8s.io", "v1", "HTTPRoute", "httproutes"),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
               "metadata": {"name": "late-kserve-route"}, "spec": {}}),
    )
    .await?;
    create(
        dynamic(
            "serving.kserve.io",
            "v1alpha2",
            "LLMInferenceService",
            "llminferenceservices",
        ),
        json!({"apiVersion": "serving.kserve.io/v1alpha2", "kind": "LLMInferenceService",
               "metadata": {"name": "late", "annotations": {ENABLE_AUTH: "false"}},
               "spec": {"model": {"uri": "hf://facebook/opt-125m"}}}),
    )
    .await?;
    let policies = dynamic("kuadrant.io", "v1", "AuthPolicy", "authpolicies");
    eventually(
        "the late controller makes the service's AuthPolicy",
        Timing::within(Duration::from_secs(90)),
        || async {
            policies
                .get_opt("late-kserve-route-authn")
                .await?
                .ok_or_else(|| anyhow::anyhow!("no AuthPolicy yet"))
        },
    )
    .await?;
    shutdown.cancel();
    Ok(())
}

// ---------------------------------------------------------------------------------------
// The AuthPolicy store (RA-22..RA-29, upstream's unit tests of its CRUD on a fake client): here
// the same operations are the host's reads, applies and deletes for the controller, on the
// real apiserver. RA-23 (creating a duplicate fails) and RA-27 (updating a missing policy
// fails) are not applicable: the host has no separate create and update, only a server-side
// apply, which makes a missing policy and updates an existing one by design (RA-25, RA-26).

const POLICY: &str = "test-llmisvc-kserve-route-authn";

/// `test-llmisvc` with auth off and its default route, and the anonymous policy made for it.
async fn anonymous_policy(t: &TestContext) -> anyhow::Result<DynamicObject> {
    create_route(t, "test-llmisvc-kserve-route").await?;
    create_service(
        t,
        "test-llmisvc",
        json!({ENABLE_AUTH: "false"}),
        json!({}),
        &[],
    )
    .await?;
    exists(&policies(t), POLICY).await
}

/// Changes `test-llmisvc` with annotation `key` (which the controller does not read, unless
/// it is one of its own) and waits until that reconcile, and whatever it caused, has run.
async fn reconciled_after(
    t: &TestContext,
    running: &RunningControllers,
    key: &str,
    value: &str,
) -> anyhow::Result<()> {
    let before = running.ctx.reconcile_count();
    set_annotation(t, "test-llmisvc", key, value).await?;
    eventually("the service is reconciled", Timing::default(), || async {
        anyhow::ensure!(running.ctx.reconcile_count() > before, "no reconcile yet");
        Ok(())
    })
    .await?;
    quiet(&running.ctx, Timing::within(Duration::from_secs(60))).await
}

/// RA-22: create: the policy is made in the service's namespace, labelled ours.
#[tokio::test]
async fn ra_22_create_makes_the_policy() -> anyhow::Result<()> {
    let t = TestContext::new("llm-ra22").await?;
    start();
    let policy = anonymous_policy(&t).await?;
    assert_eq!(
        policy.metadata.namespace.as_deref(),
        Some(t.namespace.as_str())
    );
    assert_eq!(
        policy.metadata.labels.as_ref().unwrap()["app.kubernetes.io/managed-by"],
        "odh-model-controller"
    );
    Ok(())
}

/// RA-24: get an existing one: the next reconcile finds the policy it made (same object, same
/// name and namespace) instead of making another.
#[tokio::test]
async fn ra_24_get_finds_the_existing_policy() -> anyhow::Result<()> {
    let t = TestContext::new("llm-ra24").await?;
    let running = start();
    let made = anonymous_policy(&t).await?;
    reconciled_after(&t, running, "example.com/touched", "ra-24").await?;
    let now = policies(&t).get(POLICY).await?;
    assert_eq!(now.metadata.uid, made.metadata.uid);
    assert_eq!(now.metadata.namespace, made.metadata.namespace);
    Ok(())
}

/// RA-25: get a missing one (NotFound): the policy is made again, a new object.
#[tokio::test]
async fn ra_25_a_missing_policy_is_made() -> anyhow::Result<()> {
    let t = TestContext::new("llm-ra25").await?;
    start();
    let made = anonymous_policy(&t).await?;
    policies(&t)
        .delete(POLICY, &DeleteParams::default())
        .await?;
    eventually("the policy is made again", Timing::default(), || async {
        let now = policies(&t).get_opt(POLICY).await?;
        anyhow::ensure!(
            now.as_ref()
                .is_some_and(|p| p.metadata.uid != made.metadata.uid),
            "not yet"
        );
        Ok(())
    })
    .await
}

/// RA-26: update (annotation `test-updated=true` added) persists: the controller's next apply
/// keeps it and its own spec.
#[tokio::test]
async fn ra_26_an_update_persists() -> anyhow::Result<()> {
    let t = TestContext::new("llm-ra26").await?;
    let running = start();
    anonymous_policy(&t).await?;
    policies(&t)
        .patch(
            POLICY,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"test-updated": "true"}}})),
        )
        .await?;
    reconciled_after(&t, running, "example.com/touched", "ra-26").await?;
    let now = policies(&t).get(POLICY).await?;
    assert_eq!(
        now.metadata
            .annotations
            .unwrap_or_default()
            .get("test-updated")
            .map(String::as_str),
        Some("true")
    );
    assert_eq!(
        now.data["spec"]["targetRef"]["name"],
        "test-llmisvc-kserve-route"
    );
    Ok(())
}

/// RA-28: remove an existing one, then get: NotFound (auth turned on deletes it). Polled: on a
/// loaded machine the annotation's watch event can reach the controller after a reconcile that
/// read the service without it, and after the quiet period that followed (a workspace run under
/// load saw the policy still there right after it).
#[tokio::test]
async fn ra_28_remove_then_get_is_not_found() -> anyhow::Result<()> {
    let t = TestContext::new("llm-ra28").await?;
    let running = start();
    anonymous_policy(&t).await?;
    reconciled_after(&t, running, ENABLE_AUTH, "true").await?;
    absent(&policies(&t), POLICY).await?;
    Ok(())
}

/// RA-29: remove a missing one: no error. Auth is turned on and, right after, the policy is
/// deleted by someone else: the controller's delete, asked from what its cache still shows,
/// finds nothing (or nothing is left to ask for) and no Warning is reported either way.
#[tokio::test]
async fn ra_29_removing_a_missing_policy_is_no_error() -> anyhow::Result<()> {
    let t = TestContext::new("llm-ra29").await?;
    let running = start();
    anonymous_policy(&t).await?;
    quiet(&running.ctx, Timing::within(Duration::from_secs(60))).await?;
    let before = running.ctx.reconcile_count();
    set_annotation(&t, "test-llmisvc", ENABLE_AUTH, "true").await?;
    policies(&t)
        .delete(POLICY, &DeleteParams::default())
        .await?;
    eventually("the service is reconciled", Timing::default(), || async {
        anyhow::ensure!(running.ctx.reconcile_count() > before, "no reconcile yet");
        Ok(())
    })
    .await?;
    quiet(&running.ctx, Timing::within(Duration::from_secs(60))).await?;
    absent(&policies(&t), POLICY).await?;
    let events: Api<Event> = t.api();
    let found: Vec<String> = events
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .filter(|e| e.type_.as_deref() == Some("Warning"))
        .map(|e| format!("{:?}: {:?}", e.reason, e.note))
        // The removal's own failure reads "deleting <kind> <name>". A reconcile that started
        // before the annotation landed may still apply the policy it read, carrying its uid:
        // after the test's delete that apply conflicts (409) and is retried, which is not the
        // scenario.
        .filter(|w| w.contains("deleting"))
        .collect();
    anyhow::ensure!(found.is_empty(), "{found:?}");
    Ok(())
}
