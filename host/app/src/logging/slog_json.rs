//! The model-serving-api's log lines in upstream's shape: Go's `slog.NewJSONHandler` writes
//! `{"time":"<RFC 3339, nanoseconds>","level":"INFO","msg":"...", <attributes in order>}`, so
//! the standalone server's lines carry the same keys (`time`, `level`, `msg`) where
//! tracing's JSON formatter writes `timestamp`, `level`, `message` and `target`.

use std::fmt;

use serde_json::Value;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use super::TimeEncoding;

/// A [`FormatEvent`] writing one slog JSON line per event.
pub struct SlogJson;

impl<S, N> FormatEvent<S, N> for SlogJson
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let time = TimeEncoding::Rfc3339nano.format(std::time::SystemTime::now());
        writeln!(
            writer,
            "{}",
            line(
                &time,
                *event.metadata().level(),
                &fields.message,
                &fields.attributes
            )
        )
    }
}

/// slog's names of the levels; tracing's `TRACE` is below slog's `DEBUG` (as slog writes
/// `Level(-8)`).
fn level_name(level: Level) -> &'static str {
    match level {
        Level::ERROR => "ERROR",
        Level::WARN => "WARN",
        Level::INFO => "INFO",
        Level::DEBUG => "DEBUG",
        Level::TRACE => "DEBUG-4",
    }
}

/// The line, keys in slog's order: time, level, msg, then the attributes as recorded.
fn line(time: &str, level: Level, message: &str, attributes: &[(String, Value)]) -> String {
    let mut out = String::from("{");
    let mut push = |key: &str, value: &Value| {
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str(&Value::from(key).to_string());
        out.push(':');
        out.push_str(&value.to_string());
    };
    push("time", &time.into());
    push("level", &level_name(level).into());
    push("msg", &message.into());
    for (key, value) in attributes {
        push(key, value);
    }
    out.push('}');
    out
}

/// An event's message and its other fields, numbers and booleans as JSON numbers and booleans
/// (slog writes them so), anything else as its text.
#[derive(Default)]
struct Fields {
    message: String,
    attributes: Vec<(String, Value)>,
}

impl Fields {
    fn add(&mut self, field: &Field, value: Value) {
        if field.name() == "message" {
            self.message = match value {
                Value::String(s) => s,
                other => other.to_string(),
            };
        } else {
            self.attributes.push((field.name().to_string(), value));
        }
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.add(field, value.into());
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.add(field, value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.add(field, value.into());
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.add(field, value.into());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.add(field, value.into());
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.add(field, value.to_string().into());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.add(field, format!("{value:?}").into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_have_slogs_keys_in_slogs_order() {
        let attributes = vec![
            ("method".to_string(), Value::from("GET")),
            ("path".to_string(), Value::from("/api/v1/gateways")),
            ("status".to_string(), Value::from(401)),
            ("duration".to_string(), Value::from(1_234_567u64)),
        ];
        assert_eq!(
            line(
                "2026-12-04T15:00:00.5Z",
                Level::INFO,
                "request completed",
                &attributes
            ),
            r#"{"time":"2026-12-04T15:00:00.5Z","level":"INFO","msg":"request completed","method":"GET","path":"/api/v1/gateways","status":401,"duration":1234567}"#
        );
        assert_eq!(level_name(Level::TRACE), "DEBUG-4");
    }
}
