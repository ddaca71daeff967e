//! The [`Plugin`] trait and the [`plugin!`](crate::plugin) export macro.

use serde::de::DeserializeOwned;

use crate::{
    AdmissionDecision, AdmissionRequest, ApiRequest, ApiResponse, ApiRoute, Ctx, Error,
    EventFilter, Manifest, Outcome, ReconcileRequest, RequestKey, Validatable, WatchChange,
    WatchEvent, WebhookSelector,
};

/// A policy plugin: one associated function per WIT export. [`Plugin::Settings`] and
/// [`Plugin::manifest`] are required; every other export has a default.
///
/// The functions are plain Rust: call them from native `#[test]`s with a [`Ctx`] over fakes.
/// [`plugin!`](crate::plugin) turns an implementation into the component's exports, parsing
/// the settings JSON into `Settings` before each call (an empty string is `{}`).
pub trait Plugin {
    /// The admin's settings; [`NoSettings`](crate::NoSettings) for a plugin without any.
    /// `validate-settings` parses them and runs [`Validatable::validate`].
    type Settings: DeserializeOwned + Validatable;

    /// Whether the plugin sends HTTP requests (to the manifest's `http-hosts`). The HTTP
    /// client is linked into the component only when this is true (it costs about 50 KiB);
    /// otherwise the exports' [`Ctx::http`] refuses every request with [`Error::Denied`].
    const USES_HTTP: bool = false;

    /// Whether the plugin writes while it reconciles ([`Ctx::writes`], the `writes` import).
    /// The import is linked into the component only when this is true; otherwise
    /// `cx.writes()` is an [`Error::Internal`] saying so.
    const USES_WRITES: bool = false;

    /// Who the plugin is and what it needs. Must not read the cluster.
    fn manifest() -> Manifest;

    /// Decides what the world around one primary object should look like. Build the outcome
    /// with a [`Plan`](crate::Plan).
    fn reconcile(request: &ReconcileRequest, cx: &Ctx<Self::Settings>) -> Result<Outcome, Error> {
        let _ = (request, cx);
        Err(not_implemented::<Self>("reconcile"))
    }

    /// Maps a change of a watched object (a `custom` mapping) to primary objects.
    fn map(event: &WatchEvent, cx: &Ctx<Self::Settings>) -> Result<Vec<RequestKey>, Error> {
        let _ = (event, cx);
        Err(not_implemented::<Self>("map"))
    }

    /// Maps a change of a watched object (a `custom` mapping) with its previous state
    /// (`change.old_object`, none for a creation or when the host did not know it). By default
    /// the new object alone goes to [`Plugin::map`]; override it where the previous state
    /// matters (references that moved from one object to another).
    fn map_change(
        change: &WatchChange,
        cx: &Ctx<Self::Settings>,
    ) -> Result<Vec<RequestKey>, Error> {
        Self::map(&change.to_event(), cx)
    }

    /// A mutating webhook's decision.
    fn mutate(
        request: &AdmissionRequest,
        cx: &Ctx<Self::Settings>,
    ) -> Result<AdmissionDecision, Error> {
        let _ = (request, cx);
        Err(not_implemented::<Self>("mutate"))
    }

    /// A validating webhook's decision.
    fn validate(
        request: &AdmissionRequest,
        cx: &Ctx<Self::Settings>,
    ) -> Result<AdmissionDecision, Error> {
        let _ = (request, cx);
        Err(not_implemented::<Self>("validate"))
    }

    /// Label selectors scoping the manifest's webhooks (none by default: a webhook reviews
    /// every object of its kind). Objects outside a webhook's object selector never reach
    /// [`Plugin::mutate`] or [`Plugin::validate`]: the host writes the selectors into the
    /// webhook configuration and admits a request whose object and old object both miss it
    /// without calling the plugin. Like the manifest, called once at load.
    fn webhook_selectors() -> Vec<WebhookSelector> {
        Vec::new()
    }

    /// Event filters: upstream's predicates, evaluated by the host on every watch event before
    /// any call (none by default: every event of a declared kind reaches the plugin). Like the
    /// manifest, called once at load.
    fn event_filters() -> Vec<EventFilter> {
        Vec::new()
    }

    /// The HTTP routes the plugin serves (none by default). Like the manifest, called once
    /// at load and must not read the cluster.
    fn routes() -> Vec<ApiRoute> {
        Vec::new()
    }

