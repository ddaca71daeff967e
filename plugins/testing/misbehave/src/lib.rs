//! A deliberately bad plugin for the host's sandbox tests.
//!
//! Reconcile, mutate and validate all act on the ConfigMap's `data.behaviour`:
//!
//! | behaviour | effect |
//! |---|---|
//! | `ok` / absent | reconcile applies ConfigMap `<name>-ok` (controller-owned); mutate adds label `misbehave/ok: "true"`; validate allows |
//! | `loop` | spins forever |
//! | `sleep` | sleeps (WASI clock) ten minutes, twice |
//! | `alloc` | allocates and touches 1 MiB blocks forever |
//! | `panic` | `panic!("misbehave: deliberate panic")` |
//! | `trap` | `unreachable` instruction |
//! | `oversize` | a result of about 8 MiB |
//! | `log-flood` | logs `data.lines` lines (default 10,000) of `data.bytes` bytes (default 64 KiB): `{"logged": <lines>}` |
//! | `read-ungranted` | reads a `Secret` (not in `reads`); the error comes back as `Error::Internal` |
//! | `read-granted` | reads ConfigMap `data.target` in the same namespace: `{"found": <bool>}` |
//! | `read-flood` | reads ConfigMap `data.target` up to `data.count` times (default 1,000,000), stopping at the first error: `{"reads": <done>, "error": <message or null>}` |
//! | `http` | GETs `data.url`: `{"httpStatus": <code>, "body": <text>}`, or the SDK's error |
//! | `http-get` / `http-post` | GETs / POSTs (`{"misbehave": "<name>"}`) `data.url`: the result of `http`; reconcile also applies ConfigMap `<name>-ok` and reports a failed request as the outcome's `error` (`Transient`) |
//! | `error-invalid` / `error-transient` | `Error::Invalid` / `Error::Transient` |
//! | `write` | reconcile writes as `data.write` says (below); mutate adds a `Secret` `<name>-stolen` as a side effect; validate allows |
//! | `write-now` | with `settings.writeNow`, reconcile and mutate write through the `writes` import as `data.write` says: `apply` (ConfigMap `<name>-ok`, owned), `apply-secret`, `delete-unmanaged` (ConfigMap `<name>-ok` if labelled `misbehave/owned=true`), `patch` (annotation `misbehave/patched` on the primary): `{"uid": ...}`, `{"deleted": ...}`, `{"patched": ...}` or `{"kind": "refused" \| "denied" \| "failed", "error": <message>}` |
//!
//! `data.write` (reconcile): `apply-secret` applies Secret `<name>-stolen` (not in `writes`);
//! `delete-secret` deletes it; `foreign-owner` applies ConfigMap `<name>-adopted` owned by
//! ConfigMap `data.owner` (uid `data.ownerUid`); `primary-owner` the same owned by the primary
//! through its own owner reference; `primary-spec` patches the primary's metadata with
//! `ownerReferences`; `delete-flood` deletes `data.count` (default 100,000) ConfigMaps `d<i>`;
//! `apply-flood` applies `data.count` (default 100,000) ConfigMaps `a<i>`.
//!
//! A result (the JSON after the colons above) becomes the primary's status in reconcile, the
//! annotation `misbehave/result` of the mutated object, and the message of an allowing
//! validate. ConfigMaps named `*-ok` (the ones it creates) are left alone by reconcile.
//! `http-post` lets host tests see that a shadow call (or `plugin eval`) may only GET: the
//! POST fails there, the ConfigMap is still applied.
//! Pods (webhook `/mutate-misbehave-pod`) always behave `ok`: they get the `misbehave/ok` label.
//!
//! The controller reconciles only ConfigMaps labelled `odh-test/misbehave=true`. The
//! validating webhook does not review ConfigMaps labelled `misbehave/unreviewed` (its object
//! selector), so a test can see the host keep such requests from the plugin.
//!
//! Settings: `{"okLabel": "<value>"}` sets the value of that label (default `"true"`), so two
//! configurations of the same component decide differently; `{"denyKey": "<key>"}` makes validate
//! deny a ConfigMap whose `data` has that key (message `misbehave: the key "<key>" is denied`),
//! so a candidate can deny what the stable version allows; unknown settings are invalid.

