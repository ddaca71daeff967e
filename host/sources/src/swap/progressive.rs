//! An entry with `rollout`: its version serves a slice of the objects beside the serving
//! (stable) version, guarded; what the rollout does is reported in the plugin's status, and a
//! guard's rollback also as a Warning Event `PluginRolledBack` on the plugins ConfigMap.

use super::*;
use crate::config::RolloutPlan;
use std::time::SystemTime;

use odh_plugin_runtime::rollout::guards::VersionSnapshot;
use odh_plugin_runtime::rollout::{Canary, Slice};

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
        let started = self.rollout_origin(slot.name(), &sha, &plan.slice).await;
        let canary = Canary::new(
            plugin,
            plan.slice.clone(),
            plan.guards.clone(),
            self.rollbacks.clone(),
            started,
        );
        slot.set_canary(Some(canary.clone()));
        if !plan.slice.steps.is_empty() {
            tokio::spawn(advance_steps(slot.clone(), canary));
        }
        let active = slot.current().sha256().to_string();
        self.write_status(slot.name(), &active, &sha, None, admission)
            .await;
        self.report_rollouts().await;
        Ok(SwapResult::RollingOut(sha))
    }

    /// When a timed rollout started: `rollout.startedAt` of the plugin's status when it
    /// describes the same candidate and steps (another replica, or this one before a restart,
    /// started it; every replica then routes by the same step), else now.
    async fn rollout_origin(&self, name: &str, candidate: &str, slice: &Slice) -> SystemTime {
        let now = SystemTime::now();
        if slice.steps.is_empty() {
            return now;
        }
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        let status = match api.get_opt(STATUS_CONFIGMAP_NAME).await {
            Ok(cm) => cm
                .and_then(|cm| cm.data?.remove(name))
                .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok()),
            Err(e) => {
                tracing::warn!(
                    plugin = name,
                    "reading the plugin status for the rollout's start failed (its steps are timed from now): {e}"
                );
                None
            }
        };
        status
            .and_then(|status| {
                let rollout = &status["rollout"];
                (rollout["candidateDigest"] == candidate && rollout["steps"] == steps_json(slice))
                    .then(|| {
                        rollout["startedAt"]
                            .as_str()?
                            .parse::<k8s_openapi::jiff::Timestamp>()
                            .ok()
                    })
                    .flatten()
            })
            .map(SystemTime::from)
            .filter(|t| *t <= now)
            .unwrap_or(now)
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

/// Moves a timed rollout to each next step when its time comes: the controllers reconcile
/// every object again (the objects the step moved go to the candidate); routing follows the
/// clock on its own. Ends with the rollout (a rollback, the entry changed, the last step).
async fn advance_steps(slot: PluginSlot, canary: std::sync::Arc<Canary>) {
    // Held weakly while asleep: a rollout that ends before its next step frees its candidate.
    let weak = std::sync::Arc::downgrade(&canary);
    let mut wait = canary.slice.next_step_after(canary.elapsed());
    drop(canary);
    while let Some(next) = wait {
        let left = match weak.upgrade() {
            Some(c) => next.saturating_sub(c.elapsed()),
            None => return,
        };
        tokio::time::sleep(left).await;
        let Some(canary) = weak.upgrade() else {
            return;
        };
        let current = slot
            .canary()
            .is_some_and(|c| std::sync::Arc::ptr_eq(&c, &canary));
        if !current || canary.rolled_back().is_some() {
            return;
        }
        tracing::info!(
            plugin = slot.name(),
            step = canary.step_now(),
            percent = canary.percent_now(),
            "progressive rollout: the next step"
        );
        slot.resync();
        wait = canary.slice.next_step_after(canary.elapsed());
    }
}

/// A timed rollout's steps as the status shows them.
fn steps_json(slice: &Slice) -> serde_json::Value {
    slice
        .steps
        .iter()
        .map(|s| {
            json!({
                "percent": s.percent,
                "pause": s.pause.map(|p| format!("{}s", p.as_secs_f64())),
            })
        })
        .collect()
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
        "percent": canary.percent_now(),
        "namespaces": canary.slice.namespaces,
        "namespaceSelector": canary.slice.namespace_selector.as_ref().map(|s| s.to_string()),
        "stable": version_json(&canary.stats.stable.snapshot()),
        "candidate": version_json(&canary.stats.candidate.snapshot()),
    });
    if !canary.slice.steps.is_empty() {
        value["steps"] = steps_json(&canary.slice);
        value["step"] = json!(canary.step_now());
        value["startedAt"] = json!(
            k8s_openapi::jiff::Timestamp::try_from(canary.started)
                .map(|t| t.to_string())
                .unwrap_or_default()
        );
    }
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
