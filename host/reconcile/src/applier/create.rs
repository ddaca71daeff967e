//! Admission side effects: objects created when absent, as upstream's webhooks create the
//! `<secret>-sa` ServiceAccount (AlreadyExists is success; an existing object, perhaps the
//! user's own, is never modified).

use kube::api::{DynamicObject, PostParams};
use serde_json::Value;

use super::apply::{Target, api_for};
use super::{Applier, ApplyError, field_manager};
use crate::side_effects::SideEffectError;
use odh_plugin_runtime::wire::Desired;

impl Applier {
    /// Creates each of `objects` that does not exist yet under plugin `plugin`'s field
    /// manager, in order; the first failure stops the rest. Objects must name their namespace.
    /// An Event is best effort: a failed create is logged and the others go on, as upstream's
    /// webhooks record theirs (an Event never decides an admission).
    pub async fn create_absent(
        &self,
        plugin: &str,
        objects: &[Desired],
    ) -> Result<(), SideEffectError> {
        let manager = field_manager(plugin);
        for d in objects {
            match self.create_one(plugin, &manager, d).await {
                Err(e) if d.object.get("kind").and_then(Value::as_str) == Some("Event") => {
                    tracing::warn!(plugin, "an Event of an admission was not recorded: {e}");
                }
                result => result?,
            }
        }
        Ok(())
    }

    /// Creates one side effect unless it exists.
    async fn create_one(
        &self,
        plugin: &str,
        manager: &str,
        d: &Desired,
    ) -> Result<(), SideEffectError> {
        let kind = d
            .object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("object");
        let failed = |message: String| {
            SideEffectError::Failed(format!("failed to create {kind}: {message}"))
        };
        let Target {
            kind: resolved,
            name,
            namespace,
            mut object,
            ..
        } = self
            .target(plugin, None, &d.object)
            .await
            .map_err(|e| match e {
                ApplyError::Kube {
                    source: kube::Error::Api(status),
                    ..
                } => SideEffectError::Status(status),
                e => failed(e.to_string()),
            })?;
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("ownerReferences");
        }
        let object: DynamicObject =
            serde_json::from_value(object).map_err(|e| failed(e.to_string()))?;
        let api = api_for(&self.client, &resolved, namespace.as_deref());
        let params = PostParams {
            field_manager: Some(manager.to_string()),
            ..PostParams::default()
        };
        self.wrote();
        match api.create(&params, &object).await {
            Ok(_) => tracing::info!(plugin, kind, name, "created as an admission side effect"),
            Err(kube::Error::Api(s)) if s.is_already_exists() => {}
            Err(kube::Error::Api(status)) => return Err(SideEffectError::Status(status)),
            Err(e) => return Err(failed(e.to_string())),
        }
        Ok(())
    }
}
