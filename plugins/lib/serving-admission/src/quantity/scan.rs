//! apimachinery's `ParseQuantity`, step for step.
//!
//! The hand-written scanner (no regex crate, to keep the plugin small) follows Go's
//! `parseQuantityString`, including its leniencies (`"1.G"`, `"."`), so the same strings are
//! accepted and rejected with the same error.

use super::QuantityError;
use super::canonical::{Amount, Format, canonical, pow10};

/// The parts of a quantity string, as Go's scanner splits them.
struct Parts<'a> {
    positive: bool,
    /// The signed number as written (`-1.50`), for the "has digits" check.
    value: &'a str,
    /// Integer digits without leading zeros (`"0"` when there are none).
    num: &'a str,
    /// Fraction digits as written.
    denom: &'a str,
    suffix: &'a str,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Base {
    Ten,
    Two,
}

/// The canonical string for `text`; Go keeps the caller's spelling when it is already
/// canonical, and so does this.
pub(super) fn parse(text: &str) -> Result<String, QuantityError> {
    if text.is_empty() {
        return Err(QuantityError::FormatWrong);
    }
    if text == "0" {
        return Ok(text.into());
    }
    let parts = scan(text)?;
    let (base, exponent, format) = interpret(parts.suffix).ok_or(QuantityError::Suffix)?;
    if let Some(fast) = int64_path(text, &parts, exponent, format)? {
        return Ok(fast);
    }
    decimal_path(text, &parts, base, exponent, format)
}

fn scan(text: &str) -> Result<Parts<'_>, QuantityError> {
    let b = text.as_bytes();
    let end = b.len();
    let mut pos = 0;
    let mut positive = true;
    match b[0] {
        b'-' => {
            positive = false;
            pos += 1;
        }
        b'+' => pos += 1,
        _ => {}
    }
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        return Ok(Parts {
            positive,
            value: "0",
            num: "0",
            denom: "",
            suffix: "",
        });
    }
    let start = pos;
    pos = digits_end(b, pos);
    if pos >= end {
        let num = &text[start..];
        return Ok(Parts {
            positive,
            value: text,
            num,
            denom: "",
            suffix: "",
        });
    }
    let num = if pos == start { "0" } else { &text[start..pos] };
    let mut denom = "";
    if b[pos] == b'.' {
        let denom_start = pos + 1;
        pos = digits_end(b, denom_start);
        denom = &text[denom_start..pos];
        if pos >= end {
            return Ok(Parts {
                positive,
                value: text,
                num,
                denom,
                suffix: "",
            });
        }
    }
    let value = &text[..pos];
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    if digits_end(b, pos) < end {
        return Err(QuantityError::FormatWrong);
    }
    let suffix = &text[suffix_start..];
    Ok(Parts {
        positive,
        value,
        num,
        denom,
        suffix,
    })
}

fn digits_end(b: &[u8], from: usize) -> usize {
    from + b[from.min(b.len())..]
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count()
}

/// Base, exponent and format of a suffix (`Ki` is 2^10 binary, `m` 10^-3 decimal SI, `e3`
/// 10^3 decimal exponent).
fn interpret(suffix: &str) -> Option<(Base, i32, Format)> {
    let si = |e| Some((Base::Ten, e, Format::DecimalSi));
    let bin = |e| Some((Base::Two, e, Format::BinarySi));
    match suffix {
        "" => si(0),
        "n" => si(-9),
        "u" => si(-6),
        "m" => si(-3),
        "k" => si(3),
        "M" => si(6),
        "G" => si(9),
        "T" => si(12),
        "P" => si(15),
        "E" => si(18),
        "Ki" => bin(10),
        "Mi" => bin(20),
        "Gi" => bin(30),
        "Ti" => bin(40),
        "Pi" => bin(50),
        "Ei" => bin(60),
        _ => {
            let exponent: i64 = suffix.strip_prefix(['e', 'E'])?.parse().ok()?;
            // Go narrows with int32(parsed): wrap the same way.
            Some((Base::Ten, exponent as i32, Format::DecimalExponent))
        }
    }
}

