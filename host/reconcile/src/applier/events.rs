//! Events about a primary (or an object a plugin names).

use k8s_openapi::api::core::v1::ObjectReference;
use kube::ResourceExt;
use kube::runtime::events::{Event as KubeEvent, EventType as KubeEventType};

use super::{Applier, Primary};
use odh_plugin_runtime::wire::{Event, EventType};

impl Applier {
    /// Records an Event about the primary (or the object the plugin named). Failures are logged:
    /// an Event is never worth failing a reconcile over.
    pub async fn event(&self, primary: &Primary<'_>, e: &Event) {
        let reference = match &e.regarding {
            Some(k) => ObjectReference {
                api_version: Some(k.gvk.api_version()),
                kind: Some(k.gvk.kind.clone()),
                name: Some(k.name.clone()),
                namespace: k.namespace.clone(),
                ..Default::default()
            },
            None => ObjectReference {
                api_version: Some(primary.kind.resource.api_version.clone()),
                kind: Some(primary.kind.resource.kind.clone()),
                name: Some(primary.name.to_string()),
                namespace: primary.namespace.map(str::to_string),
                uid: primary.object.and_then(|o| o.uid()),
                ..Default::default()
            },
        };
        let ev = KubeEvent {
            type_: match e.type_ {
                EventType::Warning => KubeEventType::Warning,
                EventType::Normal => KubeEventType::Normal,
            },
            reason: e.reason.clone(),
            note: Some(event_note(&e.message)),
            action: e.reason.clone(),
            secondary: None,
        };
        self.wrote();
        if let Err(err) = self.recorder.publish(&ev, &reference).await {
            tracing::warn!(reason = e.reason, "could not record an Event: {err}");
        }
    }
}

/// The apiserver refuses an Event whose note exceeds 1 kB (the whole Event is lost): longer
/// messages are cut at a character boundary, marked with an ellipsis.
fn event_note(message: &str) -> String {
    const MAX: usize = 1024;
    if message.len() <= MAX {
        return message.to_string();
    }
    let mut end = MAX - '…'.len_utf8();
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &message[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_notes_are_cut_to_what_the_apiserver_accepts() {
        assert_eq!(event_note("short"), "short");
        let long = "é".repeat(700);
        let note = event_note(&long);
        assert!(note.len() <= 1024 && note.ends_with('…'), "{}", note.len());
        assert!(long.starts_with(note.trim_end_matches('…')));
    }
}
