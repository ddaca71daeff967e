//! Why a plugin call failed, in words an operator can act on.

use std::time::Duration;

/// The error a plugin itself returned (the WIT `error` variant).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind", content = "message")]
pub enum GuestError {
    Invalid(String),
    Denied(String),
    Transient(String),
    Internal(String),
}

impl GuestError {
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Invalid(_) => "invalid",
            Self::Denied(_) => "denied",
            Self::Transient(_) => "transient",
            Self::Internal(_) => "internal",
        }
    }

    pub fn message(&self) -> &str {
        match self {
            Self::Invalid(m) | Self::Denied(m) | Self::Transient(m) | Self::Internal(m) => m,
        }
    }
}

impl From<crate::bindings::types::Error> for GuestError {
    fn from(e: crate::bindings::types::Error) -> Self {
        use crate::bindings::types::Error as Wit;
        match e {
            Wit::Invalid(m) => Self::Invalid(m),
            Wit::Denied(m) => Self::Denied(m),
            Wit::Transient(m) => Self::Transient(m),
            Wit::Internal(m) => Self::Internal(m),
        }
    }
}

/// A failed plugin call. Every message names the plugin.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("plugin {plugin:?} {op} failed ({}): {}", .error.kind(), .error.message())]
    Guest {
        plugin: String,
        op: &'static str,
        error: GuestError,
    },
    /// The guest's own execution ran past its deadline (time blocked in host calls is not
    /// counted).
    #[error("plugin {plugin:?} {op} exceeded its execution deadline of {deadline:?}")]
    Timeout {
        plugin: String,
        op: &'static str,
        deadline: Duration,
    },
    #[error("plugin {plugin:?} {op} exceeded its memory limit of {limit_mib} MiB")]
    MemoryLimit {
        plugin: String,
        op: &'static str,
        limit_mib: usize,
    },
    #[error(
        "plugin {plugin:?} {op} could not grow its memory: the host's budget of {budget_mib} MiB for all plugin calls in flight is in use"
    )]
    MemoryBudget {
        plugin: String,
        op: &'static str,
        budget_mib: usize,
    },
    #[error(
        "plugin {plugin:?} {op} trapped: {message}{}",
        .stderr.as_deref().map(|s| format!("; plugin stderr: {s}")).unwrap_or_default()
    )]
    Trap {
        plugin: String,
        op: &'static str,
        message: String,
        /// What the plugin wrote to stderr (a panic's message, summarised), for the log only.
        stderr: Option<String>,
    },
    #[error("plugin {plugin:?} {op} returned {size} bytes, over the limit of {limit} bytes")]
    OutputTooLarge {
        plugin: String,
        op: &'static str,
        size: usize,
        limit: usize,
    },
    #[error("plugin {plugin:?} {op} returned malformed output: {message}")]
    MalformedOutput {
        plugin: String,
        op: &'static str,
        message: String,
    },
    /// The plugin asked for a write its capabilities do not allow; nothing of the call's
    /// result is used.
    #[error(
        "plugin {plugin:?} may not write {kind}: declare it in the manifest's writes and have it granted"
    )]
    WriteRefused {
        plugin: String,
        op: &'static str,
        kind: crate::gvk::Gvk,
    },
    /// The plugin set an owner reference to an object other than its primary: an owner's
    /// deletion would take the object with it (or block on it), so only the host sets owners,
    /// from the ownership the plugin asks for. Nothing of the call's result is used.
    #[error(
        "plugin {plugin:?} may not make {ownership}: only its primary owns what it applies (ask for controller or owner ownership)"
    )]
    ForeignOwner {
        plugin: String,
        kind: crate::gvk::Gvk,
        /// `<object> owned by <owner>`.
        ownership: String,
    },
    #[error("plugin {plugin:?} {op} returned {count} entries, over the limit of {limit}")]
    TooManyEntries {
        plugin: String,
        op: &'static str,
        count: usize,
        limit: usize,
    },
    /// Every concurrency slot of the plugin stayed busy for the call's whole budget.
    #[error("plugin {plugin:?} {op} found no free call slot within {waited:?}")]
    Busy {
        plugin: String,
        op: &'static str,
        waited: Duration,
    },
    #[error("plugin {plugin:?} could not be instantiated: {message}")]
    Instantiate { plugin: String, message: String },
    #[error("plugin {plugin:?} is shutting down")]
    Closed { plugin: String },
}

impl CallError {
    /// The guest's own error, when the plugin returned one (rather than failing to run).
    pub fn guest_error(&self) -> Option<&GuestError> {
        match self {
            Self::Guest { error, .. } => Some(error),
            _ => None,
        }
    }

    /// The plugin and the kind of a write the host refused, for `odh_refused_writes_total`.
    pub fn refused_write(&self) -> Option<(&str, &crate::gvk::Gvk)> {
        match self {
            Self::WriteRefused { plugin, kind, .. } | Self::ForeignOwner { plugin, kind, .. } => {
                Some((plugin, kind))
            }
            _ => None,
        }
    }

    /// The error as a client of the host may read it (an admission denial, an API answer): a
    /// trap's captured plugin stderr stays in the controller's log, since a panic message can
    /// hold whatever the plugin was handling.
    pub fn for_clients(&self) -> String {
        match self {
            Self::Trap {
                plugin,
                op,
                message,
                ..
            } => format!("plugin {plugin:?} {op} trapped: {message}"),
            other => other.to_string(),
        }
    }

    /// A short label for metrics (`guest`, `timeout`, `memory`, `trap`, ...).
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Guest { .. } => "guest",
            Self::Timeout { .. } => "timeout",
            Self::MemoryLimit { .. } | Self::MemoryBudget { .. } => "memory",
            Self::Trap { .. } => "trap",
            Self::OutputTooLarge { .. } | Self::TooManyEntries { .. } => "output_too_large",
            Self::MalformedOutput { .. } => "malformed_output",
            Self::WriteRefused { .. } | Self::ForeignOwner { .. } => "write_refused",
            Self::Busy { .. } => "busy",
            Self::Instantiate { .. } => "instantiate",
            Self::Closed { .. } => "closed",
        }
    }
}
