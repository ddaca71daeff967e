//! Go `encoding/json`'s encoding of a `map[string]string`, byte for byte: `storage-config`
//! values are compared as bytes, so any other encoding would rewrite the Secret on every
//! reconcile (spec core.md §2.4, §6.3).
//!
//! Keys in byte order, no spaces, and strings escaped as `json.Marshal` does with HTML escaping
//! on (Go ≥ 1.22): `"` `\` and the short control escapes `\b \f \n \r \t`, other bytes below
//! 0x20 as `\u00XX`, `<` `>` `&` as `\u003c` `\u003e` `\u0026`, U+2028 and U+2029 as
//! `\u2028` `\u2029`, and each byte that does not start a valid UTF-8 sequence as `\ufffd`.

use std::collections::BTreeMap;

/// The compact JSON object of `fields` (values are raw bytes, as Go's `string([]byte)`).
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

/// One JSON string literal of `bytes`, quotes included.
pub fn write_string(out: &mut String, bytes: &[u8]) {
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
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
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

    fn string(bytes: &[u8]) -> String {
        let mut out = String::new();
        write_string(&mut out, bytes);
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
    fn html_characters_are_escaped() {
        assert_eq!(
            string(b"<a href='x'>&</a>"),
            r#""\u003ca href='x'\u003e\u0026\u003c/a\u003e""#
        );
    }

    #[test]
    fn quotes_backslashes_and_control_characters() {
        assert_eq!(string(b"\"\\/"), r#""\"\\/""#);
        assert_eq!(string(b"\x08\x0c\n\r\t"), r#""\b\f\n\r\t""#);
        assert_eq!(string(b"\x00\x01\x1f\x7f"), "\"\\u0000\\u0001\\u001f\x7f\"");
    }

    #[test]
    fn line_and_paragraph_separators_are_escaped_other_unicode_is_not() {
        assert_eq!(
            string("a\u{2028}b\u{2029}c é ✓ \u{fffd}".as_bytes()),
            "\"a\\u2028b\\u2029c é ✓ \u{fffd}\""
        );
    }

    #[test]
    fn each_invalid_utf8_byte_becomes_one_replacement_escape() {
        assert_eq!(string(b"a\xffb"), r#""a\ufffdb""#);
        // A truncated 4-byte sequence: Go replaces each of its three bytes.
        assert_eq!(string(b"\xf0\x9f\x98A"), r#""\ufffd\ufffd\ufffdA""#);
        // An encoded surrogate (invalid in UTF-8) and an overlong NUL.
        assert_eq!(string(b"\xed\xa0\x80"), r#""\ufffd\ufffd\ufffd""#);
        assert_eq!(string(b"\xc0\x80<"), r#""\ufffd\ufffd\u003c""#);
        assert_eq!(string(b"ok\xe2\x9c"), r#""ok\ufffd\ufffd""#);
    }
}