use odh_plugin_sdk::Operation::{Create, Update};
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::http::{Client, Request};
use odh_plugin_sdk::{AdmissionDecision, AdmissionRequest, Controller, Ctx, Error, Manifest};
use odh_plugin_sdk::{Object, Outcome, Ownership, Plan, Plugin, ReconcileRequest, Validatable};
use odh_plugin_sdk::{Value, Webhook, WebhookSelector, core_gvk, json, object_key, owner_ref};

pub struct Misbehave;

/// The label a ConfigMap carries to be reconciled by the `misbehave` controller.
pub const PRIMARY_SELECTOR: &str = "odh-test/misbehave=true";

#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    #[serde(default)]
    ok_label: Option<String>,
    #[serde(default)]
    deny_key: Option<String>,
    /// `write-now` writes only in a version with this set: controllers of other tests watch the
    /// same cluster, and their versions must not write for this one's objects.
    #[serde(default)]
    write_now: bool,
}

impl Validatable for Settings {}

impl Plugin for Misbehave {
    type Settings = Settings;
    const USES_HTTP: bool = true;
    const USES_WRITES: bool = true;

    fn manifest() -> Manifest {
        let cm = core_gvk("ConfigMap");
        Manifest::new("misbehave", "0.1.0")
            .description("Misbehaves on request, to test the host's sandbox")
            // Only ConfigMaps that ask for it: its controller runs in a cluster shared by tests.
            .controller(
                Controller::new("misbehave", cm.clone())
                    .primary_label_selector(PRIMARY_SELECTOR)
                    .owns(cm.clone()),
            )
            .webhook(Webhook::mutating(
                "/mutate-misbehave",
                cm.clone(),
                [Create, Update],
            ))
            .webhook(Webhook::validating(
                "/validate-misbehave",
                cm,
                [Create, Update],
            ))
            // Pods have no `data`, so they always take the `ok` path: labelled on admission.
            .webhook(Webhook::mutating(
                "/mutate-misbehave-pod",
                core_gvk("Pod"),
                [Create],
            ))
            // `localhost` is a name that resolves to loopback: the host refuses to connect it.
            .http_hosts(["127.0.0.1", "localhost"])
    }

    fn reconcile(request: &ReconcileRequest, cx: &Ctx<Settings>) -> Result<Outcome, Error> {
        let mut plan = Plan::new();
        let Some(cm) = request.object()? else {
            return Ok(plan.into_outcome());
        };
        if cm.name().ends_with("-ok") {
            return Ok(plan.into_outcome());
        }
        if behaviour(&cm) == "write" {
            return write(plan, &cm);
        }
        if behaviour(&cm) == "write-now" {
            plan.status(write_now(&cm, cx));
            return Ok(plan.into_outcome());
        }
        if matches!(behaviour(&cm), "http-get" | "http-post") {
            // What was decided is applied; the failed request is reported after it.
            plan.apply_owned(ok_config_map(&cm));
            match misbehave(&cm, cx.cluster, cx.http) {
                Ok(result) => plan.status(result),
                Err(e) => plan.fail(Error::Transient(format!("misbehave: {e}"))),
            }
            return Ok(plan.into_outcome());
        }
        match misbehave(&cm, cx.cluster, cx.http)? {
            None => plan.apply_owned(ok_config_map(&cm)),
            Some(result) => plan.status(result),
        }
        Ok(plan.into_outcome())
    }

    fn webhook_selectors() -> Vec<WebhookSelector> {
        vec![WebhookSelector::new("/validate-misbehave").object_selector("!misbehave/unreviewed")]
    }

    fn mutate(request: &AdmissionRequest, cx: &Ctx<Settings>) -> Result<AdmissionDecision, Error> {
        let Some(mut cm) = request.object()? else {
            return Ok(AdmissionDecision::allow());
        };
        if behaviour(&cm) == "write" {
            let secret = stolen_secret(&cm);
            return Ok(AdmissionDecision::mutated(cm).side_effect(secret, Ownership::None));
        }
        if behaviour(&cm) == "write-now" {
            let result = write_now(&cm, cx);
            cm.set_annotation("misbehave/result", &result.to_string());
            return Ok(AdmissionDecision::mutated(cm));
        }
        match misbehave(&cm, cx.cluster, cx.http)? {
            None => cm.set_label(
                "misbehave/ok",
                cx.settings.ok_label.as_deref().unwrap_or("true"),
            ),
            Some(result) => cm.set_annotation("misbehave/result", &result.to_string()),
        }
        Ok(AdmissionDecision::mutated(cm))
    }

