//! The OTLP trace request in protobuf (opentelemetry-proto's `ExportTraceServiceRequest` and the
//! messages it holds), encoded by hand: a few fields of a stable schema do not justify a
//! protobuf code generator in the build.

/// One finished span, as the exporter sends it.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanRecord {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub parent_span_id: Option<[u8; 8]>,
    pub name: &'static str,
    pub kind: SpanKind,
    pub start_unix_nano: u64,
    pub end_unix_nano: u64,
    pub attributes: Vec<(&'static str, AttributeValue)>,
    /// An error message: the span's status is ERROR with it.
    pub error: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    Internal = 1,
    Server = 2,
}

#[derive(Debug, Clone, PartialEq)]
pub enum AttributeValue {
    String(String),
    Bool(bool),
    Int(i64),
}

/// `ExportTraceServiceRequest { resource_spans: [ResourceSpans { resource, scope_spans: [
/// ScopeSpans { scope, spans }] }] }` for one service.
pub fn export_request(service: &str, scope: &str, spans: &[SpanRecord]) -> Vec<u8> {
    let mut resource = Vec::new();
    message(
        &mut resource,
        1,
        &key_value("service.name", &AttributeValue::String(service.into())),
    );
    let mut scope_msg = Vec::new();
    string(&mut scope_msg, 1, scope);
    string(&mut scope_msg, 2, env!("CARGO_PKG_VERSION"));
    let mut scope_spans = Vec::new();
    message(&mut scope_spans, 1, &scope_msg);
    for span in spans {
        message(&mut scope_spans, 2, &encode_span(span));
    }
    let mut resource_spans = Vec::new();
    message(&mut resource_spans, 1, &resource);
    message(&mut resource_spans, 2, &scope_spans);
    let mut request = Vec::new();
    message(&mut request, 1, &resource_spans);
    request
}

fn encode_span(span: &SpanRecord) -> Vec<u8> {
    let mut out = Vec::new();
    bytes(&mut out, 1, &span.trace_id);
    bytes(&mut out, 2, &span.span_id);
    if let Some(parent) = &span.parent_span_id {
        bytes(&mut out, 4, parent);
    }
    string(&mut out, 5, span.name);
    varint_field(&mut out, 6, span.kind as u64);
    fixed64(&mut out, 7, span.start_unix_nano);
    fixed64(&mut out, 8, span.end_unix_nano);
    for (key, value) in &span.attributes {
        message(&mut out, 9, &key_value(key, value));
    }
    let mut status = Vec::new();
    match &span.error {
        Some(message_text) => {
            string(&mut status, 2, message_text);
            varint_field(&mut status, 3, 2);
        }
        None => varint_field(&mut status, 3, 1),
    }
    message(&mut out, 15, &status);
    out
}

fn key_value(key: &str, value: &AttributeValue) -> Vec<u8> {
    let mut any = Vec::new();
    match value {
        AttributeValue::String(s) => string(&mut any, 1, s),
        AttributeValue::Bool(b) => varint_field(&mut any, 2, u64::from(*b)),
        AttributeValue::Int(i) => varint_field(&mut any, 3, *i as u64),
    }
    let mut kv = Vec::new();
    string(&mut kv, 1, key);
    message(&mut kv, 2, &any);
    kv
}

fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn tag(out: &mut Vec<u8>, field: u32, wire_type: u8) {
    varint(out, (u64::from(field) << 3) | u64::from(wire_type));
}

fn varint_field(out: &mut Vec<u8>, field: u32, value: u64) {
    tag(out, field, 0);
    varint(out, value);
}

fn fixed64(out: &mut Vec<u8>, field: u32, value: u64) {
    tag(out, field, 1);
    out.extend_from_slice(&value.to_le_bytes());
}

fn bytes(out: &mut Vec<u8>, field: u32, value: &[u8]) {
    tag(out, field, 2);
    varint(out, value.len() as u64);
    out.extend_from_slice(value);
}

fn string(out: &mut Vec<u8>, field: u32, value: &str) {
    bytes(out, field, value.as_bytes());
}

fn message(out: &mut Vec<u8>, field: u32, encoded: &[u8]) {
    bytes(out, field, encoded);
}

/// A minimal reader of what [`export_request`] writes, for tests (ours and the integration
/// test's receiver): each field as `(number, value)`, nested messages decoded on demand.
pub mod read {
    #[derive(Debug, Clone, PartialEq)]
    pub enum Field<'a> {
        Varint(u64),
        Fixed64(u64),
        Bytes(&'a [u8]),
    }

