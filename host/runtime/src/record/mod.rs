//! Recording real calls so a candidate version can be replayed against them (`plugin replay`):
//! the line format and what is redacted from it.

mod line;
mod redact;

pub use line::{
    AdmissionRecord, Answer, FORMAT, ReconcileRecord, RecordLine, RecordedCall, RecordedError,
    RecordedPlugin, rfc3339,
};
pub use redact::{REDACTED, redact_decision, redact_outcome, redact_value};
