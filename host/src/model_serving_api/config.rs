//! The model-serving-api's environment (spec §8.1), read and checked as upstream's
//! `config.Load` does, with its error messages word for word.

use std::path::PathBuf;
use std::time::Duration;

/// The server's configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// `LISTEN_ADDR` (default `:8443`).
    pub listen_addr: String,
    /// `TLS_CERT_DIR`: required, but checked only when the server starts (after the client
    /// is built), as upstream does.
    pub tls_cert_dir: Option<PathBuf>,
    /// `LOG_LEVEL` mapped to `debug`, `info`, `warn` or `error`.
    pub log_level: &'static str,
    /// `METRICS_ADDR` (default `:8080`).
    pub metrics_addr: String,
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`: accepted; traces are not exported (docs/divergences.md).
    pub otlp_endpoint: Option<String>,
    pub read_timeout: Duration,
    pub write_timeout: Duration,
    pub idle_timeout: Duration,
    /// `KUBE_QPS` and `KUBE_BURST`: checked; kube-rs has no client-side rate limiter to apply
    /// them to (docs/divergences.md).
    pub kube_qps: f64,
    pub kube_burst: i64,
    /// `GATEWAY_LABEL_SELECTOR` as (key, value) pairs; empty when unset.
    pub gateway_label_selector: Vec<(String, String)>,
}

impl ServerConfig {
    /// Reads the configuration through `env` (the process environment in `main`); the error
    /// is upstream's message.
    pub fn from_env(env: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let var = |name: &str| env(name).filter(|v| !v.is_empty());
        Ok(Self {
            listen_addr: var("LISTEN_ADDR").unwrap_or_else(|| ":8443".into()),
            tls_cert_dir: var("TLS_CERT_DIR").map(PathBuf::from),
            log_level: log_level(var("LOG_LEVEL").as_deref()),
            metrics_addr: var("METRICS_ADDR").unwrap_or_else(|| ":8080".into()),
            otlp_endpoint: var("OTEL_EXPORTER_OTLP_ENDPOINT"),
            read_timeout: timeout("READ_TIMEOUT", var("READ_TIMEOUT"), 10)?,
            write_timeout: timeout("WRITE_TIMEOUT", var("WRITE_TIMEOUT"), 10)?,
            idle_timeout: timeout("IDLE_TIMEOUT", var("IDLE_TIMEOUT"), 120)?,
            kube_qps: match var("KUBE_QPS") {
                None => 50.0,
                Some(v) => {
                    let qps = parse_float(&v).map_err(|e| format!("invalid KUBE_QPS: {e}"))?;
                    if qps < 0.0 {
                        return Err("invalid KUBE_QPS: must be >= 0".into());
                    }
                    qps
                }
            },
            kube_burst: match var("KUBE_BURST") {
                None => 100,
                Some(v) => {
                    let burst = atoi(&v).map_err(|e| format!("invalid KUBE_BURST: {e}"))?;
                    if burst < 0 {
                        return Err("invalid KUBE_BURST: must be >= 0".into());
                    }
                    burst
                }
            },
            gateway_label_selector: match var("GATEWAY_LABEL_SELECTOR") {
                None => Vec::new(),
                Some(v) => parse_gateway_label_selector(&v)
                    .map_err(|e| format!("invalid GATEWAY_LABEL_SELECTOR: {e}"))?,
            },
        })
    }
}

/// `LOG_LEVEL`: `debug`, `warn` and `error` as given, anything else `info`.
pub fn log_level(value: Option<&str>) -> &'static str {
    match value {
        Some("debug") => "debug",
        Some("warn") => "warn",
        Some("error") => "error",
        _ => "info",
    }
}

fn timeout(name: &str, value: Option<String>, default_secs: u64) -> Result<Duration, String> {
    let Some(value) = value else {
        return Ok(Duration::from_secs(default_secs));
    };
    match parse_go_duration(&value) {
        Ok(nanos) if nanos > 0 => Ok(Duration::from_nanos(nanos as u64)),
        Ok(_) => Err(format!("invalid {name}: must be > 0")),
        Err(e) => Err(format!("invalid {name}: {e}")),
    }
}

/// `GATEWAY_LABEL_SELECTOR` (comma-separated `key=value`): pairs trimmed and empty ones
/// skipped; each key a qualified name and each value a label value. The error is unwrapped
/// (the caller adds `invalid GATEWAY_LABEL_SELECTOR: `).
pub fn parse_gateway_label_selector(value: &str) -> Result<Vec<(String, String)>, String> {
    let mut pairs = Vec::new();
    for pair in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, val) = match pair.split_once('=') {
            Some((k, v)) if !k.is_empty() && !v.is_empty() => (k, v),
            _ => return Err(format!("invalid label {}: must be key=value", quote(pair))),
        };
        let errs = qualified_name_errors(key);
        if !errs.is_empty() {
            return Err(format!(
                "invalid label key {}: {}",
                quote(key),
                errs.join("; ")
            ));
        }
        let errs = label_value_errors(val);
        if !errs.is_empty() {
            return Err(format!(
                "invalid label value {} for key {}: {}",
                quote(val),
                quote(key),
                errs.join("; ")
            ));
        }
        pairs.push((key.to_string(), val.to_string()));
    }
    if pairs.is_empty() {
        return Err("empty label selector".into());
    }
    Ok(pairs)
}

/// The pairs as a label selector (`k=v,k2=v2`).
pub fn selector_text(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

// ---------------------------------------------------------------------------------------------
// apimachinery's validation messages (`k8s.io/apimachinery/pkg/util/validation`).

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/// apimachinery's `RegexError`.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{e}', "));
    }
    out.push_str(&format!("regex used for validation is '{fmt}')"));
    out
}

fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
            !b.is_empty()
                && alnum(&b[0])
                && alnum(&b[b.len() - 1])
                && b.iter().all(|c| alnum(c) || *c == b'-')
        })
}

/// apimachinery's `IsQualifiedName`.
pub fn qualified_name_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > 253 {
                    errs.push(format!("prefix part {}", max_len_error(253)));
                }
                if !is_dns1123_subdomain(prefix) {
                    errs.push(format!(
                        "prefix part {}",
                        regex_error(
                            DNS1123_SUBDOMAIN_MSG,
                            DNS1123_SUBDOMAIN_FMT,
                            &["example.com"]
                        )
                    ));
                }
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    QUALIFIED_NAME_MSG,
                    QUALIFIED_NAME_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len_error(63)));
    }
    if !is_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// apimachinery's `IsValidLabelValue`.
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        errs.push(regex_error(
            LABEL_VALUE_MSG,
            &format!("({QUALIFIED_NAME_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

// ---------------------------------------------------------------------------------------------
// Go's parsers and their error texts.

/// Go's `strconv.Quote` for the strings these messages hold.
fn quote(s: &str) -> String {
    let mut out = String::from("\"");
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
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The `time` package's own quoting: bytes outside printable ASCII as `\xNN`.
fn time_quote(s: &str) -> String {
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

/// Go's `time.ParseDuration`, in nanoseconds, with its error texts.
pub fn parse_go_duration(orig: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {}", time_quote(orig));
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
            return Err(format!(
                "time: missing unit in duration {}",
                time_quote(orig)
            ));
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
                    time_quote(&String::from_utf8_lossy(unit_text)),
                    time_quote(orig)
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

/// Go's `strconv.ParseFloat(s, 64)` for decimal input, with its error texts.
fn parse_float(s: &str) -> Result<f64, String> {
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

/// Go's `strconv.Atoi`, with its error texts.
fn atoi(s: &str) -> Result<i64, String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load(vars: &[(&str, &str)]) -> Result<ServerConfig, String> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ServerConfig::from_env(|k| vars.get(k).cloned())
    }

    #[test]
    fn defaults() {
        let c = load(&[]).unwrap();
        assert_eq!(c.listen_addr, ":8443");
        assert_eq!(c.metrics_addr, ":8080");
        assert_eq!(c.tls_cert_dir, None);
        assert_eq!(c.log_level, "info");
        assert_eq!(c.read_timeout, Duration::from_secs(10));
        assert_eq!(c.write_timeout, Duration::from_secs(10));
        assert_eq!(c.idle_timeout, Duration::from_secs(120));
        assert_eq!((c.kube_qps, c.kube_burst), (50.0, 100));
        assert!(c.gateway_label_selector.is_empty());
        // Empty values are the defaults (the Deployment sets GATEWAY_LABEL_SELECTOR="").
        let c = load(&[("LISTEN_ADDR", ""), ("GATEWAY_LABEL_SELECTOR", "")]).unwrap();
        assert_eq!(c.listen_addr, ":8443");
        assert!(c.gateway_label_selector.is_empty());
    }

    #[test]
    fn values() {
        let c = load(&[
            ("LISTEN_ADDR", "127.0.0.1:9443"),
            ("TLS_CERT_DIR", "/tls"),
            ("LOG_LEVEL", "debug"),
            ("READ_TIMEOUT", "1m30s"),
            ("WRITE_TIMEOUT", "500ms"),
            ("IDLE_TIMEOUT", "1.5h"),
            ("KUBE_QPS", "0"),
            ("KUBE_BURST", "0"),
            (
                "GATEWAY_LABEL_SELECTOR",
                " app=llm , ,example.com/tier=edge",
            ),
        ])
        .unwrap();
        assert_eq!(c.tls_cert_dir, Some(PathBuf::from("/tls")));
        assert_eq!(c.log_level, "debug");
        assert_eq!(c.read_timeout, Duration::from_secs(90));
        assert_eq!(c.write_timeout, Duration::from_millis(500));
        assert_eq!(c.idle_timeout, Duration::from_secs(5400));
        assert_eq!(
            selector_text(&c.gateway_label_selector),
            "app=llm,example.com/tier=edge"
        );
        for (given, level) in [
            ("warn", "warn"),
            ("error", "error"),
            ("trace", "info"),
            ("DEBUG", "info"),
        ] {
            assert_eq!(load(&[("LOG_LEVEL", given)]).unwrap().log_level, level);
        }
    }

    #[test]
    fn timeout_errors() {
        for name in ["READ_TIMEOUT", "WRITE_TIMEOUT", "IDLE_TIMEOUT"] {
            for zero in ["0", "0s", "-5s"] {
                assert_eq!(
                    load(&[(name, zero)]),
                    Err(format!("invalid {name}: must be > 0"))
                );
            }
            assert_eq!(
                load(&[(name, "abc")]),
                Err(format!("invalid {name}: time: invalid duration \"abc\""))
            );
        }
        assert_eq!(
            load(&[("READ_TIMEOUT", "10")]),
            Err("invalid READ_TIMEOUT: time: missing unit in duration \"10\"".into())
        );
        assert_eq!(
            load(&[("READ_TIMEOUT", "10x")]),
            Err("invalid READ_TIMEOUT: time: unknown unit \"x\" in duration \"10x\"".into())
        );
    }

    #[test]
    fn go_durations() {
        let d = |s: &str| parse_go_duration(s);
        assert_eq!(d("10s"), Ok(10_000_000_000));
        assert_eq!(d("1h2m3.5s"), Ok(3_723_500_000_000));
        assert_eq!(d("1.5µs"), Ok(1_500));
        assert_eq!(d("+3ns"), Ok(3));
        assert_eq!(d("-1m"), Ok(-60_000_000_000));
        assert_eq!(d(".5s"), Ok(500_000_000));
        assert_eq!(d("0"), Ok(0));
        assert_eq!(d(""), Err("time: invalid duration \"\"".into()));
        assert_eq!(d("."), Err("time: invalid duration \".\"".into()));
        assert_eq!(d("s"), Err("time: invalid duration \"s\"".into()));
        assert_eq!(
            d("1é"),
            Err("time: unknown unit \"\\xc3\\xa9\" in duration \"1\\xc3\\xa9\"".into())
        );
        assert_eq!(
            d("9999999999h"),
            Err("time: invalid duration \"9999999999h\"".into())
        );
    }

    #[test]
    fn kube_client_limits() {
        assert_eq!(load(&[("KUBE_QPS", "12.5")]).unwrap().kube_qps, 12.5);
        assert_eq!(
            load(&[("KUBE_QPS", "-1")]),
            Err("invalid KUBE_QPS: must be >= 0".into())
        );
        assert_eq!(
            load(&[("KUBE_QPS", "fast")]),
            Err("invalid KUBE_QPS: strconv.ParseFloat: parsing \"fast\": invalid syntax".into())
        );
        assert_eq!(load(&[("KUBE_BURST", "7")]).unwrap().kube_burst, 7);
        assert_eq!(
            load(&[("KUBE_BURST", "-1")]),
            Err("invalid KUBE_BURST: must be >= 0".into())
        );
        assert_eq!(
            load(&[("KUBE_BURST", "1.5")]),
            Err("invalid KUBE_BURST: strconv.Atoi: parsing \"1.5\": invalid syntax".into())
        );
        assert_eq!(
            load(&[("KUBE_BURST", "99999999999999999999")]),
            Err("invalid KUBE_BURST: strconv.Atoi: parsing \"99999999999999999999\": value out of range".into())
        );
    }

    #[test]
    fn gateway_label_selector_errors() {
        let err = |v: &str| load(&[("GATEWAY_LABEL_SELECTOR", v)]).unwrap_err();
        assert_eq!(
            err(" , "),
            "invalid GATEWAY_LABEL_SELECTOR: empty label selector"
        );
        assert_eq!(
            err("app"),
            "invalid GATEWAY_LABEL_SELECTOR: invalid label \"app\": must be key=value"
        );
        assert_eq!(
            err("app="),
            "invalid GATEWAY_LABEL_SELECTOR: invalid label \"app=\": must be key=value"
        );
        assert_eq!(
            err("=x"),
            "invalid GATEWAY_LABEL_SELECTOR: invalid label \"=x\": must be key=value"
        );
        assert_eq!(
            err("bad key=x"),
            "invalid GATEWAY_LABEL_SELECTOR: invalid label key \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        );
        assert_eq!(
            err("Example.com/x=y"),
            "invalid GATEWAY_LABEL_SELECTOR: invalid label key \"Example.com/x\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        );
        assert_eq!(
            err("/x=y"),
            "invalid GATEWAY_LABEL_SELECTOR: invalid label key \"/x\": prefix part must be non-empty"
        );
        assert_eq!(
            err("a/b/c=y"),
            "invalid GATEWAY_LABEL_SELECTOR: invalid label key \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        );
        let long = "k".repeat(64);
        assert_eq!(
            err(&format!("{long}=v")),
            format!(
                "invalid GATEWAY_LABEL_SELECTOR: invalid label key \"{long}\": name part must be no more than 63 characters"
            )
        );
        assert_eq!(
            err("app=-bad"),
            "invalid GATEWAY_LABEL_SELECTOR: invalid label value \"-bad\" for key \"app\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        );
        assert_eq!(
            err(&format!("app={}", "v".repeat(64))),
            format!(
                "invalid GATEWAY_LABEL_SELECTOR: invalid label value \"{}\" for key \"app\": must be no more than 63 characters",
                "v".repeat(64)
            )
        );
        // The first bad pair is reported.
        assert!(err("ok=1,bad").contains("\"bad\""));
    }
}
