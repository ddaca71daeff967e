//! Go's `net/url`: [`parse`] (as far as the host name, with `url.Parse`'s failures and texts),
//! [`check`] (the same parse, quoting as Go does), and the escaping functions
//! [`query_escape`], [`path_escape`], [`query_unescape`], all over one `%` decoder
//! ([`unescape`]).
//!
//! Go is lenient: a URL without a scheme is a path, an opaque `scheme:rest` has no host, the
//! host keeps its case, and only a few malformed inputs fail, with messages webhooks show
//! (`parse "<url>": <reason>`).

use crate::strconv::{quote, quote_narrow};

/// A parsed URL, as far as the callers look into it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Url {
    /// The scheme as written (`http`), empty when there is none.
    pub scheme: String,
    /// The host, port included, `%` escapes decoded; empty when the URL has no authority.
    pub host: String,
}

impl Url {
    /// Go's `URL.Hostname`: the host without a valid port and without IPv6 brackets.
    pub fn hostname(&self) -> &str {
        let mut name = self.host.as_str();
        if let Some(colon) = name.rfind(':')
            && valid_optional_port(&name[colon..])
        {
            name = &name[..colon];
        }
        name.strip_prefix('[')
            .and_then(|n| n.strip_suffix(']'))
            .unwrap_or(name)
    }
}

/// Go's `url.Parse`, or its `*url.Error` text (`parse "<url>": <reason>`), the URL and the
/// parts in the reasons quoted with [`quote_narrow`] (as the InferenceGraph webhook has always
/// shown them).
pub fn parse(raw: &str) -> Result<Url, String> {
    parse_quoted(raw, quote_narrow)
}

/// [`parse`] with the URL and the parts in the reasons quoted by `q`.
fn parse_quoted(raw: &str, q: Quote) -> Result<Url, String> {
    let fail = |url: &str, reason: &str| format!("parse {}: {reason}", q(url));
    let (without_fragment, fragment) = raw.split_once('#').unwrap_or((raw, ""));
    let url =
        parse_without_fragment(without_fragment, q).map_err(|e| fail(without_fragment, &e))?;
    unescape(fragment, Mode::Fragment).map_err(|e| fail(raw, &e.text(q)))?;
    Ok(url)
}

/// How a text is quoted in an error: [`quote`] or [`quote_narrow`].
type Quote = fn(&str) -> String;

/// The host name of a URL as Go's `url.Parse` + `URL.Hostname` find it (no port, no IPv6
/// brackets; empty when the URL has no authority), or [`parse`]'s error.
pub fn hostname(raw: &str) -> Result<String, String> {
    parse(raw).map(|url| url.hostname().to_string())
}

/// Go's `url.Parse` as the connection webhooks call it (knative's `apis.ParseURL`): the whole
/// parse, scheme, host (IP literals included) and port, with Go's texts (`parse "<url>":
/// <reason>`), the URL and the parts in the reasons quoted as Go's `%q` does ([`quote`]).
pub fn check(raw: &str) -> Result<(), String> {
    parse_quoted(raw, quote).map(|_| ())
}

const CONTROL_CHARACTER: &str = "net/url: invalid control character in URL";
const MISSING_SCHEME: &str = "missing protocol scheme";

fn has_control_character(s: &str) -> bool {
    s.bytes().any(|b| b < 0x20 || b == 0x7f)
}

