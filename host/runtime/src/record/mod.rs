//! Recording real calls so a candidate version can be replayed against them (`plugin replay`):
//! the line format, what is redacted from it, the reads a call made, and the bounded recorder a
//! slot holds.

mod line;
mod reads;
mod recorder;
mod redact;
pub mod replay;

pub use line::{
    AdmissionRecord, Answer, FORMAT, ReconcileRecord, RecordLine, RecordedCall, RecordedError,
    RecordedPlugin, rfc3339,
};
pub use reads::{RecordingView, distinct_objects};
pub use recorder::{FLUSH_EVERY, RecordConfig, Recorder, RecorderStats, segment_files};
pub use redact::{REDACTED, redact_decision, redact_outcome, redact_value};
