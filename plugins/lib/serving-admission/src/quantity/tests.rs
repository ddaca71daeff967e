use odh_plugin_sdk::{Value, json};

use super::{Quantity, QuantityError};

fn canonical(text: &str) -> String {
    Quantity::parse(text)
        .unwrap_or_else(|e| panic!("{text:?}: {e}"))
        .to_string()
}

#[test]
fn canonical_forms_match_apimachinery() {
    for (input, expected) in [
        ("0", "0"),
        ("4", "4"),
        ("500m", "500m"),
        ("8Gi", "8Gi"),
        ("1Ki", "1Ki"),
        ("100Ki", "100Ki"),
        ("2048Ki", "2Mi"),
        ("0.5Gi", "512Mi"),
        ("1.5Gi", "1536Mi"),
        ("1000m", "1"),
        ("1000", "1k"),
        ("1.5", "1500m"),
        (".5", "500m"),
        ("0.1n", "1n"),
        ("1e3", "1e3"),
        ("1e2", "100"),
        ("1E", "1E"),
        ("-1", "-1"),
        ("-0.0", "0"),
        ("000", "0"),
        ("12345678901234567890", "12345678901234567890"),
        ("9Ei", "9223372036854775807"),
        ("512", "512"),
        ("1536", "1536"),
        ("1024", "1024"),
        // Go keeps an already-canonical spelling verbatim, oddities included.
        ("+4", "+4"),
        ("1.G", "1.G"),
        // Go prints no suffix beyond E.
        ("1000E", "1"),
    ] {
        assert_eq!(canonical(input), expected, "{input}");
    }
}

#[test]
fn rejects_like_apimachinery() {
    for (input, error) in [
        ("", QuantityError::FormatWrong),
        ("bad!", QuantityError::FormatWrong),
        ("1Q", QuantityError::FormatWrong),
        (" 4", QuantityError::FormatWrong),
        ("1e", QuantityError::Suffix),
        ("1Mi5", QuantityError::Suffix),
        ("1ee5", QuantityError::Suffix),
        ("e-10", QuantityError::Numeric),
    ] {
        assert_eq!(Quantity::parse(input), Err(error), "{input:?}");
    }
    assert_eq!(
        QuantityError::FormatWrong.to_string(),
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
}

#[test]
fn integers_are_decimal_si() {
    assert_eq!(Quantity::from_i64(0).as_str(), "0");
    assert_eq!(Quantity::from_i64(4).as_str(), "4");
    assert_eq!(Quantity::from_i64(1000).as_str(), "1k");
    assert_eq!(Quantity::from_i64(-1500).as_str(), "-1500");
    assert_eq!(Quantity::from_i64(i64::MAX).as_str(), "9223372036854775807");
}

#[test]
fn default_counts_from_json() {
    let q = |v: Value| Quantity::from_json(Some(&v));
    assert_eq!(q(json!(4)).unwrap().as_str(), "4");
    assert_eq!(q(json!(4.9)).unwrap().as_str(), "4");
    assert_eq!(q(json!("8Gi")).unwrap().as_str(), "8Gi");
    assert_eq!(
        q(json!(true)).unwrap_err(),
        "unexpected type bool for resource quantity"
    );
    assert_eq!(
        q(json!({})).unwrap_err(),
        "unexpected type map[string]interface {} for resource quantity"
    );
    assert_eq!(
        Quantity::from_json(None).unwrap_err(),
        "unexpected type <nil> for resource quantity"
    );
    assert!(
        q(json!("bad!"))
            .unwrap_err()
            .starts_with("quantities must match")
    );
}
