//! A deliberately bad plugin for the host's sandbox tests.
//!
//! Reconcile, mutate and validate all act on the ConfigMap's `data.behaviour`:
//!
//! | behaviour | effect |
//! |---|---|
//! | `ok` / absent | reconcile applies ConfigMap `<name>-ok` (controller-owned); mutate adds label `misbehave/ok: "true"`; validate allows |
//! | `loop` | spins forever |
//! | `alloc` | allocates and touches 1 MiB blocks forever |
//! | `panic` | `panic!("misbehave: deliberate panic")` |
//! | `trap` | `unreachable` instruction |
//! | `oversize` | a result of about 8 MiB |
//! | `read-ungranted` | reads a `Secret` (not in `reads`); the error comes back as `Error::Internal` |
//! | `read-granted` | reads ConfigMap `data.target` in the same namespace: `{"found": <bool>}` |
//! | `http` | GETs `data.url`: `{"httpStatus": <code>, "body": <text>}`, or the SDK's error |
//! | `error-invalid` / `error-transient` | `Error::Invalid` / `Error::Transient` |
//!
//! A result (the JSON after the colons above) becomes the primary's status in reconcile, the
//! annotation `misbehave/result` of the mutated object, and the message of an allowing
//! validate. ConfigMaps named `*-ok` (the ones it creates) are left alone by reconcile.
//! Pods (webhook `/mutate-misbehave-pod`) always behave `ok`: they get the `misbehave/ok` label.
//!
//! Settings: `{"okLabel": "<value>"}` sets the value of that label (default `"true"`), so two
//! configurations of the same component decide differently; unknown settings are invalid.

use odh_plugin_sdk::Operation::{Create, Update};
use odh_plugin_sdk::cluster::{Cluster, Host};
use odh_plugin_sdk::{AdmissionDecision, AdmissionRequest, Controller, Error, Manifest, Object};
use odh_plugin_sdk::{Outcome, Ownership, Plugin, ReconcileRequest, Value, Webhook};
use odh_plugin_sdk::{core_gvk, http, json};

pub struct Misbehave;

#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Settings {
    #[serde(default)]
    ok_label: Option<String>,
}

impl Plugin for Misbehave {
    fn manifest() -> Manifest {
        let cm = core_gvk("ConfigMap");
        Manifest::new("misbehave", "0.1.0")
            .description("Misbehaves on request, to test the host's sandbox")
            .controller(Controller::new("misbehave", cm.clone()).owns(cm.clone()))
            .webhook(Webhook::mutating(
                "/mutate-misbehave",
                cm.clone(),
                [Create, Update],
            ))
            .webhook(Webhook::validating(
                "/validate-misbehave",
                cm.clone(),
                [Create, Update],
            ))
            // Pods have no `data`, so they always take the `ok` path: labelled on admission.
            .webhook(Webhook::mutating(
                "/mutate-misbehave-pod",
                core_gvk("Pod"),
                [Create],
            ))
            .reads([cm.clone()])
            .writes([cm])
            .http_hosts(["127.0.0.1"])
    }

    fn reconcile(request: ReconcileRequest) -> Result<Outcome, Error> {
        let Some(cm) = request.object()? else {
            return Ok(Outcome::default());
        };
        if cm.name().ends_with("-ok") {
            return Ok(Outcome::default());
        }
        Ok(match misbehave(&cm, &Host)? {
            None => {
                let ok = Object::new(
                    &core_gvk("ConfigMap"),
                    cm.namespace(),
                    &format!("{}-ok", cm.name()),
                );
                Outcome::default().apply(ok, Ownership::Controller)
            }
            Some(result) => Outcome::default().status(result),
        })
    }

    fn validate_settings(settings: &str) -> Result<(), Error> {
        odh_plugin_sdk::settings::<Settings>(settings).map(|_| ())
    }

    fn mutate(request: AdmissionRequest) -> Result<AdmissionDecision, Error> {
        let settings: Settings = request.settings()?;
        let Some(mut cm) = request.object()? else {
            return Ok(AdmissionDecision::allow());
        };
        match misbehave(&cm, &Host)? {
            None => cm.set_label(
                "misbehave/ok",
                settings.ok_label.as_deref().unwrap_or("true"),
            ),
            Some(result) => cm.set_annotation("misbehave/result", &result.to_string()),
        }
        Ok(AdmissionDecision::mutated(cm))
    }

