//! The TemplateHandler (docs/plugins/nim-account.md, "Controller `odh-nim-controller`", step 5):
//! the OpenShift Template holding the NIM
//! ServingRuntime.

use std::collections::BTreeMap;

use odh_kinds::gvk;
use odh_plugin_sdk::{Object, Plan, Value, json};

use super::{Flow, Pass, merged_labels};
use crate::names::condition::*;
use crate::names::{self, message};
use crate::runtime_template::{TEMPLATE_ANNOTATIONS, serving_runtime};

impl Pass<'_> {
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
        let reference = match self.apply_owned(plan, existing.as_ref(), template) {
            Ok(reference) => reference,
            Err(e) => {
                return self.handler_failed(
                    TEMPLATE_UPDATE,
                    "TemplateNotUpdated",
                    message::TEMPLATE_FAILED,
                    e,
                );
            }
        };
        self.finish_update(
            reference,
            TEMPLATE_UPDATE,
            "TemplateUpdated",
            message::TEMPLATE_UPDATED,
            |s| &mut s.runtime_template,
        )
    }
}
