//! The Gateway AuthPolicy evaluated as Authorino does (docs/plugins/llm-gateway.md, "The Gateway
//! AuthPolicy evaluated as Authorino does"): the AE-01..AE-37 scenarios, which upstream runs on a
//! live cluster with Kuadrant, here against the policy that the `gateway-auth-bootstrap` controller
//! applies for the default Gateway (rendered by the plugin, not copied), an Authorino test double
//! (`support/authorino.rs`) and a small model of ServiceAccount tokens and RBAC grants.
//!
//! Each scenario asserts the status (200/401/403), for a 403 the set of rules that denied, for
//! a 200 the injected headers, and for some the SubjectAccessReviews sent. The negative
//! controls at the end mutate the rendered policy and show which scenarios then fail.

#[path = "support/authorino.rs"]
mod authorino;

use std::collections::{BTreeMap, BTreeSet};

use authorino::{Authorino, Cluster, Evaluation, KUBE_AUDIENCE, Request, Verdict};
use llm_gateway::LlmGateway;
use llm_gateway::gateway::CONTROLLER;
use llm_gateway::settings::Settings;
use odh_plugin_sdk::testing::{FakeCluster, FakeWrites};
use odh_plugin_sdk::{Ctx, Object, Plugin, ReconcileRequest, Value, json};

/// The batch fixture's namespace (`test-user`, `test-user-delegate`, ...).
const BATCH: &str = "ae-batch";
/// The publisher fixture's namespace (`model-user`, `no-access`, ...).
const PUB: &str = "ae-publisher";
/// The model routing header (`<H>`), the plugin's default.
const H: &str = "x-gateway-model-name";

/// The supplementary scenarios' namespace (group grants).
const TEAM: &str = "team-ns";

const KSERVE: &str = "serving.kserve.io";
const ODH: &str = "serving.opendatahub.io";

