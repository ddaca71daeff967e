//! Every ```rust snippet of docs/plugin-authors.md, compiled against the SDK in the context the
//! guide's text gives it (the names a snippet uses without defining them are defined here, as a
//! plugin author's crate would have them). A snippet that stops compiling — an SDK rename, an
//! undefined name, a missing import — fails the workspace build, and a snippet added to the
//! guide without a context here fails it too (`SNIPPETS`). Nothing here runs: the guide's
//! behaviour is tested where the SDK and the example plugins are.
#![allow(dead_code, unused, clippy::all)]

include!(concat!(env!("OUT_DIR"), "/count.rs"));

const _: () = assert!(
    SNIPPETS == 13,
    "docs/plugin-authors.md gained or lost a ```rust snippet: give each one a context in tests/doc-snippets/src/lib.rs"
);

macro_rules! snippet {
    ($n:literal) => {
        include!(concat!(env!("OUT_DIR"), "/snippet_", $n, ".rs"));
    };
}

macro_rules! snippet_block {
    ($n:literal) => {
        include!(concat!(env!("OUT_DIR"), "/snippet_", $n, "_block.rs"))
    };
}

macro_rules! snippet_list {
    ($n:literal) => {
        include!(concat!(env!("OUT_DIR"), "/snippet_", $n, "_list.rs"))
    };
}

/// §1: the whole of a working plugin.
mod hello {
    snippet!(0);
}

/// §1.1: a reconcile with no object undoes what the key names.
mod gone {
    use odh_plugin_sdk::{Error, Plan, ReconcileRequest, core_gvk, object_key};

    fn reconcile(request: &ReconcileRequest) -> Result<(), Error> {
        let mut plan = Plan::new();
        snippet_block!(1);
        Ok(())
    }
}

/// §1.1: event filters, an item of the plugin's `impl Plugin`.
mod event_filters {
    use odh_plugin_sdk::{EventFilter, core_gvk};

    snippet!(2);

    #[test]
    fn the_guides_filters_are_well_formed() {
        let filters = event_filters();
        assert_eq!(filters.len(), 2);
        assert_eq!(filters[0].names.len(), 3);
        assert!(!filters[1].delete);
    }
}

/// §1.2: settings.
mod settings {
    snippet!(3);
}

/// §1.4: finalizers.
mod finalizers {
    use odh_plugin_sdk::{Ctx, Error, NoSettings, Object, Plan, ReconcileRequest};

    const FINALIZER: &str = "example.com/cleanup";

    fn apply(object: &Object, cx: &Ctx<NoSettings>, plan: &mut Plan) -> Result<(), Error> {
        Ok(())
    }

    fn cleanup(object: &Object, cx: &Ctx<NoSettings>, plan: &mut Plan) -> Result<(), Error> {
        Ok(())
    }

    fn reconcile(request: &ReconcileRequest, cx: &Ctx<NoSettings>) -> Result<(), Error> {
        let mut plan = Plan::new();
        snippet_block!(4);
        Ok(())
    }
}

/// §1.5: webhook selectors.
mod selectors {
    use odh_plugin_sdk::WebhookSelector;

    snippet!(5);
}

/// §1.6: outgoing HTTP.
mod http {
    use odh_plugin_sdk::http::Request;
    use odh_plugin_sdk::{Ctx, Error, NoSettings, Value};

    fn call(cx: &Ctx<NoSettings>, url: String) -> Result<(), Error> {
        snippet_block!(6);
        Ok(())
    }
}

/// §1.7: serving HTTP routes.
mod routes {
    use odh_plugin_sdk::caller::AccessAttributes;
    use odh_plugin_sdk::{
        ApiRequest, ApiResponse, ApiRoute, Ctx, Error, NoSettings, core_gvk, json,
    };

    snippet!(7);
}

/// §1.9: testing natively.
mod native_tests {
    use odh_plugin_sdk::{
        Controller, Ctx, Error, Manifest, Outcome, Ownership, Plan, Plugin, ReconcileRequest,
        core_gvk,
    };

    #[derive(serde::Deserialize, Default)]
    struct Settings {}

    impl odh_plugin_sdk::Validatable for Settings {}

    struct MyPlugin;

    impl Plugin for MyPlugin {
        type Settings = Settings;

        fn manifest() -> Manifest {
            Manifest::new("my-plugin", "0.1.0")
                .controller(Controller::new("my-controller", core_gvk("ConfigMap")))
        }

        fn reconcile(_: &ReconcileRequest, _: &Ctx<Settings>) -> Result<Outcome, Error> {
            Ok(Plan::new().into_outcome())
        }
    }

    fn test(settings: Settings) -> Result<(), Error> {
        snippet_block!(8);
        Ok(())
    }
}

/// §5.2: typed settings.
mod typed_settings {
    use odh_plugin_sdk::Validatable;
    use serde::Deserialize;

    fn one() -> u32 {
        1
    }

    snippet!(9);
}

/// §5.3: a manifest that needs no grants.
mod vendor_manifest {
    use odh_kinds::gvk;
    use odh_plugin_sdk::Operation::{Create, Update};
    use odh_plugin_sdk::{Controller, Manifest, Webhook, WebhookSelector};

    const MUTATE_PATH: &str = "/mutate-example-com-servingruntime";
    const VALIDATE_PATH: &str = "/validate-example-com-servingruntime";
    const SELECTOR: &str = "runtimes.example.com/vendor=example";

    snippet!(10);
}

/// §5.4: the vendor's admission cases.
mod vendor_tests {
    use odh_plugin_sdk::Operation::{self, Create};
    use odh_plugin_sdk::testing::{Case, FakeCluster};
    use odh_plugin_sdk::{AdmissionDecision, AdmissionRequest, Ctx, Error, Manifest, Object};

    struct Settings {
        image_registry: String,
        default_min_replicas: u32,
    }

    struct VendorRuntime;

    impl VendorRuntime {
        fn manifest() -> Manifest {
            Manifest::new("vendor-runtime", "0.1.0")
        }

        fn validate(_: &AdmissionRequest, _: &Ctx<Settings>) -> Result<AdmissionDecision, Error> {
            Ok(AdmissionDecision::allow())
        }
    }

    fn request(operation: Operation, runtime: &Object) -> AdmissionRequest {
        AdmissionRequest::for_object("/validate-example-com-servingruntime", operation, runtime)
    }

    fn runtime(name: &str) -> Object {
        Object(odh_plugin_sdk::json!({"metadata": {"name": name}}))
    }

    fn denied(image: &str) -> String {
        format!("refused: {image}")
    }

    fn cases(foreign: Object, bad_annotation: Object) {
        snippet_block!(11);
    }
}

/// "Adding a built-in plugin": a registration entry.
mod builtin_entry {
    use odh_model_controller::builtins::{Builtin, FromProcess, RbacNeeds, Webhook};

    fn entries() -> [Builtin; 1] {
        snippet_list!(12)
    }
}
