//! Logging into the host's structured log (tagged by the host with the plugin and request).
//!
//! ```
//! odh_plugin_sdk::log::info!("reconciling {}/{}", "ns", "name");
//! odh_plugin_sdk::log::log(odh_plugin_sdk::log::Level::Warn, "plain message");
//! ```
//!
//! Off `wasm32` (native tests) messages go to stderr.

pub use crate::bindings::odh::controller::log::Level;

/// Logs `message` at `level`.
pub fn log(level: Level, message: &str) {
    #[cfg(target_arch = "wasm32")]
    crate::bindings::odh::controller::log::log(level, message);
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("[{}] {message}", level_name(level));
}

/// `trace`, `debug`, `info`, `warn` or `error`.
pub fn level_name(level: Level) -> &'static str {
    match level {
        Level::Trace => "trace",
        Level::Debug => "debug",
        Level::Info => "info",
        Level::Warn => "warn",
        Level::Error => "error",
    }
}

#[doc(hidden)]
#[macro_export]
macro_rules! __odh_log {
    ($level:ident, $($arg:tt)+) => {
        $crate::log::log($crate::log::Level::$level, &::std::format!($($arg)+))
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __odh_log_trace {
    ($($arg:tt)+) => { $crate::__odh_log!(Trace, $($arg)+) };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __odh_log_debug {
    ($($arg:tt)+) => { $crate::__odh_log!(Debug, $($arg)+) };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __odh_log_info {
    ($($arg:tt)+) => { $crate::__odh_log!(Info, $($arg)+) };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __odh_log_warn {
    ($($arg:tt)+) => { $crate::__odh_log!(Warn, $($arg)+) };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __odh_log_error {
    ($($arg:tt)+) => { $crate::__odh_log!(Error, $($arg)+) };
}

/// `log::trace!("fmt", args..)`: [`log`] at [`Level::Trace`].
#[doc(inline)]
pub use crate::__odh_log_trace as trace;

/// `log::debug!("fmt", args..)`: [`log`] at [`Level::Debug`].
#[doc(inline)]
pub use crate::__odh_log_debug as debug;

/// `log::info!("fmt", args..)`: [`log`] at [`Level::Info`].
#[doc(inline)]
pub use crate::__odh_log_info as info;

/// `log::warn!("fmt", args..)`: [`log`] at [`Level::Warn`].
#[doc(inline)]
pub use crate::__odh_log_warn as warn;

/// `log::error!("fmt", args..)`: [`log`] at [`Level::Error`].
#[doc(inline)]
pub use crate::__odh_log_error as error;

#[cfg(test)]
mod tests {
    #[test]
    fn macros_expand() {
        let n = 3;
        crate::log::trace!("t {n}");
        crate::log::debug!("d {}", n);
        crate::log::info!("i");
        crate::log::warn!("w");
        crate::log::error!("e");
    }
}
