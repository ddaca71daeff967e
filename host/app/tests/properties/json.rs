//! JSON strategies shared by the properties: arbitrary documents whose keys include the
//! characters JSON Pointer escapes (`/`, `~`) and the empty key.

use proptest::prelude::*;
use serde_json::{Map, Value};

/// An object key: short and often shared between two documents, so that diffs see both common
/// and distinct keys, with the characters a JSON Pointer has to escape.
pub fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => "[a-d]",
        2 => "[a-z0-9/~.-]{0,6}",
        1 => Just(String::new()),
        1 => Just("~1".to_string()),
        1 => Just("a/b~0".to_string()),
        1 => "\\PC{0,4}",
    ]
}

/// Numbers that survive a trip through JSON text bit for bit (k/1024 has a short, exact
/// decimal spelling), so equality after encoding tests the code, not float printing.
fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1_000_000i32..1_000_000).prop_map(|k| Value::from(f64::from(k) / 1024.0)),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        "[a-c]{0,2}".prop_map(Value::String),
        "\\PC{0,8}".prop_map(Value::String),
    ]
}

/// Any JSON document up to depth 4.
pub fn any_json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A JSON object (what Kubernetes objects are).
pub fn any_object() -> impl Strategy<Value = Value> {
    prop::collection::vec((key(), any_json()), 0..6)
        .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>()))
}

/// `original` changed in a few places: a value replaced, a key added or removed, an array
/// element inserted or removed, at any depth. Pairs made this way give patches of every kind
/// of operation; independent pairs mostly give whole-value replacements.
pub fn edited(original: Value) -> impl Strategy<Value = Value> {
    prop::collection::vec(
        (any::<prop::sample::Index>(), 0u8..5, any_json(), key()),
        0..6,
    )
    .prop_map(move |edits| {
        let mut doc = original.clone();
        for (at, how, value, key) in edits {
            edit(&mut doc, at, how, value, key);
        }
        doc
    })
}

fn edit(doc: &mut Value, at: prop::sample::Index, how: u8, value: Value, key: String) {
    let mut nodes = Vec::new();
    pointers(doc, String::new(), &mut nodes);
    let target = doc
        .pointer_mut(&nodes[at.index(nodes.len())])
        .expect("a pointer just listed");
    match (how, target) {
        (0, t) => *t = value,
        (_, Value::Object(m)) if how % 2 == 1 => {
            m.insert(key, value);
        }
        (_, Value::Object(m)) => {
            if let Some(k) = m.keys().next().cloned() {
                m.remove(&k);
            }
        }
        (_, Value::Array(a)) if how % 2 == 1 => {
            let i = at.index(a.len() + 1);
            a.insert(i, value);
        }
        (_, Value::Array(a)) => {
            if !a.is_empty() {
                let i = at.index(a.len());
                a.remove(i);
            }
        }
        (_, t) => *t = value,
    }
}

/// Every node's JSON Pointer, the root's (`""`) first.
fn pointers(doc: &Value, here: String, out: &mut Vec<String>) {
    out.push(here.clone());
    match doc {
        Value::Object(m) => {
            for (k, v) in m {
                let escaped = k.replace('~', "~0").replace('/', "~1");
                pointers(v, format!("{here}/{escaped}"), out);
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                pointers(v, format!("{here}/{i}"), out);
            }
        }
        _ => {}
    }
}
