//! Go's `time.ParseDuration`, in nanoseconds, with its error texts, and the `time` package's
//! own quoting of the text in them.

/// The `time` package's quoting (not `%q`): `"` and `\` escaped, printable ASCII as is, every
/// other byte (a UTF-8 sequence byte by byte, DEL included) as `\xNN`.
pub fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for &b in s.as_bytes() {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(b as char);
            }
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('"');
    out
}

/// Go's `time.ParseDuration`, in nanoseconds: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+` with the units
/// `ns`, `us` (`µs`, `μs`), `ms`, `s`, `m` and `h`, or `0` alone. The errors are Go's:
/// `time: invalid duration "<text>"`, `time: missing unit in duration "<text>"`,
/// `time: unknown unit "<unit>" in duration "<text>"`.
pub fn parse_duration(orig: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {}", quote(orig));
    let mut s = orig.as_bytes();
    let mut neg = false;
    if let Some(&c) = s.first()
        && (c == b'-' || c == b'+')
    {
        neg = c == b'-';
        s = &s[1..];
    }
    if s == b"0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        if !(s[0] == b'.' || s[0].is_ascii_digit()) {
            return Err(invalid());
        }
        // [0-9]*
        let digits = s.iter().take_while(|c| c.is_ascii_digit()).count();
        let mut v: u64 = 0;
        for &c in &s[..digits] {
            if v > (1u64 << 63) / 10 {
                return Err(invalid());
            }
            v = v * 10 + u64::from(c - b'0');
            if v > 1u64 << 63 {
                return Err(invalid());
            }
        }
        let pre = digits > 0;
        s = &s[digits..];
        // (\.[0-9]*)?
        let (mut f, mut scale, mut post) = (0u64, 1f64, false);
        if s.first() == Some(&b'.') {
            s = &s[1..];
            let digits = s.iter().take_while(|c| c.is_ascii_digit()).count();
            let mut overflow = false;
            for &c in &s[..digits] {
                if overflow {
                    continue;
                }
                if f > ((1u64 << 63) - 1) / 10 {
                    overflow = true;
                    continue;
                }
                let y = f * 10 + u64::from(c - b'0');
                if y > 1u64 << 63 {
                    overflow = true;
                    continue;
                }
                f = y;
                scale *= 10.0;
            }
            post = digits > 0;
            s = &s[digits..];
        }
        if !pre && !post {
            return Err(invalid());
        }
        // The unit.
        let unit_len = s
            .iter()
            .take_while(|c| **c != b'.' && !c.is_ascii_digit())
            .count();
        if unit_len == 0 {
            return Err(format!("time: missing unit in duration {}", quote(orig)));
        }
        let unit_text = &s[..unit_len];
        s = &s[unit_len..];
        let unit: u64 = match unit_text {
            b"ns" => 1,
            // `us`, `µs` (U+00B5) and `μs` (U+03BC).
            b"us" | [0xc2, 0xb5, b's'] | [0xce, 0xbc, b's'] => 1_000,
            b"ms" => 1_000_000,
            b"s" => 1_000_000_000,
            b"m" => 60_000_000_000,
            b"h" => 3_600_000_000_000,
            _ => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    quote(&String::from_utf8_lossy(unit_text)),
                    quote(orig)
                ));
            }
        };
        if v > (1u64 << 63) / unit {
            return Err(invalid());
        }
        v *= unit;
        if f > 0 {
            v += (f as f64 * (unit as f64 / scale)) as u64;
            if v > 1u64 << 63 {
                return Err(invalid());
            }
        }
        total += v;
        if total > 1u64 << 63 {
            return Err(invalid());
        }
    }
    if neg {
        return Ok((total as i128).wrapping_neg() as i64);
    }
    if total > (1u64 << 63) - 1 {
        return Err(invalid());
    }
    Ok(total as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        let d = parse_duration;
        assert_eq!(d("10s"), Ok(10_000_000_000));
        assert_eq!(d("1h2m3.5s"), Ok(3_723_500_000_000));
        assert_eq!(d("1.5µs"), Ok(1_500));
        assert_eq!(d("1.5μs"), Ok(1_500));
        assert_eq!(d("2us"), Ok(2_000));
        assert_eq!(d("+3ns"), Ok(3));
        assert_eq!(d("-1m"), Ok(-60_000_000_000));
        assert_eq!(d(".5s"), Ok(500_000_000));
        assert_eq!(d("0"), Ok(0));
        assert_eq!(d("-0"), Ok(0));
        assert_eq!(d("24h"), Ok(86_400_000_000_000));
        assert_eq!(d("1h30m"), Ok(5_400_000_000_000));
        assert_eq!(d("90s"), Ok(90_000_000_000));
        assert_eq!(d("1.5h"), Ok(5_400_000_000_000));
        assert_eq!(d("1m30s"), Ok(90_000_000_000));
        assert_eq!(d("500ms"), Ok(500_000_000));
        assert_eq!(d("-9223372036854775808ns"), Ok(i64::MIN));
    }

    #[test]
    fn go_duration_errors() {
        let d = parse_duration;
        assert_eq!(d(""), Err("time: invalid duration \"\"".into()));
        assert_eq!(d("."), Err("time: invalid duration \".\"".into()));
        assert_eq!(d("s"), Err("time: invalid duration \"s\"".into()));
        assert_eq!(d("abc"), Err("time: invalid duration \"abc\"".into()));
        assert_eq!(d("a day"), Err("time: invalid duration \"a day\"".into()));
        assert_eq!(d("soon"), Err("time: invalid duration \"soon\"".into()));
        assert_eq!(d("10"), Err("time: missing unit in duration \"10\"".into()));
        assert_eq!(
            d("10x"),
            Err("time: unknown unit \"x\" in duration \"10x\"".into())
        );
        assert_eq!(
            d("1é"),
            Err("time: unknown unit \"\\xc3\\xa9\" in duration \"1\\xc3\\xa9\"".into())
        );
        assert_eq!(
            d("9999999999h"),
            Err("time: invalid duration \"9999999999h\"".into())
        );
        assert_eq!(
            d("9223372036854775808ns"),
            Err("time: invalid duration \"9223372036854775808ns\"".into())
        );
    }

    #[test]
    fn time_quote_escapes_bytes_not_characters() {
        assert_eq!(quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(quote("é"), "\"\\xc3\\xa9\"");
        assert_eq!(quote("\t\u{7f}"), "\"\\x09\\x7f\"");
    }
}
