//! What a plugin returns is checked before anything of it is applied: writes within its grants,
//! owners it may set, primary metadata it may change.

use super::*;

impl LoadedPlugin {
    /// Refuses an outcome or decision that writes a kind the plugin may not write.
    pub(super) fn check_writes<'a>(
        &self,
        op: Export,
        objects: impl Iterator<Item = &'a Value>,
        deletes: &[crate::wire::ObjectKey],
    ) -> Result<(), CallError> {
        let mut kinds = Vec::new();
        for object in objects {
            let gvk = Gvk::of_object(object).ok_or_else(|| {
                self.malformed(op, "an object without apiVersion/kind".to_string())
            })?;
            kinds.push(gvk);
        }
        kinds.extend(deletes.iter().map(|k| k.gvk.clone()));
        match kinds.into_iter().find(|k| !self.inner.caps.may_write(k)) {
            None => Ok(()),
            Some(kind) => Err(CallError::WriteRefused {
                plugin: self.name().to_string(),
                op: op.as_str(),
                kind,
            }),
        }
    }

    /// Refuses an outcome that sets an owner reference to anything but its primary on an
    /// object it applies unowned (on an owned one the host sets the owner references, replacing
    /// the plugin's).
    pub(super) fn check_owners(
        &self,
        outcome: &Outcome,
        primary: Option<&str>,
    ) -> Result<(), CallError> {
        let with_owners: Vec<_> = outcome
            .apply
            .iter()
            .filter(|d| d.ownership == Ownership::None)
            .filter_map(|d| {
                let refs = d.object.pointer("/metadata/ownerReferences")?.as_array()?;
                Some((d, refs)).filter(|_| !refs.is_empty())
            })
            .collect();
        if with_owners.is_empty() {
            return Ok(());
        }
        // Rare: only now is the primary parsed for its uid.
        let primary_uid = primary
            .and_then(|p| serde_json::from_str::<Value>(p).ok())
            .and_then(|p| p.pointer("/metadata/uid")?.as_str().map(str::to_string));
        for (d, refs) in with_owners {
            let stranger = refs.iter().find(|r| {
                primary_uid.is_none()
                    || r.get("uid").and_then(Value::as_str) != primary_uid.as_deref()
            });
            if let Some(owner) = stranger {
                let field = |name: &str| owner.get(name).and_then(Value::as_str).unwrap_or("");
                return Err(CallError::ForeignOwner {
                    plugin: self.name().to_string(),
                    kind: Gvk::of_object(&d.object).unwrap_or_else(|| Gvk::new("", "", "")),
                    ownership: format!(
                        "{} owned by {} {} (uid {:?})",
                        describe(&d.object),
                        field("kind"),
                        field("name"),
                        field("uid")
                    ),
                });
            }
        }
        Ok(())
    }
}

/// `<Kind> <namespace>/<name>` of an object a plugin returned, for messages.
fn describe(object: &Value) -> String {
    let field = |path: &str| object.pointer(path).and_then(Value::as_str).unwrap_or("");
    match field("/metadata/namespace") {
        "" => format!("{} {}", field("/kind"), field("/metadata/name")),
        ns => format!("{} {ns}/{}", field("/kind"), field("/metadata/name")),
    }
}

/// An outcome's `primaryMetadata` changes labels, annotations and finalizers only; checked
/// before anything of the outcome is applied, so a bad one leaves nothing half done.
pub fn check_primary_metadata(patch: &Value) -> Result<(), String> {
    let Some(fields) = patch.as_object() else {
        return Err("primaryMetadata must be a JSON object".into());
    };
    match fields
        .keys()
        .find(|k| !matches!(k.as_str(), "labels" | "annotations" | "finalizers"))
    {
        Some(other) => Err(format!(
            "primaryMetadata may only change labels, annotations and finalizers, not {other:?}"
        )),
        None => Ok(()),
    }
}
