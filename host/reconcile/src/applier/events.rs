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
        let (regarding, note) = placed(primary.namespace, e);
        let reference = match regarding {
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
            note: Some(event_note(&note)),
            action: e.reason.clone(),
            secondary: None,
        };
        self.wrote();
        if let Err(err) = self.recorder.publish(&ev, &reference).await {
            tracing::warn!(reason = e.reason, "could not record an Event: {err}");
        }
    }
}

/// Where a plugin's Event goes and what it says: about the object it names when that lives in
/// the primary's namespace (or, for a cluster-scoped primary, is cluster-scoped too), else
/// about the primary, naming the object in the note. A plugin reconciling one namespace's
/// object cannot write Events into another's.
fn placed<'e>(
    primary_namespace: Option<&str>,
    e: &'e Event,
) -> (Option<&'e odh_plugin_runtime::wire::ObjectKey>, String) {
    match &e.regarding {
        Some(k) if k.namespace.as_deref() == primary_namespace => (Some(k), e.message.clone()),
        Some(k) => (
            None,
            format!(
                "({} {}{}) {}",
                k.gvk.kind,
                k.namespace
                    .as_deref()
                    .map(|ns| format!("{ns}/"))
                    .unwrap_or_default(),
                k.name,
                e.message
            ),
        ),
        None => (None, e.message.clone()),
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
    fn events_stay_in_the_primarys_namespace() {
        use odh_plugin_runtime::gvk::Gvk;
        use odh_plugin_runtime::wire::ObjectKey;
        let about = |namespace: Option<&str>| Event {
            type_: EventType::Warning,
            reason: "R".into(),
            message: "m".into(),
            regarding: Some(ObjectKey {
                gvk: Gvk::new("", "v1", "ConfigMap"),
                namespace: namespace.map(str::to_string),
                name: "c".into(),
            }),
        };
        let same = about(Some("ns"));
        assert_eq!(
            placed(Some("ns"), &same),
            (same.regarding.as_ref(), "m".into())
        );
        assert_eq!(
            placed(Some("ns"), &about(Some("kube-system"))),
            (None, "(ConfigMap kube-system/c) m".into()),
            "another namespace's object: about the primary instead"
        );
        assert_eq!(
            placed(None, &about(Some("tenant"))),
            (None, "(ConfigMap tenant/c) m".into())
        );
        let cluster = about(None);
        assert_eq!(placed(None, &cluster).0, cluster.regarding.as_ref());
        assert_eq!(placed(Some("ns"), &cluster).0, None);
    }

    #[test]
    fn event_notes_are_cut_to_what_the_apiserver_accepts() {
        assert_eq!(event_note("short"), "short");
        let long = "é".repeat(700);
        let note = event_note(&long);
        assert!(note.len() <= 1024 && note.ends_with('…'), "{}", note.len());
        assert!(long.starts_with(note.trim_end_matches('…')));
    }
}
