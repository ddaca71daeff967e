//! The API-key manager: the API-key Secret and the key, read once per pass (a failure cleans up
//! and writes the clean failure status), and the NGC catalog the handlers share
//! (docs/plugins/nim-account.md, "NVIDIA's APIs", call A).

use odh_kinds::gvk;
use odh_plugin_sdk::log::{Level, log};
use odh_plugin_sdk::{Error, Object, Plan, base64};

use super::{KeyError, Pass, cleanup};
use crate::names::{self, message};
use crate::ngc::{self, Runtime};
use crate::status;

impl Pass<'_> {
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

    pub(super) fn api_key_secret(&mut self, plan: &mut Plan) -> Result<Object, KeyError> {
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
            Ok(Some(secret)) if secret.label(names::MANAGED_LABEL) == Some("true") => Ok(secret),
            // Upstream reads Secrets from a cache holding only those labelled
            // `opendatahub.io/managed=true`: one without the label is not found.
            Ok(_) => {
                let error = Error::Transient(format!("secrets \"{name}\" not found"));
                Err(self.key_failure(plan, message::SECRET_NOT_FOUND, error, true))
            }
            Err(error) => Err(self.key_failure(plan, message::SECRET_FETCH_FAILED, error, false)),
        };
        self.secret = Some(result.clone());
        result
    }

    pub(super) fn api_key(&mut self, plan: &mut Plan) -> Result<String, KeyError> {
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

    // The catalog, narrowed by the model list; fetched once per pass.
    pub(super) fn runtimes(&mut self) -> Result<Vec<Runtime>, Error> {
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
}