    fn validate(
        request: &AdmissionRequest,
        cx: &Ctx<Settings>,
    ) -> Result<AdmissionDecision, Error> {
        let Some(cm) = request.object()? else {
            return Ok(AdmissionDecision::allow());
        };
        if let Some(key) = cx.settings.deny_key.as_deref()
            && cm.at(&["data", key]).is_some()
        {
            return Ok(AdmissionDecision::deny(format!(
                r#"misbehave: the key "{key}" is denied"#
            )));
        }
        Ok(match misbehave(&cm, cx.cluster, cx.http)? {
            None => AdmissionDecision::allow(),
            Some(result) => AdmissionDecision::allow().with_message(result.to_string()),
        })
    }
}

odh_plugin_sdk::plugin!(Misbehave);

/// `data.behaviour`, `ok` when absent.
fn behaviour(cm: &Object) -> &str {
    cm.str_at(&["data", "behaviour"]).unwrap_or("ok")
}

/// ConfigMap `<name>-ok`, what an `ok` reconcile applies.
fn ok_config_map(cm: &Object) -> Object {
    Object::new(
        &core_gvk("ConfigMap"),
        cm.namespace(),
        &format!("{}-ok", cm.name()),
    )
}

/// Secret `<name>-stolen`, a kind misbehave may not write.
fn stolen_secret(cm: &Object) -> Object {
    Object::new(
        &core_gvk("Secret"),
        cm.namespace(),
        &format!("{}-stolen", cm.name()),
    )
}

/// Reconcile's writes outside its grants, as `data.write` says.
fn write(mut plan: Plan, cm: &Object) -> Result<Outcome, Error> {
    let data = |name: &str| cm.str_at(&["data", name]).unwrap_or_default();
    let count = data("count").parse().unwrap_or(100_000);
    let config_map = core_gvk("ConfigMap");
    let adopted = || {
        Object::new(
            &config_map,
            cm.namespace(),
            &format!("{}-adopted", cm.name()),
        )
    };
    match data("write") {
        "apply-secret" => plan.apply_unowned(stolen_secret(cm)),
        "delete-secret" => plan.delete(object_key(
            &core_gvk("Secret"),
            cm.namespace(),
            &format!("{}-stolen", cm.name()),
        )),
        "foreign-owner" => plan.apply_unowned(adopted().with_owner_ref(json!({
            "apiVersion": "v1", "kind": "ConfigMap", "name": data("owner"),
            "uid": data("ownerUid"), "controller": true, "blockOwnerDeletion": true,
        }))),
        "primary-owner" => plan.apply_unowned(adopted().with_owner_ref(owner_ref(cm)?)),
        "primary-spec" => plan.patch_primary_metadata(json!({"ownerReferences": []})),
        "delete-flood" => {
            for i in 0..count {
                plan.delete(object_key(&config_map, cm.namespace(), &format!("d{i}")));
            }
        }
        "apply-flood" => {
            for i in 0..count {
                plan.apply_unowned(Object::new(&config_map, cm.namespace(), &format!("a{i}")));
            }
        }
        other => {
            return Err(Error::Invalid(format!(
                "misbehave: unknown data.write {other:?}"
            )));
        }
    }
    Ok(plan.into_outcome())
}

