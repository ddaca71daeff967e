//! Kubernetes resource quantities, as far as HardwareProfile `defaultCount` needs them.
//!
//! A profile's count is written into `resources.requests`/`limits`, and the Go webhook writes it
//! in apimachinery's canonical form (`resource.Quantity.String()`), so this module reproduces
//! apimachinery's parser (`ParseQuantity`, error texts included) and its canonical formatting
//! rather than passing strings through: `"1000m"` must become `"1"`, `"1.5Gi"` `"1536Mi"`, and a
//! string the Go parser rejects must be rejected with the same message.
//!
//! Only the canonical string is kept; no arithmetic is offered. Values are computed exactly with
//! 128-bit integers; a value too large even for that (far beyond any real resource) keeps its
//! original spelling, which the API server canonicalises on storage anyway.

mod canonical;
mod scan;

use std::fmt;

use odh_plugin_sdk::Value;

use odh_plugin_sdk::go;

/// A parsed quantity, held as the string Kubernetes would serialise it as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quantity(String);

/// Why a string is not a quantity; `Display` gives apimachinery's message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuantityError {
    /// The string does not match apimachinery's quantity regular expression.
    FormatWrong,
    /// The numeric part cannot be read.
    Numeric,
    /// The suffix is not a known SI, binary or exponent suffix.
    Suffix,
}

impl fmt::Display for QuantityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            QuantityError::FormatWrong => {
                "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
            }
            QuantityError::Numeric => "unable to parse numeric part of quantity",
            QuantityError::Suffix => "unable to parse quantity's suffix",
        })
    }
}

impl std::error::Error for QuantityError {}

impl Quantity {
    /// Parses a quantity string (`"4"`, `"500m"`, `"8Gi"`, `"1e3"`) like apimachinery's
    /// `ParseQuantity`.
    pub fn parse(text: &str) -> Result<Quantity, QuantityError> {
        scan::parse(text).map(Quantity)
    }

    /// An integer count in decimal SI form (Go's `resource.NewQuantity(v, DecimalSI)`).
    pub fn from_i64(value: i64) -> Quantity {
        Quantity(canonical::decimal_si(value))
    }

    /// A `defaultCount` as a HardwareProfile holds it: an integer, a float (truncated towards
    /// zero, as Go's `int64(f)`), or a quantity string. Anything else is an error naming the Go
    /// type the Go webhook would have seen (`unexpected type bool for resource quantity`).
    pub fn from_json(value: Option<&Value>) -> Result<Quantity, String> {
        match value {
            Some(Value::Number(n)) => match n.as_i64() {
                Some(i) => Ok(Quantity::from_i64(i)),
                // Floats and integers beyond int64 both decode to float64 in Go; `as`
                // truncates and saturates.
                None => Ok(Quantity::from_i64(n.as_f64().unwrap_or_default() as i64)),
            },
            Some(Value::String(s)) => Quantity::parse(s).map_err(|e| e.to_string()),
            other => Err(format!(
                "unexpected type {} for resource quantity",
                go::type_name(other)
            )),
        }
    }

    /// The canonical string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<Quantity> for Value {
    fn from(quantity: Quantity) -> Value {
        Value::String(quantity.0)
    }
}

impl From<&Quantity> for Value {
    fn from(quantity: &Quantity) -> Value {
        Value::String(quantity.0.clone())
    }
}

#[cfg(test)]
mod tests;
