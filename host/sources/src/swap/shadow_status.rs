//! A running shadow in the plugin's status: since when, how many calls, how many differed, how
//! many were logged, and the last difference (JSON pointers, Secrets redacted) — so an admin sees
//! what a candidate would change without reading the log. Written at each retry tick when the
//! counters moved.

use super::*;
use odh_plugin_runtime::shadow_stats::ShadowSnapshot;

impl Registry {
    /// Writes the `shadow` field of every plugin running a shadow whose counters changed since
    /// the last write.
    pub async fn report_shadows(&self) {
        let running: Vec<(String, ShadowSnapshot)> = self
            .set
            .slots()
            .iter()
            .filter_map(|slot| {
                let (_, stats) = slot.shadow_with_stats()?;
                Some((slot.name().to_string(), stats.snapshot()))
            })
            .collect();
        {
            let mut reported = self.reported_shadows.lock().expect("shadows lock");
            reported.retain(|name, _| running.iter().any(|(n, _)| n == name));
        }
        for (name, snapshot) in running {
            let changed = self
                .reported_shadows
                .lock()
                .expect("shadows lock")
                .get(&name)
                != Some(&snapshot);
            if !changed {
                continue;
            }
            let mut status = self
                .last_status
                .lock()
                .expect("status lock")
                .get(&name)
                .cloned()
                .unwrap_or_else(|| json!({}));
            status["shadow"] = shadow_json(&snapshot);
            self.apply_status(&name, json!({ name.clone(): status.to_string() }))
                .await;
            self.reported_shadows
                .lock()
                .expect("shadows lock")
                .insert(name, snapshot);
        }
    }
}

/// The `shadow` field of a status value.
pub(super) fn shadow_json(s: &ShadowSnapshot) -> serde_json::Value {
    let since = k8s_openapi::jiff::Timestamp::try_from(s.since)
        .map(|t| t.to_string())
        .unwrap_or_default();
    json!({
        "since": since,
        "calls": s.calls,
        "differing": s.differing,
        "logged": s.logged,
        "lastDifference": s.last_difference,
    })
}
