//! The Account reconcile (docs/plugins/nim-account.md, "Controller `odh-nim-controller`"): the
//! finalizer, then the validation,
//! model-info ConfigMap, Template and pull-Secret handlers in upstream's order, one status
//! write and at most one handler's change per pass, as upstream's requeue chain makes them.
//!
//! This file holds the pass and what the handlers share; each handler has a file of its own
//! ([`validation`](Pass::validation), [`config_map`](Pass::config_map),
//! [`template`](Pass::template), [`pull_secret`](Pass::pull_secret)), and `api_key.rs` is the
//! API-key manager they call.

mod api_key;
mod config_map;
mod pull_secret;
mod template;
mod validation;

use odh_crd_types::account::AccountSpec;
use odh_crd_types::meta::ObjectReference;
use odh_kinds::gvk;
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::http::Client;
use odh_plugin_sdk::log::{Level, log};
use odh_plugin_sdk::writes::Writes;
use odh_plugin_sdk::{Desired, Error, Gvk, Object, Ownership, Plan, Value, json, object_key};

use crate::names::condition::*;
use crate::names::{self, message};
use crate::ngc::Runtime;
use crate::settings::Settings;
use crate::spec::spec;
use crate::status::{Status, should_update_reference};
use crate::time::{parse_rfc3339, refresh_rate_secs};

pub use pull_secret::docker_config;

/// How soon a handler's "requeue" runs the next one (upstream: the rate limiter's first step).
pub const REQUEUE_MS: u64 = 5;

/// The soonest a refresh-rate requeue comes back.
pub const MIN_REFRESH_SECS: i64 = 60;

/// What a handler decided (upstream's `{Continue, Requeue, Error}` plus a plain stop).
#[derive(Debug)]
pub enum Flow {
    Continue,
    Requeue,
    Stop,
    Fail(Error),
}

/// A failure of the API-key manager; `not_found` is kept as upstream's callers test it.
#[derive(Clone, Debug)]
struct KeyError {
    not_found: bool,
    error: Error,
}

/// One reconcile pass over a live Account.
pub struct Pass<'a> {
    pub account: &'a Object,
    pub cluster: &'a dyn Cluster,
    pub http: &'a dyn Client,
    /// The host's writes: objects applied now, so status references carry the uid the API
    /// server gave them (upstream's reference from the apply's answer). Without them (native
    /// tests of the handlers) objects go into the plan and references get their uid a pass later.
    pub writes: Option<&'a dyn Writes>,
    pub settings: &'a Settings,
    pub now: String,
    pub now_secs: i64,
    /// The Account's spec.
    spec: AccountSpec,
    /// The status as read at the start (upstream's in-memory Account).
    initial: Status,
    /// The status as the handlers changed it.
    pub status: Status,
    /// The last status an `UpdateStatus` asked for.
    written: Option<Status>,
    secret: Option<Result<Object, KeyError>>,
    key: Option<Result<String, KeyError>>,
    runtimes: Option<Result<Vec<Runtime>, Error>>,
}

