//! The ValidationHandler (docs/plugins/nim-account.md, "Controller `odh-nim-controller`", step
//! 3): the API key validated against NVIDIA's APIs,
//! when forced or due.

use odh_plugin_sdk::conditions::Condition;
use odh_plugin_sdk::log::{Level, log};
use odh_plugin_sdk::{Object, Plan, json};

use super::{Flow, Pass, cleanup};
use crate::names::condition::*;
use crate::names::{self, message};
use crate::ngc;
use crate::status;
use crate::time::{parse_rfc3339, refresh_rate_secs};

impl Pass<'_> {
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
            match self.writes {
                // Upstream removes the annotation at once (a failed patch is only logged).
                Some(writes) => {
                    let patch =
                        json!({"metadata": {"annotations": {names::FORCE_VALIDATION: null}}});
                    if let Err(e) = writes.patch_metadata(&secret.key(), version, &patch) {
                        log(
                            Level::Error,
                            &format!("failed to remove the force-validation annotation: {e}"),
                        );
                    }
                    return true;
                }
                // No writes (native handler tests): honoured once per Secret version.
                None if self.account.annotation(names::FORCE_VALIDATION_SEEN) != Some(version) => {
                    plan.set_primary_annotation(names::FORCE_VALIDATION_SEEN, Some(version));
                    return true;
                }
                None => {}
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
}
