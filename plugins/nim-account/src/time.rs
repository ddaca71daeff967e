//! Times as the Account status holds them (RFC 3339, second precision) and Go durations as its
//! spec holds the refresh rates.

use crate::names::DEFAULT_REFRESH_SECS;

/// Seconds since the Unix epoch of an RFC 3339 time (`2026-01-01T10:00:00Z`, fractions and
/// numeric offsets accepted), or none when it does not parse.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    if bytes.len() < 20 || bytes[4] != b'-' || bytes[7] != b'-' || !matches!(bytes[10], b'T' | b't')
    {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> { text.get(range)?.parse().ok() };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    let mut rest = &text[19..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        rest = &fraction[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6 && matches!(&rest[..1], "+" | "-") && &rest[3..4] == ":" => {
            let secs =
                rest[1..3].parse::<i64>().ok()? * 3600 + rest[4..6].parse::<i64>().ok()? * 60;
            if rest.starts_with('-') { -secs } else { secs }
        }
        _ => return None,
    };
    Some(days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset)
}

// Howard Hinnant's days-from-civil.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A refresh rate in whole seconds: the spec's text read as Go's `time.ParseDuration` reads it,
/// rounded up (so a positive rate never becomes zero; a negative one stays negative), or 24 h
/// when it is empty or does not parse (as upstream falls back).
pub fn refresh_rate_secs(text: &str) -> i64 {
    const NANOS_PER_SEC: i64 = 1_000_000_000;
    match odh_go_compat::time::parse_duration(text) {
        Ok(nanos) if nanos % NANOS_PER_SEC > 0 => nanos / NANOS_PER_SEC + 1,
        Ok(nanos) => nanos / NANOS_PER_SEC,
        Err(_) => DEFAULT_REFRESH_SECS as i64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trips_the_sdk_format() {
        let secs = 1_790_000_123;
        let text = odh_plugin_sdk::conditions::rfc3339(secs);
        assert_eq!(parse_rfc3339(&text), Some(secs as i64));
        assert_eq!(
            parse_rfc3339("2026-01-01T00:00:00.123456Z"),
            Some(1_767_225_600)
        );
        assert_eq!(
            parse_rfc3339("2026-01-01T01:00:00+01:00"),
            Some(1_767_225_600)
        );
        assert_eq!(parse_rfc3339("yesterday"), None);
    }

    #[test]
    fn go_durations_and_the_24h_fallback() {
        assert_eq!(refresh_rate_secs("24h"), 86_400);
        assert_eq!(refresh_rate_secs("1h30m"), 5_400);
        assert_eq!(refresh_rate_secs("90s"), 90);
        assert_eq!(refresh_rate_secs("1.5h"), 5_400);
        assert_eq!(refresh_rate_secs(""), 86_400);
        assert_eq!(refresh_rate_secs("a day"), 86_400);
        assert_eq!(refresh_rate_secs("10"), 86_400);
        assert_eq!(refresh_rate_secs("0"), 0);
        assert_eq!(refresh_rate_secs("1ns"), 1);
        assert_eq!(refresh_rate_secs("-1.5s"), -1);
        assert_eq!(refresh_rate_secs("1.1h"), 3_960);
    }
}