impl<'a> Pass<'a> {
    pub fn new(
        account: &'a Object,
        cluster: &'a dyn Cluster,
        http: &'a dyn Client,
        settings: &'a Settings,
        now: &str,
    ) -> Pass<'a> {
        let status = Status::of(account);
        Pass {
            account,
            cluster,
            http,
            writes: None,
            settings,
            now: now.to_string(),
            now_secs: parse_rfc3339(now).unwrap_or(0),
            spec: spec(account),
            initial: status.clone(),
            status,
            written: None,
            secret: None,
            key: None,
            runtimes: None,
        }
    }

    /// The same pass writing through `writes`.
    pub fn with_writes(mut self, writes: Option<&'a dyn Writes>) -> Self {
        self.writes = writes;
        self
    }

    /// `object`, owned by the Account, applied, and the status reference to it: from the API
    /// server's answer when writing now (its uid included), else the existing object's (or the
    /// object's own) with the apply left to the plan.
    fn apply_owned(
        &self,
        plan: &mut Plan,
        existing: Option<&Object>,
        object: Object,
    ) -> Result<ObjectReference, Error> {
        match self.writes {
            Some(writes) => writes
                .apply_one(Desired::new(&object, Ownership::Controller))
                .map(|stored| crate::status::reference_to(&stored))
                .map_err(Error::from),
            None => {
                let reference = crate::status::reference_to(
                    existing
                        .filter(|e| e.name() == object.name())
                        .unwrap_or(&object),
                );
                plan.apply_owned(object);
                Ok(reference)
            }
        }
    }

    fn generation(&self) -> Option<i64> {
        self.account.generation()
    }

    fn namespace(&self) -> &str {
        self.account.namespace().unwrap_or_default()
    }

    fn name(&self) -> &str {
        self.account.name()
    }

    fn set(&mut self, type_: &str, status: &str, reason: &str, message: &str) -> bool {
        let (generation, now) = (self.generation(), self.now.clone());
        self.status
            .set(generation, type_, status, reason, message, &now)
    }

    fn fail_with(&mut self, type_: &str, reason: &str, message: &str) {
        let (generation, now) = (self.generation(), self.now.clone());
        self.status
            .handler_failure(generation, type_, reason, message, &now);
    }

    /// upstream's `UpdateStatus`: the whole status, written when it differs.
    fn update_status(&mut self) {
        self.written = Some(self.status.clone());
    }

    /// The status to write, if any differs from what was read.
    pub fn status_to_write(&self) -> Option<&Status> {
        self.written.as_ref().filter(|s| **s != self.initial)
    }

    /// The whole pass: the handlers in order until one does not continue, then the healthy
    /// status. Everything decided goes into `plan`.
    pub fn run(mut self, plan: &mut Plan) {
        log(Level::Debug, "starting account reconciliation");
        let air_gapped = self.air_gapped();
        type Handler<'p> = fn(&mut Pass<'p>, &mut Plan, bool) -> Flow;
        let handlers: [(Handler<'a>, &str); 4] = [
            (Pass::validation, "api key validation not required"),
            (Pass::config_map, "config refresh not required"),
            (Pass::template, "template reconciliation not required"),
            (Pass::pull_secret, "pull secret reconciliation not required"),
        ];
        let mut flow = Flow::Continue;
        for (handler, continued) in handlers {
            flow = handler(&mut self, plan, air_gapped);
            match flow {
                Flow::Continue => log(Level::Info, continued),
                _ => break,
            }
        }
        match flow {
            Flow::Continue => {
                self.status.last_account_check = Some(self.now.clone());
                self.set(
                    ACCOUNT_STATUS,
                    "True",
                    "AccountSuccessful",
                    message::HEALTHY,
                );
                self.update_status();
                log(Level::Info, message::HEALTHY);
                if !air_gapped {
                    // Divergence: upstream re-checks only on events or the 10 h resync.
                    plan.requeue_within(self.next_refresh_ms());
                }
            }
            Flow::Requeue => plan.requeue_within(REQUEUE_MS),
            Flow::Stop => {}
            Flow::Fail(ref e) => plan.fail(e.clone()),
        }
        if let Some(status) = self.status_to_write() {
            plan.status(status);
        }
    }

    /// Milliseconds until the sooner of the next validation and the next config refresh.
    pub fn next_refresh_ms(&self) -> u64 {
        let due = |last: &Option<String>, rate: &str| {
            let last = last
                .as_deref()
                .and_then(parse_rfc3339)
                .unwrap_or(self.now_secs);
            last + refresh_rate_secs(rate)
        };
        let validation = due(
            &self.status.last_successful_validation,
            &self.spec.validation_refresh_rate,
        );
        let config = due(
            &self.status.last_successful_config_refresh,
            &self.spec.nim_config_refresh_rate,
        );
        // At least a minute: a zero or negative rate must not turn into a loop of NVIDIA calls.
        let secs = (validation.min(config) - self.now_secs + 1).max(MIN_REFRESH_SECS);
        secs as u64 * 1000
    }

    // Air-gapped (the doc's step 2): exactly one DataScienceCluster with
    // `spec.components.kserve.nim.airGapped: true`.
    fn air_gapped(&self) -> bool {
        match self.cluster.list(&gvk::data_science_cluster(), None, None) {
            Ok(list) if list.len() == 1 => list[0]
                .pointer("/spec/components/kserve/nim/airGapped")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            _ => false,
        }
    }

    /// The object a status reference names, when it can be read.
    fn referenced(&self, kind: &Gvk, reference: Option<ObjectReference>) -> Option<Object> {
        let reference = reference?;
        let namespace = reference
            .namespace
            .unwrap_or_else(|| self.namespace().to_string());
        self.cluster
            .get_object(kind, Some(&namespace), reference.name.as_deref()?)
            .ok()
            .flatten()
    }

    /// The name to apply under: the referenced object's own (upstream applies the extracted
    /// configuration), which must be in the Account's namespace, or the generated name.
    fn target(&self, existing: Option<&Object>, generated: &str) -> Result<String, Error> {
        match existing {
            None => Ok(generated.to_string()),
            Some(e) if e.namespace() == Some(self.namespace()) => Ok(e.name().to_string()),
            Some(e) => Err(Error::Invalid(format!(
                "the namespace of the provided object ({}) does not match the namespace sent on the request ({})",
                e.namespace().unwrap_or_default(),
                self.namespace()
            ))),
        }
    }

    /// A handler's failure path: the status read at the start (the key manager's clean
    /// failure status replaced, as upstream's) with the two failure conditions.
    fn handler_failed(&mut self, type_: &str, reason: &str, msg: &str, error: Error) -> Flow {
        self.status = self.initial.clone();
        self.fail_with(type_, reason, msg);
        self.update_status();
        Flow::Fail(error)
    }

    fn finish_update(
        &mut self,
        reference: ObjectReference,
        type_: &str,
        reason: &str,
        msg: &str,
        field: fn(&mut Status) -> &mut Option<ObjectReference>,
    ) -> Flow {
        let slot = field(&mut self.status);
        let moved = should_update_reference(slot.as_ref(), &reference);
        if moved {
            *slot = Some(reference);
        }
        let changed = self.set(type_, "True", reason, msg);
        if moved || changed {
            self.update_status();
            Flow::Requeue
        } else {
            Flow::Continue
        }
    }
}