fn parse_without_fragment(raw: &str, q: Quote) -> Result<Url, String> {
    if has_control_character(raw) {
        return Err(CONTROL_CHARACTER.into());
    }
    if raw == "*" {
        return Ok(Url::default());
    }
    let (scheme, rest) = scheme(raw)?;
    let url = |host: String| Url {
        scheme: scheme.to_string(),
        host,
    };
    let rest = match rest.strip_suffix('?') {
        Some(r) if rest.matches('?').count() == 1 => r,
        _ => rest.split_once('?').map_or(rest, |(r, _)| r),
    };
    if !rest.starts_with('/') {
        if !scheme.is_empty() {
            // Opaque: `mailto:x`, `isvc.ns.svc:80` (scheme `isvc.ns.svc`).
            return Ok(url(String::new()));
        }
        let first_segment = rest.split('/').next().unwrap_or_default();
        if first_segment.contains(':') {
            return Err("first path segment in URL cannot contain colon".into());
        }
    }
    let mut host = String::new();
    let mut path = rest;
    if (!scheme.is_empty() || !rest.starts_with("///")) && rest.starts_with("//") {
        let authority_and_path = &rest[2..];
        let (authority, tail) = match authority_and_path.find('/') {
            Some(i) => authority_and_path.split_at(i),
            None => (authority_and_path, ""),
        };
        host = parse_authority(authority, q)?;
        path = tail;
    }
    unescape(path, Mode::Path).map_err(|e| e.text(q))?;
    Ok(url(host))
}

/// Go's `getScheme`: letters, then letters, digits, `+`, `-`, `.` up to a `:`.
fn scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err(MISSING_SCHEME.into()),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

fn parse_authority(authority: &str, q: Quote) -> Result<String, String> {
    let (userinfo, host) = match authority.rfind('@') {
        Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
        None => (None, authority),
    };
    let host = parse_host(host, q)?;
    if let Some(userinfo) = userinfo {
        if !userinfo.bytes().all(valid_userinfo_byte) {
            return Err("net/url: invalid userinfo".into());
        }
        let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
        unescape(user, Mode::Userinfo).map_err(|e| e.text(q))?;
        unescape(password, Mode::Userinfo).map_err(|e| e.text(q))?;
    }
    Ok(host)
}

fn valid_userinfo_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric()
        || b"-._:~!$&'()*+,;=%@".contains(&c)
        // Go accepts any non-ASCII byte here.
        || c >= 0x80
}

/// Go's `parseHost` (Go 1.25): a bracketed IP literal must be an IPv6 address (a zone after
/// `%25` allowed); otherwise a port after the last `:` must be digits; escapes as a host allows.
fn parse_host(host: &str, q: Quote) -> Result<String, String> {
    let escape = |e: UnescapeError| e.text(q);
    match host.rfind('[') {
        Some(open) if open > 0 => Err("invalid IP-literal".into()),
        Some(_) => {
            let Some(close) = host.rfind(']') else {
                return Err("missing ']' in host".into());
            };
            let port = &host[close + 1..];
            if !valid_optional_port(port) {
                return Err(format!("invalid port {} after host", q(port)));
            }
            let port = unescape(port, Mode::Host).map_err(escape)?;
            let name = &host[1..close];
            let mut unescaped = match name.find("%25") {
                Some(zone) => {
                    let mut bytes = unescape(&name[..zone], Mode::Host).map_err(escape)?;
                    bytes.extend(unescape(&name[zone..], Mode::Zone).map_err(escape)?);
                    bytes
                }
                None => unescape(name, Mode::Host).map_err(escape)?,
            };
            let address = String::from_utf8_lossy(&unescaped).into_owned();
            match crate::netip::parse_addr(&address) {
                Err(e) => return Err(format!("invalid host: {e}")),
                Ok(crate::netip::Addr::V4) => return Err("invalid IP-literal".into()),
                Ok(crate::netip::Addr::V6) => {}
            }
            let mut out = vec![b'['];
            out.append(&mut unescaped);
            out.push(b']');
            out.extend(port);
            Ok(String::from_utf8_lossy(&out).into_owned())
        }
        None => {
            if let Some(colon) = host.rfind(':') {
                let port = &host[colon..];
                if !valid_optional_port(port) {
                    return Err(format!("invalid port {} after host", q(port)));
                }
            }
            let bytes = unescape(host, Mode::Host).map_err(escape)?;
            Ok(String::from_utf8_lossy(&bytes).into_owned())
        }
    }
}

/// `""`, or `:` followed by digits only.
fn valid_optional_port(port: &str) -> bool {
    port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|digits| digits.bytes().all(|b| b.is_ascii_digit()))
}

