//! A cluster view that keeps what a recorded call read, so a replay's cluster holds exactly
//! those objects.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::cluster_view::ClusterView;
use crate::gvk::Gvk;
use odh_label_selector::LabelSelector;

pub struct RecordingView {
    inner: Arc<dyn ClusterView>,
    read: Arc<Mutex<Vec<String>>>,
}

impl RecordingView {
    /// `inner`, and the log its reads are kept in.
    pub fn new(inner: Arc<dyn ClusterView>) -> (Self, Arc<Mutex<Vec<String>>>) {
        let read = Arc::new(Mutex::new(Vec::new()));
        (
            Self {
                inner,
                read: read.clone(),
            },
            read,
        )
    }
}

impl ClusterView for RecordingView {
    fn get(
        &self,
        gvk: &Gvk,
        namespace: Option<&str>,
        name: &str,
        within: Duration,
    ) -> anyhow::Result<Option<String>> {
        let found = self.inner.get(gvk, namespace, name, within)?;
        if let Some(text) = &found {
            self.read.lock().expect("read log lock").push(text.clone());
        }
        Ok(found)
    }

    fn get_held(&self, gvk: &Gvk, namespace: Option<&str>, name: &str) -> Option<Option<String>> {
        self.inner.get_held(gvk, namespace, name)
    }

    fn list(
        &self,
        gvk: &Gvk,
        namespace: Option<&str>,
        selector: &LabelSelector,
        within: Duration,
    ) -> anyhow::Result<Vec<String>> {
        let found = self.inner.list(gvk, namespace, selector, within)?;
        self.read
            .lock()
            .expect("read log lock")
            .extend(found.iter().cloned());
        Ok(found)
    }
}

/// The objects read, parsed, each (kind, namespace, name) once: the last read wins.
pub fn distinct_objects(read: &Mutex<Vec<String>>) -> Vec<Value> {
    let texts = std::mem::take(&mut *read.lock().expect("read log lock"));
    let mut by_key = std::collections::BTreeMap::new();
    for text in texts {
        let Ok(object) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        let field = |p: &str| {
            object
                .pointer(p)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let key = (
            field("/apiVersion"),
            field("/kind"),
            field("/metadata/namespace"),
            field("/metadata/name"),
        );
        by_key.insert(key, object);
    }
    by_key.into_values().collect()
}