/// Go's int64 fast path; `None` when Go would fall through to its arbitrary-precision path.
fn int64_path(
    text: &str,
    parts: &Parts<'_>,
    exponent: i32,
    format: Format,
) -> Result<Option<String>, QuantityError> {
    let exponent = i64::from(exponent);
    let (precision, mut scale, mantissa) = match format {
        Format::BinarySi if parts.denom.is_empty() => {
            let precision = 15 - parts.num.len() as i64 - exponent * 3 / 10 - 1;
            (precision, 0, 1i64 << exponent)
        }
        Format::BinarySi => return Ok(None),
        _ => {
            let precision = 18 - (parts.num.len() + parts.denom.len()) as i64;
            (precision, exponent, 1)
        }
    };
    if precision < 0 {
        return Ok(None);
    }
    scale -= parts.denom.len() as i64;
    if scale < -9 {
        return Ok(None);
    }
    let shifted = format!("{}{}", parts.num, parts.denom);
    let value: i64 = shifted.parse().map_err(|_| QuantityError::Numeric)?;
    let Some(result) = value.checked_mul(mantissa) else {
        return Ok(None);
    };
    let already_canonical = match format {
        Format::BinarySi => exponent % 10 == 0 && value & 0x07 != 0,
        _ => scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0'),
    };
    if already_canonical {
        return Ok(Some(text.into()));
    }
    let unscaled = i128::from(if parts.positive { result } else { -result });
    let amount = Amount { unscaled, scale };
    Ok(Some(
        canonical(amount, format).unwrap_or_else(|| text.into()),
    ))
}

/// Go's `inf.Dec` path: exact value, rounded up to a nanounit, binary values capped at 2^63-1.
fn decimal_path(
    text: &str,
    parts: &Parts<'_>,
    base: Base,
    exponent: i32,
    mut format: Format,
) -> Result<String, QuantityError> {
    if !parts.value.bytes().any(|b| b.is_ascii_digit()) {
        return Err(QuantityError::Numeric);
    }
    let verbatim = || Ok(text.to_string());
    let Ok(mut magnitude) = format!("{}{}", parts.num, parts.denom).parse::<u128>() else {
        return verbatim();
    };
    let mut scale = -(parts.denom.len() as i64);
    match base {
        Base::Ten => scale += i64::from(exponent),
        Base::Two => match magnitude.checked_mul(1u128 << exponent) {
            Some(m) => magnitude = m,
            None => return verbatim(),
        },
    }
    if magnitude != 0 && scale < -9 {
        magnitude = ceil_div_pow10(magnitude, -9 - scale);
        scale = -9;
    }
    if format == Format::BinarySi {
        const MAX: u128 = i64::MAX as u128;
        if exceeds(magnitude, scale, MAX) {
            (magnitude, scale) = (MAX, 0);
        }
        if magnitude != 0 && scale < 0 && pow10(-scale).is_none_or(|d| magnitude < d) {
            format = Format::DecimalSi;
        }
    }
    let Ok(magnitude) = i128::try_from(magnitude) else {
        return verbatim();
    };
    let unscaled = if parts.positive {
        magnitude
    } else {
        -magnitude
    };
    match canonical(Amount { unscaled, scale }, format) {
        Some(s) => Ok(s),
        None => verbatim(),
    }
}

/// `⌈m / 10^n⌉`; a divisor beyond 128 bits leaves any non-zero `m` at 1.
fn ceil_div_pow10(m: u128, n: i64) -> u128 {
    match pow10(n) {
        Some(d) => m / d + u128::from(!m.is_multiple_of(d)),
        None => 1,
    }
}

/// Whether `m × 10^scale > limit`.
fn exceeds(m: u128, scale: i64, limit: u128) -> bool {
    if scale >= 0 {
        pow10(scale)
            .and_then(|p| m.checked_mul(p))
            .is_none_or(|v| v > limit)
    } else {
        pow10(-scale)
            .and_then(|p| limit.checked_mul(p))
            .is_some_and(|l| m > l)
    }
}