/// Where a text being unescaped sits in a URL (Go's `encoding` modes that decoding knows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The host: `%XX` only for non-ASCII bytes (or `%25`), and no ASCII byte Go would escape
    /// there.
    Host,
    Path,
    Userinfo,
    /// An IPv6 zone (after `%25`): any escape of a byte a host may hold as it is, `%25` or a
    /// space; the same raw bytes as a host.
    Zone,
    Fragment,
    /// A query key or value: `+` is a space.
    QueryComponent,
}

/// Why [`unescape`] refused a text: Go's `url.EscapeError` (the bad escape, up to 3 bytes) or
/// `url.InvalidHostError` (the byte).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnescapeError {
    Escape(String),
    InvalidHost(String),
}

impl UnescapeError {
    /// Go's text, `invalid URL escape "%zz"` or `invalid character " " in host name`, the part
    /// quoted with `quote` ([`quote`] as Go does, or [`quote_narrow`]).
    pub fn text(&self, quote: fn(&str) -> String) -> String {
        match self {
            UnescapeError::Escape(escape) => format!("invalid URL escape {}", quote(escape)),
            UnescapeError::InvalidHost(c) => format!("invalid character {} in host name", quote(c)),
        }
    }
}

/// Go's `unescape`: `%XX` escapes decoded into bytes (which need not be UTF-8), a malformed
/// escape refused; in [`Mode::QueryComponent`] `+` is a space; in [`Mode::Host`] see there.
pub fn unescape(s: &str, mode: Mode) -> Result<Vec<u8>, UnescapeError> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let escape = bytes.get(i + 1..i + 3);
                let Some([hi, lo]) = escape
                    .map(|e| [e[0], e[1]])
                    .filter(|[h, l]| h.is_ascii_hexdigit() && l.is_ascii_hexdigit())
                else {
                    let end = (i + 3).min(bytes.len());
                    return Err(UnescapeError::Escape(
                        String::from_utf8_lossy(&bytes[i..end]).into_owned(),
                    ));
                };
                let byte = (hex(hi) << 4) | hex(lo);
                if mode == Mode::Host && hex(hi) < 8 && &s[i..i + 3] != "%25" {
                    return Err(UnescapeError::Escape(s[i..i + 3].to_string()));
                }
                if mode == Mode::Zone
                    && &s[i..i + 3] != "%25"
                    && byte != b' '
                    && (byte >= 0x80 || escaped_in_host(byte))
                {
                    return Err(UnescapeError::Escape(s[i..i + 3].to_string()));
                }
                out.push(byte);
                i += 3;
            }
            b'+' if mode == Mode::QueryComponent => {
                out.push(b' ');
                i += 1;
            }
            c if matches!(mode, Mode::Host | Mode::Zone) && c < 0x80 && escaped_in_host(c) => {
                return Err(UnescapeError::InvalidHost((c as char).to_string()));
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

fn hex(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => c - b'A' + 10,
    }
}

/// Go's `shouldEscape(c, encodeHost)` for ASCII bytes.
fn escaped_in_host(c: u8) -> bool {
    !(c.is_ascii_alphanumeric() || b"-_.~!$&'()*+,;=:[]<>\"".contains(&c))
}

/// Go's `url.QueryUnescape`: `+` is a space, `%XX` a byte; none for a malformed escape or
/// bytes that are not UTF-8.
///
/// One leniency is kept from the SDK's first version: `%+X` (a `+` then one hex digit) reads
/// as `%0X`, where Go refuses it.
pub fn query_unescape(s: &str) -> Option<String> {
    let lenient;
    let s = if s.contains("%+") {
        lenient = plus_escapes_as_zero(s);
        lenient.as_str()
    } else {
        s
    };
    String::from_utf8(unescape(s, Mode::QueryComponent).ok()?).ok()
}

