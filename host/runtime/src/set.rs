//! The plugins a host serves now. Built-in plugins start in it; the registry adds plugins
//! named only in the plugins ConfigMap, removes them when their entry goes, and moves a plugin
//! whose controllers or webhooks change to a new slot. The controller supervisor, the webhook
//! router and the webhook-configuration sync follow its changes.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use tokio::sync::watch;

use crate::slot::PluginSlot;

pub struct PluginSet {
    slots: RwLock<BTreeMap<String, PluginSlot>>,
    /// Counts changes of membership (not swaps within a slot: those are the slot's own).
    generation: watch::Sender<u64>,
}

impl PluginSet {
    pub fn new(slots: impl IntoIterator<Item = PluginSlot>) -> Arc<Self> {
        Arc::new(Self {
            slots: RwLock::new(
                slots
                    .into_iter()
                    .map(|s| (s.name().to_string(), s))
                    .collect(),
            ),
            generation: watch::Sender::new(0),
        })
    }

    /// Every slot, ordered by plugin name.
    pub fn slots(&self) -> Vec<PluginSlot> {
        self.read().values().cloned().collect()
    }

    pub fn get(&self, name: &str) -> Option<PluginSlot> {
        self.read().get(name).cloned()
    }

    pub fn len(&self) -> usize {
        self.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// Puts `slot` in place of the plugin's slot, if it has one; returns the slot replaced.
    pub fn insert(&self, slot: PluginSlot) -> Option<PluginSlot> {
        let previous = self
            .slots
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(slot.name().to_string(), slot);
        self.generation.send_modify(|g| *g += 1);
        previous
    }

    pub fn remove(&self, name: &str) -> Option<PluginSlot> {
        let removed = self
            .slots
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name);
        if removed.is_some() {
            self.generation.send_modify(|g| *g += 1);
        }
        removed
    }

    /// Changes whenever a plugin is added, removed or moved to a new slot.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, PluginSlot>> {
        self.slots.read().unwrap_or_else(|e| e.into_inner())
    }
}

impl std::fmt::Debug for PluginSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.read().values()).finish()
    }
}
