//! A `tracing` layer turning the host's trace spans (target [`super::TARGET`]) into OTLP spans:
//! ids and parents at creation, attributes as recorded, handed to the exporter when the span
//! closes. A span without a parent of ours continues the trace of the request that caused it
//! when it recorded that request's W3C `traceparent`; otherwise it starts a trace.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

use super::proto::{AttributeValue, SpanKind, SpanRecord};

/// What a span carries until it closes.
struct Open {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    parent: Option<[u8; 8]>,
    start: u64,
    fields: Fields,
}

#[derive(Default)]
struct Fields {
    attributes: Vec<(&'static str, AttributeValue)>,
    traceparent: Option<String>,
    server: bool,
    error: Option<String>,
}

impl Fields {
    fn set(&mut self, key: &'static str, value: AttributeValue) {
        match (key, value) {
            ("traceparent", AttributeValue::String(s)) => self.traceparent = Some(s),
            ("otel.kind", AttributeValue::String(s)) => self.server = s == "server",
            ("error", AttributeValue::String(s)) => self.error = Some(s),
            (key, value) => match self.attributes.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = value,
                None => self.attributes.push((key, value)),
            },
        }
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.set(field.name(), AttributeValue::String(value.to_string()));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.set(field.name(), AttributeValue::Bool(value));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.set(field.name(), AttributeValue::Int(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.set(
            field.name(),
            AttributeValue::Int(i64::try_from(value).unwrap_or(i64::MAX)),
        );
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.set(field.name(), AttributeValue::String(format!("{value:?}")));
    }
}

/// Ids unique to this process (random keys, a counter): nothing cryptographic rests on them.
struct Ids {
    keys: RandomState,
    next: AtomicU64,
}

impl Ids {
    fn next(&self) -> u64 {
        self.keys
            .hash_one(self.next.fetch_add(1, Ordering::Relaxed))
    }

    fn span_id(&self) -> [u8; 8] {
        self.next().to_be_bytes()
    }

    fn trace_id(&self) -> [u8; 16] {
        let mut id = [0; 16];
        id[..8].copy_from_slice(&self.next().to_be_bytes());
        id[8..].copy_from_slice(&self.next().to_be_bytes());
        id
    }
}

pub struct OtlpLayer {
    spans: SyncSender<SpanRecord>,
    dropped: Arc<AtomicU64>,
    ids: Ids,
}

impl OtlpLayer {
    pub fn new(spans: SyncSender<SpanRecord>, dropped: Arc<AtomicU64>) -> Self {
        Self {
            spans,
            dropped,
            ids: Ids {
                keys: RandomState::new(),
                next: AtomicU64::new(0),
            },
        }
    }
}

fn now_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or_default()
}

/// `00-<trace id>-<parent id>-<flags>` (W3C Trace Context, version 00).
pub fn parse_traceparent(value: &str) -> Option<([u8; 16], [u8; 8])> {
    let mut parts = value.trim().split('-');
    let (version, trace, parent, _flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if version != "00" || trace.len() != 32 || parent.len() != 16 {
        return None;
    }
    let mut trace_id = [0; 16];
    let mut parent_id = [0; 8];
    hex::decode_to_slice(trace, &mut trace_id).ok()?;
    hex::decode_to_slice(parent, &mut parent_id).ok()?;
    (trace_id != [0; 16] && parent_id != [0; 8]).then_some((trace_id, parent_id))
}

impl<S> tracing_subscriber::Layer<S> for OtlpLayer
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let ours = span.parent().and_then(|p| {
            p.extensions()
                .get::<Open>()
                .map(|o| (o.trace_id, o.span_id))
        });
        let remote = || fields.traceparent.as_deref().and_then(parse_traceparent);
        let (trace_id, parent) = match ours.or_else(remote) {
            Some((trace, parent)) => (trace, Some(parent)),
            None => (self.ids.trace_id(), None),
        };
        span.extensions_mut().insert(Open {
            trace_id,
            span_id: self.ids.span_id(),
            parent,
            start: now_nanos(),
            fields,
        });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(open) = span.extensions_mut().get_mut::<Open>()
        {
            values.record(&mut open.fields);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(open) = span.extensions_mut().remove::<Open>() else {
            return;
        };
        let record = SpanRecord {
            trace_id: open.trace_id,
            span_id: open.span_id,
            parent_span_id: open.parent,
            name: span.name(),
            kind: if open.fields.server {
                SpanKind::Server
            } else {
                SpanKind::Internal
            },
            start_unix_nano: open.start,
            end_unix_nano: now_nanos(),
            attributes: open.fields.attributes,
            error: open.fields.error,
        };
        // A collector that cannot keep up loses spans, never the host's time or memory.
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) =
            self.spans.try_send(record)
        {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt as _;

    #[test]
    fn traceparent_is_parsed_as_w3c_writes_it() {
        let (trace, parent) =
            parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        assert_eq!(hex::encode(trace), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(hex::encode(parent), "00f067aa0ba902b7");
        for bad in [
            "",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-xyz-00f067aa0ba902b7-01",
        ] {
            assert!(parse_traceparent(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn spans_nest_continue_a_remote_trace_and_carry_their_fields() {
        let (tx, rx) = std::sync::mpsc::sync_channel(16);
        let dropped = Arc::new(AtomicU64::new(0));
        let subscriber = tracing_subscriber::registry().with(OtlpLayer::new(tx, dropped.clone()));
        tracing::subscriber::with_default(subscriber, || {
            let outer = tracing::info_span!(
                target: "odh_trace",
                "admission",
                otel.kind = "server",
                traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                odh.plugin = "isvc",
                odh.allowed = tracing::field::Empty,
            );
            outer.in_scope(|| {
                let inner = tracing::info_span!(
                    target: "odh_trace",
                    "plugin.call",
                    odh.op = "validate",
                    error = tracing::field::Empty,
                );
                inner.record("error", "trap");
            });
            outer.record("odh.allowed", false);
        });
        let inner = rx.recv().unwrap();
        let outer = rx.recv().unwrap();
        assert_eq!(outer.name, "admission");
        assert_eq!(outer.kind, SpanKind::Server);
        assert_eq!(
            hex::encode(outer.trace_id),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(
            outer.parent_span_id.map(hex::encode).as_deref(),
            Some("00f067aa0ba902b7")
        );
        assert_eq!(
            outer.attributes,
            [
                ("odh.plugin", AttributeValue::String("isvc".into())),
                ("odh.allowed", AttributeValue::Bool(false)),
            ]
        );
        assert_eq!(inner.trace_id, outer.trace_id);
        assert_eq!(inner.parent_span_id, Some(outer.span_id));
        assert_eq!(inner.kind, SpanKind::Internal);
        assert_eq!(inner.error.as_deref(), Some("trap"));
        assert!(inner.end_unix_nano >= inner.start_unix_nano);
        assert_eq!(dropped.load(Ordering::Relaxed), 0);
    }
}