    fn validate(request: AdmissionRequest) -> Result<AdmissionDecision, Error> {
        let Some(cm) = request.object()? else {
            return Ok(AdmissionDecision::allow());
        };
        Ok(match misbehave(&cm, &Host)? {
            None => AdmissionDecision::allow(),
            Some(result) => AdmissionDecision::allow().with_message(result.to_string()),
        })
    }
}

odh_plugin_sdk::plugin!(Misbehave);

/// Does what `data.behaviour` says: `Ok(None)` for `ok`, `Ok(Some(result))` for behaviours
/// with a result, an error, or never returns.
pub fn misbehave(cm: &Object, cluster: &dyn Cluster) -> Result<Option<Value>, Error> {
    let field = |name: &str| {
        cm.str_at(&["data", name])
            .ok_or_else(|| Error::Invalid(format!("misbehave: data.{name} is required")))
    };
    match cm.str_at(&["data", "behaviour"]).unwrap_or("ok") {
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
        "panic" => panic!("misbehave: deliberate panic"),
        "trap" => trap(),
        "oversize" => Ok(Some(Value::String("x".repeat(8 << 20)))),
        "read-ungranted" => match cluster.get(&core_gvk("Secret"), cm.namespace(), cm.name()) {
            Ok(found) => Ok(Some(json!({ "found": found.is_some() }))),
            Err(e) => Err(Error::Internal(format!(
                "misbehave: reading a Secret: {}",
                e.describe()
            ))),
        },
        "read-granted" => {
            let found = cluster.get(&core_gvk("ConfigMap"), cm.namespace(), field("target")?)?;
            Ok(Some(json!({ "found": found.is_some() })))
        }
        "http" => {
            let response = http::get(field("url")?, &[])?;
            Ok(Some(
                json!({ "httpStatus": response.status, "body": response.text() }),
            ))
        }
        "error-invalid" => Err(Error::Invalid("misbehave: invalid input".into())),
        "error-transient" => Err(Error::Transient("misbehave: try later".into())),
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
    use odh_plugin_sdk::cluster::FakeCluster;

    fn cm(name: &str, data: Value) -> Object {
        Object(json!({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": name, "namespace": "ns"}, "data": data}))
    }

    fn behave(behaviour: &str) -> Object {
        cm("x", json!({ "behaviour": behaviour, "target": "t" }))
    }

    #[test]
    fn ok_everywhere() {
        let o = Misbehave::reconcile(ReconcileRequest::for_object(
            "misbehave",
            &cm("x", json!({})),
        ))
        .unwrap();
        assert_eq!(Object::parse(&o.apply[0].object).unwrap().name(), "x-ok");
        assert_eq!(o.apply[0].ownership, Ownership::Controller);
        let skip = ReconcileRequest::for_object("misbehave", &cm("x-ok", json!({})));
        assert_eq!(Misbehave::reconcile(skip), Ok(Outcome::default()));
        let req = AdmissionRequest::for_object("/mutate-misbehave", Create, &behave("ok"));
        let d = Misbehave::mutate(req.clone()).unwrap();
        assert_eq!(
            Object::parse(d.mutated.as_deref().unwrap())
                .unwrap()
                .label("misbehave/ok"),
            Some("true")
        );
        assert!(Misbehave::validate(req).unwrap().allowed);
    }

    #[test]
    fn results_and_errors() {
        let fake = FakeCluster::new()
            .with(cm("t", json!({})))
            .deny(core_gvk("Secret"));
        assert_eq!(
            misbehave(&behave("read-granted"), &fake),
            Ok(Some(json!({"found": true})))
        );
        let Err(Error::Internal(m)) = misbehave(&behave("read-ungranted"), &fake) else {
            panic!()
        };
        assert!(
            m.starts_with("misbehave: reading a Secret: denied: "),
            "{m}"
        );
        let Ok(Some(Value::String(s))) = misbehave(&behave("oversize"), &fake) else {
            panic!()
        };
        assert_eq!(s.len(), 8 << 20);
        assert_eq!(
            misbehave(&behave("error-invalid"), &fake),
            Err(Error::Invalid("misbehave: invalid input".into()))
        );
        assert_eq!(
            misbehave(&behave("error-transient"), &fake),
            Err(Error::Transient("misbehave: try later".into()))
        );
        // Natively the SDK's http is unavailable; the error is passed through unchanged.
        let http = cm(
            "x",
            json!({"behaviour": "http", "url": "http://127.0.0.1:1/"}),
        );
        assert!(matches!(misbehave(&http, &fake), Err(Error::Transient(_))));
    }

    #[test]
    #[should_panic(expected = "misbehave: deliberate panic")]
    fn panics() {
        let _ = misbehave(&behave("panic"), &FakeCluster::new());
    }
}