/// The common labels merged the way upstream does: a value already there wins.
fn merged_labels(existing: Option<&Object>) -> Value {
    let value = existing
        .and_then(|e| e.label(names::MANAGED_LABEL))
        .unwrap_or("true");
    json!({names::MANAGED_LABEL: value})
}

/// What the status references (the pull Secret, the ConfigMap, the Template), where it lives.
fn references(account: &Object, status: &Status) -> Vec<(Gvk, String, String)> {
    let namespace = account.namespace().unwrap_or_default();
    let refs = [
        (gvk::secret(), &status.nim_pull_secret),
        (gvk::config_map(), &status.nim_config),
        (gvk::template(), &status.runtime_template),
    ];
    refs.into_iter()
        .filter_map(|(kind, reference)| {
            let reference = reference.as_ref()?;
            let name = reference.name.as_deref().filter(|n| !n.is_empty())?;
            let ns = reference
                .namespace
                .as_deref()
                .filter(|n| !n.is_empty())
                .unwrap_or(namespace);
            Some((kind, ns.to_string(), name.to_string()))
        })
        .collect()
}

/// upstream's `CleanupResources`: delete what the status references (the pull Secret, the
/// ConfigMap, the Template). The host deletes only what it manages.
pub fn cleanup(plan: &mut Plan, account: &Object, status: &Status) {
    for (kind, ns, name) in references(account, status) {
        plan.delete(object_key(&kind, Some(&ns), &name));
    }
}

/// How long a deleting Account waits before looking again at the deletions it asked for
/// (their watch events usually bring it back sooner).
pub const DELETION_RECHECK_MS: u64 = 1_000;

/// A deleting Account (upstream's step 3): the referenced objects are deleted, and the
/// finalizer is released only once none of the objects it made (those carrying its owner
/// reference) is left. A delete that failed leaves its object, so the finalizer stays and the
/// next pass deletes again, as upstream's error return keeps it and retries. An object it did
/// not make is asked to be deleted but not waited for: the host may refuse to delete it.
pub fn finish_deletion(
    plan: &mut Plan,
    account: &Object,
    cluster: &dyn Cluster,
) -> Result<(), Error> {
    let mut waiting = false;
    for (kind, ns, name) in references(account, &Status::of(account)) {
        let Some(existing) = cluster.get_object(&kind, Some(&ns), &name)? else {
            continue;
        };
        if existing.is_deleting() {
            continue;
        }
        plan.delete(object_key(&kind, Some(&ns), &name));
        waiting |= existing.owner_references().iter().any(|r| {
            r["uid"]
                .as_str()
                .is_some_and(|uid| Some(uid) == account.uid())
        });
    }
    if waiting {
        plan.requeue_within(DELETION_RECHECK_MS);
    } else {
        plan.remove_finalizer();
    }
    Ok(())
}
