//! The CI gate on the compute-only benchmarks: each figure of a bench's JSON named in the
//! gate file must stay within its limit. The limits are generous (several times the figures of
//! this machine class): the gate catches a regression that multiplies a cost, not noise.
//!
//! Gate file: `{"<bench>.json": {"<JSON pointer>": {"max": n} | {"min": n}}}`.

use std::path::Path;

use anyhow::Context;
use serde_json::Value;

/// One figure checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    pub file: String,
    pub pointer: String,
    pub value: f64,
    pub limit: String,
    pub ok: bool,
}

/// Checks every limit of `gate` against the JSON files in `results`.
pub fn check(gate: &Value, results: &Path) -> anyhow::Result<Vec<Checked>> {
    let files = gate
        .as_object()
        .context("the gate file is not a JSON object")?;
    let mut checked = Vec::new();
    for (file, limits) in files {
        let path = results.join(file);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let figures: Value =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        let limits = limits
            .as_object()
            .with_context(|| format!("the limits of {file} are not a JSON object"))?;
        for (pointer, limit) in limits {
            let value = figures
                .pointer(pointer)
                .and_then(Value::as_f64)
                .with_context(|| format!("{file} has no number at {pointer}"))?;
            let (text, ok) = match (
                limit.get("max").and_then(Value::as_f64),
                limit.get("min").and_then(Value::as_f64),
            ) {
                (Some(max), None) => (format!("<= {max}"), value <= max),
                (None, Some(min)) => (format!(">= {min}"), value >= min),
                _ => anyhow::bail!("the limit of {file} {pointer} needs exactly one of max, min"),
            };
            checked.push(Checked {
                file: file.clone(),
                pointer: pointer.clone(),
                value,
                limit: text,
                ok,
            });
        }
    }
    Ok(checked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn figures_over_a_max_or_under_a_min_fail_and_missing_ones_are_errors() {
        let dir = std::env::temp_dir().join(format!("odh-bench-gate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("b.json"),
            json!({"a": {"p99": 12.0}, "rps": 900}).to_string(),
        )
        .unwrap();
        let gate = json!({"b.json": {"/a/p99": {"max": 10}, "/rps": {"min": 500}}});
        let checked = check(&gate, &dir).unwrap();
        assert_eq!(
            checked.iter().map(|c| c.ok).collect::<Vec<_>>(),
            [false, true]
        );
        let missing = json!({"b.json": {"/nope": {"max": 1}}});
        assert!(
            check(&missing, &dir)
                .unwrap_err()
                .to_string()
                .contains("/nope")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
