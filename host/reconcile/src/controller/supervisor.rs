//! The controllers of a changing set of plugins: the loops of a plugin added at run time start,
//! those of a plugin removed stop (a reconcile in progress finishes, the queue is dropped), and
//! a plugin moved to a new slot (its controllers changed) has its old loops stopped and new
//! ones started.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::{ControllerContext, start};
use odh_plugin_runtime::{PluginSet, PluginSlot};

struct Running {
    slot: PluginSlot,
    stop: CancellationToken,
    loops: JoinSet<()>,
}

/// Starts the controllers of every plugin in `set` (an error here stops the host, as at any
/// start-up failure) and follows the set's changes until `shutdown`. The returned set ends when
/// every loop has stopped.
pub async fn supervise(
    ctx: Arc<ControllerContext>,
    set: Arc<PluginSet>,
    shutdown: CancellationToken,
) -> anyhow::Result<JoinSet<()>> {
    let mut changes = set.changes();
    changes.mark_unchanged();
    let mut running = BTreeMap::new();
    for slot in set.slots() {
        let stop = shutdown.child_token();
        let loops = start(ctx.clone(), std::slice::from_ref(&slot), stop.clone()).await?;
        running.insert(slot.name().to_string(), Running { slot, stop, loops });
    }
    let mut supervisor = JoinSet::new();
    supervisor.spawn(async move {
        let mut draining = JoinSet::new();
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                changed = changes.changed() => if changed.is_err() { break },
                // Reap loops that stopped.
                Some(_) = draining.join_next(), if !draining.is_empty() => continue,
            }
            follow(&ctx, &set, &shutdown, &mut running, &mut draining).await;
        }
        for (_, r) in std::mem::take(&mut running) {
            r.stop.cancel();
            draining.spawn(drain(r));
        }
        while draining.join_next().await.is_some() {}
    });
    Ok(supervisor)
}

/// Brings `running` in line with `set`.
async fn follow(
    ctx: &Arc<ControllerContext>,
    set: &PluginSet,
    shutdown: &CancellationToken,
    running: &mut BTreeMap<String, Running>,
    draining: &mut JoinSet<()>,
) {
    let wanted: BTreeMap<String, PluginSlot> = set
        .slots()
        .into_iter()
        .map(|s| (s.name().to_string(), s))
        .collect();
    let stale: Vec<String> = running
        .iter()
        .filter(|(name, r)| wanted.get(*name).is_none_or(|s| !s.same_slot(&r.slot)))
        .map(|(name, _)| name.clone())
        .collect();
    for name in stale {
        if let Some(r) = running.remove(&name) {
            tracing::info!(plugin = name, "stopping the plugin's controllers");
            r.stop.cancel();
            draining.spawn(drain(r));
        }
    }
    for (name, slot) in wanted {
        if running.contains_key(&name) {
            continue;
        }
        let stop = shutdown.child_token();
        match start(ctx.clone(), std::slice::from_ref(&slot), stop.clone()).await {
            Ok(loops) => {
                if !slot.current().manifest().controllers.is_empty() {
                    tracing::info!(plugin = name, "started the plugin's controllers");
                }
                running.insert(name, Running { slot, stop, loops });
            }
            Err(e) => {
                tracing::error!(
                    plugin = name,
                    "the plugin's controllers could not start: {e:#}"
                )
            }
        }
    }
}

async fn drain(mut r: Running) {
    while r.loops.join_next().await.is_some() {}
    tracing::info!(plugin = r.slot.name(), "the plugin's controllers stopped");
}
