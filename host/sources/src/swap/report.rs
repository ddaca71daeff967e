//! What the registry tells the admin: the status ConfigMap (one JSON value per plugin), Warning
//! Events on the plugins ConfigMap, and the log.

use super::*;

impl Registry {
    pub(super) async fn report_rejection(
        &self,
        name: &str,
        entry: &PluginEntry,
        rejection: &Rejection,
    ) {
        let message = &rejection.message;
        Metrics::global().plugin_swap(name, false);
        let previous = self
            .reported
            .lock()
            .expect("reported lock")
            .get(name)
            .cloned()
            .filter(|p| p.message == *message);
        let reported = match previous {
            Some(p) => {
                let count = p.count + 1;
                tracing::debug!(
                    plugin = name,
                    count,
                    "plugin candidate rejected again: {message}"
                );
                if let Some(event) = &p.event {
                    self.count_event(event, count).await;
                }
                Reported { count, ..p }
            }
            None => {
                if self.set.get(name).is_some() {
                    tracing::warn!(plugin = name, source = %entry.source, "plugin candidate rejected, the last good version keeps serving: {message}");
                } else {
                    tracing::warn!(plugin = name, source = %entry.source, "plugin candidate rejected, no version of this plugin serves: {message}");
                }
                let event = self
                    .warning_event("PluginRejected", &format!("plugin {name}: {message}"))
                    .await;
                Reported {
                    message: message.clone(),
                    event,
                    count: 1,
                }
            }
        };
        let active = self
            .set
            .get(name)
            .map(|s| s.current().sha256().to_string())
            .unwrap_or_default();
        // What was fetched, else what the entry pins: never the active version's digest
        // standing in for a candidate that differs from it.
        let candidate = rejection
            .digest
            .clone()
            .or_else(|| entry.sha256.clone())
            .unwrap_or_default();
        let origin = self.active_origin(name);
        let mut status = status_entry(
            &active,
            &candidate,
            Some(message),
            &Admission::default(),
            origin.as_ref(),
        );
        status["failures"] = json!(reported.count);
        self.reported
            .lock()
            .expect("reported lock")
            .insert(name.to_string(), reported);
        self.apply_status(name, json!({name: status.to_string()}))
            .await;
    }

    /// A Warning Event on the plugins ConfigMap; its name, if recorded.
    pub(super) async fn warning_event(&self, reason: &str, note: &str) -> Option<String> {
        use k8s_openapi::api::events::v1::Event;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
        let event = Event {
            metadata: kube::api::ObjectMeta {
                generate_name: Some(format!("{CONFIGMAP_NAME}-")),
                namespace: Some(self.namespace.clone()),
                ..Default::default()
            },
            event_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::now())),
            type_: Some("Warning".into()),
            reason: Some(reason.into()),
            action: Some("Swap".into()),
            note: Some(note.chars().take(1024).collect()),
            reporting_controller: Some("odh-model-controller".into()),
            reporting_instance: Some(
                std::env::var("POD_NAME").unwrap_or_else(|_| "odh-model-controller".into()),
            ),
            regarding: Some(ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("ConfigMap".into()),
                name: Some(CONFIGMAP_NAME.into()),
                namespace: Some(self.namespace.clone()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let api: Api<Event> = Api::namespaced(self.client.clone(), &self.namespace);
        match api.create(&Default::default(), &event).await {
            Ok(created) => created.metadata.name,
            Err(e) => {
                tracing::warn!(
                    reason,
                    "could not record an Event on the plugins ConfigMap: {e}"
                );
                None
            }
        }
    }

    /// The same rejection once more: counted on its Event's series rather than a new Event
    /// (a bad entry left alone would otherwise add one per retry).
    pub(super) async fn count_event(&self, event: &str, count: u32) {
        use k8s_openapi::api::events::v1::Event;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
        let patch = json!({"series": {
            "count": count,
            "lastObservedTime": MicroTime(k8s_openapi::jiff::Timestamp::now()),
        }});
        let api: Api<Event> = Api::namespaced(self.client.clone(), &self.namespace);
        if let Err(e) = api
            .patch(event, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::warn!(
                event,
                "could not count a repeated rejection on its Event: {e}"
            );
        }
    }

    /// Records a plugin's state in the status ConfigMap (one JSON value per plugin).
    pub(super) async fn write_status(
        &self,
        name: &str,
        active: &str,
        candidate: &str,
        error: Option<&str>,
        admission: &Admission,
    ) {
        let origin = self.active_origin(name);
        let entry = status_entry(active, candidate, error, admission, origin.as_ref());
        self.apply_status(name, json!({name: entry.to_string()}))
            .await;
    }

    pub(super) fn active_origin(&self, name: &str) -> Option<fetch::Origin> {
        self.active_origins
            .lock()
            .expect("origins lock")
            .get(name)
            .cloned()
    }

    pub(super) fn set_active_origin(&self, name: &str, origin: Option<fetch::Origin>) {
        let mut origins = self.active_origins.lock().expect("origins lock");
        match origin {
            Some(o) => origins.insert(name.to_string(), o),
            None => origins.remove(name),
        };
    }

    /// Drops a removed plugin's key from the status ConfigMap.
    pub(super) async fn clear_status(&self, name: &str) {
        self.set_active_origin(name, None);
        self.apply_status(name, json!({})).await;
    }

    pub(super) async fn apply_status(&self, name: &str, data: serde_json::Value) {
        // A running shadow's counters stay in every value written.
        let mut data = data;
        if let Some(serde_json::Value::String(text)) = data.get(name)
            && let Ok(mut value) = serde_json::from_str::<serde_json::Value>(text)
        {
            if value.get("shadow").is_none()
                && let Some((_, stats)) = self.set.get(name).and_then(|s| s.shadow_with_stats())
            {
                value["shadow"] = super::shadow_status::shadow_json(&stats.snapshot());
                data[name] = json!(value.to_string());
            }
            self.last_status
                .lock()
                .expect("status lock")
                .insert(name.to_string(), value);
        } else {
            self.last_status.lock().expect("status lock").remove(name);
        }
        let body = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": STATUS_CONFIGMAP_NAME, "namespace": self.namespace},
            "data": data,
        });
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        if let Err(e) = api
            .patch(
                STATUS_CONFIGMAP_NAME,
                &PatchParams::apply(&format!("{FIELD_MANAGER}/{name}")).force(),
                &Patch::Apply(&body),
            )
            .await
        {
            tracing::warn!(plugin = name, "could not write the plugin status: {e}");
        }
    }
}

/// One plugin's status value; `grantsWidened` lists what an explicit grant gave the candidate
/// beyond what it would hold without one, `grantsNarrowed` what the grants withhold from what
/// it declares; `activeOciDigest` and `activeSignedBy` say where the
/// serving version came from when a registry served it.
fn status_entry(
    active: &str,
    candidate: &str,
    error: Option<&str>,
    admission: &Admission,
    origin: Option<&fetch::Origin>,
) -> serde_json::Value {
    let mut entry = json!({
        "activeDigest": active,
        "candidateDigest": candidate,
        "lastError": error,
        "time": k8s_openapi::jiff::Timestamp::now().to_string(),
    });
    if !admission.widened.is_empty() {
        entry["grantsWidened"] = json!(admission.widened);
    }
    if !admission.narrowed.is_empty() {
        entry["grantsNarrowed"] = json!(admission.narrowed);
    }
    if let Some(origin) = origin {
        entry["activeOciDigest"] = json!(origin.digest);
        if let Some(signature) = &origin.signature {
            entry["activeSignedBy"] = json!(signature.signed_by);
        }
    }
    entry
}