    /// Answers one request to a declared route (`cx.caller` tells what the caller of a
    /// `bearer` route may do). An error is answered 500 `{"error":"internal server error"}`
    /// (`Invalid`: 400 with the message).
    fn handle(request: &ApiRequest, cx: &Ctx<Self::Settings>) -> Result<ApiResponse, Error> {
        let _ = (request, cx);
        Err(not_implemented::<Self>("handle"))
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

/// The export glue behind [`plugin!`](crate::plugin): each function installs the panic hook,
/// parses the settings the request carries and calls the plugin with the host's [`Ctx`].
pub mod glue {
    use super::*;
    use crate::parse_settings;

    /// Logs a panic's message through the `log` import (at `error`) before the default hook
    /// runs and the instance traps, so the host can report why.
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

    fn with_settings<P: Plugin, T>(
        settings: &str,
        call: impl FnOnce(&Ctx<P::Settings>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        install_panic_hook();
        let settings = parse_settings::<P::Settings>(settings)?;
        // A constant per plugin: the branch not taken, and with it the HTTP client of a
        // plugin that sends no requests, is left out of the component.
        let http: &dyn crate::http::Client = if P::USES_HTTP {
            &crate::http::Host
        } else {
            &crate::http::Off
        };
        let cx = Ctx::host(&settings, http);
        // The same for the writes import.
        if P::USES_WRITES {
            call(&cx.with_writes(&crate::writes::Host))
        } else {
            call(&cx)
        }
    }

    pub fn manifest<P: Plugin>() -> Manifest {
        install_panic_hook();
        P::manifest()
    }

    pub fn validate_settings<P: Plugin>(settings: &str) -> Result<(), Error> {
        install_panic_hook();
        crate::validate_settings::<P::Settings>(settings)
    }

    pub fn reconcile<P: Plugin>(request: ReconcileRequest) -> Result<Outcome, Error> {
        with_settings::<P, _>(&request.settings, |cx| P::reconcile(&request, cx))
    }

    pub fn map<P: Plugin>(event: WatchEvent) -> Result<Vec<RequestKey>, Error> {
        with_settings::<P, _>(&event.settings, |cx| P::map(&event, cx))
    }

    pub fn map_change<P: Plugin>(change: WatchChange) -> Result<Vec<RequestKey>, Error> {
        with_settings::<P, _>(&change.settings, |cx| P::map_change(&change, cx))
    }

    pub fn event_filters<P: Plugin>() -> Vec<EventFilter> {
        install_panic_hook();
        P::event_filters()
    }

    pub fn mutate<P: Plugin>(request: AdmissionRequest) -> Result<AdmissionDecision, Error> {
        with_settings::<P, _>(&request.settings, |cx| P::mutate(&request, cx))
    }

    pub fn validate<P: Plugin>(request: AdmissionRequest) -> Result<AdmissionDecision, Error> {
        with_settings::<P, _>(&request.settings, |cx| P::validate(&request, cx))
    }

    pub fn webhook_selectors<P: Plugin>() -> Vec<WebhookSelector> {
        install_panic_hook();
        P::webhook_selectors()
    }

    pub fn routes<P: Plugin>() -> Vec<ApiRoute> {
        install_panic_hook();
        P::routes()
    }

    pub fn handle<P: Plugin>(request: ApiRequest) -> Result<ApiResponse, Error> {
        with_settings::<P, _>(&request.settings, |cx| P::handle(&request, cx))
    }
}

/// Exports a [`Plugin`] implementation as the component's `odh:controller/plugin`,
/// `http-api`, `webhook-selectors`, `event-filters` and `change-mapping` interfaces (world
/// `filtered-policy`).
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
                    $crate::__private::glue::manifest::<$plugin>()
                }
                fn validate_settings(
                    settings: ::std::string::String,
                ) -> ::core::result::Result<(), $crate::Error> {
                    $crate::__private::glue::validate_settings::<$plugin>(&settings)
                }
                fn reconcile(
                    request: $crate::ReconcileRequest,
                ) -> ::core::result::Result<$crate::Outcome, $crate::Error> {
                    $crate::__private::glue::reconcile::<$plugin>(request)
                }
                fn map(
                    event: $crate::WatchEvent,
                ) -> ::core::result::Result<::std::vec::Vec<$crate::RequestKey>, $crate::Error>
                {
                    $crate::__private::glue::map::<$plugin>(event)
                }
                fn mutate(
                    request: $crate::AdmissionRequest,
                ) -> ::core::result::Result<$crate::AdmissionDecision, $crate::Error> {
                    $crate::__private::glue::mutate::<$plugin>(request)
                }
                fn validate(
                    request: $crate::AdmissionRequest,
                ) -> ::core::result::Result<$crate::AdmissionDecision, $crate::Error> {
                    $crate::__private::glue::validate::<$plugin>(request)
                }
            }

