//! The failures of Go's `url.Parse` that a model URI from a connection Secret can hit, with
//! Go's texts (`parse "<url>": <reason>`): control characters, a missing scheme before `:`,
//! and malformed `%` escapes outside the query. Go accepts nearly everything else, and so does
//! this check (host and port syntax are not examined).

use odh_plugin_sdk::go;

/// Ok when Go's `url.Parse` would accept `raw` (for the cases above).
pub fn parse(raw: &str) -> Result<(), String> {
    let fail = |reason: String| Err(format!("parse {}: {reason}", go::quote(raw)));
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return fail("net/url: invalid control character in URL".into());
    }
    if raw.starts_with(':') {
        return fail("missing protocol scheme".into());
    }
    let before_query = raw.split('?').next().unwrap_or_default();
    let bytes = before_query.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let escape = &before_query[i..before_query.len().min(i + 3)];
            let valid = bytes.len() >= i + 3
                && bytes[i + 1].is_ascii_hexdigit()
                && bytes[i + 2].is_ascii_hexdigit();
            if !valid {
                return fail(format!("invalid URL escape {}", go::quote(escape)));
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn go_failures() {
        assert!(parse("s3://bucket/models/llama").is_ok());
        assert!(parse("hf://facebook/model").is_ok());
        assert!(parse("https://x/a%20b?q=%zz").is_ok());
        assert_eq!(
            parse(":nope").unwrap_err(),
            "parse \":nope\": missing protocol scheme"
        );
        assert_eq!(
            parse("https://x/%zz").unwrap_err(),
            "parse \"https://x/%zz\": invalid URL escape \"%zz\""
        );
        assert_eq!(
            parse("https://x/a\nb").unwrap_err(),
            "parse \"https://x/a\\nb\": net/url: invalid control character in URL"
        );
    }
}
