//! The PullSecretHandler (docs/plugins/nim-account.md, "Controller `odh-nim-controller`", step
//! 6): the `nvcr.io` pull Secret made from the
//! API key.

use odh_kinds::gvk;
use odh_plugin_sdk::{Object, Plan, base64, json};

use super::{Flow, Pass, merged_labels};
use crate::names::condition::*;
use crate::names::{self, message};
use crate::ngc;

impl Pass<'_> {
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
        let reference = match self.apply_owned(plan, existing.as_ref(), secret) {
            Ok(reference) => reference,
            Err(e) => {
                return self.handler_failed(
                    SECRET_UPDATE,
                    "SecretNotUpdated",
                    message::SECRET_FAILED,
                    e,
                );
            }
        };
        self.finish_update(
            reference,
            SECRET_UPDATE,
            "SecretUpdated",
            message::SECRET_UPDATED,
            |s| &mut s.nim_pull_secret,
        )
    }
}

/// The `.dockerconfigjson` for `nvcr.io` (keys sorted, Go's escaping).
pub fn docker_config(key: &str) -> String {
    let config = json!({"auths": {"nvcr.io": {"password": key, "username": "$oauthtoken"}}});
    ngc::go_json(&config)
}
