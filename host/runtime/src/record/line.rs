//! One recorded call, as a line of a record file (docs/plugins-configmap.md, "Record lines"):
//! what the plugin was asked and what the version that served answered, with Secrets and tokens
//! redacted. `plugin replay` reads these lines back into calls.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::redact::{redact_decision, redact_value};
use crate::gvk::Gvk;
use crate::loaded::{AdmissionInput, ReconcileInput};
use crate::wire::{AdmissionDecision, Operation, Outcome, RawJson, RequestKey, WebhookType};
use crate::{CallError, LoadedPlugin};

/// The version of the line format; a reader refuses lines of another.
pub const FORMAT: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordLine {
    pub format: u32,
    /// When the call was made (RFC 3339, UTC).
    pub time: String,
    /// The version that answered.
    pub plugin: RecordedPlugin,
    /// How long its call took.
    pub latency_micros: u64,
    #[serde(flatten)]
    pub call: RecordedCall,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedPlugin {
    pub name: String,
    pub sha256: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum RecordedCall {
    Admission {
        input: AdmissionRecord,
        answer: Answer<AdmissionDecision>,
    },
    Reconcile {
        input: ReconcileRecord,
        answer: Answer<Outcome>,
    },
}

/// What the version answered: its value, or why the call failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Answer<T> {
    Ok(T),
    Error(RecordedError),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedError {
    /// The error's metric label (`timeout`, `trap`, `guest`, ...): what replay compares.
    pub kind: String,
    pub message: String,
}

impl RecordedError {
    pub fn of(e: &CallError) -> Self {
        Self {
            kind: e.metric_label().to_string(),
            message: e.to_string(),
        }
    }
}

/// An admission request as the plugin received it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionRecord {
    pub webhook: WebhookType,
    pub path: String,
    pub gvk: Gvk,
    pub resource: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_resource: Option<String>,
    pub operation: Operation,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_object: Option<Value>,
    #[serde(default)]
    pub dry_run: bool,
    #[serde(default)]
    pub user_info: Value,
    /// What the plugin's `get`/`list` calls returned, each object once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reads: Vec<Value>,
}

/// A reconcile request: the primary and every object the plugin read during the call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReconcileRecord {
    pub controller: String,
    pub key: RequestKey,
    /// The primary; `None` when it was gone.
    #[serde(default)]
    pub object: Option<Value>,
    /// What the plugin's `get`/`list` calls returned, each object once.
    #[serde(default)]
    pub reads: Vec<Value>,
}

impl AdmissionRecord {
    /// The request and what was read, redacted.
    pub fn of(webhook: WebhookType, input: &AdmissionInput, reads: Vec<Value>) -> Self {
        let parsed = |raw: &RawJson| raw.to_value().ok().map(|v| redact_value(&v));
        Self {
            webhook,
            path: input.path.clone(),
            gvk: input.gvk.clone(),
            resource: input.resource.clone(),
            sub_resource: input.sub_resource.clone(),
            operation: input.operation,
            namespace: input.namespace.clone(),
            name: input.name.clone(),
            object: input.object.as_ref().and_then(parsed),
            old_object: input.old_object.as_ref().and_then(parsed),
            dry_run: input.dry_run,
            user_info: input
                .user_info
                .to_value()
                .map(|u| super::redact::redact_user_info(&u))
                .unwrap_or_default(),
            reads: reads.iter().map(redact_value).collect(),
        }
    }

    /// The request again, to call a version with.
    pub fn to_input(&self, uid: String) -> AdmissionInput {
        AdmissionInput {
            uid,
            path: self.path.clone(),
            gvk: self.gvk.clone(),
            resource: self.resource.clone(),
            sub_resource: self.sub_resource.clone(),
            operation: self.operation,
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            object: self.object.as_ref().map(RawJson::from_value),
            old_object: self.old_object.as_ref().map(RawJson::from_value),
            dry_run: self.dry_run,
            user_info: RawJson::from_value(&self.user_info),
        }
    }

    /// Whether the object under review is a Secret (its patches are redacted).
    pub fn is_secret(&self) -> bool {
        self.gvk.group.is_empty() && self.gvk.kind == "Secret"
    }
}

impl ReconcileRecord {
    /// The request and what was read, redacted.
    pub fn of(input: &ReconcileInput, reads: Vec<Value>) -> Self {
        Self {
            controller: input.controller.clone(),
            key: input.key.clone(),
            object: input
                .object
                .as_deref()
                .and_then(|o| serde_json::from_str::<Value>(o).ok())
                .map(|v| redact_value(&v)),
            reads: reads.iter().map(redact_value).collect(),
        }
    }

