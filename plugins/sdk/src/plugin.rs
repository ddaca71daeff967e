//! The [`Plugin`] trait and the [`plugin!`](crate::plugin) export macro.

use crate::{
    AdmissionDecision, AdmissionRequest, Error, Manifest, Outcome, ReconcileRequest, RequestKey,
    WatchEvent,
};

/// A policy plugin: one associated function per WIT export. Only [`Plugin::manifest`] is
/// required.
///
/// The functions are plain Rust: call them from native `#[test]`s. [`plugin!`](crate::plugin)
/// turns an implementation into the component's exports.
pub trait Plugin {
    /// Who the plugin is and what it needs. Must not read the cluster.
    fn manifest() -> Manifest;

    /// Checks the admin's settings before a plugin version goes live. Default: any JSON
    /// object (see [`default_validate_settings`]). A plugin with typed settings usually
    /// overrides it with `settings::<MySettings>(json).map(|_| ())`.
    fn validate_settings(settings: &str) -> Result<(), Error> {
        default_validate_settings(settings)
    }

    /// Decides what the world around one primary object should look like.
    fn reconcile(request: ReconcileRequest) -> Result<Outcome, Error> {
        let _ = request;
        Err(not_implemented::<Self>("reconcile"))
    }

    /// Maps a change of a watched object (a `custom` mapping) to primary objects.
    fn map(event: WatchEvent) -> Result<Vec<RequestKey>, Error> {
        let _ = event;
        Err(not_implemented::<Self>("map"))
    }

    /// A mutating webhook's decision.
    fn mutate(request: AdmissionRequest) -> Result<AdmissionDecision, Error> {
        let _ = request;
        Err(not_implemented::<Self>("mutate"))
    }

    /// A validating webhook's decision.
    fn validate(request: AdmissionRequest) -> Result<AdmissionDecision, Error> {
        let _ = request;
        Err(not_implemented::<Self>("validate"))
    }
}

/// Accepts settings that are a JSON object (an empty string counts as `{}`).
pub fn default_validate_settings(settings: &str) -> Result<(), Error> {
    if settings.trim().is_empty() {
        return Ok(());
    }
    match serde_json::from_str::<serde_json::Value>(settings) {
        Ok(serde_json::Value::Object(_)) => Ok(()),
        Ok(other) => Err(Error::Invalid(format!(
            "invalid plugin settings: expected a JSON object, got {}",
            crate::object::json_type(&other)
        ))),
        Err(e) => Err(Error::Invalid(format!("invalid plugin settings: {e}"))),
    }
}

/// `Error::Internal("<export> is not implemented by <plugin>")`, the default of the optional
/// exports (`<plugin>` is the manifest's name).
pub fn not_implemented<P: Plugin + ?Sized>(export: &str) -> Error {
    Error::Internal(format!(
        "{export} is not implemented by {}",
        P::manifest().name
    ))
}

/// Logs a panic's message through the `log` import (at `error`) before the default hook runs
/// and the instance traps, so the host can report why. Installed once by [`plugin!`]'s exports.
pub fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            crate::log::log(
                crate::log::Level::Error,
                &format!("plugin panicked: {info}"),
            );
            default(info);
        }));
    });
}

/// Exports a [`Plugin`] implementation as the component's `odh:controller/plugin` interface.
///
/// Use it once, at the root of the plugin crate: `odh_plugin_sdk::plugin!(MyPlugin);`. Off
/// `wasm32` only the glue is type-checked; nothing is exported.
#[macro_export]
macro_rules! plugin {
    ($plugin:ty) => {
        const _: () = {
            #[allow(dead_code)]
            struct __OdhPluginExport;

            impl $crate::bindings::exports::odh::controller::plugin::Guest for __OdhPluginExport {
                fn manifest() -> $crate::Manifest {
                    $crate::__private::install_panic_hook();
                    <$plugin as $crate::Plugin>::manifest()
                }
                fn validate_settings(
                    settings: ::std::string::String,
                ) -> ::core::result::Result<(), $crate::Error> {
                    $crate::__private::install_panic_hook();
                    <$plugin as $crate::Plugin>::validate_settings(&settings)
                }
                fn reconcile(
                    request: $crate::ReconcileRequest,
                ) -> ::core::result::Result<$crate::Outcome, $crate::Error> {
                    $crate::__private::install_panic_hook();
                    <$plugin as $crate::Plugin>::reconcile(request)
                }
                fn map(
                    event: $crate::WatchEvent,
                ) -> ::core::result::Result<::std::vec::Vec<$crate::RequestKey>, $crate::Error>
                {
                    $crate::__private::install_panic_hook();
                    <$plugin as $crate::Plugin>::map(event)
                }
                fn mutate(
                    request: $crate::AdmissionRequest,
                ) -> ::core::result::Result<$crate::AdmissionDecision, $crate::Error> {
                    $crate::__private::install_panic_hook();
                    <$plugin as $crate::Plugin>::mutate(request)
                }
                fn validate(
                    request: $crate::AdmissionRequest,
                ) -> ::core::result::Result<$crate::AdmissionDecision, $crate::Error> {
                    $crate::__private::install_panic_hook();
                    <$plugin as $crate::Plugin>::validate(request)
                }
            }

            #[cfg(target_arch = "wasm32")]
    $crate::bindings::export!(__OdhPluginExport with_types_in $crate::bindings);
        };
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core_gvk;

    struct Minimal;
    impl Plugin for Minimal {
        fn manifest() -> Manifest {
            Manifest::new("minimal", "0.0.1")
        }
    }
    crate::plugin!(Minimal);

    #[test]
    fn defaults() {
        assert_eq!(Minimal::validate_settings("{}"), Ok(()));
        assert_eq!(Minimal::validate_settings(""), Ok(()));
        assert!(
            matches!(Minimal::validate_settings("[1]"), Err(Error::Invalid(m)) if m.contains("an array"))
        );
        assert!(matches!(
            Minimal::validate_settings("{"),
            Err(Error::Invalid(_))
        ));
        let r = Minimal::reconcile(ReconcileRequest::new("c", None, "x"));
        assert_eq!(
            r,
            Err(Error::Internal(
                "reconcile is not implemented by minimal".into()
            ))
        );
        let a = AdmissionRequest::new("/p", core_gvk("Pod"), crate::Operation::Create);
        assert_eq!(
            Minimal::validate(a),
            Err(Error::Internal(
                "validate is not implemented by minimal".into()
            ))
        );
    }
}