/// Writes now, as `data.write` says; the answer as JSON.
fn write_now(cm: &Object, cx: &Ctx<Settings>) -> Value {
    use odh_plugin_sdk::Desired;
    use odh_plugin_sdk::writes::WriteError;
    if !cx.settings.write_now {
        return json!({"kind": "skipped", "error": "settings.writeNow is off"});
    }
    let writes = match cx.writes() {
        Ok(w) => w,
        Err(e) => return json!({"kind": "none", "error": e.message()}),
    };
    let ok = || ok_config_map(cm);
    let answer = match cm.str_at(&["data", "write"]).unwrap_or_default() {
        "apply" => writes
            .apply_one(Desired::new(ok(), Ownership::Controller))
            .map(|o| json!({"uid": o.uid()})),
        "apply-secret" => writes
            .apply_one(Desired::new(stolen_secret(cm), Ownership::None))
            .map(|o| json!({"uid": o.uid()})),
        "delete-unmanaged" => writes
            .delete_unmanaged(vec![ok().key()], "misbehave/owned=true")
            .pop()
            .unwrap_or(Ok(false))
            .map(|deleted| json!({"deleted": deleted})),
        "patch" => writes
            .patch_metadata(
                &cm.key(),
                cm.resource_version().unwrap_or_default(),
                &json!({"metadata": {"annotations": {"misbehave/patched": "true"}}}),
            )
            .map(|o| json!({"patched": o.annotation("misbehave/patched")})),
        other => return json!({"kind": "unknown", "error": other}),
    };
    answer.unwrap_or_else(|e| {
        let kind = match &e {
            WriteError::Refused(_) => "refused",
            WriteError::Denied(_) => "denied",
            WriteError::Failed(_) => "failed",
        };
        json!({"kind": kind, "error": e.message()})
    })
}

/// Does what `data.behaviour` says: `Ok(None)` for `ok`, `Ok(Some(result))` for behaviours
/// with a result, an error, or never returns.
pub fn misbehave(
    cm: &Object,
    cluster: &dyn Cluster,
    http: &dyn Client,
) -> Result<Option<Value>, Error> {
    let field = |name: &str| {
        cm.str_at(&["data", name])
            .ok_or_else(|| Error::Invalid(format!("misbehave: data.{name} is required")))
    };
    let exchange = |request: Request| -> Result<Option<Value>, Error> {
        let response = http.request(&request)?;
        Ok(Some(
            json!({ "httpStatus": response.status, "body": response.text() }),
        ))
    };
    match behaviour(cm) {
        "ok" => Ok(None),
        "loop" => {
            let mut i = 0u64;
            loop {
                i = std::hint::black_box(i.wrapping_add(1));
            }
        }
        "alloc" => {
            let mut hoard: Vec<Vec<u8>> = Vec::new();
            loop {
                let mut block = vec![0u8; 1 << 20];
                for byte in block.iter_mut().step_by(4096) {
                    *byte = 1;
                }
                hoard.push(std::hint::black_box(block));
            }
        }
        // Ten minutes asleep in WASI (a `poll` on the monotonic clock), then a second nap.
        "sleep" => {
            std::thread::sleep(std::time::Duration::from_secs(600));
            std::thread::sleep(std::time::Duration::from_secs(600));
            Ok(None)
        }
        "panic" => panic!("misbehave: deliberate panic"),
        "trap" => trap(),
        "oversize" => Ok(Some(Value::String("x".repeat(8 << 20)))),
        "log-flood" => {
            let number = |name: &str, default: usize| {
                cm.str_at(&["data", name])
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(default)
            };
            let (lines, bytes) = (number("lines", 10_000), number("bytes", 64 << 10));
            let line = "x".repeat(bytes);
            for _ in 0..lines {
                odh_plugin_sdk::log::log(odh_plugin_sdk::log::Level::Info, &line);
            }
            Ok(Some(json!({ "logged": lines })))
        }
        "read-ungranted" => match cluster.get(&core_gvk("Secret"), cm.namespace(), cm.name()) {
            Ok(found) => Ok(Some(json!({ "found": found.is_some() }))),
            Err(e) => Err(Error::Internal(format!("misbehave: reading a Secret: {e}"))),
        },
        "read-flood" => {
            let count: u64 = cm
                .str_at(&["data", "count"])
                .and_then(|n| n.parse().ok())
                .unwrap_or(1_000_000);
            let target = field("target")?;
            let mut reads = 0u64;
            let mut error = None;
            while reads < count {
                match cluster.get(&core_gvk("ConfigMap"), cm.namespace(), target) {
                    Ok(_) => reads += 1,
                    Err(e) => {
                        error = Some(e.to_string());
                        break;
                    }
                }
            }
            Ok(Some(json!({ "reads": reads, "error": error })))
        }
        "read-granted" => {
            let found = cluster.get(&core_gvk("ConfigMap"), cm.namespace(), field("target")?)?;
            Ok(Some(json!({ "found": found.is_some() })))
        }
        "http" | "http-get" => exchange(Request::get(field("url")?)),
        "http-post" => {
            exchange(Request::post(field("url")?).json_body(&json!({ "misbehave": cm.name() }))?)
        }
        "error-invalid" => Err(Error::Invalid("misbehave: invalid input".into())),
        "error-transient" => Err(Error::Transient("misbehave: try later".into())),
        "write" => Ok(None),
        other => Err(Error::Invalid(format!(
            "misbehave: unknown behaviour {other:?}"
        ))),
    }
}