            impl $crate::bindings::exports::odh::controller::http_api::Guest for __OdhPluginExport {
                fn routes() -> ::std::vec::Vec<$crate::ApiRoute> {
                    $crate::__private::glue::routes::<$plugin>()
                }
                fn handle(
                    request: $crate::ApiRequest,
                ) -> ::core::result::Result<$crate::ApiResponse, $crate::Error> {
                    $crate::__private::glue::handle::<$plugin>(request)
                }
            }

            impl $crate::bindings::exports::odh::controller::webhook_selectors::Guest
                for __OdhPluginExport
            {
                fn selectors() -> ::std::vec::Vec<$crate::WebhookSelector> {
                    $crate::__private::glue::webhook_selectors::<$plugin>()
                }
            }

            impl $crate::bindings::exports::odh::controller::event_filters::Guest
                for __OdhPluginExport
            {
                fn filters() -> ::std::vec::Vec<$crate::EventFilter> {
                    $crate::__private::glue::event_filters::<$plugin>()
                }
            }

            impl $crate::bindings::exports::odh::controller::change_mapping::Guest
                for __OdhPluginExport
            {
                fn map_change(
                    change: $crate::WatchChange,
                ) -> ::core::result::Result<::std::vec::Vec<$crate::RequestKey>, $crate::Error>
                {
                    $crate::__private::glue::map_change::<$plugin>(change)
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
    use crate::bindings::exports::odh::controller::http_api::Guest as ApiGuest;
    use crate::bindings::exports::odh::controller::plugin::Guest;
    use crate::{NoSettings, Validatable, core_gvk};

    struct Minimal;
    impl Plugin for Minimal {
        type Settings = NoSettings;
        fn manifest() -> Manifest {
            Manifest::new("minimal", "0.0.1")
        }
    }

    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Greeting {
        #[serde(default)]
        word: String,
    }
    impl Validatable for Greeting {
        fn validate(&self) -> Result<(), String> {
            if self.word.contains(' ') {
                Err("word: one word only".into())
            } else {
                Ok(())
            }
        }
    }

    /// Answers every export with what its settings say, to show the glue parses them.
    struct Greeter;
    impl Plugin for Greeter {
        type Settings = Greeting;
        fn manifest() -> Manifest {
            Manifest::new("greeter", "0.0.1")
        }
        fn reconcile(_: &ReconcileRequest, cx: &Ctx<Greeting>) -> Result<Outcome, Error> {
            let mut plan = crate::Plan::new();
            plan.event_normal("Greeted", cx.settings.word.clone());
            Ok(plan.into_outcome())
        }
        fn routes() -> Vec<ApiRoute> {
            vec![ApiRoute::public("/greet")]
        }
        fn handle(_: &ApiRequest, cx: &Ctx<Greeting>) -> Result<ApiResponse, Error> {
            Ok(ApiResponse::json(200, &cx.settings.word))
        }
    }

    mod minimal_export {
        crate::plugin!(super::Minimal);
    }

    struct Glue;
    impl Guest for Glue {
        fn manifest() -> Manifest {
            glue::manifest::<Greeter>()
        }
        fn validate_settings(settings: String) -> Result<(), Error> {
            glue::validate_settings::<Greeter>(&settings)
        }
        fn reconcile(request: ReconcileRequest) -> Result<Outcome, Error> {
            glue::reconcile::<Greeter>(request)
        }
        fn map(event: WatchEvent) -> Result<Vec<RequestKey>, Error> {
            glue::map::<Greeter>(event)
        }
        fn mutate(request: AdmissionRequest) -> Result<AdmissionDecision, Error> {
            glue::mutate::<Greeter>(request)
        }
        fn validate(request: AdmissionRequest) -> Result<AdmissionDecision, Error> {
            glue::validate::<Greeter>(request)
        }
    }
    impl ApiGuest for Glue {
        fn routes() -> Vec<ApiRoute> {
            glue::routes::<Greeter>()
        }
        fn handle(request: ApiRequest) -> Result<ApiResponse, Error> {
            glue::handle::<Greeter>(request)
        }
    }

    #[test]
    fn defaults() {
        let cx = Ctx::new(&NoSettings, &crate::cluster::Host);
        let r = Minimal::reconcile(&ReconcileRequest::new("c", None, "x"), &cx);
        assert_eq!(
            r,
            Err(Error::Internal(
                "reconcile is not implemented by minimal".into()
            ))
        );
        let a = AdmissionRequest::new("/p", core_gvk("Pod"), crate::Operation::Create);
        assert_eq!(
            Minimal::validate(&a, &cx),
            Err(Error::Internal(
                "validate is not implemented by minimal".into()
            ))
        );
        assert!(Minimal::routes().is_empty());
        assert!(matches!(
            Minimal::handle(&ApiRequest::new("GET", "/"), &cx),
            Err(Error::Internal(m)) if m == "handle is not implemented by minimal"
        ));
    }

    #[test]
    fn the_glue_parses_settings_before_each_export() {
        let request =
            ReconcileRequest::new("c", None, "x").with_settings(serde_json::json!({"word": "hi"}));
        let outcome = <Glue as Guest>::reconcile(request).unwrap();
        assert_eq!(outcome.events[0].message, "hi");
        let mut bare = ReconcileRequest::new("c", None, "x");
        bare.settings = String::new();
        assert_eq!(
            <Glue as Guest>::reconcile(bare).unwrap().events[0].message,
            ""
        );
        let mut typo = ReconcileRequest::new("c", None, "x");
        typo.settings = r#"{"wrod": "hi"}"#.into();
        assert!(matches!(
            <Glue as Guest>::reconcile(typo),
            Err(Error::Invalid(m)) if m.starts_with("invalid plugin settings: unknown field `wrod`")
        ));
        let api = ApiRequest::new("GET", "/greet").with_settings(serde_json::json!({"word": "yo"}));
        assert_eq!(<Glue as ApiGuest>::handle(api).unwrap().body, br#""yo""#);
        assert_eq!(<Glue as ApiGuest>::routes(), [ApiRoute::public("/greet")]);
        assert_eq!(<Glue as Guest>::manifest().name, "greeter");
    }

    /// Reports what a GET through the export's HTTP client gave, as an event.
    struct Fetcher<const HTTP: bool>;
    impl<const HTTP: bool> Plugin for Fetcher<HTTP> {
        type Settings = NoSettings;
        const USES_HTTP: bool = HTTP;
        fn manifest() -> Manifest {
            Manifest::new("fetcher", "0.0.1")
        }
        fn reconcile(_: &ReconcileRequest, cx: &Ctx<NoSettings>) -> Result<Outcome, Error> {
            let mut plan = crate::Plan::new();
            let e = cx
                .http
                .request(&crate::http::Request::get("http://x/"))
                .unwrap_err();
            plan.event_normal("Fetched", e.to_string());
            Ok(plan.into_outcome())
        }
    }

    #[test]
    fn http_is_the_hosts_only_for_plugins_that_use_it() {
        let request = || ReconcileRequest::new("c", None, "x");
        let off = glue::reconcile::<Fetcher<false>>(request()).unwrap();
        assert!(
            off.events[0]
                .message
                .starts_with("denied: http: GET http://x/ refused")
        );
        let on = glue::reconcile::<Fetcher<true>>(request()).unwrap();
        assert!(
            on.events[0]
                .message
                .starts_with("transient: http is only available inside")
        );
    }

    #[test]
    fn validate_settings_parses_and_validates() {
        assert_eq!(<Glue as Guest>::validate_settings("{}".into()), Ok(()));
        assert_eq!(
            <Glue as Guest>::validate_settings(r#"{"word": "two words"}"#.into()),
            Err(Error::Invalid(
                "invalid plugin settings: word: one word only".into()
            ))
        );
        assert!(matches!(
            <Glue as Guest>::validate_settings("[1]".into()),
            Err(Error::Invalid(_))
        ));
    }
}
