//! Go's `strconv`: `%q` quoting and the number and boolean parsers, with Go's error texts
//! (`strconv.ParseInt: parsing "abc": invalid syntax`).

/// A string quoted as Go's `%q` (`strconv.Quote`) prints it: `"` and `\` escaped, the C escapes
/// `\a \b \f \n \r \t \v`, other ASCII control characters and DEL as `\xNN`, other control
/// characters (U+0080–U+009F) as `\uNNNN`, everything else as is.
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

/// The narrower `%q` the InferenceGraph webhook has always used for URLs and their parts
/// (`parse "<url>": …`, `spec.nodes[…].serviceUrl: Invalid value: "<url>": …`). It differs
/// from [`quote`] in two ways: `\a \b \f \v` are written `\x07 \x08 \x0c \x0b`, and control
/// characters outside ASCII (U+0080–U+009F) are written as they are.
pub fn quote_narrow(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `strconv.ParseBool`: `1 t T TRUE true True` and `0 f F FALSE false False`.
pub fn parse_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Go's `strconv.ParseInt(value, 10, bits)` for `bits` of 8, 16, 32 or 64, with Go's error
/// text: `strconv.ParseInt: parsing "abc": invalid syntax` or `... value out of range`.
pub fn parse_int(value: &str, bits: u32) -> Result<i64, String> {
    let fail = |why: &str| format!("strconv.ParseInt: parsing {}: {why}", quote(value));
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

/// Go's `strconv.Atoi` (64-bit), with its error texts: `strconv.Atoi: parsing "x": invalid
/// syntax` or `... value out of range`.
pub fn atoi(s: &str) -> Result<i64, String> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "strconv.Atoi: parsing {}: invalid syntax",
            quote(s)
        ));
    }
    s.parse::<i64>()
        .map_err(|_| format!("strconv.Atoi: parsing {}: value out of range", quote(s)))
}

/// Go's `strconv.ParseFloat(s, 64)` for decimal input (and `inf`, `infinity`, `nan` in any
/// case, signed), with its error texts: `strconv.ParseFloat: parsing "fast": invalid syntax`
/// or `... value out of range`.
pub fn parse_float(s: &str) -> Result<f64, String> {
    let lower = s.to_ascii_lowercase();
    let unsigned = lower.trim_start_matches(['+', '-']);
    let special = matches!(unsigned, "inf" | "infinity" | "nan");
    let decimal = !unsigned.is_empty()
        && unsigned
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | '+' | '-'))
        && unsigned.chars().any(|c| c.is_ascii_digit());
    let parsed = if special || decimal {
        s.parse::<f64>().ok()
    } else {
        None
    };
    match parsed {
        Some(v) if v.is_infinite() && !special => Err(format!(
            "strconv.ParseFloat: parsing {}: value out of range",
            quote(s)
        )),
        Some(v) => Ok(v),
        None => Err(format!(
            "strconv.ParseFloat: parsing {}: invalid syntax",
            quote(s)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_prints_like_percent_q() {
        assert_eq!(quote("plain"), "\"plain\"");
        assert_eq!(quote("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\x01\"");
        assert_eq!(quote("é"), "\"é\"");
        assert_eq!(quote("\u{7}\u{8}\u{b}\u{c}\r\t"), "\"\\a\\b\\v\\f\\r\\t\"");
        assert_eq!(quote("\u{7f}\u{85}"), "\"\\x7f\\u0085\"");
        assert_eq!(quote(""), "\"\"");
    }

    #[test]
    fn the_narrow_quote_differs_only_on_c_escapes_and_non_ascii_controls() {
        // The same as `quote` for what URLs usually hold.
        for same in [
            "http://x/a b",
            "a\"b\\c",
            "\t\n\r",
            "\u{1}\u{1f}\u{7f}",
            "é 日本",
        ] {
            assert_eq!(quote_narrow(same), quote(same), "{same:?}");
        }
        assert_eq!(quote_narrow("x\u{7f}"), "\"x\\x7f\"");
        // The differences, kept as each call site has always printed them.
        assert_eq!(
            quote_narrow("\u{7}\u{8}\u{b}\u{c}"),
            "\"\\x07\\x08\\x0b\\x0c\""
        );
        assert_eq!(quote("\u{7}\u{8}\u{b}\u{c}"), "\"\\a\\b\\v\\f\"");
        assert_eq!(quote_narrow("\u{85}"), "\"\u{85}\"");
        assert_eq!(quote("\u{85}"), "\"\\u0085\"");
    }

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
            Err("strconv.ParseInt: parsing \"abc\": invalid syntax".into())
        );
        assert_eq!(
            parse_int("2147483648", 32),
            Err("strconv.ParseInt: parsing \"2147483648\": value out of range".into())
        );
        assert!(parse_int("+", 64).is_err());
        assert_eq!(parse_int("9223372036854775807", 64), Ok(i64::MAX));
    }

    #[test]
    fn atoi_errors_read_like_go() {
        assert_eq!(atoi("7"), Ok(7));
        assert_eq!(atoi("-3"), Ok(-3));
        assert_eq!(atoi("+0"), Ok(0));
        assert_eq!(
            atoi("1.5"),
            Err("strconv.Atoi: parsing \"1.5\": invalid syntax".into())
        );
        assert_eq!(
            atoi("x"),
            Err("strconv.Atoi: parsing \"x\": invalid syntax".into())
        );
        assert_eq!(
            atoi("-"),
            Err("strconv.Atoi: parsing \"-\": invalid syntax".into())
        );
        assert_eq!(
            atoi("99999999999999999999"),
            Err("strconv.Atoi: parsing \"99999999999999999999\": value out of range".into())
        );
    }

    #[test]
    fn parse_float_errors_read_like_go() {
        assert_eq!(parse_float("12.5"), Ok(12.5));
        assert_eq!(parse_float("0"), Ok(0.0));
        assert_eq!(parse_float("-1"), Ok(-1.0));
        assert_eq!(parse_float("1e3"), Ok(1000.0));
        assert_eq!(parse_float("+Inf"), Ok(f64::INFINITY));
        assert!(parse_float("NaN").unwrap().is_nan());
        assert_eq!(
            parse_float("fast"),
            Err("strconv.ParseFloat: parsing \"fast\": invalid syntax".into())
        );
        assert_eq!(
            parse_float(""),
            Err("strconv.ParseFloat: parsing \"\": invalid syntax".into())
        );
        assert_eq!(
            parse_float("1e999"),
            Err("strconv.ParseFloat: parsing \"1e999\": value out of range".into())
        );
    }
}