fn trap() -> ! {
    #[cfg(target_arch = "wasm32")]
    core::arch::wasm32::unreachable();
    #[cfg(not(target_arch = "wasm32"))]
    panic!("misbehave: trap (natively a panic)");
}

#[cfg(test)]
mod tests {
    use super::*;
    use odh_plugin_sdk::http::{self, Response};
    use odh_plugin_sdk::testing::FakeCluster;
    use odh_plugin_sdk::{Ownership, validate_settings};

    fn cm(name: &str, data: Value) -> Object {
        Object(json!({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": name, "namespace": "ns"}, "data": data}))
    }

    fn behave(behaviour: &str) -> Object {
        cm(
            "x",
            json!({ "behaviour": behaviour, "target": "t", "url": "http://127.0.0.1:1/x" }),
        )
    }

    fn reconcile(object: &Object, http: &http::Fake) -> Outcome {
        let settings = Settings::default();
        let cluster = FakeCluster::for_manifest(&Misbehave::manifest());
        let cx = Ctx::new(&settings, &cluster).with_http(http);
        let request = ReconcileRequest::for_object("misbehave", object);
        let outcome = Misbehave::reconcile(&request, &cx).unwrap();
        outcome.assert_declared(&Misbehave::manifest());
        outcome
    }

    #[test]
    fn ok_everywhere() {
        let o = reconcile(&cm("x", json!({})), &http::Fake::new());
        assert_eq!(
            o.applied("ConfigMap", "x-ok").unwrap().ownership,
            Ownership::Controller
        );
        assert_eq!(
            reconcile(&cm("x-ok", json!({})), &http::Fake::new()),
            Outcome::default()
        );
        let req = AdmissionRequest::for_object("/mutate-misbehave", Create, &behave("ok"));
        let settings = Settings {
            ok_label: Some("yes".into()),
            deny_key: None,
            write_now: false,
        };
        let cluster = FakeCluster::new();
        let cx = Ctx::new(&settings, &cluster);
        let d = Misbehave::mutate(&req, &cx).unwrap();
        assert_eq!(
            Object::parse(d.mutated.as_deref().unwrap())
                .unwrap()
                .label("misbehave/ok"),
            Some("yes")
        );
        assert!(Misbehave::validate(&req, &cx).unwrap().allowed);
        assert!(validate_settings::<Settings>(r#"{"okLabel": "x"}"#).is_ok());
        assert!(validate_settings::<Settings>(r#"{"other": "x"}"#).is_err());
    }

    #[test]
    fn deny_key_denies_only_objects_holding_it() {
        let settings = Settings {
            ok_label: None,
            deny_key: Some("risky".into()),
            write_now: false,
        };
        let cluster = FakeCluster::new();
        let cx = Ctx::new(&settings, &cluster);
        let validate = |data: Value| {
            let req = AdmissionRequest::for_object("/validate-misbehave", Create, &cm("x", data));
            Misbehave::validate(&req, &cx).unwrap()
        };
        let denied = validate(json!({"risky": "1"}));
        assert!(!denied.allowed);
        assert_eq!(
            denied.message.as_deref(),
            Some(r#"misbehave: the key "risky" is denied"#)
        );
        assert!(validate(json!({"safe": "1"})).allowed);
        assert!(validate_settings::<Settings>(r#"{"denyKey": "risky"}"#).is_ok());
    }

    #[test]
    fn results_and_errors() {
        let fake = FakeCluster::new()
            .with(cm("t", json!({})))
            .deny(core_gvk("Secret"));
        let http = http::Fake::new();
        assert_eq!(
            misbehave(&behave("read-granted"), &fake, &http),
            Ok(Some(json!({"found": true})))
        );
        let Err(Error::Internal(m)) = misbehave(&behave("read-ungranted"), &fake, &http) else {
            panic!()
        };
        assert!(
            m.starts_with("misbehave: reading a Secret: denied: "),
            "{m}"
        );
        let Ok(Some(Value::String(s))) = misbehave(&behave("oversize"), &fake, &http) else {
            panic!()
        };
        assert_eq!(s.len(), 8 << 20);
        assert_eq!(
            misbehave(&behave("error-invalid"), &fake, &http),
            Err(Error::Invalid("misbehave: invalid input".into()))
        );
        assert_eq!(
            misbehave(&behave("error-transient"), &fake, &http),
            Err(Error::Transient("misbehave: try later".into()))
        );
        // A failed request's error is passed through unchanged.
        let refused =
            http::Fake::new().fail("GET", "http://127.0.0.1:1/x", Error::denied("not granted"));
        assert_eq!(
            misbehave(&behave("http"), &fake, &refused),
            Err(Error::Denied("not granted".into()))
        );
    }

    #[test]
    fn http_get_and_post_report_the_response_as_status() {
        let http = http::Fake::new()
            .respond("GET", "http://127.0.0.1:1/x", Response::new(200, "got"))
            .respond("POST", "http://127.0.0.1:1/x", Response::new(201, "made"));
        let o = reconcile(&behave("http-get"), &http);
        assert!(o.applied("ConfigMap", "x-ok").is_some());
        assert_eq!(
            o.status.as_deref(),
            Some(r#"{"body":"got","httpStatus":200}"#)
        );
        assert_eq!(o.error, None);
        let o = reconcile(&behave("http-post"), &http);
        assert!(o.applied("ConfigMap", "x-ok").is_some());
        assert_eq!(
            o.status.as_deref(),
            Some(r#"{"body":"made","httpStatus":201}"#)
        );
        let post = &http.requests()[1];
        assert_eq!(
            post.json::<Value>().unwrap(),
            Some(json!({"misbehave": "x"}))
        );
        assert_eq!(post.header_value("content-type"), Some("application/json"));
    }

    #[test]
    fn a_failed_http_call_still_applies_and_is_the_outcomes_transient_error() {
        let only_get =
            Error::transient("http: POST http://127.0.0.1:1/x: only GET and HEAD are allowed here");
        let http = http::Fake::new().fail("POST", "http://127.0.0.1:1/x", only_get);
        let o = reconcile(&behave("http-post"), &http);
        assert!(o.applied("ConfigMap", "x-ok").is_some());
        assert_eq!(o.status, None);
        assert_eq!(
            o.error,
            Some(Error::Transient(
                "misbehave: transient: http: POST http://127.0.0.1:1/x: only GET and HEAD are allowed here".into()
            ))
        );
        // Whatever the SDK's case, the outcome reports a transient failure.
        let denied = http::Fake::new().fail(
            "GET",
            "http://127.0.0.1:1/x",
            Error::denied("host not granted"),
        );
        let o = reconcile(&behave("http-get"), &denied);
        assert!(o.applied("ConfigMap", "x-ok").is_some());
        assert!(
            matches!(&o.error, Some(Error::Transient(m)) if m.ends_with("denied: host not granted"))
        );
        // Natively the host's HTTP is unavailable: the same path.
        let settings = Settings::default();
        let cluster = FakeCluster::new();
        let o = Misbehave::reconcile(
            &ReconcileRequest::for_object("misbehave", &behave("http-get")),
            &Ctx::new(&settings, &cluster),
        )
        .unwrap();
        assert!(matches!(o.error, Some(Error::Transient(_))));
    }

    #[test]
    #[should_panic(expected = "misbehave: deliberate panic")]
    fn panics() {
        let _ = misbehave(&behave("panic"), &FakeCluster::new(), &http::Fake::new());
    }
}
