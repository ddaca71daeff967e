//! What an admin reads when a shadow candidate answers differently: the paths where the two
//! answers differ, each with both values in short, and never a Secret's contents (a reconcile's
//! outcome or an admission's side effects may hold Secrets).

use serde_json::Value;

/// The most differences one report lists; the rest are counted.
const MAX_LISTED: usize = 8;
/// The longest value shown, in characters.
const MAX_VALUE_CHARS: usize = 120;
/// What a Secret's value reads as.
const REDACTED: &str = "<redacted>";

/// The differences between the active version's answer and the candidate's, one line.
pub fn describe(active: &Result<Value, &str>, candidate: &Result<Value, &str>) -> String {
    match (active, candidate) {
        (Ok(a), Ok(c)) => {
            let mut paths = Vec::new();
            differences(a, c, &mut String::new(), &mut paths);
            let (a, c) = (redacted(a), redacted(c));
            let total = paths.len();
            let mut listed: Vec<String> = paths
                .iter()
                .take(MAX_LISTED)
                .map(|p| format!("{}: {} → {}", shown_path(p), at(&a, p), at(&c, p)))
                .collect();
            if total > MAX_LISTED {
                listed.push(format!("and {} more", total - MAX_LISTED));
            }
            format!(
                "{total} difference{}: {}",
                if total == 1 { "" } else { "s" },
                listed.join("; ")
            )
        }
        (Ok(_), Err(e)) => format!("the active version answered, the candidate failed ({e})"),
        (Err(e), Ok(_)) => format!("the active version failed ({e}), the candidate answered"),
        (Err(a), Err(c)) => format!("both failed, differently: {a} → {c}"),
    }
}

/// JSON pointers (RFC 6901) of every place where `a` and `c` differ, depth first.
fn differences(a: &Value, c: &Value, path: &mut String, out: &mut Vec<String>) {
    match (a, c) {
        (Value::Object(a), Value::Object(c)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(c.keys()).collect();
            for key in keys {
                let len = path.len();
                path.push('/');
                path.push_str(&key.replace('~', "~0").replace('/', "~1"));
                match (a.get(key), c.get(key)) {
                    (Some(x), Some(y)) => differences(x, y, path, out),
                    _ => out.push(path.clone()),
                }
                path.truncate(len);
            }
        }
        (Value::Array(a), Value::Array(c)) if a.len() == c.len() => {
            for (i, (x, y)) in a.iter().zip(c).enumerate() {
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                differences(x, y, path, out);
                path.truncate(len);
            }
        }
        _ if a != c => out.push(path.clone()),
        _ => {}
    }
}

/// `value` with the values of every Secret's `data` and `stringData` replaced, wherever the
/// Secret sits (an applied object, a side effect, a nested list).
pub fn redacted(value: &Value) -> Value {
    let mut copy = value.clone();
    redact(&mut copy);
    copy
}

fn redact(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let secret = map.get("kind").and_then(Value::as_str) == Some("Secret");
            for (key, inner) in map.iter_mut() {
                if secret && (key == "data" || key == "stringData") {
                    if let Value::Object(entries) = inner {
                        for v in entries.values_mut() {
                            *v = Value::String(REDACTED.into());
                        }
                    } else if !inner.is_null() {
                        *inner = Value::String(REDACTED.into());
                    }
                } else {
                    redact(inner);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}

fn shown_path(pointer: &str) -> &str {
    if pointer.is_empty() { "/" } else { pointer }
}

/// The value at `pointer`, in short; `(none)` where it is absent.
fn at(value: &Value, pointer: &str) -> String {
    let Some(v) = value.pointer(pointer) else {
        return "(none)".into();
    };
    let text = v.to_string();
    if text.chars().count() <= MAX_VALUE_CHARS {
        return text;
    }
    let cut: String = text.chars().take(MAX_VALUE_CHARS).collect();
    format!("{cut}… ({} bytes)", text.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_difference_names_its_path_and_both_values() {
        let a = json!({"allowed": true, "patch": [{"op": "add", "path": "/x", "value": 1}]});
        let c = json!({"allowed": false, "patch": [{"op": "add", "path": "/x", "value": 2}]});
        assert_eq!(
            describe(&Ok(a), &Ok(c)),
            "2 differences: /allowed: true → false; /patch/0/value: 1 → 2"
        );
        let a = json!({"apply": []});
        let c = json!({"apply": [{"kind": "ConfigMap"}]});
        assert_eq!(
            describe(&Ok(a), &Ok(c)),
            "1 difference: /apply: [] → [{\"kind\":\"ConfigMap\"}]"
        );
        assert_eq!(
            describe(&Ok(json!({"a/b": 1})), &Ok(json!({}))),
            "1 difference: /a~1b: 1 → (none)"
        );
    }

    #[test]
    fn a_secrets_contents_never_appear() {
        let secret = |v: &str| {
            json!({"apply": [{"object": {"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "s"}, "data": {"password": v}, "stringData": {"token": v}}}]})
        };
        let line = describe(&Ok(secret("aHVudGVyMg==")), &Ok(secret("c2VjcmV0")));
        assert!(
            !line.contains("aHVudGVyMg==") && !line.contains("c2VjcmV0"),
            "{line}"
        );
        assert!(
            line.contains("/apply/0/object/data/password: \"<redacted>\" → \"<redacted>\""),
            "{line}"
        );
        // A whole Secret added by the candidate is shown with its keys, not its values.
        let line = describe(&Ok(json!({"apply": []})), &Ok(secret("c2VjcmV0")));
        assert!(
            !line.contains("c2VjcmV0") && line.contains("password"),
            "{line}"
        );
    }

    #[test]
    fn long_values_are_cut_and_long_lists_counted() {
        let long = "x".repeat(500);
        let line = describe(&Ok(json!({"v": long})), &Ok(json!({"v": 1})));
        assert!(line.contains("… (502 bytes)") && line.len() < 300, "{line}");
        let a: Value = (0..20)
            .map(|i| (format!("k{i:02}"), json!(i)))
            .collect::<serde_json::Map<_, _>>()
            .into();
        let line = describe(&Ok(a), &Ok(json!({})));
        assert!(
            line.starts_with("20 differences:") && line.ends_with("and 12 more"),
            "{line}"
        );
    }

    #[test]
    fn failures_are_named() {
        assert_eq!(
            describe(&Ok(json!({})), &Err("timeout")),
            "the active version answered, the candidate failed (timeout)"
        );
        assert_eq!(
            describe(&Err("trap"), &Err("timeout")),
            "both failed, differently: trap → timeout"
        );
    }
}
