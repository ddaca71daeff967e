//! An entry's `record`: the recorder of the plugin's active version, on its slot. Recording
//! never stops a plugin from serving: a recorder that cannot start is logged and left off.

use odh_plugin_runtime::record::{RecordConfig, Recorder};

use super::Registry;

impl Registry {
    /// Gives `name`'s slot the recorder `config` asks for (none: off). The same configuration
    /// keeps the recorder running, with what it holds.
    pub(super) fn apply_record(&self, name: &str, config: Option<RecordConfig>) {
        let Some(slot) = self.set.get(name) else {
            return;
        };
        let Some(config) = config else {
            slot.set_recorder(None);
            return;
        };
        if slot.recorder().is_some_and(|r| r.config() == config) {
            return;
        }
        let dir = self.record_dir.as_ref().map(|d| d.join(name));
        match Recorder::new(config, dir.as_deref()) {
            Ok(recorder) => {
                tracing::info!(
                    plugin = name,
                    sample_rate = config.sample_rate,
                    dir = ?dir,
                    "recording a sample of the plugin's calls"
                );
                slot.set_recorder(Some(recorder));
            }
            Err(e) => tracing::warn!(
                plugin = name,
                "recording stays off: its directory {dir:?} cannot be used: {e}"
            ),
        }
    }
}
