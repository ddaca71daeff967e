//! JSON strings as Go's `encoding/json` writes them (upstream marshals every body with it):
//! `"` and `\` escaped, `\n` `\r` `\t` short, other control characters as `\u00XX`, the HTML
//! characters `<` `>` `&` as `\u003c` `\u003e` `\u0026`, and U+2028/U+2029 escaped.

/// `s` as a JSON string literal, Go style.
pub fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::string;

    #[test]
    fn escapes_like_go() {
        assert_eq!(string("plain"), r#""plain""#);
        assert_eq!(string("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(string("<b> & \u{2028}"), r#""\u003cb\u003e \u0026 \u2028""#);
        assert_eq!(string("\n\t\r\u{1}\u{8}"), r#""\n\t\r\u0001\u0008""#);
        assert_eq!(string("é 日本"), "\"é 日本\"");
    }
}
