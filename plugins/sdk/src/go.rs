//! Go's spellings, for ports of Go controllers whose error texts and parsing must match
//! byte for byte: `strconv.ParseBool`/`ParseInt`, `%q`, `%v` and `%T` of decoded JSON,
//! `net/url`'s escaping and `net/http`'s status lines.

use serde_json::Value;

use crate::Error;

/// Go's `strconv.ParseBool`: `1 t T TRUE true True` and `0 f F FALSE false False`.
pub fn parse_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Go's `strconv.ParseInt(value, 10, bits)` for `bits` of 8, 16, 32 or 64, with Go's error
/// text as an [`Error::Transient`] (upstream controllers return it as a reconcile error):
/// `strconv.ParseInt: parsing "abc": invalid syntax` or `... value out of range`.
pub fn parse_int(value: &str, bits: u32) -> Result<i64, Error> {
    let fail =
        |why: &str| Error::Transient(format!("strconv.ParseInt: parsing {}: {why}", quote(value)));
    let digits = value.strip_prefix(['+', '-']).unwrap_or(value);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(fail("invalid syntax"));
    }
    let parsed = value.parse::<i128>().ok();
    let limit = 1i128 << (bits.clamp(1, 64) - 1);
    match parsed {
        Some(n) if (-limit..limit).contains(&n) => Ok(n as i64),
        _ => Err(fail("value out of range")),
    }
}

/// A string quoted as Go's `%q` prints it.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The Go type name (`%T`) a value has after decoding into `interface{}`; an absent value is
/// `<nil>` like a JSON `null`.
pub fn type_name(value: Option<&Value>) -> &'static str {
    match value {
        None | Some(Value::Null) => "<nil>",
        Some(Value::Bool(_)) => "bool",
        Some(Value::Number(n)) if n.is_i64() => "int64",
        Some(Value::Number(_)) => "float64",
        Some(Value::String(_)) => "string",
        Some(Value::Array(_)) => "[]interface {}",
        Some(Value::Object(_)) => "map[string]interface {}",
    }
}

/// A value as Go's `%v` prints it after decoding into `interface{}` (`map[a:1 b:[x y]]`).
pub fn value_text(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(value_text).collect();
            format!("[{}]", items.join(" "))
        }
        Value::Object(map) => {
            let entries: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{k}:{}", value_text(v)))
                .collect();
            format!("map[{}]", entries.join(" "))
        }
    }
}

/// Go's `url.QueryEscape` (space as `+`).
pub fn query_escape(s: &str) -> String {
    escape(s, b"", true)
}

/// Go's `url.PathEscape` (one path segment).
pub fn path_escape(s: &str) -> String {
    escape(s, b"$&+,:;=@", false)
}

fn escape(s: &str, also_keep: &[u8], space_as_plus: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) || also_keep.contains(&b) {
            out.push(b as char);
        } else if b == b' ' && space_as_plus {
            out.push('+');
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Go's `url.QueryUnescape`: `+` is a space, `%XX` a byte; none for a malformed escape or
/// bytes that are not UTF-8.
pub fn query_unescape(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Go's `resp.Status` for a code: `404 Not Found` (the code alone when Go has no text for it
/// in this table of the common ones).
pub fn status_line(status: u16) -> String {
    let reason = match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    };
    format!("{status} {reason}").trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parse_bool_accepts_exactly_gos_spellings() {
        for t in ["1", "t", "T", "TRUE", "true", "True"] {
            assert_eq!(parse_bool(t), Some(true), "{t}");
        }
        for f in ["0", "f", "F", "FALSE", "false", "False"] {
            assert_eq!(parse_bool(f), Some(false), "{f}");
        }
        assert_eq!(parse_bool("yes"), None);
        assert_eq!(parse_bool("tRUE"), None);
    }

    #[test]
    fn parse_int_errors_read_like_go() {
        assert_eq!(parse_int("8888", 32), Ok(8888));
        assert_eq!(parse_int("-2147483648", 32), Ok(-2147483648));
        assert_eq!(
            parse_int("abc", 32),
            Err(Error::Transient(
                "strconv.ParseInt: parsing \"abc\": invalid syntax".into()
            ))
        );
        assert_eq!(
            parse_int("2147483648", 32).unwrap_err().message(),
            "strconv.ParseInt: parsing \"2147483648\": value out of range"
        );
        assert!(parse_int("+", 64).is_err());
        assert_eq!(parse_int("9223372036854775807", 64), Ok(i64::MAX));
    }

    #[test]
    fn go_formatting() {
        assert_eq!(quote("plain"), "\"plain\"");
        assert_eq!(quote("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\x01\"");
        assert_eq!(quote("é"), "\"é\"");
        assert_eq!(type_name(None), "<nil>");
        assert_eq!(type_name(Some(&json!(true))), "bool");
        assert_eq!(type_name(Some(&json!(1.5))), "float64");
        assert_eq!(type_name(Some(&json!({}))), "map[string]interface {}");
        assert_eq!(type_name(Some(&json!([]))), "[]interface {}");
        assert_eq!(
            value_text(&json!({"a": 1, "b": ["x", null]})),
            "map[a:1 b:[x <nil>]]"
        );
    }

    #[test]
    fn escaping_and_status_lines() {
        assert_eq!(query_escape("a b/c&d=é"), "a+b%2Fc%26d%3D%C3%A9");
        assert_eq!(path_escape("4/x y"), "4%2Fx%20y");
        assert_eq!(
            query_unescape("a+b%2Fc%26d%3D%C3%A9").as_deref(),
            Some("a b/c&d=é")
        );
        assert_eq!(query_unescape("%zz"), None);
        assert_eq!(query_unescape("%4"), None);
        assert_eq!(status_line(404), "404 Not Found");
        assert_eq!(status_line(599), "599");
    }
}
