//! A named place a plugin version serves from. Webhook routes and controllers hold the slot,
//! not the plugin, and look up the current version for every call: replacing it is atomic, and
//! calls already running finish on the version they started with.

use std::sync::{Arc, RwLock};

use tokio::sync::watch;

use crate::loaded::LoadedPlugin;
use crate::record::Recorder;
use crate::rollout::Canary;
use crate::shadow_stats::ShadowStats;

/// A shadow candidate and its counters.
type Shadow = (LoadedPlugin, Arc<ShadowStats>);

#[derive(Clone)]
pub struct PluginSlot {
    name: Arc<str>,
    current: Arc<RwLock<LoadedPlugin>>,
    /// A candidate in shadow mode: called on the same inputs, never applied; with what it
    /// did since it was set.
    shadow: Arc<RwLock<Option<Shadow>>>,
    /// Counts replacements: controllers watch it to re-reconcile after a swap.
    generation: Arc<watch::Sender<u64>>,
    /// When true, a failed plugin call admits the request (failurePolicy Ignore) instead of
    /// denying it (Fail, the default: upstream's webhooks all fail closed).
    fail_open: Arc<std::sync::atomic::AtomicBool>,
    /// Records a sample of the active version's calls, when the entry asks for it.
    recorder: Arc<RwLock<Option<Arc<Recorder>>>>,
    /// A candidate in progressive rollout: serves its slice of the objects.
    canary: Arc<RwLock<Option<Arc<Canary>>>>,
}

impl PluginSlot {
    /// A slot named after the plugin's manifest.
    pub fn new(plugin: LoadedPlugin) -> Self {
        Self {
            name: Arc::from(plugin.name()),
            current: Arc::new(RwLock::new(plugin)),
            shadow: Arc::new(RwLock::new(None)),
            generation: Arc::new(watch::Sender::new(0)),
            fail_open: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            recorder: Arc::new(RwLock::new(None)),
            canary: Arc::new(RwLock::new(None)),
        }
    }

    /// Whether a failed call admits the request (failurePolicy Ignore).
    pub fn fail_open(&self) -> bool {
        self.fail_open.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn set_fail_open(&self, open: bool) {
        self.fail_open
            .store(open, std::sync::atomic::Ordering::Relaxed);
    }

    /// The recorder of the active version's calls, if recording is on.
    pub fn recorder(&self) -> Option<Arc<Recorder>> {
        self.recorder
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Turns recording on (or off, with `None`).
    pub fn set_recorder(&self, recorder: Option<Arc<Recorder>>) {
        *self.recorder.write().unwrap_or_else(|e| e.into_inner()) = recorder;
    }

    /// The candidate in progressive rollout, if any (also after a guard rolled it back: it
    /// stays loaded for inspection, serving nothing).
    pub fn canary(&self) -> Option<Arc<Canary>> {
        self.canary
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Starts (or ends, with `None`) a progressive rollout. Controllers re-reconcile, so every
    /// object whose version changed is reconciled by the version that now owns it.
    pub fn set_canary(&self, canary: Option<Arc<Canary>>) {
        *self.canary.write().unwrap_or_else(|e| e.into_inner()) = canary;
        self.resync();
    }

    /// Tells the controllers to reconcile every object again (the owner of a slice changed).
    pub fn resync(&self) {
        self.generation.send_modify(|g| *g += 1);
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The version serving now (cheap: plugins are reference-counted).
    pub fn current(&self) -> LoadedPlugin {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The shadow candidate, if one is set.
    pub fn shadow(&self) -> Option<LoadedPlugin> {
        self.shadow_with_stats().map(|(p, _)| p)
    }

    /// The shadow candidate and its counters.
    pub fn shadow_with_stats(&self) -> Option<Shadow> {
        self.shadow
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Sets (or clears) the shadow candidate. The same version set again keeps its counters.
    pub fn set_shadow(&self, plugin: Option<LoadedPlugin>) {
        let mut shadow = self.shadow.write().unwrap_or_else(|e| e.into_inner());
        *shadow = plugin.map(|p| {
            let stats = match &*shadow {
                Some((running, stats)) if running.same_as(&p) => stats.clone(),
                _ => Arc::new(ShadowStats::default()),
            };
            (p, stats)
        });
    }

    /// Makes `plugin` the serving version and returns the previous one; subscribers of
    /// [`PluginSlot::swaps`] learn of it.
    pub fn replace(&self, plugin: LoadedPlugin) -> LoadedPlugin {
        let previous = {
            let mut guard = self.current.write().unwrap_or_else(|e| e.into_inner());
            std::mem::replace(&mut *guard, plugin)
        };
        self.generation.send_modify(|g| *g += 1);
        previous
    }

    /// Whether both handles are the same slot (not merely the same plugin name): a plugin
    /// whose controllers or webhooks change moves to a new slot.
    pub fn same_slot(&self, other: &PluginSlot) -> bool {
        Arc::ptr_eq(&self.current, &other.current)
    }

    /// Changes whenever the serving version is replaced.
    pub fn swaps(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }
}

impl std::fmt::Debug for PluginSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginSlot")
            .field("name", &self.name)
            .field("sha256", &self.current().sha256())
            .finish()
    }
}