    pub fn to_input(&self) -> ReconcileInput {
        ReconcileInput {
            controller: self.controller.clone(),
            key: self.key.clone(),
            object: self.object.as_ref().map(Value::to_string),
        }
    }
}

impl RecordLine {
    pub fn admission(
        plugin: &LoadedPlugin,
        webhook: WebhookType,
        input: &AdmissionInput,
        reads: Vec<Value>,
        answer: &Result<AdmissionDecision, CallError>,
        latency: std::time::Duration,
    ) -> Self {
        let record = AdmissionRecord::of(webhook, input, reads);
        let answer = match answer {
            Ok(d) => Answer::Ok(redact_decision(d, record.is_secret())),
            Err(e) => Answer::Error(RecordedError::of(e)),
        };
        Self::new(
            plugin,
            latency,
            RecordedCall::Admission {
                input: record,
                answer,
            },
        )
    }

    pub fn reconcile(
        plugin: &LoadedPlugin,
        input: &ReconcileInput,
        reads: Vec<Value>,
        answer: &Result<Outcome, CallError>,
        latency: std::time::Duration,
    ) -> Self {
        let answer = match answer {
            Ok(o) => Answer::Ok(super::redact::redact_outcome(o)),
            Err(e) => Answer::Error(RecordedError::of(e)),
        };
        Self::new(
            plugin,
            latency,
            RecordedCall::Reconcile {
                input: ReconcileRecord::of(input, reads),
                answer,
            },
        )
    }

    fn new(plugin: &LoadedPlugin, latency: std::time::Duration, call: RecordedCall) -> Self {
        Self {
            format: FORMAT,
            time: rfc3339(std::time::SystemTime::now()),
            plugin: RecordedPlugin {
                name: plugin.name().to_string(),
                sha256: plugin.sha256().to_string(),
            },
            latency_micros: u64::try_from(latency.as_micros()).unwrap_or(u64::MAX),
            call,
        }
    }

    /// Parses one line; a line of another format is refused with a message saying so.
    pub fn parse(line: &str) -> Result<Self, String> {
        let value: Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        match value.get("format").and_then(Value::as_u64) {
            Some(f) if f == u64::from(FORMAT) => {}
            Some(f) => return Err(format!("format {f}, this host reads format {FORMAT}")),
            None => return Err("no \"format\" field".into()),
        }
        serde_json::from_value(value).map_err(|e| e.to_string())
    }

    pub fn namespace(&self) -> Option<&str> {
        match &self.call {
            RecordedCall::Admission { input, .. } => input.namespace.as_deref(),
            RecordedCall::Reconcile { input, .. } => input.key.namespace.as_deref(),
        }
    }

    /// What the plugin read during the call.
    pub fn reads(&self) -> &[Value] {
        match &self.call {
            RecordedCall::Admission { input, .. } => &input.reads,
            RecordedCall::Reconcile { input, .. } => &input.reads,
        }
    }

    pub fn name(&self) -> Option<&str> {
        match &self.call {
            RecordedCall::Admission { input, .. } => input.name.as_deref(),
            RecordedCall::Reconcile { input, .. } => Some(&input.key.name),
        }
    }
}

/// `t` as RFC 3339 in UTC with milliseconds (the runtime has no calendar crate).
pub fn rfc3339(t: std::time::SystemTime) -> String {
    let since = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rest) = ((secs / 86_400) as i64, secs % 86_400);
    // Days to a civil date (H. Hinnant's algorithm, proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        since.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn times_are_rfc3339_utc() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_796_398_200_123);
        assert_eq!(rfc3339(t), "2026-12-04T15:30:00.123Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn a_line_round_trips_and_other_formats_are_refused() {
        let line = RecordLine {
            format: FORMAT,
            time: "2026-12-04T15:30:00.000Z".into(),
            plugin: RecordedPlugin {
                name: "p".into(),
                sha256: "ab".into(),
            },
            latency_micros: 12,
            call: RecordedCall::Reconcile {
                input: ReconcileRecord {
                    controller: "c".into(),
                    key: RequestKey {
                        namespace: Some("ns".into()),
                        name: "n".into(),
                    },
                    object: Some(json!({"kind": "ConfigMap"})),
                    reads: vec![],
                },
                answer: Answer::Error(RecordedError {
                    kind: "timeout".into(),
                    message: "slow".into(),
                }),
            },
        };
        let text = serde_json::to_string(&line).unwrap();
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["kind"], "reconcile");
        assert_eq!(value["answer"]["error"]["kind"], "timeout");
        assert_eq!(RecordLine::parse(&text), Ok(line));
        let other = text.replace("\"format\":1", "\"format\":9");
        assert!(RecordLine::parse(&other).unwrap_err().contains("format 9"));
        assert!(RecordLine::parse("{}").is_err());
        assert!(RecordLine::parse("not json").is_err());
    }
}
