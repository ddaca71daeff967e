//! [`Error`]: the WIT `error` variant, defined here rather than generated.
//!
//! The bindings are told (`with` in `lib.rs`) to use this type for `odh:controller/types/error`,
//! so it can carry a `Display` that prints `kind: message` (wit-bindgen's generated `Display`
//! prints the `Debug` form) and the `From` conversions `?` needs. Its shape must stay the
//! WIT's: four cases, each with a message.

use std::fmt;

/// Why a call failed. The host treats each case differently.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The input is malformed or violates the plugin's rules; retrying the same input will
    /// fail again. Reconcile: a Warning Event, no fast retry. Admission: denied with HTTP 400.
    Invalid(String),
    /// A policy decision against the request (admission: denied with HTTP 403).
    Denied(String),
    /// Something outside the plugin is not ready yet (a missing dependency, an HTTP failure);
    /// the host retries with exponential back-off.
    Transient(String),
    /// A bug in the plugin. Reported as an Event and a metric; retried with back-off.
    Internal(String),
}

impl Error {
    /// [`Error::Invalid`]: the input is malformed; retrying it fails again.
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::Invalid(message.into())
    }

    /// [`Error::Denied`]: a policy decision against the request.
    pub fn denied(message: impl Into<String>) -> Self {
        Error::Denied(message.into())
    }

    /// [`Error::Transient`]: something outside the plugin is not ready; retried with back-off.
    pub fn transient(message: impl Into<String>) -> Self {
        Error::Transient(message.into())
    }

    /// [`Error::Internal`]: a bug in the plugin.
    pub fn internal(message: impl Into<String>) -> Self {
        Error::Internal(message.into())
    }

    /// The case as in the WIT: `invalid`, `denied`, `transient` or `internal`.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Invalid(_) => "invalid",
            Error::Denied(_) => "denied",
            Error::Transient(_) => "transient",
            Error::Internal(_) => "internal",
        }
    }

    /// The message, whatever the case.
    pub fn message(&self) -> &str {
        match self {
            Error::Invalid(m) | Error::Denied(m) | Error::Transient(m) | Error::Internal(m) => m,
        }
    }

    /// Whether this is a read of a kind the cluster does not serve (the host's
    /// `no matches for kind "<Kind>" in version "<group/version>"`, apimachinery's NoKindMatch):
    /// the CRD is not installed, so there is nothing of that kind to find or remove.
    pub fn is_no_match(&self) -> bool {
        self.message().contains("no matches for kind ")
    }

    /// The same case with `context: ` put before the message.
    pub fn context(self, context: impl fmt::Display) -> Self {
        self.map_message(|m| format!("{context}: {m}"))
    }

    /// The same case with a new message made from the old one.
    pub fn map_message(self, f: impl FnOnce(String) -> String) -> Self {
        match self {
            Error::Invalid(m) => Error::Invalid(f(m)),
            Error::Denied(m) => Error::Denied(f(m)),
            Error::Transient(m) => Error::Transient(f(m)),
            Error::Internal(m) => Error::Internal(f(m)),
        }
    }

    /// Two failures as one: the more urgent case wins (`transient` keeps retrying, then
    /// `internal`, `denied`, `invalid`), the messages are joined with a newline as Go's
    /// `errors.Join` does.
    pub fn join(self, other: Error) -> Error {
        let message = format!("{}\n{}", self.message(), other.message());
        let rank = |e: &Error| match e {
            Error::Transient(_) => 3,
            Error::Internal(_) => 2,
            Error::Denied(_) => 1,
            Error::Invalid(_) => 0,
        };
        let winner = if rank(&other) > rank(&self) {
            other
        } else {
            self
        };
        winner.map_message(|_| message)
    }
}

impl fmt::Display for Error {
    /// `kind: message`, e.g. `denied: reading Secret ns/x is not granted`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind(), self.message())
    }
}

impl std::error::Error for Error {}

impl From<serde_json::Error> for Error {
    /// JSON that does not parse or does not have the expected shape is bad input:
    /// [`Error::Invalid`] with serde's message (`invalid type: ... at line 1 column 4`). An I/O
    /// failure (which only a reader can produce) is [`Error::Internal`].
    fn from(e: serde_json::Error) -> Self {
        match e.classify() {
            serde_json::error::Category::Io => Error::Internal(e.to_string()),
            _ => Error::Invalid(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        let e = Error::denied("no").context("reading Secret ns/x");
        assert_eq!(e, Error::Denied("reading Secret ns/x: no".into()));
        assert_eq!(e.kind(), "denied");
        assert_eq!(e.to_string(), "denied: reading Secret ns/x: no");
    }

    #[test]
    fn join_keeps_the_most_urgent_case() {
        let joined = Error::invalid("a").join(Error::transient("b"));
        assert_eq!(joined, Error::Transient("a\nb".into()));
        let joined = Error::internal("a").join(Error::denied("b"));
        assert_eq!(joined, Error::Internal("a\nb".into()));
        assert_eq!(
            Error::invalid("a").join(Error::invalid("b")),
            Error::Invalid("a\nb".into())
        );
    }

    #[test]
    fn serde_errors_are_invalid_input() {
        let e: Error = serde_json::from_str::<u32>("\"x\"").unwrap_err().into();
        assert!(
            matches!(&e, Error::Invalid(m) if m.starts_with("invalid type: string")),
            "{e}"
        );
        fn parse(s: &str) -> Result<u32, Error> {
            Ok(serde_json::from_str(s)?)
        }
        assert_eq!(parse("7"), Ok(7));
        assert!(matches!(parse("{"), Err(Error::Invalid(_))));
    }
}
