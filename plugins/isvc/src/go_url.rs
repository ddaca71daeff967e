//! The host name of a URL as Go's `net/url.Parse` + `URL.Hostname` find it (spec core §6.9).
//!
//! The InferenceGraph validator decides on that host name, so the parse must accept, reject and
//! split exactly where Go does: Go is lenient (a URL without a scheme is a path, an opaque
//! `scheme:rest` has no host), keeps the host's case, and fails only on a few malformed
//! inputs, with messages the webhook shows (`parse "<url>": <reason>`).

/// The host name (no port, no IPv6 brackets; empty when the URL has no authority), or Go's
/// `*url.Error` text.
pub fn hostname(raw: &str) -> Result<String, String> {
    let (without_fragment, fragment) = raw.split_once('#').unwrap_or((raw, ""));
    let host = parse_host_of(without_fragment).map_err(|e| error(without_fragment, &e))?;
    unescape(fragment, Mode::Fragment).map_err(|e| error(raw, &e))?;
    Ok(split_host_port(&host).to_string())
}

/// `parse "<url>": <reason>`, the URL quoted as Go's `%q` quotes it.
fn error(url: &str, reason: &str) -> String {
    format!("parse {}: {reason}", go_quote(url))
}

fn parse_host_of(raw: &str) -> Result<String, String> {
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    if raw == "*" {
        return Ok(String::new());
    }
    let (scheme, rest) = scheme(raw)?;
    let rest = match rest.strip_suffix('?') {
        Some(r) if rest.matches('?').count() == 1 => r,
        _ => rest.split_once('?').map_or(rest, |(r, _)| r),
    };
    if !rest.starts_with('/') {
        if !scheme.is_empty() {
            // Opaque: `mailto:x`, `isvc.ns.svc:80` (scheme `isvc.ns.svc`).
            return Ok(String::new());
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
        host = parse_authority(authority)?;
        path = tail;
    }
    unescape(path, Mode::Path)?;
    Ok(host)
}

/// Go's `getScheme`: letters, then letters, digits, `+`, `-`, `.` up to a `:`.
fn scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme".into()),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

fn parse_authority(authority: &str) -> Result<String, String> {
    let (userinfo, host) = match authority.rfind('@') {
        Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
        None => (None, authority),
    };
    let host = parse_host(host)?;
    if let Some(userinfo) = userinfo {
        if !userinfo.bytes().all(valid_userinfo_byte) {
            return Err("net/url: invalid userinfo".into());
        }
        let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
        unescape(user, Mode::Userinfo)?;
        unescape(password, Mode::Userinfo)?;
    }
    Ok(host)
}

fn valid_userinfo_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric()
        || b"-._:~!$&'()*+,;=%@".contains(&c)
        // Go accepts any non-ASCII byte here.
        || c >= 0x80
}

fn parse_host(host: &str) -> Result<String, String> {
    if host.starts_with('[') {
        let Some(close) = host.rfind(']') else {
            return Err("missing ']' in host".into());
        };
        let port = &host[close + 1..];
        if !valid_optional_port(port) {
            return Err(format!("invalid port {} after host", go_quote(port)));
        }
    } else if let Some(colon) = host.rfind(':') {
        let port = &host[colon..];
        if !valid_optional_port(port) {
            return Err(format!("invalid port {} after host", go_quote(port)));
        }
    }
    unescape(host, Mode::Host)
}

/// `""`, or `:` followed by digits only.
fn valid_optional_port(port: &str) -> bool {
    port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|digits| digits.bytes().all(|b| b.is_ascii_digit()))
}

/// Go's `URL.Hostname`: the host without a valid port and without IPv6 brackets.
fn split_host_port(host: &str) -> &str {
    let mut name = host;
    if let Some(colon) = name.rfind(':')
        && valid_optional_port(&name[colon..])
    {
        name = &name[..colon];
    }
    name.strip_prefix('[')
        .and_then(|n| n.strip_suffix(']'))
        .unwrap_or(name)
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Host,
    Path,
    Userinfo,
    Fragment,
}

/// Go's `unescape`: `%XX` escapes decoded, a bad escape an error; in a host, `%XX` only for
/// non-ASCII bytes (or `%25`) and no ASCII byte that Go would escape there.
fn unescape(s: &str, mode: Mode) -> Result<String, String> {
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
                    return Err(format!(
                        "invalid URL escape {}",
                        go_quote(&String::from_utf8_lossy(&bytes[i..end]))
                    ));
                };
                let value = (hex(hi) << 4) | hex(lo);
                if mode == Mode::Host && hex(hi) < 8 && &s[i..i + 3] != "%25" {
                    return Err(format!("invalid URL escape {}", go_quote(&s[i..i + 3])));
                }
                out.push(value);
                i += 3;
            }
            c if mode == Mode::Host && c < 0x80 && escaped_in_host(c) => {
                return Err(format!(
                    "invalid character {} in host name",
                    go_quote(&(c as char).to_string())
                ));
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
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

/// Go's `strconv.Quote` (`%q`) for the printable text a URL holds.
pub fn go_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::hostname;

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
        ] {
            assert_eq!(hostname(url).as_deref(), Ok(host), "{url}");
        }
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
                "1a:b/c",
                r#"parse "1a:b/c": first path segment in URL cannot contain colon"#,
            ),
            (
                "http://x\u{7f}",
                "parse \"http://x\\x7f\": net/url: invalid control character in URL",
            ),
        ] {
            assert_eq!(hostname(url), Err(message.to_string()), "{url}");
        }
    }
}
