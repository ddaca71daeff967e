//! Kubernetes label selectors in their string form (`a=b,c!=d,e,!f,g in (x,y),h notin (z)`).
//!
//! Written once for the host (cache filters, primary selectors) and the plugin SDK (the fake
//! cluster of native tests), so a selector means the same on both sides of the sandbox. The
//! only dependency is `serde_json`, for matching labels held in raw JSON objects.

use std::collections::BTreeMap;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    Exists(String),
    NotExists(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
}

/// A parsed selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
    source: String,
}

/// A selector that does not parse: `invalid label selector "<selector>": <reason>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectorError {
    selector: String,
    reason: String,
}

impl fmt::Display for SelectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid label selector {:?}: {}",
            self.selector, self.reason
        )
    }
}

impl std::error::Error for SelectorError {}

impl LabelSelector {
    /// The selector that matches every object.
    pub fn everything() -> Self {
        Self::default()
    }

    /// Parses `key=value`, `key==value`, `key!=value`, `key`, `!key`, `key in (a,b)` and
    /// `key notin (a,b)` terms separated by commas; blank terms are skipped.
    pub fn parse(selector: &str) -> Result<Self, SelectorError> {
        let err = |reason: &str| SelectorError {
            selector: selector.to_string(),
            reason: reason.to_string(),
        };
        let mut requirements = Vec::new();
        for term in split_terms(selector) {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            let req = if let Some(key) = term.strip_prefix('!') {
                Requirement::NotExists(valid_key(key.trim()).ok_or_else(|| err("bad key"))?)
            } else if let Some((key, values)) = split_set(term, " notin ") {
                Requirement::NotIn(
                    valid_key(key).ok_or_else(|| err("bad key"))?,
                    parse_set(values).ok_or_else(|| err("bad value set"))?,
                )
            } else if let Some((key, values)) = split_set(term, " in ") {
                Requirement::In(
                    valid_key(key).ok_or_else(|| err("bad key"))?,
                    parse_set(values).ok_or_else(|| err("bad value set"))?,
                )
            } else if let Some((key, value)) = term.split_once("!=") {
                Requirement::NotEquals(
                    valid_key(key.trim()).ok_or_else(|| err("bad key"))?,
                    value.trim().to_string(),
                )
            } else if let Some((key, value)) =
                term.split_once("==").or_else(|| term.split_once('='))
            {
                Requirement::Equals(
                    valid_key(key.trim()).ok_or_else(|| err("bad key"))?,
                    value.trim().to_string(),
                )
            } else {
                Requirement::Exists(valid_key(term).ok_or_else(|| err("bad key"))?)
            };
            requirements.push(req);
        }
        Ok(Self {
            requirements,
            source: selector.trim().to_string(),
        })
    }

    /// Whether this selector matches everything (it has no requirement).
    pub fn is_everything(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether every object this selector matches is matched by `wider` too, judged by the
    /// requirements (`a=1,b=2` is within `a=1`); false when unsure.
    pub fn is_within(&self, wider: &LabelSelector) -> bool {
        wider
            .requirements
            .iter()
            .all(|r| self.requirements.contains(r))
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_with(|k| labels.get(k).map(String::as_str))
    }

    /// Matches against labels held in a JSON object (`metadata.labels` of a raw object);
    /// values that are not strings count as absent.
    pub fn matches_json(&self, labels: Option<&serde_json::Value>) -> bool {
        self.matches_with(|k| labels.and_then(|l| l.get(k)).and_then(|v| v.as_str()))
    }

    /// The selector as a Kubernetes `LabelSelector`'s `matchExpressions` (what a webhook
    /// configuration's `objectSelector` holds), in the order written: `a=b` is `In [b]`, `a!=b`
    /// `NotIn [b]`, `a` `Exists`, `!a` `DoesNotExist`. Every value must be a valid label value
    /// (the API server refuses the object otherwise), which [`LabelSelector::check_values`]
    /// tells beforehand.
    pub fn match_expressions(&self) -> Vec<serde_json::Value> {
        use serde_json::json;
        self.requirements
            .iter()
            .map(|r| match r {
                Requirement::Equals(k, v) => json!({"key": k, "operator": "In", "values": [v]}),
                Requirement::NotEquals(k, v) => {
                    json!({"key": k, "operator": "NotIn", "values": [v]})
                }
                Requirement::In(k, vs) => json!({"key": k, "operator": "In", "values": vs}),
                Requirement::NotIn(k, vs) => json!({"key": k, "operator": "NotIn", "values": vs}),
                Requirement::Exists(k) => json!({"key": k, "operator": "Exists"}),
                Requirement::NotExists(k) => json!({"key": k, "operator": "DoesNotExist"}),
            })
            .collect()
    }

    /// Whether every value is a valid label value (at most 63 characters of `[A-Za-z0-9._-]`,
    /// starting and ending with a letter or digit, or empty) and every set has a value, as a
    /// `LabelSelector` object needs; matching does not care.
    pub fn check_values(&self) -> Result<(), SelectorError> {
        let err = |reason: String| SelectorError {
            selector: self.source.clone(),
            reason,
        };
        for r in &self.requirements {
            let values: &[String] = match r {
                Requirement::Equals(_, v) | Requirement::NotEquals(_, v) => std::slice::from_ref(v),
                Requirement::In(k, vs) | Requirement::NotIn(k, vs) => {
                    if vs.is_empty() {
                        return Err(err(format!("the value set of {k:?} is empty")));
                    }
                    vs
                }
                Requirement::Exists(_) | Requirement::NotExists(_) => &[],
            };
            if let Some(bad) = values.iter().find(|v| !valid_value(v)) {
                return Err(err(format!("{bad:?} is not a valid label value")));
            }
        }
        Ok(())
    }

    fn matches_with<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| match r {
            Requirement::Equals(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
            Requirement::In(k, vs) => get(k).is_some_and(|v| vs.iter().any(|x| x == v)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|v| vs.iter().all(|x| x != v)),
        })
    }
}

