//! A named place a plugin version serves from. Webhook routes and controllers hold the slot,
//! not the plugin, and look up the current version for every call: replacing it is atomic, and
//! calls already running finish on the version they started with.

use std::sync::{Arc, RwLock};

use super::Plugin;

#[derive(Clone)]
pub struct PluginSlot {
    name: Arc<str>,
    current: Arc<RwLock<Plugin>>,
    /// A candidate in shadow mode: called on the same inputs, never applied.
    shadow: Arc<RwLock<Option<Plugin>>>,
    /// When true, a failed plugin call admits the request (failurePolicy Ignore) instead of
    /// denying it (Fail, the default: upstream's webhooks all fail closed).
    fail_open: Arc<std::sync::atomic::AtomicBool>,
}

impl PluginSlot {
    /// A slot named after the plugin's manifest.
    pub fn new(plugin: Plugin) -> Self {
        Self {
            name: Arc::from(plugin.name()),
            current: Arc::new(RwLock::new(plugin)),
            shadow: Arc::new(RwLock::new(None)),
            fail_open: Arc::new(std::sync::atomic::AtomicBool::new(false)),
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

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The version serving now (cheap: plugins are reference-counted).
    pub fn current(&self) -> Plugin {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The shadow candidate, if one is set.
    pub fn shadow(&self) -> Option<Plugin> {
        self.shadow
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Sets (or clears) the shadow candidate.
    pub fn set_shadow(&self, plugin: Option<Plugin>) {
        *self.shadow.write().unwrap_or_else(|e| e.into_inner()) = plugin;
    }

    /// Makes `plugin` the serving version and returns the previous one.
    pub fn replace(&self, plugin: Plugin) -> Plugin {
        let mut guard = self.current.write().unwrap_or_else(|e| e.into_inner());
        std::mem::replace(&mut *guard, plugin)
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
