//! The ConfigMapHandler (docs/plugins/nim-account.md, "Controller `odh-nim-controller`", step
//! 4): the model-info ConfigMap, refreshed when the
//! key was validated since, the rate says so or the object is not ours; air-gapped, a
//! reference to the one in the applications namespace.

use std::collections::BTreeMap;

use odh_crd_types::meta::ObjectReference;
use odh_kinds::gvk;
use odh_plugin_sdk::log::{Level, log};
use odh_plugin_sdk::{Error, Object, Plan, Value, json};

use super::{Flow, Pass, merged_labels};
use crate::names::condition::*;
use crate::names::{self, message};
use crate::ngc;
use crate::status::{reference_to, should_update_reference};
use crate::time::{parse_rfc3339, refresh_rate_secs};

impl Pass<'_> {
    pub fn config_map(&mut self, plan: &mut Plan, air_gapped: bool) -> Flow {
        let name = names::config_map_name(self.name());
        if air_gapped {
            return self.refer_to_air_gapped_config_map(name);
        }
        let existing = self.referenced(&gvk::config_map(), self.status.nim_config.clone());
        if !self.should_refresh_config(existing.as_ref()) {
            self.adopt_uid_of(existing.as_ref());
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
        match built {
            Ok((data, target)) => {
                match self.apply_config_map(plan, existing.as_ref(), &target, data) {
                    Ok(()) => Flow::Requeue,
                    Err(e) => self.handler_failed(
                        CONFIG_MAP_UPDATE,
                        "ConfigMapNotUpdated",
                        message::CM_FAILED,
                        e,
                    ),
                }
            }
            Err(e) => self.handler_failed(
                CONFIG_MAP_UPDATE,
                "ConfigMapNotUpdated",
                message::CM_FAILED,
                e,
            ),
        }
    }

    /// Air-gapped: no ConfigMap of ours; the status refers to the one in the applications
    /// namespace. A change (of the reference or the condition) is written and requeues.
    fn refer_to_air_gapped_config_map(&mut self, name: String) -> Flow {
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
        let moved =
            self.status.nim_config.as_ref().is_none_or(|old| {
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
        Flow::Continue
    }

    /// No refresh due: our reference to a ConfigMap made last pass gets its uid now (upstream
    /// builds it from the apply's answer, which a plugin does not see); the healthy status at
    /// the end of this pass carries it.
    fn adopt_uid_of(&mut self, existing: Option<&Object>) {
        let found = existing.filter(|e| e.uid().is_some()).map(reference_to);
        if let Some(found) = found
            && should_update_reference(self.status.nim_config.as_ref(), &found)
        {
            self.status.nim_config = Some(found);
        }
    }

    /// The refreshed ConfigMap applied under `target` with the model `data`, and the status
    /// that records it (reference, refresh time, `ConfigMapUpdate=True`).
    fn apply_config_map(
        &mut self,
        plan: &mut Plan,
        existing: Option<&Object>,
        target: &str,
        data: BTreeMap<String, String>,
    ) -> Result<(), Error> {
        let labels = merged_labels(existing);
        let cm = Object::new(&gvk::config_map(), Some(self.namespace()), target)
            .with(
                "metadata",
                json!({"name": target, "namespace": self.namespace(), "labels": labels}),
            )
            .with("data", json!(data));
        let reference = self.apply_owned(plan, existing, cm)?;
        self.status.nim_config = Some(reference);
        self.status.last_successful_config_refresh = Some(self.now.clone());
        self.set(
            CONFIG_MAP_UPDATE,
            "True",
            "ConfigMapUpdated",
            message::CM_UPDATED,
        );
        self.update_status();
        Ok(())
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

    // The applications namespace, POD_NAMESPACE overridden by any DSCInitialization's.
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
}
