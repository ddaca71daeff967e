//! apimachinery's canonical quantity form (`Quantity.CanonicalizeBytes`): no fraction, the
//! largest suffix of the quantity's own family that loses nothing, `"0"` for zero.

/// The suffix family a quantity was written in, which its canonical form keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Format {
    /// `12e6`
    DecimalExponent,
    /// `12Mi`
    BinarySi,
    /// `12M`
    DecimalSi,
}

/// `unscaled × 10^scale`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Amount {
    pub unscaled: i128,
    pub scale: i64,
}

/// `10^n` when it fits in 128 bits.
pub(super) fn pow10(n: i64) -> Option<u128> {
    10u128.checked_pow(u32::try_from(n).ok()?)
}

/// The canonical form of an integer in decimal SI (`1000` is `"1k"`).
pub(super) fn decimal_si(value: i64) -> String {
    let amount = Amount {
        unscaled: value.into(),
        scale: 0,
    };
    canonical(amount, Format::DecimalSi).expect("an int64 needs at most two more digits")
}

/// The canonical string, `None` if a step overflows 128 bits.
pub(super) fn canonical(amount: Amount, format: Format) -> Option<String> {
    if amount.unscaled == 0 {
        return Some("0".into());
    }
    if format == Format::BinarySi && !below(amount, 1024) {
        // Binary suffixes only for whole numbers; anything else is shown in decimal SI
        // rather than rounded.
        if let Some(integer) = exact_integer(amount) {
            return Some(base1024(integer));
        }
    }
    let format = match format {
        Format::BinarySi => Format::DecimalSi,
        other => other,
    };
    let (mut value, mut exponent) = (amount.unscaled, amount.scale);
    while value % 10 == 0 {
        value /= 10;
        exponent += 1;
    }
    while exponent % 3 != 0 {
        value = value.checked_mul(10)?;
        exponent -= 1;
    }
    let suffix = match format {
        Format::DecimalExponent if exponent == 0 => String::new(),
        Format::DecimalExponent => format!("e{exponent}"),
        // Go has no suffix beyond E (10^18) or below n and prints none (a Go quirk that can
        // only bite values above 10^20).
        _ => decimal_suffix(exponent).into(),
    };
    Some(format!("{value}{suffix}"))
}

fn decimal_suffix(exponent: i64) -> &'static str {
    match exponent {
        -9 => "n",
        -6 => "u",
        -3 => "m",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => "",
    }
}

fn base1024(mut value: i128) -> String {
    let mut times = 0;
    while value % 1024 == 0 {
        value /= 1024;
        times += 1;
    }
    let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
        .get(times)
        .copied()
        .unwrap_or_default();
    format!("{value}{suffix}")
}

/// Whether `|amount| < limit`.
fn below(amount: Amount, limit: u128) -> bool {
    let magnitude = amount.unscaled.unsigned_abs();
    if amount.scale >= 0 {
        pow10(amount.scale)
            .and_then(|p| magnitude.checked_mul(p))
            .is_some_and(|v| v < limit)
    } else {
        pow10(-amount.scale)
            .and_then(|p| limit.checked_mul(p))
            .is_none_or(|l| magnitude < l)
    }
}

/// The amount as an integer when it has no fraction.
fn exact_integer(amount: Amount) -> Option<i128> {
    if amount.scale >= 0 {
        let factor = i128::try_from(pow10(amount.scale)?).ok()?;
        return amount.unscaled.checked_mul(factor);
    }
    let divisor = i128::try_from(pow10(-amount.scale)?).ok()?;
    (amount.unscaled % divisor == 0).then(|| amount.unscaled / divisor)
}
