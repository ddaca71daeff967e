//! An entry with `rollout`: its version serves a slice of the objects beside the serving
//! (stable) version, guarded; what the rollout does is reported in the plugin's status, and a
//! guard's rollback also as a Warning Event `PluginRolledBack` on the plugins ConfigMap.

use super::*;
use crate::config::RolloutPlan;
use odh_plugin_runtime::rollout::Canary;
use odh_plugin_runtime::rollout::guards::VersionSnapshot;

impl Registry {
    /// Starts (or changes) the rollout of `plugin` beside `slot`'s serving version.
    pub(super) async fn start_rollout(
        &self,
        serving: Option<PluginSlot>,
        plugin: LoadedPlugin,
        plan: &RolloutPlan,
        admission: &Admission,
    ) -> Result<SwapResult, Rejection> {
        let sha = plugin.sha256().to_string();
        let Some(slot) = serving else {
            return Err(Rejection::new(
                "a plugin this host does not serve yet has no stable version to roll out beside; add it without rollout first",
                Some(&sha),
            ));
        };
        if !same_shape(&slot.current(), &plugin) {
            return Err(Rejection::new(
                "a candidate in rollout must declare the controllers and webhooks of the version it rolls out beside",
                Some(&sha),
            ));
        }
        tracing::info!(
            plugin = slot.name(),
            candidate = sha,
            percent = plan.slice.percent,
            namespaces = ?plan.slice.namespaces,
            namespace_selector = plan.slice.namespace_selector.as_ref().map(|s| s.to_string()),
            "progressive rollout: the candidate serves its slice"
        );
        slot.set_canary(Some(Canary::new(
            plugin,
            plan.slice.clone(),
            plan.guards.clone(),
            self.rollbacks.clone(),
        )));
        let active = slot.current().sha256().to_string();
        self.write_status(slot.name(), &active, &sha, None, admission)
            .await;
        self.report_rollouts().await;
        Ok(SwapResult::RollingOut(sha))
    }

    /// Ends `slot`'s rollout, if it has one: every object goes to the serving version.
    pub(super) fn end_rollout(&self, slot: &PluginSlot) {
        if slot.canary().is_some() {
            slot.set_canary(None);
            self.reported_rollouts
                .lock()
                .expect("rollouts lock")
                .remove(slot.name());
        }
    }

    /// Writes the `rollout` field of every plugin in rollout whose counters changed since the
    /// last write, and an Event for every rollback not reported yet.
    pub async fn report_rollouts(&self) {
        let running: Vec<(String, std::sync::Arc<Canary>)> = self
            .set
            .slots()
            .iter()
            .filter_map(|s| Some((s.name().to_string(), s.canary()?)))
            .collect();
        for (name, canary) in running {
            let value = rollout_json(&canary);
            let previous = self
                .reported_rollouts
                .lock()
                .expect("rollouts lock")
                .insert(name.clone(), value.clone());
            if previous.as_ref() == Some(&value) {
                continue;
            }
            let newly_rolled_back = value.get("rolledBack").is_some()
                && previous.is_none_or(|p| p.get("rolledBack").is_none());
            if newly_rolled_back && let Some(back) = canary.rolled_back() {
                Metrics::global().plugin_swap(&name, false);
                self.warning_event(
                    "PluginRolledBack",
                    &format!(
                        "plugin {name}: the rollout of {} went back to the stable version {}: guard {}: {}",
                        canary.plugin.sha256(),
                        self.set.get(&name).map(|s| s.current().sha256().to_string()).unwrap_or_default(),
                        back.guard,
                        back.reason
                    ),
                )
                .await;
            }
            let mut status = self
                .last_status
                .lock()
                .expect("status lock")
                .get(&name)
                .cloned()
                .unwrap_or_else(|| json!({}));
            status["rollout"] = value;
            self.apply_status(&name, json!({ name.clone(): status.to_string() }))
                .await;
        }
    }
}

fn version_json(v: &VersionSnapshot) -> serde_json::Value {
    json!({
        "calls": v.calls,
        "errors": v.errors,
        "admissions": v.admissions,
        "denies": v.denies,
        "deadlineOverruns": v.overruns,
        "p99Ms": v.p99.as_secs_f64() * 1e3,
    })
}

/// The `rollout` field of a status value.
fn rollout_json(canary: &Canary) -> serde_json::Value {
    let mut value = json!({
        "candidateDigest": canary.plugin.sha256(),
        "percent": canary.slice.percent,
        "namespaces": canary.slice.namespaces,
        "namespaceSelector": canary.slice.namespace_selector.as_ref().map(|s| s.to_string()),
        "stable": version_json(&canary.stats.stable.snapshot()),
        "candidate": version_json(&canary.stats.candidate.snapshot()),
    });
    if let Some(back) = canary.rolled_back() {
        value["rolledBack"] = json!({
            "guard": back.guard,
            "reason": back.reason,
            "time": k8s_openapi::jiff::Timestamp::try_from(back.at)
                .map(|t| t.to_string())
                .unwrap_or_default(),
        });
    }
    value
}
