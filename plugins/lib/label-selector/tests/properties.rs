//! Property tests of the selector parser and matcher (issue #18).
//!
//! The matcher is checked against a model: selectors are generated as requirement lists, written
//! out in the string form (with the spacing variations the parser accepts), parsed back, and
//! must then match exactly the label sets the model says they match. Arbitrary text must parse
//! or fail with an error, never panic.
//!
//! `cargo test` runs proptest's 256 cases per property; a long run:
//! `PROPTEST_CASES=1000000 cargo test -p odh-label-selector --test properties`.

use std::collections::BTreeMap;

use odh_label_selector::LabelSelector;
use proptest::prelude::*;

/// A requirement as the model sees it.
#[derive(Debug, Clone)]
enum Req {
    Equals(String, String),
    NotEquals(String, String),
    Exists(String),
    NotExists(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
}

impl Req {
    fn holds(&self, labels: &BTreeMap<String, String>) -> bool {
        let get = |k: &String| labels.get(k);
        match self {
            Req::Equals(k, v) => get(k) == Some(v),
            Req::NotEquals(k, v) => get(k) != Some(v),
            Req::Exists(k) => get(k).is_some(),
            Req::NotExists(k) => get(k).is_none(),
            Req::In(k, vs) => get(k).is_some_and(|v| vs.contains(v)),
            Req::NotIn(k, vs) => get(k).is_none_or(|v| !vs.contains(v)),
        }
    }

    /// The term as written, with optional spaces where the grammar allows them.
    fn write(&self, pad: bool) -> String {
        let sp = if pad { " " } else { "" };
        let set = |vs: &[String]| {
            let sep = if pad { ", " } else { "," };
            format!("({sp}{}{sp})", vs.join(sep))
        };
        match self {
            Req::Equals(k, v) if pad => format!("{k} == {v}"),
            Req::Equals(k, v) => format!("{k}={v}"),
            Req::NotEquals(k, v) => format!("{k}{sp}!={sp}{v}"),
            Req::Exists(k) => k.clone(),
            Req::NotExists(k) => format!("!{sp}{k}"),
            Req::In(k, vs) => format!("{k} in {}", set(vs)),
            Req::NotIn(k, vs) => format!("{k} notin {}", set(vs)),
        }
    }
}

/// Keys and values from small alphabets, so generated labels often meet the selector's keys.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-c]",
        "[a-c][a-z0-9._-]{0,6}[a-z0-9]",
        "example\\.com/[a-c]",
        "app\\.kubernetes\\.io/[a-c]{1,3}",
    ]
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof!["[xyz]", "[xyz0-9][a-z0-9._-]{0,5}"]
}

fn req() -> impl Strategy<Value = Req> {
    let values = || prop::collection::vec(value(), 1..4);
    prop_oneof![
        (key(), value()).prop_map(|(k, v)| Req::Equals(k, v)),
        (key(), value()).prop_map(|(k, v)| Req::NotEquals(k, v)),
        key().prop_map(Req::Exists),
        key().prop_map(Req::NotExists),
        (key(), values()).prop_map(|(k, v)| Req::In(k, v)),
        (key(), values()).prop_map(|(k, v)| Req::NotIn(k, v)),
    ]
}

fn labels() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map(key(), value(), 0..6)
}

/// `reqs` written out: terms separated by commas, each optionally padded.
fn written(reqs: &[(Req, bool)]) -> String {
    reqs.iter()
        .map(|(r, pad)| {
            if *pad {
                format!(" {} ", r.write(true))
            } else {
                r.write(false)
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Text made of the selector grammar's own characters and words, so it reaches deep into the
/// parser far more often than uniformly random text.
fn selector_like() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just(","),
        Just("="),
        Just("=="),
        Just("!="),
        Just("!"),
        Just("("),
        Just(")"),
        Just(" in "),
        Just(" notin "),
        Just(" "),
        Just("a"),
        Just("b/c"),
        Just("x.y"),
        Just("-"),
        Just("é"),
    ];
    prop::collection::vec(token, 0..24).prop_map(|t| t.concat())
}

proptest! {
    #[test]
    fn arbitrary_text_parses_or_is_an_error(s in any::<String>()) {
        check_any(&s)?;
    }

    #[test]
    fn selector_shaped_text_parses_or_is_an_error(s in selector_like()) {
        check_any(&s)?;
    }

    #[test]
    fn written_selectors_match_what_the_model_matches(
        reqs in prop::collection::vec((req(), any::<bool>()), 0..6),
        samples in prop::collection::vec(labels(), 1..12),
    ) {
        let text = written(&reqs);
        let selector = LabelSelector::parse(&text)
            .map_err(|e| TestCaseError::fail(format!("{text:?} does not parse: {e}")))?;
        prop_assert_eq!(selector.is_everything(), reqs.is_empty());
        for labels in &samples {
            let want = reqs.iter().all(|(r, _)| r.holds(labels));
            prop_assert_eq!(selector.matches(labels), want, "{:?} on {:?}", text, labels);
            // The raw-JSON form of the same labels matches the same way.
            let json = serde_json::to_value(labels).unwrap();
            prop_assert_eq!(selector.matches_json(Some(&json)), want);
        }
    }

    #[test]
    fn a_selector_with_more_requirements_is_within_the_one_with_fewer(
        base in prop::collection::vec(req(), 0..4),
        extra in prop::collection::vec(req(), 0..4),
        samples in prop::collection::vec(labels(), 1..12),
    ) {
        let text = |rs: &[Req]| rs.iter().map(|r| r.write(false)).collect::<Vec<_>>().join(",");
        let wide = LabelSelector::parse(&text(&base)).unwrap();
        let narrow_reqs: Vec<Req> = base.iter().chain(&extra).cloned().collect();
        let narrow = LabelSelector::parse(&text(&narrow_reqs)).unwrap();
        prop_assert!(narrow.is_within(&wide));
        // Soundness of `is_within`: whatever the narrow one matches, the wide one matches.
        for labels in &samples {
            prop_assert!(!narrow.matches(labels) || wide.matches(labels));
        }
    }
}

/// Any text: an error with the documented prefix, or a selector whose printed form is the
/// trimmed input and parses back to the same selector.
fn check_any(s: &str) -> Result<(), TestCaseError> {
    match LabelSelector::parse(s) {
        Ok(selector) => {
            prop_assert_eq!(selector.to_string(), s.trim());
            let again = LabelSelector::parse(&selector.to_string())
                .map_err(|e| TestCaseError::fail(format!("printed form of {s:?}: {e}")))?;
            prop_assert_eq!(again, selector);
        }
        Err(e) => {
            let prefix = format!("invalid label selector {s:?}: ");
            prop_assert!(e.to_string().starts_with(&prefix), "{}", e);
        }
    }
    Ok(())
}
