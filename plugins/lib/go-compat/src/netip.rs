//! Go's `net/netip.ParseAddr`, as far as `net/url` uses it for a bracketed host: whether the
//! text is an IPv4 or an IPv6 address (zone allowed), or Go's error text
//! (`ParseAddr("<in>"): <reason>[ (at "<rest>")]`).

use crate::strconv::quote;

/// What [`parse_addr`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Addr {
    V4,
    V6,
}

/// Go's `netip.ParseAddr`, or its error text.
pub fn parse_addr(s: &str) -> Result<Addr, String> {
    for c in s.bytes() {
        match c {
            b'.' => return parse_ipv4(s).map(|()| Addr::V4),
            b':' => return parse_ipv6(s).map(|()| Addr::V6),
            b'%' => return Err(error(s, "missing IPv6 address", None)),
            _ => {}
        }
    }
    Err(error(s, "unable to parse IP", None))
}

fn error(input: &str, msg: &str, at: Option<&str>) -> String {
    match at {
        Some(at) if !at.is_empty() => {
            format!("ParseAddr({}): {msg} (at {})", quote(input), quote(at))
        }
        _ => format!("ParseAddr({}): {msg}", quote(input)),
    }
}

fn parse_ipv4(s: &str) -> Result<(), String> {
    ipv4_fields(s, 0, s.len())
}

/// Go's `parseIPv4Fields` over `input[off..end]` (errors name the whole `input`).
fn ipv4_fields(input: &str, off: usize, end: usize) -> Result<(), String> {
    let s = &input.as_bytes()[off..end];
    let (mut val, mut pos, mut digits) = (0u32, 0, 0);
    for (i, &c) in s.iter().enumerate() {
        match c {
            b'0'..=b'9' => {
                if digits == 1 && val == 0 {
                    return Err(error(input, "IPv4 field has octet with leading zero", None));
                }
                val = val * 10 + u32::from(c - b'0');
                digits += 1;
                if val > 255 {
                    return Err(error(input, "IPv4 field has value >255", None));
                }
            }
            b'.' => {
                if i == 0 || i == s.len() - 1 || s[i - 1] == b'.' {
                    return Err(error(
                        input,
                        "IPv4 field must have at least one digit",
                        Some(&input[off + i..end]),
                    ));
                }
                if pos == 3 {
                    return Err(error(input, "IPv4 address too long", None));
                }
                pos += 1;
                val = 0;
                digits = 0;
            }
            _ => {
                return Err(error(
                    input,
                    "unexpected character",
                    Some(&input[off + i..end]),
                ));
            }
        }
    }
    if pos < 3 {
        return Err(error(input, "IPv4 address too short", None));
    }
    Ok(())
}

