//! The Account reconcile (spec nim-process §1.4–§1.10): the finalizer, then the validation,
//! model-info ConfigMap, Template and pull-Secret handlers in upstream's order, one status
//! write and at most one handler's change per pass, as upstream's requeue chain makes them.

use std::collections::BTreeMap;

use odh_crd_types::account::AccountSpec;
use odh_crd_types::meta::ObjectReference;
use odh_kinds::gvk;
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::conditions::Condition;
use odh_plugin_sdk::http::Client;
use odh_plugin_sdk::log::{Level, log};
use odh_plugin_sdk::{Error, Gvk, Object, Plan, Value, base64, json, object_key};

use crate::names::condition::*;
use crate::names::{self, message};
use crate::ngc::{self, Runtime};
use crate::runtime_template::{TEMPLATE_ANNOTATIONS, serving_runtime};
use crate::settings::Settings;
use crate::spec::spec;
use crate::status::{self, Status, reference_to, should_update_reference};
use crate::time::{parse_rfc3339, refresh_rate_secs};

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

    // §1.9: exactly one DataScienceCluster with `spec.components.kserve.nim.airGapped: true`.
    fn air_gapped(&self) -> bool {
        match self.cluster.list(&gvk::data_science_cluster(), None, None) {
            Ok(list) if list.len() == 1 => list[0]
                .pointer("/spec/components/kserve/nim/airGapped")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            _ => false,
        }
    }

    // §1.9: the applications namespace, POD_NAMESPACE overridden by any DSCInitialization's.
    fn applications_namespace(&self) -> Option<String> {
        let mut namespace = self.settings.pod_namespace.clone();
        let list = self
            .cluster
            .list(&gvk::dsc_initialization(), None, None)
            .ok()?;
        for item in list {
            if let Some(ns) = item
                .pointer("/spec/applicationsNamespace")
                .and_then(Value::as_str)
                .filter(|ns| !ns.is_empty())
            {
                namespace = Some(ns.to_string());
            }
        }
        namespace.filter(|ns| !ns.is_empty())
    }

    // ---- the API-key manager (§1.5) ----

    fn key_failure(
        &mut self,
        plan: &mut Plan,
        msg: &str,
        error: Error,
        not_found: bool,
    ) -> KeyError {
        log(Level::Info, &format!("{msg}, cleaning up"));
        cleanup(plan, self.account, &self.status);
        let (generation, now) = (self.generation(), self.now.clone());
        self.status = status::clean_failure(&self.status, generation, msg, &[], &now);
        self.update_status();
        KeyError { not_found, error }
    }

    fn api_key_secret(&mut self, plan: &mut Plan) -> Result<Object, KeyError> {
        if let Some(result) = &self.secret {
            return result.clone();
        }
        let reference = &self.spec.api_key_secret;
        let name = reference.name.clone().unwrap_or_default();
        let namespace = match reference.namespace.as_deref() {
            Some(ns) if !ns.is_empty() => ns.to_string(),
            _ => self.namespace().to_string(),
        };
        let result = match self
            .cluster
            .get_object(&gvk::secret(), Some(&namespace), &name)
        {
            Ok(Some(secret)) => Ok(secret),
            Ok(None) => {
                let error = Error::Transient(format!("secrets \"{name}\" not found"));
                Err(self.key_failure(plan, message::SECRET_NOT_FOUND, error, true))
            }
            Err(error) => Err(self.key_failure(plan, message::SECRET_FETCH_FAILED, error, false)),
        };
        self.secret = Some(result.clone());
        result
    }

    fn api_key(&mut self, plan: &mut Plan) -> Result<String, KeyError> {
        if let Some(result) = &self.key {
            return result.clone();
        }
        let result = self.api_key_secret(plan).and_then(|secret| {
            match secret
                .str_at(&["data", names::API_KEY_DATA])
                .and_then(base64::decode)
            {
                Some(bytes) => Ok(String::from_utf8_lossy(&bytes).trim().to_string()),
                None => {
                    let error =
                        Error::Invalid(format!("secret {} has no api_key data", secret.name()));
                    Err(self.key_failure(plan, message::NO_KEY_DATA, error, false))
                }
            }
        });
        self.key = Some(result.clone());
        result
    }

    // §1.11.1: the catalog, narrowed by the model list; fetched once per pass.
    fn runtimes(&mut self) -> Result<Vec<Runtime>, Error> {
        if let Some(result) = &self.runtimes {
            return result.clone();
        }
        let result = self.model_list().and_then(|models| {
            Ok(ngc::filter_runtimes(
                ngc::fetch_catalog(self.http)?,
                &models,
            ))
        });
        self.runtimes = Some(result.clone());
        result
    }

    fn model_list(&self) -> Result<Vec<String>, Error> {
        let Some(reference) = &self.spec.model_list_config else {
            return Ok(Vec::new());
        };
        let name = reference.name.as_deref().unwrap_or_default();
        if name.is_empty() {
            return Ok(Vec::new());
        }
        let namespace = match reference.namespace.as_deref() {
            Some(ns) if !ns.is_empty() => ns,
            _ => self.namespace(),
        };
        let Some(cm) = self
            .cluster
            .get_object(&gvk::config_map(), Some(namespace), name)?
        else {
            log(
                Level::Info,
                &format!("model list configmap {name} not found"),
            );
            return Ok(Vec::new());
        };
        let models = cm
            .str_at(&["data", names::MODELS_DATA])
            .and_then(|text| serde_json::from_str::<Vec<String>>(text).ok());
        Ok(models.unwrap_or_else(|| {
            log(Level::Info, "model list configmap has no valid models list");
            Vec::new()
        }))
    }

    // ---- ValidationHandler (§1.6) ----
    // The handlers are public so tests can run one at a time, as upstream's handler tests do.

    pub fn validation(&mut self, plan: &mut Plan, air_gapped: bool) -> Flow {
        if air_gapped {
            let changed = self.set(
                API_KEY_VALIDATION,
                "True",
                "ApiKeyValidated",
                message::KEY_AIR_GAPPED,
            );
            if changed || self.status.last_successful_validation.is_none() {
                self.status.last_successful_validation = Some(self.now.clone());
                self.update_status();
                return Flow::Requeue;
            }
            return Flow::Continue;
        }
        let secret = match self.api_key_secret(plan) {
            Ok(secret) => secret,
            Err(e) if e.not_found => return Flow::Stop,
            Err(e) => return Flow::Fail(e.error),
        };
        if !self.should_validate(plan, &secret) {
            return Flow::Continue;
        }
        let runtimes = match self.runtimes() {
            Ok(runtimes) => runtimes,
            Err(e) => {
                self.fail_with(
                    API_KEY_VALIDATION,
                    "ApiKeyNotValidated",
                    message::FETCH_RUNTIMES_FAILED,
                );
                self.update_status();
                return Flow::Fail(e);
            }
        };
        let key = match self.api_key(plan) {
            Ok(key) => key,
            Err(e) if e.not_found => return Flow::Stop,
            Err(e) => return Flow::Fail(e.error),
        };
        if let Err(e) = ngc::validate_key(self.http, &key, &runtimes) {
            log(Level::Info, &format!("{}: {e}", message::KEY_FAILED));
            cleanup(plan, self.account, &self.status);
            let failed = Condition::new(API_KEY_VALIDATION, false)
                .reason("ApiKeyNotValidated")
                .message(message::KEY_FAILED);
            let (generation, now) = (self.generation(), self.now.clone());
            self.status = status::clean_failure(
                &self.status,
                generation,
                message::KEY_FAILED,
                &[failed],
                &now,
            );
            self.update_status();
            return Flow::Stop;
        }
        self.set(
            API_KEY_VALIDATION,
            "True",
            "ApiKeyValidated",
            message::KEY_VALIDATED,
        );
        // Divergence: the time of every successful validation is recorded, so a periodic
        // re-validation does not repeat on every following pass.
        self.status.last_successful_validation = Some(self.now.clone());
        self.update_status();
        Flow::Requeue
    }

    fn should_validate(&self, plan: &mut Plan, secret: &Object) -> bool {
        if secret.annotation(names::FORCE_VALIDATION).is_some() {
            let version = secret.resource_version().unwrap_or_default();
            if self.account.annotation(names::FORCE_VALIDATION_SEEN) != Some(version) {
                plan.set_primary_annotation(names::FORCE_VALIDATION_SEEN, Some(version));
                return true;
            }
        }
        let last = self
            .status
            .last_successful_validation
            .as_deref()
            .and_then(parse_rfc3339);
        if let (true, Some(last)) = (self.status.is_true(API_KEY_VALIDATION), last) {
            let rate = refresh_rate_secs(&self.spec.validation_refresh_rate);
            return self.now_secs - last > rate;
        }
        true
    }

    // ---- ConfigMapHandler (§1.7) ----

    pub fn config_map(&mut self, plan: &mut Plan, air_gapped: bool) -> Flow {
        let name = names::config_map_name(self.name());
        if air_gapped {
            let namespace = self
                .applications_namespace()
                .unwrap_or_else(|| self.namespace().to_string());
            let reference = ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("ConfigMap".into()),
                name: Some(name),
                namespace: Some(namespace),
                ..Default::default()
            };
            let moved = self.status.nim_config.as_ref().is_none_or(|old| {
                old.name != reference.name || old.namespace != reference.namespace
            });
            self.status.nim_config = Some(reference);
            let changed = self.set(
                CONFIG_MAP_UPDATE,
                "True",
                "ConfigMapUpdated",
                message::CM_AIR_GAPPED,
            );
            if changed || moved || self.status.last_successful_config_refresh.is_none() {
                self.status.last_successful_config_refresh = Some(self.now.clone());
                self.update_status();
                return Flow::Requeue;
            }
            return Flow::Continue;
        }
        let existing = self.referenced(&gvk::config_map(), self.status.nim_config.clone());
        if !self.should_refresh_config(existing.as_ref()) {
            // Our reference to a ConfigMap made last pass gets its uid now (upstream builds it
            // from the apply's answer, which a plugin does not see); the healthy status at
            // the end of this pass carries it.
            let found = existing
                .as_ref()
                .filter(|e| e.uid().is_some())
                .map(reference_to);
            if let Some(found) = found
                && should_update_reference(self.status.nim_config.as_ref(), &found)
            {
                self.status.nim_config = Some(found);
            }
            return Flow::Continue;
        }
        let runtimes = match self.runtimes() {
            Ok(runtimes) => runtimes,
            Err(e) => {
                self.fail_with(
                    CONFIG_MAP_UPDATE,
                    "ConfigMapNotUpdated",
                    message::FETCH_RUNTIMES_FAILED,
                );
                self.update_status();
                return Flow::Fail(e);
            }
        };
        let built = self
            .api_key(plan)
            .map_err(|e| e.error)
            .and_then(|key| ngc::model_data(self.http, &key, &runtimes))
            .and_then(|data| {
                self.target(existing.as_ref(), &name)
                    .map(|target| (data, target))
            });
        let (data, target) = match built {
            Ok(built) => built,
            Err(e) => {
                return self.handler_failed(
                    CONFIG_MAP_UPDATE,
                    "ConfigMapNotUpdated",
                    message::CM_FAILED,
                    e,
                );
            }
        };
        let labels = merged_labels(existing.as_ref());
        let cm = Object::new(&gvk::config_map(), Some(self.namespace()), &target)
            .with(
                "metadata",
                json!({"name": target, "namespace": self.namespace(), "labels": labels}),
            )
            .with("data", json!(data));
        let reference = reference_to(
            existing
                .as_ref()
                .filter(|e| e.name() == target)
                .unwrap_or(&cm),
        );
        plan.apply_owned(cm);
        self.status.nim_config = Some(reference);
        self.status.last_successful_config_refresh = Some(self.now.clone());
        self.set(
            CONFIG_MAP_UPDATE,
            "True",
            "ConfigMapUpdated",
            message::CM_UPDATED,
        );
        self.update_status();
        Flow::Requeue
    }

    fn should_refresh_config(&self, existing: Option<&Object>) -> bool {
        if !self.status.is_true(API_KEY_VALIDATION) {
            log(
                Level::Info,
                "refusing to refresh configmap for invalidated api key",
            );
            return false;
        }
        let Some(existing) = existing else {
            return true;
        };
        let refreshed = self
            .status
            .last_successful_config_refresh
            .as_deref()
            .and_then(parse_rfc3339);
        if let (true, Some(refreshed)) = (self.status.is_true(CONFIG_MAP_UPDATE), refreshed) {
            let validated = self
                .status
                .last_successful_validation
                .as_deref()
                .and_then(parse_rfc3339);
            if validated.is_some_and(|v| v > refreshed) {
                return true;
            }
            let rate = refresh_rate_secs(&self.spec.nim_config_refresh_rate);
            if self.now_secs - refreshed > rate {
                return true;
            }
            return existing.label(names::MANAGED_LABEL).is_none();
        }
        true
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

    // ---- TemplateHandler (§1.8) ----

    pub fn template(&mut self, plan: &mut Plan, air_gapped: bool) -> Flow {
        // A cluster without OpenShift's Template kind cannot take the apply; upstream's apply
        // fails there, so ours fails the handler the same way rather than report success.
        let namespace = self.namespace().to_string();
        let generated = names::template_name(self.name());
        if let Err(e) = self
            .cluster
            .get(&gvk::template(), Some(&namespace), &generated)
        {
            return self.handler_failed(
                TEMPLATE_UPDATE,
                "TemplateNotUpdated",
                message::TEMPLATE_FAILED,
                e,
            );
        }
        let existing = self.referenced(&gvk::template(), self.status.runtime_template.clone());
        let target = match self.target(existing.as_ref(), &names::template_name(self.name())) {
            Ok(target) => target,
            Err(e) => {
                return self.handler_failed(
                    TEMPLATE_UPDATE,
                    "TemplateNotUpdated",
                    message::TEMPLATE_FAILED,
                    e,
                );
            }
        };
        let kept = existing.as_ref().and_then(|template| {
            let objects = template.array_at(&["objects"]);
            let has_runtime = objects.iter().any(|o| o["kind"] == "ServingRuntime");
            (self.status.is_true(TEMPLATE_UPDATE) && has_runtime).then(|| objects.to_vec())
        });
        // Divergence: upstream appends another runtime to the extracted list; it is replaced.
        let objects = kept.unwrap_or_else(|| vec![serving_runtime(air_gapped)]);
        let mut annotations: BTreeMap<String, String> = TEMPLATE_ANNOTATIONS
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        if let Some(existing) = &existing {
            for (key, value) in annotations.iter_mut() {
                if let Some(theirs) = existing.annotation(key) {
                    *value = theirs.to_string();
                }
            }
        }
        let template = Object::new(&gvk::template(), Some(self.namespace()), &target)
            .with(
                "metadata",
                json!({"name": target, "namespace": self.namespace(),
                       "labels": merged_labels(existing.as_ref()), "annotations": annotations}),
            )
            .with("objects", Value::Array(objects));
        let reference = reference_to(
            existing
                .as_ref()
                .filter(|e| e.name() == target)
                .unwrap_or(&template),
        );
        plan.apply_owned(template);
        self.finish_update(
            reference,
            TEMPLATE_UPDATE,
            "TemplateUpdated",
            message::TEMPLATE_UPDATED,
            |s| &mut s.runtime_template,
        )
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

    // ---- PullSecretHandler (§1.10) ----

    pub fn pull_secret(&mut self, plan: &mut Plan, _air_gapped: bool) -> Flow {
        let key = match self.api_key(plan) {
            Ok(key) => key,
            Err(e) => {
                return self.handler_failed(
                    SECRET_UPDATE,
                    "SecretNotUpdated",
                    message::SECRET_FAILED,
                    e.error,
                );
            }
        };
        let existing = self.referenced(&gvk::secret(), self.status.nim_pull_secret.clone());
        let target = match self.target(existing.as_ref(), &names::pull_secret_name(self.name())) {
            Ok(target) => target,
            Err(e) => {
                return self.handler_failed(
                    SECRET_UPDATE,
                    "SecretNotUpdated",
                    message::SECRET_FAILED,
                    e,
                );
            }
        };
        let secret = Object::new(&gvk::secret(), Some(self.namespace()), &target)
            .with(
                "metadata",
                json!({"name": target, "namespace": self.namespace(), "labels": merged_labels(existing.as_ref())}),
            )
            .with("type", "kubernetes.io/dockerconfigjson")
            .with("data", json!({".dockerconfigjson": base64::encode(docker_config(&key))}));
        let reference = reference_to(
            existing
                .as_ref()
                .filter(|e| e.name() == target)
                .unwrap_or(&secret),
        );
        plan.apply_owned(secret);
        self.finish_update(
            reference,
            SECRET_UPDATE,
            "SecretUpdated",
            message::SECRET_UPDATED,
            |s| &mut s.nim_pull_secret,
        )
    }
}

/// The common labels merged the way upstream does: a value already there wins.
fn merged_labels(existing: Option<&Object>) -> Value {
    let value = existing
        .and_then(|e| e.label(names::MANAGED_LABEL))
        .unwrap_or("true");
    json!({names::MANAGED_LABEL: value})
}

/// The `.dockerconfigjson` for `nvcr.io` (keys sorted, Go's escaping).
pub fn docker_config(key: &str) -> String {
    let config = json!({"auths": {"nvcr.io": {"password": key, "username": "$oauthtoken"}}});
    ngc::go_json(&config)
}

/// upstream's `CleanupResources`: delete what the status references (the pull Secret, the
/// ConfigMap, the Template). The host deletes only what it manages.
pub fn cleanup(plan: &mut Plan, account: &Object, status: &Status) {
    let namespace = account.namespace().unwrap_or_default();
    let refs = [
        (gvk::secret(), &status.nim_pull_secret),
        (gvk::config_map(), &status.nim_config),
        (gvk::template(), &status.runtime_template),
    ];
    for (kind, reference) in refs {
        let Some(reference) = reference else { continue };
        let Some(name) = reference.name.as_deref().filter(|n| !n.is_empty()) else {
            continue;
        };
        let ns = reference
            .namespace
            .as_deref()
            .filter(|n| !n.is_empty())
            .unwrap_or(namespace);
        plan.delete(object_key(&kind, Some(ns), name));
    }
}
