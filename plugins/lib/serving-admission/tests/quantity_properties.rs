//! Property tests of the quantity parser (issue #18): arbitrary text parses or is an error,
//! never a panic; the canonical form is a fixed point; and suffixes scale values exactly.
//!
//! `cargo test` runs proptest's 256 cases per property; a long run:
//! `PROPTEST_CASES=1000000 cargo test -p odh-serving-admission --test quantity_properties`.

use odh_plugin_sdk::Value;
use odh_serving_admission::quantity::{Quantity, QuantityError};
use proptest::prelude::*;

/// The characters apimachinery's quantity regular expression allows.
const ALPHABET: &str = "+-0123456789.eEinumkKMGTP";

/// Text mostly made of the quantity alphabet, with the odd stranger, so that it gets past the
/// first character far more often than random text.
fn quantity_like() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        8 => "[+-]?[0-9]{0,25}",
        4 => "\\.[0-9]{0,12}",
        4 => prop::sample::select(vec![
            "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
        ]).prop_map(str::to_string),
        3 => "[eE][+-]?[0-9]{0,12}",
        2 => "[-+0-9.eEinumkKMGTP]{1,4}",
        1 => "[ xQ!\u{e9}]",
    ];
    prop::collection::vec(piece, 1..5).prop_map(|p| p.concat())
}

/// Any i64, or one with many trailing zeros (the values that get suffixes).
fn integer() -> impl Strategy<Value = i64> {
    let round = (any::<i16>(), 0u32..19)
        .prop_map(|(m, e)| i64::from(m).saturating_mul(10i64.saturating_pow(e)));
    prop_oneof![any::<i64>(), round]
}

/// Decimal SI suffixes and the power of ten each stands for.
const SI: [(&str, u32); 6] = [
    ("k", 3),
    ("M", 6),
    ("G", 9),
    ("T", 12),
    ("P", 15),
    ("E", 18),
];

proptest! {
    #[test]
    fn arbitrary_text_parses_or_is_an_error(s in any::<String>()) {
        check_any(&s)?;
    }

    #[test]
    fn quantity_shaped_text_parses_or_is_an_error(s in quantity_like()) {
        check_any(&s)?;
    }

    #[test]
    fn integers_round_trip_through_their_canonical_form(v in integer()) {
        let q = Quantity::from_i64(v);
        prop_assert_eq!(Quantity::parse(q.as_str()), Ok(q.clone()));
        // The plain decimal spelling means the same quantity.
        prop_assert_eq!(Quantity::parse(&v.to_string()), Ok(q.clone()));
        prop_assert_eq!(Quantity::from_json(Some(&Value::from(v))), Ok(q));
    }

    #[test]
    fn decimal_suffixes_scale_exactly(n in -9_999_999i64..=9_999_999, which in 0usize..SI.len()) {
        let (suffix, power) = SI[which];
        if let Some(scaled) = 10i64.checked_pow(power).and_then(|p| n.checked_mul(p)) {
            prop_assert_eq!(
                Quantity::parse(&format!("{n}{suffix}")),
                Ok(Quantity::from_i64(scaled)),
                "{}{}", n, suffix
            );
            // The exponent spelling differs in form (`1e3`) but not in value: parsing its
            // canonical form again is stable.
            let e = Quantity::parse(&format!("{n}e{power}")).unwrap();
            prop_assert_eq!(Quantity::parse(e.as_str()), Ok(e.clone()));
        }
        // Thousandths of a whole number are that number.
        prop_assert_eq!(
            Quantity::parse(&format!("{}m", i128::from(n) * 1000)),
            Ok(Quantity::from_i64(n))
        );
    }

    #[test]
    fn binary_suffixes_agree_with_each_other(n in 1i64..=1_000_000, step in 0usize..5) {
        let suffixes = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
        let (small, big) = (suffixes[step], suffixes[step + 1]);
        prop_assert_eq!(
            Quantity::parse(&format!("{}{small}", n * 1024)),
            Quantity::parse(&format!("{n}{big}"))
        );
    }

    #[test]
    fn arbitrary_json_default_counts_never_panic(v in json()) {
        // Only numbers and quantity strings are counts; anything else is an error naming a Go
        // type.
        match (Quantity::from_json(Some(&v)), &v) {
            (Ok(_), Value::Number(_) | Value::String(_)) => {}
            (Err(e), Value::String(_)) => prop_assert!(e.starts_with("quantities must")
                || e.starts_with("unable to parse"), "{}", e),
            (Err(e), _) => prop_assert!(e.starts_with("unexpected type "), "{}", e),
            (Ok(q), other) => prop_assert!(false, "{:?} became {}", other, q),
        }
    }
}

/// Any text: an error (and then surely one for text outside the alphabet), or a canonical
/// form that is a fixed point of the parser.
fn check_any(s: &str) -> Result<(), TestCaseError> {
    match Quantity::parse(s) {
        Ok(q) => {
            prop_assert!(s.chars().all(|c| ALPHABET.contains(c)), "{:?} accepted", s);
            prop_assert!(!q.as_str().is_empty());
            prop_assert_eq!(Quantity::parse(q.as_str()), Ok(q.clone()), "from {:?}", s);
        }
        Err(e) => {
            if !s.chars().all(|c| ALPHABET.contains(c)) || s.is_empty() {
                prop_assert_eq!(e, QuantityError::FormatWrong, "{:?}", s);
            }
        }
    }
    Ok(())
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        quantity_like().prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
            prop::collection::btree_map("[a-z]{1,3}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