/// The AuthPolicy that the controller applies for the default Gateway
/// (`openshift-ingress/openshift-ai-inference`) with default settings: audiences
/// `["https://kubernetes.default.svc"]`, the default objective, header `x-gateway-model-name`.
fn rendered_policy() -> Value {
    let gateway = json!({
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": "openshift-ai-inference", "namespace": "openshift-ingress", "uid": "uid-gw"},
        "spec": {"gatewayClassName": "openshift-default",
                 "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]},
    });
    let cluster = FakeCluster::for_manifest(&LlmGateway::manifest());
    let settings = Settings::default();
    let request = ReconcileRequest::for_object(CONTROLLER, &Object(gateway));
    let writes = FakeWrites::new();
    let cx = Ctx::new(&settings, &cluster).with_writes(&writes);
    let outcome = writes.folded_into(LlmGateway::reconcile(&request, &cx).unwrap());
    let policy = outcome
        .applied_object("AuthPolicy", "openshift-ai-inference-authn")
        .0;
    // The spec defaults this file relies on.
    let user = &policy["spec"]["rules"]["authentication"]["kubernetes-user"];
    assert_eq!(
        user["kubernetesTokenReview"]["audiences"],
        json!([KUBE_AUDIENCE])
    );
    policy
}

fn sa(ns: &str, name: &str) -> String {
    authorino::service_account_user(ns, name)
}

/// The ServiceAccounts of the AE scenarios' fixtures and their grants; returns the cluster and the
/// tokens by `<ns>/<name>`.
fn fixtures() -> (Cluster, BTreeMap<String, String>) {
    let mut cluster = Cluster::default();
    let mut tokens = BTreeMap::new();
    let mut account = |cluster: &mut Cluster, ns: &str, name: &str| {
        let token = cluster.service_account(ns, name);
        tokens.insert(format!("{ns}/{name}"), token);
        sa(ns, name)
    };
    // RBAC helpers of the AE scenarios' fixtures.
    let instance = |c: &mut Cluster, user: &str, ns: &str| {
        c.grant(user, "get", KSERVE, "llminferenceservices", ns)
    };
    let delegate = |c: &mut Cluster, user: &str, ns: &str| {
        c.grant(
            user,
            "post-delegate",
            KSERVE,
            "llminferenceservices/delegate",
            ns,
        )
    };
    let model = |c: &mut Cluster, user: &str, ns: &str| c.grant(user, "post", ODH, "models", ns);
    let model_delegate = |c: &mut Cluster, user: &str, ns: &str| {
        c.grant(user, "post-delegate", ODH, "models/delegate", ns)
    };

    // Batch fixture.
    let u = account(&mut cluster, BATCH, "test-user");
    instance(&mut cluster, &u, BATCH);
    let u = account(&mut cluster, BATCH, "test-user-delegate");
    instance(&mut cluster, &u, BATCH);
    delegate(&mut cluster, &u, BATCH);
    account(&mut cluster, BATCH, "no-rbac"); // AE-05
    // AE-11: `post-delegate` on the resource itself, not on `/delegate`.
    let u = account(&mut cluster, BATCH, "wrong-delegate");
    cluster.grant(&u, "post-delegate", KSERVE, "llminferenceservices", BATCH);
    // AE-13: delegate access only.
    let u = account(&mut cluster, BATCH, "delegate-only");
    delegate(&mut cluster, &u, BATCH);

    // Publisher fixture.
    let u = account(&mut cluster, PUB, "model-user");
    model(&mut cluster, &u, PUB);
    account(&mut cluster, PUB, "no-access");
    let u = account(&mut cluster, PUB, "delegate-user");
    model(&mut cluster, &u, PUB);
    model_delegate(&mut cluster, &u, PUB);
    let u = account(&mut cluster, PUB, "instance-user");
    instance(&mut cluster, &u, PUB);

    // AE-31: a namespace named `v1` with `get` on the llminferenceservice named `chat`.
    let u = account(&mut cluster, "v1", "v1-user");
    cluster.grant_named(&u, "get", KSERVE, "llminferenceservices", "v1", "chat");
    // The supplementary scenarios' group grants: the forwarded groups give access, the
    // caller's ServiceAccount group gives the delegate rights.
    account(&mut cluster, TEAM, "grp-caller");
    cluster.grant("team-a", "get", KSERVE, "llminferenceservices", TEAM);
    cluster.grant("team-a", "post", ODH, "models", TEAM);
    let team_sas = format!("system:serviceaccounts:{TEAM}");
    delegate(&mut cluster, &team_sas, TEAM);
    model_delegate(&mut cluster, &team_sas, TEAM);
    (cluster, tokens)
}

/// What a scenario expects.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Expect {
    /// 200, with `x-maas-user` / `x-maas-groups` injected (Some) or not (None).
    Ok {
        maas_user: Option<String>,
        maas_groups: Option<String>,
    },
    Unauthenticated,
    /// 403, denied by exactly these rules.
    Forbidden(Vec<&'static str>),
}

fn ok() -> Expect {
    Expect::Ok {
        maas_user: None,
        maas_groups: None,
    }
}

/// 200 on a batch path: the caller's identity is injected.
fn ok_injected(ns: &str, name: &str) -> Expect {
    Expect::Ok {
        maas_user: Some(sa(ns, name)),
        maas_groups: Some(format!(
            "system:serviceaccounts,system:serviceaccounts:{ns},system:authenticated"
        )),
    }
}

fn forbidden(rules: &[&'static str]) -> Expect {
    Expect::Forbidden(rules.to_vec())
}

struct Scenario {
    id: &'static str,
    request: Request,
    expect: Expect,
    /// The SubjectAccessReviews expected, as `rule user ns group/resource name verb allowed`;
    /// `None` leaves them unchecked.
    reviews: Option<Vec<String>>,
}

fn p(ns: &str) -> String {
    format!("/{ns}/echo-server/v1/chat/completions")
}

fn m(ns: &str) -> String {
    format!("/publishers/{ns}/models/echo-server/v1/chat/completions")
}

fn review_line(r: &authorino::Review) -> String {
    format!(
        "{} {} {} {}/{} {} {} {}",
        r.rule, r.user, r.namespace, r.group, r.resource, r.name, r.verb, r.allowed
    )
}

/// AE-01..AE-37, one entry per request (AE-14 and AE-31 have several).
fn scenarios(tokens: &BTreeMap<String, String>) -> Vec<Scenario> {
    let token = |ns: &str, name: &str| tokens[&format!("{ns}/{name}")].clone();
    let req = |path: &str, ns: &str, name: &str| Request::post(path).bearer(&token(ns, name));
    let s = |id, request, expect| Scenario {
        id,
        request,
        expect,
        reviews: None,
    };
    let with = |mut sc: Scenario, reviews: &[String]| {
        sc.reviews = Some(reviews.to_vec());
        sc
    };
    let test_user = sa(BATCH, "test-user");
    let test_user_delegate = sa(BATCH, "test-user-delegate");
    let model_user = sa(PUB, "model-user");
    let delegate_user = sa(PUB, "delegate-user");
    let model_name = format!("publishers/{PUB}/models/echo-server");
    let mut all = vec![
        // Batch and delegation.
        with(
            s(
                "AE-01",
                Request::get("/v1/batches").bearer(&token(BATCH, "test-user")),
                ok_injected(BATCH, "test-user"),
            ),
            &[],
        ),
        s(
            "AE-02",
            Request::get("/v1/files").bearer(&token(BATCH, "test-user")),
            ok_injected(BATCH, "test-user"),
        ),
        // The spoofed value reaches the upstream first; the injected caller is appended.
        s(
            "AE-03",
            Request::get("/v1/files")
                .bearer(&token(BATCH, "test-user"))
                .header("x-maas-user", "spoofed-user"),
            ok_injected(BATCH, "test-user"),
        ),
        s(
            "AE-04",
            Request::get("/v1/batches"),
            Expect::Unauthenticated,
        ),
        with(
            s(
                "AE-05",
                req(&p(BATCH), BATCH, "no-rbac"),
                forbidden(&["inference-access"]),
            ),
            &[format!(
                "inference-access {} {BATCH} {KSERVE}/llminferenceservices echo-server get false",
                sa(BATCH, "no-rbac")
            )],
        ),
        with(
            s("AE-06", req(&p(BATCH), BATCH, "test-user"), ok()),
            &[format!(
                "inference-access {test_user} {BATCH} {KSERVE}/llminferenceservices echo-server get true"
            )],
        ),
        with(
            s(
                "AE-07",
                req(&p(BATCH), BATCH, "test-user-delegate").header("x-maas-user", &test_user),
                ok(),
            ),
            &[
                format!(
                    "inference-access {test_user} {BATCH} {KSERVE}/llminferenceservices echo-server get true"
                ),
                format!(
                    "inference-access-delegate {test_user_delegate} {BATCH} {KSERVE}/llminferenceservices/delegate echo-server post-delegate true"
                ),
            ],
        ),
        s(
            "AE-08",
            Request::get("/v1/batches")
                .bearer(&token(BATCH, "test-user"))
                .header("x-maas-user", "spoofed-user"),
            ok_injected(BATCH, "test-user"),
        ),
        s(
            "AE-09",
            req(&p(BATCH), BATCH, "test-user-delegate").header("x-maas-user", "nonexistent-user"),
            forbidden(&["inference-access"]),
        ),
        s(
            "AE-10",
            req(&p(BATCH), BATCH, "test-user").header("x-maas-user", &test_user_delegate),
            forbidden(&["inference-access-delegate"]),
        ),
        s(
            "AE-11",
            req(&p(BATCH), BATCH, "wrong-delegate").header("x-maas-user", &test_user),
            forbidden(&["inference-access-delegate"]),
        ),
        s("AE-12", Request::post(&p(BATCH)), Expect::Unauthenticated),
        s(
            "AE-13",
            req(&p(BATCH), BATCH, "test-user-delegate")
                .header("x-maas-user", &sa(BATCH, "delegate-only")),
            forbidden(&["inference-access"]),
        ),
    ];
    for path in [
        "/v1/batches/batch_123",
        "/v1/batches/batch_456/cancel",
        "/v1/files/file_abc",
        "/v1/files/file_abc/content",
    ] {
        all.push(with(
            s(
                "AE-14",
                Request::get(path).bearer(&token(BATCH, "test-user")),
                ok_injected(BATCH, "test-user"),
            ),
            &[],
        ));
    }
    all.extend([
        s(
            "AE-15",
            req(&p(BATCH), BATCH, "test-user-delegate").header("x-maas-user", &test_user_delegate),
            ok(),
        ),
        s("AE-16", req(&p(BATCH), BATCH, "test-user"), ok()),
        // Publisher paths, deny rule and exclusions.
        with(
            s("AE-17", req(&m(PUB), PUB, "model-user"), ok()),
            &[format!(
                "model-access-path {model_user} {PUB} {ODH}/models {model_name} post true"
            )],
        ),
        s(
            "AE-18",
            req(&m(PUB), PUB, "no-access"),
            forbidden(&["model-access-path"]),
        ),
        // The model name is everything between `/models/` and the first `/v1/`.
        with(
            s(
                "AE-19",
                req(
                    &format!("/publishers/{PUB}/models/echo-server/variant/v1/chat/completions"),
                    PUB,
                    "model-user",
                ),
                ok(),
            ),
            &[format!(
                "model-access-path {model_user} {PUB} {ODH}/models {model_name}/variant post true"
            )],
        ),
        s(
            "AE-20",
            req(&p(PUB), PUB, "model-user"),
            forbidden(&["inference-access"]),
        ),
        // Not a publisher path: an instance review in namespace `publishers`.
        with(
            s(
                "AE-21",
                req("/publishers/some-model/v1/chat/completions", PUB, "instance-user"),
                forbidden(&["inference-access"]),
            ),
            &[format!(
                "inference-access {} publishers {KSERVE}/llminferenceservices some-model get false",
                sa(PUB, "instance-user")
            )],
        ),
        with(
            s(
                "AE-22",
                req(
                    "/publishers/publishers/models/echo-server/v1/chat/completions",
                    PUB,
                    "model-user",
                ),
                forbidden(&["model-access-path"]),
            ),
            &[format!(
                "model-access-path {model_user} publishers {ODH}/models publishers/publishers/models/echo-server post false"
            )],
        ),
        // The instance review passes; the deny rule alone refuses.
        s(
            "AE-23",
            req(&p(PUB), PUB, "instance-user").header(H, &model_name),
            forbidden(&["deny-misrouted-model-header"]),
        ),
        with(
            s(
                "AE-24",
                Request::get("/v1/models").bearer(&token(PUB, "no-access")),
                ok(),
            ),
            &[],
        ),
        with(
            s(
                "AE-25",
                req("/v1/chat/completions", PUB, "no-access"),
                ok(),
            ),
            &[],
        ),
        with(
            s(
                "AE-26",
                Request::get("/health").bearer(&token(PUB, "no-access")),
                ok(),
            ),
            &[],
        ),
        s(
            "AE-27",
            req("/v1/chat/completions", PUB, "model-user").header(H, ""),
            ok(),
        ),
        s(
            "AE-28",
            req("/v1/chat/completions", PUB, "no-access").header(H, &model_name),
            forbidden(&["deny-misrouted-model-header"]),
        ),
        s(
            "AE-29",
            req("/v1/chat/completions", PUB, "no-access").header(H, "some-random-model"),
            ok(),
        ),
        s(
            "AE-30",
            req("/v1/chat/completions", PUB, "no-access")
                .header(H, "publishers/other-tenant/models/secret-model"),
            forbidden(&["deny-misrouted-model-header"]),
        ),
        // A namespace `v1`: `/v1/` paths never get the instance review (known limitation).
        with(
            s("AE-31", req("/v1/chat/completions", "v1", "v1-user"), ok()),
            &[],
        ),
        s(
            "AE-31",
            req("/v1/chat/completions", "v1", "v1-user")
                .header(H, "publishers/other-ns/models/secret-model"),
            forbidden(&["deny-misrouted-model-header"]),
        ),
        with(
            s(
                "AE-32",
                req(&m(PUB), PUB, "delegate-user").header("x-maas-user", &model_user),
                ok(),
            ),
            &[
                format!("model-access-path {model_user} {PUB} {ODH}/models {model_name} post true"),
                format!(
                    "model-access-path-delegate {delegate_user} {PUB} {ODH}/models/delegate {model_name} post-delegate true"
                ),
            ],
        ),
        s(
            "AE-33",
            req(&m(PUB), PUB, "model-user").header("x-maas-user", &delegate_user),
            forbidden(&["model-access-path-delegate"]),
        ),
        s(
            "AE-34",
            req(&m(PUB), PUB, "delegate-user").header("x-maas-user", "nonexistent-user"),
            forbidden(&["model-access-path"]),
        ),
        s(
            "AE-35",
            req(&m(PUB), PUB, "delegate-user").header("x-maas-user", &sa(PUB, "no-access")),
            forbidden(&["model-access-path"]),
        ),
        s("AE-36", Request::post(&m(PUB)), Expect::Unauthenticated),
        s("AE-37", req(&m(PUB), PUB, "model-user"), ok()),
    ]);
    all
}

/// Supplementary scenarios (FT-01..FT-09, not among the AE ids): the request-flow table of
/// upstream's design note (`internal/controller/resources/template/*.md`),
/// forwarded groups (BATCH.md: `x-maas-groups` split on commas, none without it), and
/// requests that pin the `when` entries no AE request depends on.
fn supplementary(tokens: &BTreeMap<String, String>) -> Vec<Scenario> {
    let token = |ns: &str, name: &str| tokens[&format!("{ns}/{name}")].clone();
    let req = |path: &str, ns: &str, name: &str| Request::post(path).bearer(&token(ns, name));
    let s = |id, request, expect| Scenario {
        id,
        request,
        expect,
        reviews: None,
    };
    let model_name = format!("publishers/{PUB}/models/echo-server");
    let alice = |r: Request| r.header("x-maas-user", "alice");
    vec![
        // Table row "publisher path | any | model SAR": the deny rule skips publisher paths.
        s(
            "FT-01",
            req(&m(PUB), PUB, "model-user").header(H, "publishers/other/models/x"),
            ok(),
        ),
        // Row "/v1/files* or /v1/batches* | any | authn-only": the deny rule skips them.
        s(
            "FT-02",
            Request::get("/v1/files")
                .bearer(&token(BATCH, "test-user"))
                .header(H, &model_name),
            ok_injected(BATCH, "test-user"),
        ),
        // Row "/health | model header present | 403".
        s(
            "FT-03",
            Request::get("/health")
                .bearer(&token(PUB, "no-access"))
                .header(H, &model_name),
            forbidden(&["deny-misrouted-model-header"]),
        ),
        // Row "/v1/models | any | authn-only" holds for any header but a valid model
        // routing header: the template denies that one, as on every path that is
        // neither a publisher nor a batch path.
        s(
            "FT-04",
            Request::get("/v1/models")
                .bearer(&token(PUB, "no-access"))
                .header(H, &model_name),
            forbidden(&["deny-misrouted-model-header"]),
        ),
        // A short path with a forwarded user: `has-ns-and-name` keeps the delegate rule (and
        // its `split("/")[2]`) off.
        s(
            "FT-05",
            alice(Request::get("/health").bearer(&token(PUB, "no-access"))),
            ok(),
        ),
        // Forwarded groups reach the base rule; the caller's groups the delegate rule.
        s(
            "FT-06",
            alice(req(&p(TEAM), TEAM, "grp-caller")).header("x-maas-groups", "other,team-a"),
            ok(),
        ),
        s(
            "FT-07",
            alice(req(&p(TEAM), TEAM, "grp-caller")),
            forbidden(&["inference-access"]),
        ),
        s(
            "FT-08",
            alice(req(&m(TEAM), TEAM, "grp-caller")).header("x-maas-groups", "team-a"),
            ok(),
        ),
        s(
            "FT-09",
            alice(req(&m(TEAM), TEAM, "grp-caller")),
            forbidden(&["model-access-path"]),
        ),
    ]
}

/// The last value of `name` in the upstream request headers (what the echo server shows,
/// and what a consumer of appended headers must take).
fn last<'a>(upstream: &'a [(String, String)], name: &str) -> Option<&'a str> {
    upstream
        .iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Why the scenario failed, or None.
fn mismatch(cluster: &Cluster, scenario: &Scenario, eval: &Evaluation) -> Option<String> {
    let got = &eval.verdict;
    let problem = match (&scenario.expect, got) {
        (Expect::Unauthenticated, Verdict::Unauthenticated(_)) => None,
        (Expect::Forbidden(rules), Verdict::Forbidden(denied)) => {
            let want: BTreeSet<String> = rules.iter().map(|r| r.to_string()).collect();
            (&want != denied).then(|| format!("denied by {denied:?}, expected {want:?}"))
        }
        (
            Expect::Ok {
                maas_user,
                maas_groups,
            },
            Verdict::Allowed { injected, upstream },
        ) => {
            let mut want: BTreeMap<String, String> = BTreeMap::new();
            // The flow-control headers of every authenticated request: the fairness bucket
            // is the audience, the objective the caller's ServiceAccount namespace.
            let caller = scenario
                .request
                .headers
                .iter()
                .find(|(k, _)| k == "authorization")
                .and_then(|(_, v)| v.strip_prefix("Bearer "))
                .and_then(|t| cluster.token_namespace(t));
            want.insert(
                "x-gateway-inference-fairness-id".into(),
                KUBE_AUDIENCE.into(),
            );
            want.insert(
                "x-gateway-inference-objective".into(),
                caller.unwrap_or_default(),
            );
            if let Some(u) = maas_user {
                want.insert("x-maas-user".into(), u.clone());
            }
            if let Some(g) = maas_groups {
                want.insert("x-maas-groups".into(), g.clone());
            }
            if &want != injected {
                Some(format!("injected {injected:?}, expected {want:?}"))
            } else if maas_user.as_deref() != last(upstream, "x-maas-user") && maas_user.is_some() {
                Some(format!(
                    "upstream x-maas-user is not the caller: {upstream:?}"
                ))
            } else {
                None
            }
        }
        (want, got) => Some(format!("got {} ({got:?}), expected {want:?}", got.status())),
    };
    if problem.is_some() {
        return problem;
    }
    let reviews: Vec<String> = eval.reviews.iter().map(review_line).collect();
    match &scenario.reviews {
        Some(want) if want != &reviews => Some(format!("reviews {reviews:#?}, expected {want:#?}")),
        _ => None,
    }
}

/// The ids whose scenario does not hold under `policy`, with why.
fn failures(policy: &Value) -> Vec<(String, String)> {
    let (cluster, tokens) = fixtures();
    let authorino = Authorino::new(policy, &cluster);
    scenarios(&tokens)
        .iter()
        .chain(supplementary(&tokens).iter())
        .filter_map(|scenario| {
            let eval = authorino.check(&scenario.request);
            mismatch(&cluster, scenario, &eval).map(|why| {
                (
                    scenario.id.to_string(),
                    format!(
                        "{} {}: {why}",
                        scenario.request.method, scenario.request.path
                    ),
                )
            })
        })
        .collect()
}

/// The ids (AE and FT) whose scenario fails under `policy`.
fn failed_ids(policy: &Value) -> BTreeSet<String> {
    failures(policy).into_iter().map(|(id, _)| id).collect()
}

/// The AE ids whose scenario fails under `policy`.
fn failed_ae_ids(policy: &Value) -> BTreeSet<String> {
    let mut ids = failed_ids(policy);
    ids.retain(|id| id.starts_with("AE-"));
    ids
}

/// AE-01..AE-37: every AE scenario against the rendered policy.
#[test]
fn ae_01_to_ae_37_rendered_policy_as_authorino_evaluates_it() {
    let policy = rendered_policy();
    let (_, tokens) = fixtures();
    let ids: BTreeSet<&str> = scenarios(&tokens).iter().map(|s| s.id).collect();
    let expected: BTreeSet<String> = (1..=37).map(|i| format!("AE-{i:02}")).collect();
    assert_eq!(
        ids.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>(),
        expected,
        "every AE id has a scenario"
    );
    let mut failures = failures(&policy);
    failures.retain(|(id, _)| id.starts_with("AE-"));
    assert!(
        failures.is_empty(),
        "scenarios failing:\n{}",
        failures
            .iter()
            .map(|(id, why)| format!("{id}: {why}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The supplementary scenarios (design-note request-flow table, forwarded groups).
#[test]
fn supplementary_scenarios_hold() {
    let failures = failures(&rendered_policy());
    let ft: Vec<_> = failures
        .iter()
        .filter(|(id, _)| id.starts_with("FT-"))
        .collect();
    assert!(ft.is_empty(), "{ft:#?}");
}

/// AE-01, AE-03: the injected headers reach the upstream after the client's (appended), so
/// a spoofed `x-maas-user` is followed by the caller's.
#[test]
fn ae_03_spoofed_user_is_followed_by_the_injected_caller() {
    let policy = rendered_policy();
    let (cluster, tokens) = fixtures();
    let authorino = Authorino::new(&policy, &cluster);
    let request = Request::get("/v1/files")
        .bearer(&tokens[&format!("{BATCH}/test-user")])
        .header("x-maas-user", "spoofed-user");
    let Verdict::Allowed { upstream, .. } = authorino.check(&request).verdict else {
        panic!("AE-03: not allowed");
    };
    let users: Vec<&str> = upstream
        .iter()
        .filter(|(k, _)| k == "x-maas-user")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(
        users,
        ["spoofed-user", sa(BATCH, "test-user").as_str()],
        "AE-03"
    );
}

// ---------------------------------------------------------------------------------------
// Negative controls: the evaluator is not vacuous; a meaningful change of the rendered
// policy makes the scenarios that depend on it fail.

fn authorization(policy: &mut Value) -> &mut odh_plugin_sdk::serde_json::Map<String, Value> {
    policy["spec"]["rules"]["authorization"]
        .as_object_mut()
        .unwrap()
}

fn ids(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Without `deny-misrouted-model-header`, the misrouted requests pass (AE-23, AE-28, AE-30,
/// AE-31's second request).
#[test]
fn control_without_the_deny_rule_misrouted_requests_pass() {
    let mut policy = rendered_policy();
    authorization(&mut policy).remove("deny-misrouted-model-header");
    assert_eq!(
        failed_ae_ids(&policy),
        ids(&["AE-23", "AE-28", "AE-30", "AE-31"])
    );
}

/// Without `!request.path.startsWith('/v1/')`, `/v1/chat/completions` gets an instance
/// review of `v1/chat` (the design note's "nonsense check"): only the `v1` namespace's user
/// passes it.
#[test]
fn control_without_the_v1_exclusion_v1_paths_get_an_instance_review() {
    let mut policy = rendered_policy();
    for rule in ["inference-access", "inference-access-delegate"] {
        let when = authorization(&mut policy)[rule]["when"]
            .as_array_mut()
            .unwrap();
        when.retain(|w| w["predicate"] != "!request.path.startsWith('/v1/')");
    }
    assert_eq!(
        failed_ae_ids(&policy),
        // The batch paths and /v1/models now need an instance grant in namespace `v1`;
        // AE-28/AE-30 are still 403 but also by inference-access; AE-31's user holds
        // `get` on `v1/chat`, so its first request passes, but only after that review.
        ids(&[
            "AE-01", "AE-02", "AE-03", "AE-08", "AE-14", "AE-24", "AE-25", "AE-27", "AE-28",
            "AE-29", "AE-30", "AE-31",
        ])
    );
}

/// The delegate rule checks `llminferenceservices/delegate`; on `llminferenceservices` the
/// AE-11 caller would pass.
#[test]
fn control_delegate_rule_on_the_resource_itself_lets_ae_11_through() {
    let mut policy = rendered_policy();
    authorization(&mut policy)["inference-access-delegate"]["kubernetesSubjectAccessReview"]["resourceAttributes"]
        ["resource"] = json!({"value": "llminferenceservices"});
    assert!(failed_ae_ids(&policy).contains("AE-11"));
}

/// `x-maas-user`/`x-maas-groups` injected on every path: AE-16 and AE-37 see them.
#[test]
fn control_identity_headers_without_when_reach_inference_paths() {
    let mut policy = rendered_policy();
    let headers = policy["spec"]["rules"]["response"]["success"]["headers"]
        .as_object_mut()
        .unwrap();
    for h in ["x-maas-user", "x-maas-groups"] {
        headers[h].as_object_mut().unwrap().remove("when");
    }
    let failed = failed_ae_ids(&policy);
    assert!(
        failed.contains("AE-16") && failed.contains("AE-37"),
        "{failed:?}"
    );
}

/// The SAR user of the base rules is the resolved (forwarded) user: with the caller instead,
/// a forwarded user without access gets through (AE-09, AE-13, AE-34, AE-35).
#[test]
fn control_base_rules_on_the_caller_ignore_the_forwarded_user() {
    let mut policy = rendered_policy();
    for rule in ["inference-access", "model-access-path"] {
        let sar = &mut authorization(&mut policy)[rule]["kubernetesSubjectAccessReview"];
        sar["user"] = json!({"expression": "auth.identity.user.username"});
        sar["authorizationGroups"] = json!({"expression": "auth.identity.user.groups"});
    }
    let failed = failed_ae_ids(&policy);
    for id in ["AE-09", "AE-13", "AE-34", "AE-35"] {
        assert!(failed.contains(id), "{id} not detected: {failed:?}");
    }
}

/// With no RBAC grants at all, every scenario that needs an allowed review fails, and so does
/// every 403 that expected a single denying rule where the other reviewed rule now denies
/// too (AE-09, AE-13, AE-34, AE-35); the authentication-only ones and those denied by every
/// rule they trigger still pass.
#[test]
fn control_without_grants_reviewed_scenarios_fail() {
    let policy = rendered_policy();
    let (mut cluster, tokens) = fixtures();
    cluster.grants.clear();
    let authorino = Authorino::new(&policy, &cluster);
    let failed: BTreeSet<&str> = scenarios(&tokens)
        .iter()
        .filter(|s| mismatch(&cluster, s, &authorino.check(&s.request)).is_some())
        .map(|s| s.id)
        .collect();
    assert_eq!(
        failed,
        [
            "AE-06", "AE-07", "AE-09", "AE-10", "AE-11", "AE-13", "AE-15", "AE-16", "AE-17",
            "AE-19", "AE-23", "AE-32", "AE-33", "AE-34", "AE-35", "AE-37",
        ]
        .into_iter()
        .collect()
    );
}

/// A token for another audience is not accepted (the TokenReview's audiences are checked).
#[test]
fn control_token_for_another_audience_is_401() {
    let policy = rendered_policy();
    let (mut cluster, _) = fixtures();
    let token = cluster.service_account_with_audience(BATCH, "test-user", "https://other");
    let authorino = Authorino::new(&policy, &cluster);
    let eval = authorino.check(&Request::get("/v1/batches").bearer(&token));
    assert_eq!(eval.verdict.status(), 401, "{:?}", eval.verdict);
}

/// Mutations of the rendered policy, each named: every rule removed, every `when` entry
/// removed, every SubjectAccessReview attribute and identity changed, every response header
/// and its `when` removed, every identity override changed.
fn mutations(policy: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let rules = policy["spec"]["rules"]["authorization"]
        .as_object()
        .unwrap();
    for (name, rule) in rules {
        let mut p = policy.clone();
        authorization(&mut p).remove(name);
        out.push((format!("rule {name} removed"), p));
        for (i, _) in rule["when"].as_array().unwrap().iter().enumerate() {
            let mut p = policy.clone();
            authorization(&mut p)[name]["when"]
                .as_array_mut()
                .unwrap()
                .remove(i);
            out.push((format!("rule {name} when[{i}] removed"), p));
        }
        let Some(sar) = rule["kubernetesSubjectAccessReview"].as_object() else {
            continue;
        };
        for (attr, spec) in sar["resourceAttributes"].as_object().unwrap() {
            let mut p = policy.clone();
            let changed = match (spec.get("value"), spec.get("expression")) {
                (Some(v), _) => json!({"value": format!("{}x", v.as_str().unwrap())}),
                _ => {
                    json!({"expression": format!("({}) + 'x'", spec["expression"].as_str().unwrap())})
                }
            };
            authorization(&mut p)[name]["kubernetesSubjectAccessReview"]["resourceAttributes"]
                [attr] = changed;
            out.push((format!("rule {name} {attr} changed"), p));
        }
        let (user, groups) = if sar["user"]["expression"] == "auth.identity.resolvedUser" {
            ("auth.identity.user.username", "auth.identity.user.groups")
        } else {
            ("auth.identity.resolvedUser", "auth.identity.resolvedGroups")
        };
        let mut p = policy.clone();
        authorization(&mut p)[name]["kubernetesSubjectAccessReview"]["user"] =
            json!({ "expression": user });
        out.push((format!("rule {name} user swapped"), p));
        let mut p = policy.clone();
        authorization(&mut p)[name]["kubernetesSubjectAccessReview"]["authorizationGroups"] =
            json!({ "expression": groups });
        out.push((format!("rule {name} groups swapped"), p));
    }
    let headers = policy["spec"]["rules"]["response"]["success"]["headers"]
        .as_object()
        .unwrap();
    for (name, header) in headers {
        let mut p = policy.clone();
        p["spec"]["rules"]["response"]["success"]["headers"]
            .as_object_mut()
            .unwrap()
            .remove(name);
        out.push((format!("header {name} removed"), p));
        if header.get("when").is_some() {
            let mut p = policy.clone();
            p["spec"]["rules"]["response"]["success"]["headers"][name]
                .as_object_mut()
                .unwrap()
                .remove("when");
            out.push((format!("header {name} when removed"), p));
        }
    }
    let overrides = &policy["spec"]["rules"]["authentication"]["kubernetes-user"]["overrides"];
    for (name, spec) in overrides.as_object().unwrap() {
        let mut p = policy.clone();
        let changed = match spec.get("value") {
            Some(v) => json!({"value": format!("{}x", v.as_str().unwrap())}),
            None => json!({"expression": "auth.identity.user.username"}),
        };
        p["spec"]["rules"]["authentication"]["kubernetes-user"]["overrides"][name] = changed;
        out.push((format!("override {name} changed"), p));
    }
    out
}

/// Every mutation of the rendered policy makes some scenario fail (or the evaluator refuse
/// it): the scenarios pin each rule, `when` entry, review attribute, header and override.
#[test]
fn control_every_mutation_of_the_policy_is_detected() {
    let policy = rendered_policy();
    let mut undetected = Vec::new();
    for (name, mutated) in mutations(&policy) {
        let detected =
            std::panic::catch_unwind(|| !failed_ids(&mutated).is_empty()).unwrap_or(true);
        if !detected {
            undetected.push(name);
        }
    }
    assert!(
        undetected.is_empty(),
        "undetected mutations: {undetected:#?}"
    );
}
