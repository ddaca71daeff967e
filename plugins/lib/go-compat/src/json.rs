//! Go `encoding/json`'s encoding of strings, byte for byte (`json.Marshal`, HTML escaping on):
//! `"` and `\` escaped; `\n \r \t` short; since Go 1.22 `\b \f` short too (before, `\u0008`
//! `\u000c`); other bytes below 0x20 as `\u00XX`; `<` `>` `&` as `\u003c` `\u003e` `\u0026`;
//! U+2028 and U+2029 as `\u2028` `\u2029`; each byte that does not start a valid UTF-8
//! sequence as `\ufffd`. DEL and every other character are written as they are.
//!
//! Upstream's bodies are compared (or shown) as bytes, so any other encoding would differ:
//! `storage-config` values would be rewritten on every reconcile, for one.

use std::collections::BTreeMap;

/// `s` as a JSON string literal, quotes included, as Go 1.22 and later write it.
pub fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    write(&mut out, s.as_bytes(), true);
    out
}

/// `s` as a JSON string literal as Go before 1.22 wrote it: the same as [`string`] but for
/// `\b` and `\f`, which are `\u0008` and `\u000c`. The model-serving-api's bodies are written
/// this way.
pub fn string_before_go_1_22(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    write(&mut out, s.as_bytes(), false);
    out
}

/// One JSON string literal of `bytes` (raw, as Go's `string([]byte)`), quotes included,
/// appended to `out` as Go 1.22 and later write it.
pub fn write_string(out: &mut String, bytes: &[u8]) {
    write(out, bytes, true);
}

/// The compact JSON object of a `map[string]string` (values are raw bytes): keys in byte
/// order, no spaces, strings as [`write_string`] writes them.
pub fn encode_string_map<K: AsRef<str> + Ord, V: AsRef<[u8]>>(fields: &BTreeMap<K, V>) -> String {
    let mut out = String::from("{");
    // A BTreeMap of strings iterates in byte order, as Go sorts map keys.
    for (i, (key, value)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(&mut out, key.as_ref().as_bytes());
        out.push(':');
        write_string(&mut out, value.as_ref());
    }
    out.push('}');
    out
}

fn write(out: &mut String, bytes: &[u8], short_b_f: bool) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    let mut rest = bytes;
    while !rest.is_empty() {
        let (valid, invalid) = match std::str::from_utf8(rest) {
            Ok(all) => (all, false),
            Err(e) => {
                let (head, _) = rest.split_at(e.valid_up_to());
                // Checked by from_utf8 just now.
                (std::str::from_utf8(head).unwrap_or_default(), true)
            }
        };
        for c in valid.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\u{8}' if short_b_f => out.push_str("\\b"),
                '\u{c}' if short_b_f => out.push_str("\\f"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '<' | '>' | '&' | '\u{0}'..='\u{1f}' => {
                    let b = c as u8;
                    out.push_str("\\u00");
                    out.push(HEX[usize::from(b >> 4)] as char);
                    out.push(HEX[usize::from(b & 0xf)] as char);
                }
                '\u{2028}' => out.push_str("\\u2028"),
                '\u{2029}' => out.push_str("\\u2029"),
                c => out.push(c),
            }
        }
        rest = &rest[valid.len()..];
        if invalid {
            // Go's decoder reports a bad sequence one byte at a time: each byte is replaced,
            // and decoding resumes at the next one (Rust's lossy conversion would replace the
            // whole maximal prefix at once).
            out.push_str("\\ufffd");
            rest = &rest[1..];
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(b: &[u8]) -> String {
        let mut out = String::new();
        write_string(&mut out, b);
        out
    }

    #[test]
    fn keys_sorted_by_bytes_and_compact() {
        let map: BTreeMap<&str, &str> = [("b", "2"), ("a", "1"), ("B", "0"), ("a_b", "3")]
            .into_iter()
            .collect();
        assert_eq!(
            encode_string_map(&map),
            r#"{"B":"0","a":"1","a_b":"3","b":"2"}"#
        );
        assert_eq!(encode_string_map(&BTreeMap::<&str, &str>::new()), "{}");
    }

    #[test]
    fn plain_text_and_unicode_stay() {
        for escape in [string, string_before_go_1_22] {
            assert_eq!(escape("plain"), r#""plain""#);
            assert_eq!(escape("é 日本"), "\"é 日本\"");
            assert_eq!(escape(""), r#""""#);
        }
    }

    #[test]
    fn html_characters_are_escaped() {
        assert_eq!(
            bytes(b"<a href='x'>&</a>"),
            r#""\u003ca href='x'\u003e\u0026\u003c/a\u003e""#
        );
        for escape in [string, string_before_go_1_22] {
            assert_eq!(escape("<b> & \u{2028}"), r#""\u003cb\u003e \u0026 \u2028""#);
        }
    }

    #[test]
    fn quotes_backslashes_and_control_characters() {
        assert_eq!(bytes(b"\"\\/"), r#""\"\\/""#);
        assert_eq!(bytes(b"\x08\x0c\n\r\t"), r#""\b\f\n\r\t""#);
        assert_eq!(bytes(b"\x00\x01\x1f\x7f"), "\"\\u0000\\u0001\\u001f\x7f\"");
        assert_eq!(string("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(string_before_go_1_22("a\"b\\c"), r#""a\"b\\c""#);
    }

    #[test]
    fn before_go_1_22_backspace_and_form_feed_were_long() {
        assert_eq!(
            string_before_go_1_22("\n\t\r\u{1}\u{8}"),
            r#""\n\t\r\u0001\u0008""#
        );
        assert_eq!(string_before_go_1_22("\u{c}"), r#""\u000c""#);
        assert_eq!(string("\n\t\r\u{1}\u{8}"), r#""\n\t\r\u0001\b""#);
        assert_eq!(string("\u{c}"), r#""\f""#);
    }

    #[test]
    fn line_and_paragraph_separators_are_escaped_other_unicode_is_not() {
        assert_eq!(
            bytes("a\u{2028}b\u{2029}c é ✓ \u{fffd}".as_bytes()),
            "\"a\\u2028b\\u2029c é ✓ \u{fffd}\""
        );
    }

    #[test]
    fn each_invalid_utf8_byte_becomes_one_replacement_escape() {
        assert_eq!(bytes(b"a\xffb"), r#""a\ufffdb""#);
        // A truncated 4-byte sequence: Go replaces each of its three bytes.
        assert_eq!(bytes(b"\xf0\x9f\x98A"), r#""\ufffd\ufffd\ufffdA""#);
        // An encoded surrogate (invalid in UTF-8) and an overlong NUL.
        assert_eq!(bytes(b"\xed\xa0\x80"), r#""\ufffd\ufffd\ufffd""#);
        assert_eq!(bytes(b"\xc0\x80<"), r#""\ufffd\ufffd\u003c""#);
        assert_eq!(bytes(b"ok\xe2\x9c"), r#""ok\ufffd\ufffd""#);
    }
}