fn parse_ipv6(input: &str) -> Result<(), String> {
    let (mut s, zone) = match input.split_once('%') {
        Some((address, zone)) => {
            if zone.is_empty() {
                return Err(error(input, "zone must be a non-empty string", None));
            }
            (address, Some(zone))
        }
        None => (input, None),
    };
    // Where the address part ends in `input` (an embedded IPv4 is parsed from `input`).
    let end = input.len() - zone.map_or(0, |z| z.len() + 1);
    let mut ellipsis: Option<usize> = None;
    if s.starts_with("::") {
        ellipsis = Some(0);
        s = &s[2..];
        if s.is_empty() {
            return Ok(());
        }
    }
    let mut i = 0;
    while i < 16 {
        let bytes = s.as_bytes();
        let mut off = 0;
        let mut acc = 0u32;
        while off < bytes.len() {
            let digit = match bytes[off] {
                c @ b'0'..=b'9' => c - b'0',
                c @ b'a'..=b'f' => c - b'a' + 10,
                c @ b'A'..=b'F' => c - b'A' + 10,
                _ => break,
            };
            acc = (acc << 4) + u32::from(digit);
            if off > 3 {
                return Err(error(
                    input,
                    "each group must have 4 or less digits",
                    Some(s),
                ));
            }
            if acc > u32::from(u16::MAX) {
                return Err(error(input, "IPv6 field has value >=2^16", Some(s)));
            }
            off += 1;
        }
        if off == 0 {
            return Err(error(
                input,
                "each colon-separated field must have at least one digit",
                Some(s),
            ));
        }
        if bytes.get(off) == Some(&b'.') {
            if ellipsis.is_none() && i != 12 {
                return Err(error(
                    input,
                    "embedded IPv4 address must replace the final 2 fields of the address",
                    Some(s),
                ));
            }
            if i + 4 > 16 {
                return Err(error(
                    input,
                    "too many hex fields to fit an embedded IPv4 at the end of the address",
                    Some(s),
                ));
            }
            ipv4_fields(input, end - s.len(), end)?;
            s = "";
            i += 4;
            break;
        }
        i += 2;
        s = &s[off..];
        if s.is_empty() {
            break;
        }
        if !s.starts_with(':') {
            return Err(error(input, "unexpected character, want colon", Some(s)));
        } else if s.len() == 1 {
            return Err(error(
                input,
                "colon must be followed by more characters",
                Some(s),
            ));
        }
        s = &s[1..];
        if s.starts_with(':') {
            if ellipsis.is_some() {
                return Err(error(input, "multiple :: in address", Some(s)));
            }
            ellipsis = Some(i);
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return Err(error(input, "trailing garbage after address", Some(s)));
    }
    if i < 16 {
        if ellipsis.is_none() {
            return Err(error(input, "address string too short", None));
        }
    } else if ellipsis.is_some() {
        return Err(error(
            input,
            "the :: must expand to at least one field of zeros",
            None,
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_and_fail_as_go_does() {
        for (s, addr) in [
            ("::1", Addr::V6),
            ("::", Addr::V6),
            ("fe80::1%25en0", Addr::V6),
            ("2001:db8::1:2:3:4:5", Addr::V6),
            ("::ffff:10.0.0.1", Addr::V6),
            ("1:2:3:4:5:6:1.2.3.4", Addr::V6),
            ("10.0.0.1", Addr::V4),
        ] {
            assert_eq!(parse_addr(s), Ok(addr), "{s}");
        }
        for (s, e) in [
            ("", r#"ParseAddr(""): unable to parse IP"#),
            ("host", r#"ParseAddr("host"): unable to parse IP"#),
            ("%x", r#"ParseAddr("%x"): missing IPv6 address"#),
            (
                "fe80::1%",
                r#"ParseAddr("fe80::1%"): zone must be a non-empty string"#,
            ),
            (
                "::1::2",
                r#"ParseAddr("::1::2"): multiple :: in address (at ":2")"#,
            ),
            (
                "12345::",
                r#"ParseAddr("12345::"): each group must have 4 or less digits (at "12345::")"#,
            ),
            ("1:2", r#"ParseAddr("1:2"): address string too short"#),
            (
                "1:",
                r#"ParseAddr("1:"): colon must be followed by more characters (at ":")"#,
            ),
            (
                "1:x",
                r#"ParseAddr("1:x"): each colon-separated field must have at least one digit (at "x")"#,
            ),
            (
                "1:2:3:4:5:6:7:8:9",
                r#"ParseAddr("1:2:3:4:5:6:7:8:9"): trailing garbage after address (at "9")"#,
            ),
            (
                "1:2:3:4::5:6:7:8",
                r#"ParseAddr("1:2:3:4::5:6:7:8"): the :: must expand to at least one field of zeros"#,
            ),
            (
                "1g::",
                r#"ParseAddr("1g::"): unexpected character, want colon (at "g::")"#,
            ),
            (
                "1:2:3:1.2.3.4",
                r#"ParseAddr("1:2:3:1.2.3.4"): embedded IPv4 address must replace the final 2 fields of the address (at "1.2.3.4")"#,
            ),
            (
                "::1.2.3.04",
                r#"ParseAddr("::1.2.3.04"): IPv4 field has octet with leading zero"#,
            ),
            ("1.2.3", r#"ParseAddr("1.2.3"): IPv4 address too short"#),
            (
                "1.2.3.4.5",
                r#"ParseAddr("1.2.3.4.5"): IPv4 address too long"#,
            ),
            (
                "1..2.3",
                r#"ParseAddr("1..2.3"): IPv4 field must have at least one digit (at ".2.3")"#,
            ),
            (
                "1.2.3.256",
                r#"ParseAddr("1.2.3.256"): IPv4 field has value >255"#,
            ),
            (
                "1.2.x.4",
                r#"ParseAddr("1.2.x.4"): unexpected character (at "x.4")"#,
            ),
        ] {
            assert_eq!(parse_addr(s).unwrap_err(), e, "{s}");
        }
    }
}
