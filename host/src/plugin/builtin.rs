//! Plugins compiled into the host binary (see build.rs): a fresh deploy works with no
//! ConfigMap at all.

include!(concat!(env!("OUT_DIR"), "/builtin_plugins.rs"));

/// The embedded component bytes of a built-in plugin.
pub fn get(name: &str) -> Option<&'static [u8]> {
    BUILTINS.iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
}

/// Names of every built-in plugin.
pub fn names() -> impl Iterator<Item = &'static str> {
    BUILTINS.iter().map(|(n, _)| *n)
}