/// `%+X` (X a hex digit) rewritten `%0X`.
fn plus_escapes_as_zero(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    let mut at = 0;
    while let Some(i) = rest.find("%+") {
        let abs = at + i;
        out.push_str(&rest[..i]);
        if bytes.get(abs + 2).is_some_and(u8::is_ascii_hexdigit) {
            out.push_str("%0");
        } else {
            out.push_str("%+");
        }
        rest = &rest[i + 2..];
        at = abs + 2;
    }
    out.push_str(rest);
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_as_go_finds_them() {
        for (url, host) in [
            (
                "https://isvc.ns.svc.cluster.local",
                "isvc.ns.svc.cluster.local",
            ),
            ("http://ISVC.ns.svc:8080/path?q=1#f", "ISVC.ns.svc"),
            ("http://user:pw@isvc.ns.svc/", "isvc.ns.svc"),
            ("http://[fe80::1]:80/", "fe80::1"),
            ("http://10.0.0.1", "10.0.0.1"),
            ("isvc.ns.svc", ""),
            ("isvc.ns.svc:80", ""),
            ("//isvc.ns.svc/x", "isvc.ns.svc"),
            ("///isvc.ns.svc", ""),
            ("mailto:a@b", ""),
            ("http://example.com.", "example.com."),
            ("*", ""),
            ("http://caf%C3%A9.svc", "café.svc"),
        ] {
            assert_eq!(hostname(url).as_deref(), Ok(host), "{url}");
        }
        let url = parse("HTTP://x:1/p").unwrap();
        assert_eq!((url.scheme.as_str(), url.host.as_str()), ("HTTP", "x:1"));
    }

    #[test]
    fn malformed_urls_fail_with_go_messages() {
        for (url, message) in [
            ("://x", r#"parse "://x": missing protocol scheme"#),
            (
                "http://a b.svc",
                r#"parse "http://a b.svc": invalid character " " in host name"#,
            ),
            (
                "http://host:port",
                r#"parse "http://host:port": invalid port ":port" after host"#,
            ),
            ("http://[::1", r#"parse "http://[::1": missing ']' in host"#),
            (
                "http://a%zz.svc",
                r#"parse "http://a%zz.svc": invalid URL escape "%zz""#,
            ),
            (
                "http://a%41.svc",
                r#"parse "http://a%41.svc": invalid URL escape "%41""#,
            ),
            (
                "1a:b/c",
                r#"parse "1a:b/c": first path segment in URL cannot contain colon"#,
            ),
            (
                "http://x\u{7f}",
                "parse \"http://x\\x7f\": net/url: invalid control character in URL",
            ),
            (
                "http://x/%zz",
                r#"parse "http://x/%zz": invalid URL escape "%zz""#,
            ),
            (
                "http://a^b@x/",
                r#"parse "http://a^b@x/": net/url: invalid userinfo"#,
            ),
            // A fragment is checked after the rest, and the message quotes the whole URL.
            (
                "http://x/#%z",
                r#"parse "http://x/#%z": invalid URL escape "%z""#,
            ),
            // Without the fragment when the part before it fails.
            (
                "http://x\u{1}#f",
                "parse \"http://x\\x01\": net/url: invalid control character in URL",
            ),
        ] {
            assert_eq!(hostname(url), Err(message.to_string()), "{url}");
        }
    }

    #[test]
    fn parse_quotes_narrowly() {
        // `\b` (a control character) is printed as the InferenceGraph webhook always has.
        assert_eq!(
            hostname("http://x\u{8}"),
            Err("parse \"http://x\\x08\": net/url: invalid control character in URL".into())
        );
    }

    #[test]
    fn model_uri_checks_fail_as_go_does() {
        assert!(check("s3://bucket/models/llama").is_ok());
        assert!(check("hf://facebook/model").is_ok());
        assert!(check("https://x/a%20b?q=%zz").is_ok());
        assert_eq!(
            check(":nope").unwrap_err(),
            "parse \":nope\": missing protocol scheme"
        );
        assert_eq!(
            check("https://x/%zz").unwrap_err(),
            "parse \"https://x/%zz\": invalid URL escape \"%zz\""
        );
        assert_eq!(
            check("https://x/%4").unwrap_err(),
            "parse \"https://x/%4\": invalid URL escape \"%4\""
        );
        assert_eq!(
            check("https://x/a\nb").unwrap_err(),
            "parse \"https://x/a\\nb\": net/url: invalid control character in URL"
        );
        // A bad escape right before a multi-byte character.
        assert_eq!(
            check("s3://b/%aé").unwrap_err(),
            "parse \"s3://b/%aé\": invalid URL escape \"%a\u{fffd}\""
        );
    }

    /// The outcomes and texts of Go 1.25's `url.Parse` (upstream's toolchain) for the host and
    /// port cases `check` once let through.
    #[test]
    fn the_model_uri_check_is_gos_whole_parse() {
        for (url, error) in [
            ("http://[1.2.3.4]/", "invalid IP-literal"),
            ("http://a[::1]/", "invalid IP-literal"),
            ("http://[::1", "missing ']' in host"),
            (
                "http://[zz]/",
                r#"invalid host: ParseAddr("zz"): unable to parse IP"#,
            ),
            ("http://host:port", r#"invalid port ":port" after host"#),
            ("http://a b.svc", r#"invalid character " " in host name"#),
            ("http://h:80x/", r#"invalid port ":80x" after host"#),
            ("http://[fe80::1%25%zz]/", r#"invalid URL escape "%zz""#),
            ("1a:b/c", "first path segment in URL cannot contain colon"),
        ] {
            assert_eq!(
                check(url).unwrap_err(),
                format!("parse {}: {error}", quote(url)),
                "{url}"
            );
        }
        for url in [
            "http://[::1]:80/x",
            "http://[fe80::1%25en0]/",
            "https://user:p@ss@h/",
            "http://a:1:2/",
            "s3:%zz",
            "http://x/#a\u{1}",
        ] {
            assert!(check(url).is_ok(), "{url}");
        }
        // The same parse as `parse`, each quoting in its own way.
        assert_eq!(
            check("x\u{8}").unwrap_err(),
            "parse \"x\\b\": net/url: invalid control character in URL"
        );
        assert_eq!(
            parse("x\u{8}").unwrap_err(),
            "parse \"x\\x08\": net/url: invalid control character in URL"
        );
    }

    #[test]
    fn escaping() {
        assert_eq!(query_escape("a b/c&d=é"), "a+b%2Fc%26d%3D%C3%A9");
        assert_eq!(path_escape("4/x y"), "4%2Fx%20y");
        assert_eq!(path_escape("a$&+,:;=@b"), "a$&+,:;=@b");
        assert_eq!(
            query_unescape("a+b%2Fc%26d%3D%C3%A9").as_deref(),
            Some("a b/c&d=é")
        );
        assert_eq!(query_unescape("%zz"), None);
        assert_eq!(query_unescape("%4"), None);
        assert_eq!(query_unescape("%"), None);
        assert_eq!(query_unescape("%ff"), None, "not UTF-8");
        assert_eq!(query_unescape("ns-1").as_deref(), Some("ns-1"));
    }

    #[test]
    fn query_unescape_keeps_its_plus_leniency() {
        assert_eq!(query_unescape("a%+9b").as_deref(), Some("a\u{9}b"));
        assert_eq!(query_unescape("%+").as_deref(), None);
        assert_eq!(query_unescape("%+z").as_deref(), None);
        assert_eq!(query_unescape("%%+1").as_deref(), None);
        // Go refuses the escape.
        assert!(unescape("%+9", Mode::QueryComponent).is_err());
    }

    #[test]
    fn unescape_by_mode() {
        assert_eq!(unescape("a+b", Mode::Path).unwrap(), b"a+b");
        assert_eq!(unescape("a+b", Mode::QueryComponent).unwrap(), b"a b");
        assert_eq!(unescape("a%25b", Mode::Host).unwrap(), b"a%b");
        assert_eq!(unescape("%c3%a9", Mode::Host).unwrap(), "é".as_bytes());
        assert_eq!(
            unescape("a/b", Mode::Host),
            Err(UnescapeError::InvalidHost("/".into()))
        );
        assert_eq!(
            unescape("%2F", Mode::Host),
            Err(UnescapeError::Escape("%2F".into()))
        );
        assert_eq!(unescape("%2F", Mode::Fragment).unwrap(), b"/");
    }
}