    /// The fields of one message, in order; `None` when the bytes are not a message.
    pub fn fields(mut buf: &[u8]) -> Option<Vec<(u32, Field<'_>)>> {
        let mut out = Vec::new();
        while !buf.is_empty() {
            let key = take_varint(&mut buf)?;
            let field = u32::try_from(key >> 3).ok()?;
            let value = match key & 7 {
                0 => Field::Varint(take_varint(&mut buf)?),
                1 => {
                    let (head, rest) = buf.split_first_chunk::<8>()?;
                    buf = rest;
                    Field::Fixed64(u64::from_le_bytes(*head))
                }
                2 => {
                    let len = usize::try_from(take_varint(&mut buf)?).ok()?;
                    if len > buf.len() {
                        return None;
                    }
                    let (head, rest) = buf.split_at(len);
                    buf = rest;
                    Field::Bytes(head)
                }
                _ => return None,
            };
            out.push((field, value));
        }
        Some(out)
    }

    fn take_varint(buf: &mut &[u8]) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = buf.split_first()?;
            *buf = rest;
            value |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(value);
            }
        }
        None
    }

    /// Every `Bytes` value of field `number`.
    pub fn all<'a>(fields: &[(u32, Field<'a>)], number: u32) -> Vec<&'a [u8]> {
        fields
            .iter()
            .filter_map(|(n, f)| match f {
                Field::Bytes(b) if *n == number => Some(*b),
                _ => None,
            })
            .collect()
    }

    /// One span as read back: ids in hex, attributes in string form.
    #[derive(Debug, Clone, PartialEq)]
    pub struct ReadSpan {
        pub name: String,
        pub trace_id: String,
        pub span_id: String,
        pub parent_span_id: Option<String>,
        pub attributes: Vec<(String, String)>,
    }

    impl ReadSpan {
        pub fn attribute(&self, key: &str) -> Option<&str> {
            self.attributes
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        }
    }

    /// The spans of an `ExportTraceServiceRequest`.
    pub fn spans(request: &[u8]) -> Option<Vec<ReadSpan>> {
        let text = |b: &[u8]| String::from_utf8(b.to_vec()).ok();
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        let mut out = Vec::new();
        for resource_spans in all(&fields(request)?, 1) {
            for scope_spans in all(&fields(resource_spans)?, 2) {
                for span in all(&fields(scope_spans)?, 2) {
                    let span = fields(span)?;
                    let mut attributes = Vec::new();
                    for kv in all(&span, 9) {
                        let kv = fields(kv)?;
                        let key = text(all(&kv, 1).first()?)?;
                        let any = fields(all(&kv, 2).first()?)?;
                        let value = match any.first()? {
                            (1, Field::Bytes(s)) => text(s)?,
                            (_, Field::Varint(v)) => v.to_string(),
                            _ => return None,
                        };
                        attributes.push((key, value));
                    }
                    out.push(ReadSpan {
                        name: text(all(&span, 5).first()?)?,
                        trace_id: hex(all(&span, 1).first()?),
                        span_id: hex(all(&span, 2).first()?),
                        parent_span_id: all(&span, 4).first().map(|p| hex(p)),
                        attributes,
                    });
                }
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_are_little_endian_base_128() {
        let mut out = Vec::new();
        varint(&mut out, 1);
        varint(&mut out, 300);
        assert_eq!(out, [0x01, 0xac, 0x02]);
    }

    #[test]
    fn a_request_reads_back_with_its_spans_and_attributes() {
        let span = SpanRecord {
            trace_id: [1; 16],
            span_id: [2; 8],
            parent_span_id: Some([3; 8]),
            name: "admission",
            kind: SpanKind::Server,
            start_unix_nano: 10,
            end_unix_nano: 20,
            attributes: vec![
                ("odh.plugin", AttributeValue::String("isvc".into())),
                ("odh.allowed", AttributeValue::Bool(true)),
            ],
            error: None,
        };
        let request = export_request("odh-model-controller", "odh", &[span]);
        let spans = read::spans(&request).unwrap();
        assert_eq!(
            spans,
            [read::ReadSpan {
                name: "admission".into(),
                trace_id: "01".repeat(16),
                span_id: "02".repeat(8),
                parent_span_id: Some("03".repeat(8)),
                attributes: vec![
                    ("odh.plugin".to_string(), "isvc".to_string()),
                    ("odh.allowed".to_string(), "1".to_string()),
                ]
            }]
        );
        // The span's ids and times where the schema puts them.
        let resource_spans = read::fields(&request).unwrap();
        let scope_spans = read::fields(read::all(&resource_spans, 1)[0]).unwrap();
        let spans = read::fields(read::all(&scope_spans, 2)[0]).unwrap();
        let span = read::fields(read::all(&spans, 2)[0]).unwrap();
        assert_eq!(read::all(&span, 1), [&[1u8; 16][..]]);
        assert_eq!(read::all(&span, 4), [&[3u8; 8][..]]);
        assert!(span.contains(&(7, read::Field::Fixed64(10))));
        assert!(span.contains(&(6, read::Field::Varint(2))));
    }
}
