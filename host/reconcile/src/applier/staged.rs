//! A reconcile's `writes` (WIT 0.1.5) made by the applier while the plugin runs: the same
//! applies and deletes as an outcome's, each answered, on the blocking thread the plugin call
//! runs on. A shadow call's writer sends dry runs.

use std::sync::Arc;
use std::time::Duration;

use kube::ResourceExt;
use kube::api::DynamicObject;
use serde_json::Value;

use super::apply::{Applied, Mode};
use super::{Applier, ApplyError, Primary, field_manager};
use crate::cache::ResolvedKind;
use odh_label_selector::LabelSelector;
use odh_plugin_runtime::wire::{Desired, ObjectKey};
use odh_plugin_runtime::writes::{WriteError, Writer};

/// The primary of one reconcile, owned (a writer outlives the borrow a [`Primary`] is).
#[derive(Clone)]
pub struct StagedPrimary {
    pub kind: ResolvedKind,
    pub object: Option<Arc<DynamicObject>>,
    pub namespace: Option<String>,
    pub name: String,
}

/// Makes one reconcile's writes through the applier.
pub struct StagedWriter {
    applier: Arc<Applier>,
    primary: StagedPrimary,
    handle: tokio::runtime::Handle,
    mode: Mode,
}

impl StagedWriter {
    /// A writer for a reconcile of `primary`; made on the runtime the writes run on.
    pub fn new(applier: Arc<Applier>, primary: StagedPrimary) -> Self {
        Self {
            applier,
            primary,
            handle: tokio::runtime::Handle::current(),
            mode: Mode::Write,
        }
    }

    fn primary(&self) -> Primary<'_> {
        Primary {
            kind: &self.primary.kind,
            object: self.primary.object.as_deref(),
            namespace: self.primary.namespace.as_deref(),
            name: &self.primary.name,
        }
    }

    /// Runs `work` on the runtime until `deadline` (the plugin call waits on its thread).
    fn block<T>(
        &self,
        deadline: tokio::time::Instant,
        within: Duration,
        work: impl Future<Output = Result<T, impl Into<WriteError>>>,
    ) -> Result<T, WriteError> {
        odh_plugin_runtime::host_wait::block_on(&self.handle, async {
            match tokio::time::timeout_at(deadline, work).await {
                Ok(result) => result.map_err(Into::into),
                Err(_) => Err(WriteError::Failed(format!(
                    "no answer from the API server within {within:?}"
                ))),
            }
        })
    }

    /// The object the cluster holds for a target an apply found unchanged.
    async fn current(&self, target: &super::apply::Target) -> Result<Value, ApplyError> {
        let cached = self
            .applier
            .caches
            .get(&target.gvk)
            .and_then(|c| c.get(target.namespace.as_deref(), &target.name));
        let object = match cached {
            Some(o) => return o.to_value().map_err(|e| ApplyError::Invalid(e.to_string())),
            None => {
                let api = super::apply::api_for(
                    &self.applier.client,
                    &target.kind,
                    target.namespace.as_deref(),
                );
                api.get(&target.name)
                    .await
                    .map_err(|source| ApplyError::Kube {
                        what: format!("reading {} {}", target.gvk, target.name),
                        source,
                    })?
            }
        };
        serde_json::to_value(object).map_err(|e| ApplyError::Invalid(e.to_string()))
    }
}

/// The plugin's view of a failed write: the API server's status when it answered.
impl From<ApplyError> for WriteError {
    fn from(e: ApplyError) -> Self {
        match e {
            ApplyError::Kube {
                source: kube::Error::Api(s),
                ..
            } => WriteError::Refused(crate::api_client::api_status(*s)),
            ApplyError::Kube { what, source } => WriteError::Failed(format!("{what}: {source}")),
            ApplyError::Invalid(m) => WriteError::Denied(m),
        }
    }
}

impl Writer for StagedWriter {
    fn primary_uid(&self) -> Option<String> {
        self.primary.object.as_ref().and_then(|o| o.uid())
    }

    fn apply(
        &self,
        plugin: &str,
        objects: Vec<Desired>,
        within: Duration,
    ) -> Vec<Result<Value, WriteError>> {
        let manager = field_manager(plugin);
        let primary = self.primary();
        let one = async |d: &Desired| -> Result<Value, WriteError> {
            match self
                .applier
                .apply_one(plugin, &manager, Some(&primary), d, self.mode)
                .await?
            {
                Applied::Written(o) => {
                    serde_json::to_value(o).map_err(|e| WriteError::Failed(e.to_string()))
                }
                Applied::Unchanged(target) => Ok(self.current(&target).await?),
                Applied::Skipped => Err(WriteError::Denied(
                    "an owned object of a primary that is gone is not applied".into(),
                )),
            }
        };
        // One after another, in the plugin's order: a step's objects are few. All of them
        // within `within`: what the first ones took is not the last one's to spend again.
        let deadline = tokio::time::Instant::now() + within;
        objects
            .iter()
            .map(|d| self.block(deadline, within, one(d)))
            .collect()
    }

    fn delete(
        &self,
        plugin: &str,
        keys: Vec<ObjectKey>,
        within: Duration,
    ) -> Vec<Result<bool, WriteError>> {
        let manager = field_manager(plugin);
        let primary = self.primary();
        let deadline = tokio::time::Instant::now() + within;
        keys.iter()
            .map(|k| {
                self.block(
                    deadline,
                    within,
                    self.applier.delete_one(&manager, &primary, k, self.mode),
                )
            })
            .collect()
    }

    fn delete_unmanaged(
        &self,
        keys: Vec<ObjectKey>,
        selector: &LabelSelector,
        within: Duration,
    ) -> Vec<Result<bool, WriteError>> {
        let ns = self.primary.namespace.as_deref();
        let deadline = tokio::time::Instant::now() + within;
        keys.iter()
            .map(|k| {
                self.block(
                    deadline,
                    within,
                    self.applier.delete_matching(k, ns, selector, self.mode),
                )
            })
            .collect()
    }

    fn patch_metadata(
        &self,
        key: ObjectKey,
        resource_version: &str,
        patch: Value,
        within: Duration,
    ) -> Result<Value, WriteError> {
        let ns = self.primary.namespace.as_deref();
        let patched = self.block(
            tokio::time::Instant::now() + within,
            within,
            self.applier
                .patch_foreign_metadata(&key, ns, resource_version, patch, self.mode),
        )?;
        serde_json::to_value(patched).map_err(|e| WriteError::Failed(e.to_string()))
    }

    fn dry_run(&self) -> Arc<dyn Writer> {
        Arc::new(StagedWriter {
            applier: self.applier.clone(),
            primary: self.primary.clone(),
            handle: self.handle.clone(),
            mode: Mode::DryRun,
        })
    }
}