impl fmt::Display for LabelSelector {
    /// The selector as it was written (trimmed).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// Splits on commas outside parentheses.
fn split_terms(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0i32, 0usize, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn split_set<'a>(term: &'a str, op: &str) -> Option<(&'a str, &'a str)> {
    let (k, v) = term.split_once(op)?;
    Some((k.trim(), v.trim()))
}

fn parse_set(values: &str) -> Option<Vec<String>> {
    let inner = values.strip_prefix('(')?.strip_suffix(')')?;
    Some(
        inner
            .split(',')
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect(),
    )
}

/// A label value as the API server accepts it in a `LabelSelector`.
fn valid_value(v: &str) -> bool {
    let edge = |c: Option<char>| c.is_none_or(|c| c.is_ascii_alphanumeric());
    v.len() <= 63
        && edge(v.chars().next())
        && edge(v.chars().last())
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// A label key: a DNS-ish prefix and name (`[A-Za-z0-9._/-]`, at most 317 characters).
fn valid_key(key: &str) -> Option<String> {
    let ok = !key.is_empty()
        && key.len() <= 317
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    ok.then(|| key.to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn selectors_become_match_expressions_in_the_order_written() {
        let s = LabelSelector::parse("a=1, b!=2, c, !d, e in (x,y), f notin (z)").unwrap();
        assert_eq!(
            serde_json::Value::Array(s.match_expressions()),
            serde_json::json!([
                {"key": "a", "operator": "In", "values": ["1"]},
                {"key": "b", "operator": "NotIn", "values": ["2"]},
                {"key": "c", "operator": "Exists"},
                {"key": "d", "operator": "DoesNotExist"},
                {"key": "e", "operator": "In", "values": ["x", "y"]},
                {"key": "f", "operator": "NotIn", "values": ["z"]},
            ])
        );
        assert!(s.check_values().is_ok());
        assert!(LabelSelector::parse("a=").unwrap().check_values().is_ok());
        for bad in ["a=-x", "a=x y", "a in ()", &format!("a={}", "v".repeat(64))] {
            let e = LabelSelector::parse(bad).unwrap().check_values();
            assert!(e.is_err(), "{bad}");
        }
    }

    #[test]
    fn narrower_selectors_are_within_wider_ones() {
        let p = |s: &str| LabelSelector::parse(s).unwrap();
        assert!(p("a=1,b=2").is_within(&p("a=1")));
        assert!(p("a=1").is_within(&LabelSelector::everything()));
        assert!(!p("a=1").is_within(&p("a=1,b=2")));
        assert!(!LabelSelector::everything().is_within(&p("a=1")));
        assert!(
            p("b=2, a=1").is_within(&p("a=1,b=2")),
            "order does not matter"
        );
    }

    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn equality_existence_and_sets() {
        let l = labels(&[("component", "predictor"), ("tier", "gold")]);
        for (sel, want) in [
            ("", true),
            ("component=predictor", true),
            ("component==predictor", true),
            ("component!=predictor", false),
            ("component", true),
            ("!component", false),
            ("missing", false),
            ("!missing", true),
            ("tier in (gold, silver)", true),
            ("tier notin (gold)", false),
            ("missing notin (x)", true),
            ("component=predictor,tier in (bronze)", false),
            ("tier notin (silver),component", true),
        ] {
            assert_eq!(
                LabelSelector::parse(sel).unwrap().matches(&l),
                want,
                "{sel}"
            );
        }
    }

    #[test]
    fn json_labels_match_like_maps() {
        let sel = LabelSelector::parse("opendatahub.io/managed=true").unwrap();
        assert!(sel.matches_json(Some(&serde_json::json!({"opendatahub.io/managed": "true"}))));
        assert!(!sel.matches_json(Some(&serde_json::json!({"opendatahub.io/managed": true}))));
        assert!(!sel.matches_json(None));
    }

    #[test]
    fn everything_and_display() {
        assert!(LabelSelector::everything().is_everything());
        assert!(LabelSelector::parse(" , ").unwrap().is_everything());
        let sel = LabelSelector::parse(" a=b,c ").unwrap();
        assert!(!sel.is_everything());
        assert_eq!(sel.to_string(), "a=b,c");
    }

    #[test]
    fn malformed_selectors_are_errors() {
        assert!(LabelSelector::parse("a in b").is_err());
        assert!(LabelSelector::parse("=x").is_err());
        assert!(LabelSelector::parse("a b=c").is_err());
        assert_eq!(
            LabelSelector::parse("a in b").unwrap_err().to_string(),
            r#"invalid label selector "a in b": bad value set"#
        );
    }
}
