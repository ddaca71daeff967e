//! An example vendor plugin: what a serving-runtime vendor would write in a repository of its
//! own, against the SDK and the shared kinds only. For every ServingRuntime labelled
//! `runtimes.example.com/vendor=example`:
//!
//! * reconcile: a ConfigMap `<runtime>-vendor-info` summarising its images and model formats
//!   (and removing it when the runtime loses the label);
//! * mutate (CREATE, UPDATE): defaults the annotation `runtimes.example.com/min-replicas` from
//!   `settings.defaultMinReplicas`;
//! * validate (CREATE, UPDATE): refuses container images outside `settings.imageRegistry` and a
//!   min-replicas annotation that is not a number, where an UPDATE introduces them.
//!
//! Runtimes without the label are left alone by all three: the controller's primary selector
//! and the webhooks' object selectors keep them away (the API server does not call the
//! webhooks for them, so a failing vendor plugin cannot block anyone else's runtimes), and the
//! webhooks check the label again for an UPDATE that removes it, which still reaches them (its
//! old object matches). It reads and writes only its primary and owned kinds, so a plugins
//! ConfigMap entry needs no `grants` for it.
//!
//! Size: built with the workspace's `wasm` profile (`make plugins`) the component is about
//! 220 KiB, 80 KiB gzipped (`release`: about 310 KiB), well under the 1 MiB a ConfigMap holds.
//! It stays small by depending on the SDK's `Object` views instead of typed Kubernetes models.
//! docs/plugin-authors.md, "The vendor path, end to end", walks through building, testing and
//! shipping it.

use odh_kinds::gvk;
use odh_plugin_sdk::Operation::{Create, Update};
use odh_plugin_sdk::{
    AdmissionDecision, AdmissionRequest, Controller, Ctx, Error, Manifest, Object, Outcome, Plan,
    Plugin, ReconcileRequest, Validatable, Value, Webhook, WebhookSelector, json, object_key,
};
use serde::Deserialize;

/// The plugin's name: its key in the plugins ConfigMap.
pub const NAME: &str = "vendor-runtime";
/// The controller's name (`plugin eval --controller`).
pub const CONTROLLER: &str = "vendor-runtime";
/// The label marking the vendor's runtimes, and its value.
pub const VENDOR_LABEL: &str = "runtimes.example.com/vendor";
pub const VENDOR: &str = "example";
/// The controller's primary selector: the two above.
pub const SELECTOR: &str = "runtimes.example.com/vendor=example";
/// The annotation the mutating webhook defaults.
pub const MIN_REPLICAS: &str = "runtimes.example.com/min-replicas";
/// Webhook paths; unique among every plugin a host serves, hence the vendor's domain in them.
pub const MUTATE_PATH: &str = "/mutate-example-com-servingruntime";
pub const VALIDATE_PATH: &str = "/validate-example-com-servingruntime";

const INFO_SUFFIX: &str = "-vendor-info";
// A ConfigMap's name is a DNS subdomain; a runtime whose name leaves no room for the suffix gets
// a Warning Event instead of a create the API server would refuse on every retry.
const MAX_NAME: usize = 253;

/// The admin's settings (the `settings` of the plugin's ConfigMap entry).
#[derive(Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// Registry host and optional path every image must be under, without a scheme or a
    /// trailing slash: `registry.example.com/runtimes`. Required: a vendor plugin that let
    /// any image through by default would police nothing.
    pub image_registry: String,
    /// What the mutating webhook sets `runtimes.example.com/min-replicas` to when absent.
    #[serde(default = "one")]
    pub default_min_replicas: u32,
}

fn one() -> u32 {
    1
}

impl Validatable for Settings {
    fn validate(&self) -> Result<(), String> {
        let registry = &self.image_registry;
        if registry.is_empty() {
            return Err("imageRegistry: must not be empty".into());
        }
        if registry.contains("://") {
            return Err(format!(
                "imageRegistry: {registry:?} has a scheme; give the registry as images name it (registry.example.com/runtimes)"
            ));
        }
        if registry.ends_with('/') {
            return Err(format!(
                "imageRegistry: {registry:?} ends with '/'; leave it out (images must be under \"{}/\")",
                registry.trim_end_matches('/')
            ));
        }
        if registry.chars().any(char::is_whitespace) {
            return Err(format!("imageRegistry: {registry:?} contains whitespace"));
        }
        Ok(())
    }
}

pub struct VendorRuntime;

impl Plugin for VendorRuntime {
    type Settings = Settings;

    fn manifest() -> Manifest {
        let runtime = gvk::serving_runtime();
        // Reads of ServingRuntimes and ConfigMaps, writes of ConfigMaps: all follow from the
        // controller, which is what a new plugin holds without grants.
        Manifest::new(NAME, "0.1.0")
            .description("Summarises, defaults and polices the example vendor's ServingRuntimes")
            .controller(
                Controller::new(CONTROLLER, runtime.clone())
                    .primary_label_selector(SELECTOR)
                    .owns(gvk::config_map()),
            )
            .webhook(Webhook::mutating(
                MUTATE_PATH,
                runtime.clone(),
                [Create, Update],
            ))
            .webhook(Webhook::validating(
                VALIDATE_PATH,
                runtime,
                [Create, Update],
            ))
    }

    fn webhook_selectors() -> Vec<WebhookSelector> {
        [MUTATE_PATH, VALIDATE_PATH]
            .map(|path| WebhookSelector::new(path).object_selector(SELECTOR))
            .into()
    }

    fn reconcile(request: &ReconcileRequest, cx: &Ctx<Settings>) -> Result<Outcome, Error> {
        let mut plan = Plan::new();
        if let Some(runtime) = request.object()? {
            reconcile(&runtime, cx.settings, &mut plan);
        }
        // A runtime that is gone takes its ConfigMap with it (owner reference): nothing to do.
        Ok(plan.into_outcome())
    }

    fn mutate(request: &AdmissionRequest, cx: &Ctx<Settings>) -> Result<AdmissionDecision, Error> {
        Ok(
            match request.object()?.and_then(|r| defaulted(&r, cx.settings)) {
                Some(runtime) => AdmissionDecision::mutated(runtime),
                None => AdmissionDecision::allow(),
            },
        )
    }

    fn validate(
        request: &AdmissionRequest,
        cx: &Ctx<Settings>,
    ) -> Result<AdmissionDecision, Error> {
        let old = request.old_object()?;
        Ok(match request.object()? {
            Some(runtime) => review(&runtime, old.as_ref(), cx.settings),
            None => AdmissionDecision::allow(),
        })
    }
}

odh_plugin_sdk::plugin!(VendorRuntime);

/// Whether the runtime is the vendor's (carries the vendor label).
pub fn is_vendors(runtime: &Object) -> bool {
    runtime.label(VENDOR_LABEL) == Some(VENDOR)
}

/// The name of the runtime's summary ConfigMap.
pub fn info_name(runtime: &Object) -> String {
    format!("{}{INFO_SUFFIX}", runtime.name())
}

/// What one reconcile of a live runtime decides.
pub fn reconcile(runtime: &Object, settings: &Settings, plan: &mut Plan) {
    if runtime.is_deleting() {
        return;
    }
    let name = info_name(runtime);
    if name.len() > MAX_NAME {
        plan.event_warning(
            "VendorInfoNameTooLong",
            format!(
                "{NAME}: no {name:.40}… ConfigMap: the runtime's name leaves no room for the {INFO_SUFFIX:?} suffix ({MAX_NAME} characters at most)"
            ),
        );
        return;
    }
    if is_vendors(runtime) {
        plan.apply_owned(vendor_info(runtime, settings));
    } else {
        // A runtime that lost the label (a reconcile as it leaves the selector, or `plugin
        // eval`): its summary must not outlive the opt-in, while the runtime itself lives on.
        plan.delete(object_key(&gvk::config_map(), runtime.namespace(), &name));
    }
}

/// The summary ConfigMap of a vendor runtime.
pub fn vendor_info(runtime: &Object, settings: &Settings) -> Object {
    let images = containers(runtime);
    let lines: Vec<String> = images
        .iter()
        .map(|(container, image)| format!("{container}={image}"))
        .collect();
    let formats: Vec<String> = runtime
        .array_at(&["spec", "supportedModelFormats"])
        .iter()
        .filter_map(|f| {
            let name = f.get("name")?.as_str()?;
            Some(match f.get("version").and_then(Value::as_str) {
                Some(version) => format!("{name}:{version}"),
                None => name.to_string(),
            })
        })
        .collect();
    // Runtimes created before the webhook was registered may lack the annotation, or carry a
    // value it would refuse: the summary shows what the vendor's tooling will use.
    let min_replicas = match runtime.annotation(MIN_REPLICAS).map(str::parse::<u32>) {
        Some(Ok(n)) => n,
        _ => settings.default_min_replicas,
    };
    let compliant = images
        .iter()
        .all(|(_, image)| under_registry(image, &settings.image_registry));
    Object::new(&gvk::config_map(), runtime.namespace(), &info_name(runtime))
        .with_label("app.kubernetes.io/managed-by", NAME)
        .with(
            "data",
            json!({
                "runtime": runtime.name(),
                "images": lines.join("\n"),
                "modelFormats": formats.join(","),
                "minReplicas": min_replicas.to_string(),
                "imagesFromRegistry": compliant.to_string(),
            }),
        )
}

/// The runtime with the min-replicas annotation defaulted; none when there is nothing to do
/// (not the vendor's, or already set: an explicit value is the user's choice).
pub fn defaulted(runtime: &Object, settings: &Settings) -> Option<Object> {
    if !is_vendors(runtime) || runtime.annotation(MIN_REPLICAS).is_some() {
        return None;
    }
    let mut runtime = runtime.clone();
    runtime.set_annotation(MIN_REPLICAS, &settings.default_min_replicas.to_string());
    Some(runtime)
}

/// The validating webhook's decision on a runtime (`old`: the stored object of an UPDATE).
///
/// An UPDATE is refused only for what it introduces. A runtime that predates the webhook (or a
/// change of `imageRegistry`) keeps its images through the updates other controllers make (a
/// finalizer added, status-adjacent metadata) and, being deleted, can always lose its
/// finalizers: refusing those would wedge the runtime, not police it.
pub fn review(runtime: &Object, old: Option<&Object>, settings: &Settings) -> AdmissionDecision {
    if !is_vendors(runtime) || runtime.is_deleting() {
        return AdmissionDecision::allow();
    }
    let old_annotation = old.and_then(|o| o.annotation(MIN_REPLICAS));
    if let Some(value) = runtime.annotation(MIN_REPLICAS)
        && value.parse::<u32>().is_err()
        && old_annotation != Some(value)
    {
        return AdmissionDecision::deny_with_code(
            format!("{NAME}: annotation {MIN_REPLICAS}: {value:?} is not a non-negative integer"),
            422,
        );
    }
    let kept: Vec<&str> = old
        .map(|o| containers(o).into_iter().map(|(_, image)| image).collect())
        .unwrap_or_default();
    let refused: Vec<String> = containers(runtime)
        .into_iter()
        .filter(|(_, image)| !under_registry(image, &settings.image_registry))
        .filter(|(_, image)| !kept.contains(image))
        .map(|(container, image)| match image {
            "" => format!("container {container:?} (no image)"),
            image => format!("container {container:?} image {image:?}"),
        })
        .collect();
    if refused.is_empty() {
        return AdmissionDecision::allow();
    }
    AdmissionDecision::deny(format!(
        "{NAME}: ServingRuntime {:?}: container images must come from the vendor registry \"{}/\"; refused: {}",
        runtime.name(),
        settings.image_registry,
        refused.join(", ")
    ))
}

/// Whether `image` is in `registry` (or below it). Matched up to a `/` so that
/// `registry.example.com/runtimes` does not admit `registry.example.com/runtimes-other/...`
/// or `registry.example.com.evil.io/...`.
pub fn under_registry(image: &str, registry: &str) -> bool {
    image
        .strip_prefix(registry)
        .is_some_and(|rest| rest.starts_with('/') && rest.len() > 1)
}

/// `(container name, image)` of every container the runtime runs. KServe's runtime pod spec
/// and its multi-node `workerSpec` both carry containers; init containers are looked at too,
/// so no place that names an image escapes the check.
pub fn containers(runtime: &Object) -> Vec<(&str, &str)> {
    const LISTS: [&[&str]; 4] = [
        &["spec", "containers"],
        &["spec", "initContainers"],
        &["spec", "workerSpec", "containers"],
        &["spec", "workerSpec", "initContainers"],
    ];
    LISTS
        .iter()
        .flat_map(|path| runtime.array_at(path))
        .map(|c| {
            let field = |key| c.get(key).and_then(Value::as_str).unwrap_or_default();
            (field("name"), field("image"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use odh_plugin_sdk::testing::{Case, FakeCluster};
    use odh_plugin_sdk::{Error, Operation, Ownership, WebhookType, validate_settings};

    fn settings() -> Settings {
        Settings {
            image_registry: "registry.example.com/runtimes".into(),
            default_min_replicas: 2,
        }
    }

    /// A vendor runtime serving onnx and pytorch from the vendor's registry.
    fn runtime(name: &str) -> Object {
        Object(json!({
            "apiVersion": "serving.kserve.io/v1alpha1", "kind": "ServingRuntime",
            "metadata": {"name": name, "namespace": "ns", "uid": "u-1",
                         "labels": {VENDOR_LABEL: VENDOR}},
            "spec": {
                "supportedModelFormats": [{"name": "onnx", "version": "1", "autoSelect": true},
                                          {"name": "pytorch"}],
                "containers": [{"name": "kserve-container",
                                "image": "registry.example.com/runtimes/server:2.1",
                                "args": ["--port=8080"]}],
            },
        }))
    }

    fn with_image(mut runtime: Object, image: &str) -> Object {
        runtime.0["spec"]["containers"][0]["image"] = image.into();
        runtime
    }

    fn unlabelled(mut runtime: Object) -> Object {
        runtime.remove_label(VENDOR_LABEL);
        runtime
    }

    fn reconcile_outcome(runtime: &Object) -> Outcome {
        let settings = settings();
        let cluster = FakeCluster::for_manifest(&VendorRuntime::manifest());
        let request = ReconcileRequest::for_object(CONTROLLER, runtime);
        VendorRuntime::reconcile(&request, &Ctx::new(&settings, &cluster)).unwrap()
    }

    #[test]
    fn the_manifest_needs_no_grants() {
        let m = VendorRuntime::manifest();
        assert_eq!((m.name.as_str(), m.version.as_str()), (NAME, "0.1.0"));
        let c = &m.controllers[0];
        assert_eq!(
            (
                c.name.as_str(),
                &c.primary,
                c.primary_label_selector.as_deref()
            ),
            (CONTROLLER, &gvk::serving_runtime(), Some(SELECTOR))
        );
        assert_eq!(c.owns, [gvk::config_map()]);
        // Exactly the controller's primary and owned kinds: the baseline of a new plugin.
        assert_eq!(m.reads, [gvk::serving_runtime(), gvk::config_map()]);
        assert_eq!(m.writes, [gvk::config_map()]);
        assert!(m.http_hosts.is_empty());
        let hooks: Vec<_> = m
            .webhooks
            .iter()
            .map(|w| (w.path.as_str(), w.type_, w.operations.clone()))
            .collect();
        assert_eq!(
            hooks,
            [
                (MUTATE_PATH, WebhookType::Mutating, vec![Create, Update]),
                (VALIDATE_PATH, WebhookType::Validating, vec![Create, Update]),
            ]
        );
        assert!(m.webhooks.iter().all(|w| w.gvk == gvk::serving_runtime()));
    }

    #[test]
    fn settings_need_a_registry_and_default_min_replicas_to_one() {
        let parsed: Settings =
            odh_plugin_sdk::parse_settings(r#"{"imageRegistry": "registry.example.com/runtimes"}"#)
                .unwrap();
        assert_eq!(parsed.default_min_replicas, 1);
        assert_eq!(
            validate_settings::<Settings>(
                r#"{"imageRegistry": "quay.io/vendor", "defaultMinReplicas": 0}"#
            ),
            Ok(())
        );
        let invalid = |json: &str| match validate_settings::<Settings>(json) {
            Err(Error::Invalid(message)) => message,
            other => panic!("{json}: {other:?}"),
        };
        for (json, expected) in [
            ("{}", "missing field `imageRegistry`"),
            (
                r#"{"imageRegistry": "r.io", "registry": "r.io"}"#,
                "unknown field `registry`",
            ),
            (
                r#"{"imageRegistry": "r.io", "defaultMinReplicas": -1}"#,
                "invalid value: integer `-1`",
            ),
            (
                r#"{"imageRegistry": ""}"#,
                "imageRegistry: must not be empty",
            ),
            (
                r#"{"imageRegistry": "https://r.io/x"}"#,
                r#"imageRegistry: "https://r.io/x" has a scheme"#,
            ),
            (
                r#"{"imageRegistry": "r.io/x/"}"#,
                r#"imageRegistry: "r.io/x/" ends with '/'; leave it out (images must be under "r.io/x/")"#,
            ),
            (
                r#"{"imageRegistry": "r.io/ x"}"#,
                r#"imageRegistry: "r.io/ x" contains whitespace"#,
            ),
        ] {
            let message = invalid(json);
            assert!(
                message.starts_with("invalid plugin settings: ") && message.contains(expected),
                "{json}: {message}"
            );
        }
    }

    #[test]
    fn reconcile_summarises_a_vendor_runtime() {
        let o = reconcile_outcome(&runtime("triton"));
        o.assert_declared(&VendorRuntime::manifest());
        assert_eq!(o.applied_kinds(), ["ConfigMap/triton-vendor-info"]);
        let info = o.applied("ConfigMap", "triton-vendor-info").unwrap();
        assert_eq!(info.ownership, Ownership::Controller);
        assert_eq!(
            info.object.0,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "triton-vendor-info", "namespace": "ns",
                                "labels": {"app.kubernetes.io/managed-by": "vendor-runtime"}},
                   "data": {"runtime": "triton",
                            "images": "kserve-container=registry.example.com/runtimes/server:2.1",
                            "modelFormats": "onnx:1,pytorch",
                            "minReplicas": "2",
                            "imagesFromRegistry": "true"}})
        );
        assert!(o.delete.is_empty() && o.events.is_empty() && o.error.is_none());
    }

    #[test]
    fn reconcile_reports_what_the_webhook_did_not_see() {
        // A runtime created before the webhooks were registered: foreign image, odd annotation.
        let mut old = with_image(runtime("old"), "docker.io/someone/server:1");
        old.set_annotation(MIN_REPLICAS, "many");
        old.0["spec"]["workerSpec"] = json!({"containers": [{"name": "worker", "image": "registry.example.com/runtimes/w:1"}]});
        let data = &reconcile_outcome(&old).applied_object("ConfigMap", "old-vendor-info")["data"];
        assert_eq!(data["imagesFromRegistry"], "false");
        assert_eq!(data["minReplicas"], "2");
        assert_eq!(
            data["images"],
            "kserve-container=docker.io/someone/server:1\nworker=registry.example.com/runtimes/w:1"
        );
        let mut explicit = runtime("explicit");
        explicit.set_annotation(MIN_REPLICAS, "5");
        let data = &reconcile_outcome(&explicit)
            .applied_object("ConfigMap", "explicit-vendor-info")["data"];
        assert_eq!(data["minReplicas"], "5");
    }

    #[test]
    fn a_runtime_leaving_the_selector_loses_its_summary() {
        let o = reconcile_outcome(&unlabelled(runtime("triton")));
        assert!(o.apply.is_empty());
        assert!(o.deleted("ConfigMap", "triton-vendor-info"));
        assert_eq!(o.delete[0].namespace.as_deref(), Some("ns"));
        o.assert_declared(&VendorRuntime::manifest());
        // Another vendor's value is not ours either.
        let mut other = runtime("triton");
        other.set_label(VENDOR_LABEL, "other");
        assert!(reconcile_outcome(&other).deleted("ConfigMap", "triton-vendor-info"));
    }

    #[test]
    fn reconcile_leaves_deleted_and_deleting_runtimes_to_garbage_collection() {
        let settings = settings();
        let cluster = FakeCluster::new();
        let gone = ReconcileRequest::new(CONTROLLER, Some("ns"), "triton");
        assert_eq!(
            VendorRuntime::reconcile(&gone, &Ctx::new(&settings, &cluster)),
            Ok(Outcome::default())
        );
        let mut deleting = runtime("triton");
        deleting.set(&["metadata", "deletionTimestamp"], "2026-01-01T00:00:00Z");
        assert_eq!(reconcile_outcome(&deleting), Outcome::default());
    }

    #[test]
    fn a_name_too_long_for_the_suffix_is_a_warning_not_a_create() {
        let o = reconcile_outcome(&runtime(&"r".repeat(250)));
        assert!(o.apply.is_empty() && o.delete.is_empty());
        assert_eq!(o.events.len(), 1);
        assert_eq!(o.events[0].reason, "VendorInfoNameTooLong");
        assert!(o.events[0].message.contains("253 characters at most"));
        // 253 exactly still fits.
        let fits = "r".repeat(MAX_NAME - INFO_SUFFIX.len());
        assert_eq!(reconcile_outcome(&runtime(&fits)).apply.len(), 1);
    }

    fn mutate(runtime: &Object, operation: Operation) -> AdmissionDecision {
        let settings = settings();
        let cluster = FakeCluster::new();
        let request = AdmissionRequest::for_object(MUTATE_PATH, operation, runtime);
        VendorRuntime::mutate(&request, &Ctx::new(&settings, &cluster)).unwrap()
    }

    #[test]
    fn mutate_defaults_min_replicas_and_keeps_every_other_field() {
        for operation in [Create, Update] {
            let d = mutate(&runtime("triton"), operation);
            assert!(d.allowed && d.patch.is_none());
            let mutated = Object::parse(d.mutated.as_deref().unwrap()).unwrap();
            assert_eq!(mutated.annotation(MIN_REPLICAS), Some("2"));
            let mut expected = runtime("triton");
            expected.set_annotation(MIN_REPLICAS, "2");
            assert_eq!(mutated, expected, "only the annotation changes");
        }
    }

    #[test]
    fn mutate_keeps_an_explicit_value_and_ignores_other_runtimes() {
        let mut explicit = runtime("triton");
        explicit.set_annotation(MIN_REPLICAS, "0");
        for object in [explicit, unlabelled(runtime("triton"))] {
            let d = mutate(&object, Create);
            assert!(d.allowed, "{d:?}");
            assert_eq!((d.mutated, d.patch), (None, None));
        }
    }

    #[test]
    fn validate_admits_only_the_vendor_registry() {
        let settings = settings();
        let cluster = FakeCluster::new();
        let cx = Ctx::new(&settings, &cluster);
        let request = |operation, runtime: &Object| {
            AdmissionRequest::for_object(VALIDATE_PATH, operation, runtime)
        };
        let denied = |image: &str| {
            format!(
                r#"vendor-runtime: ServingRuntime "triton": container images must come from the vendor registry "registry.example.com/runtimes/"; refused: container "kserve-container" image "{image}""#
            )
        };
        let lookalike = "registry.example.com/runtimes-other/server:1";
        let mut worker = runtime("triton");
        worker.0["spec"]["workerSpec"] = json!({"containers": [
            {"name": "worker", "image": "docker.io/w:1"}, {"name": "bare"}]});
        let mut bad_annotation = runtime("triton");
        bad_annotation.set_annotation(MIN_REPLICAS, "-1");
        let foreign = with_image(runtime("triton"), "docker.io/someone/server:1");
        let cases = [
            Case::allowed("the vendor's image", request(Create, &runtime("triton"))),
            Case::allowed(
                "a subpath of the registry",
                request(Update, &with_image(runtime("triton"), "registry.example.com/runtimes/a/b@sha256:00")),
            ),
            Case::allowed(
                "another vendor's runtime is not ours to police",
                request(Create, &unlabelled(foreign.clone())),
            ),
            Case::denied(
                "another registry",
                request(Create, &foreign),
                &denied("docker.io/someone/server:1"),
            ),
            Case::denied(
                "a registry whose name starts like the vendor's",
                request(Update, &with_image(runtime("triton"), lookalike)),
                &denied(lookalike),
            ),
            Case::denied(
                "the registry itself is no image",
                request(Create, &with_image(runtime("triton"), "registry.example.com/runtimes/")),
                &denied("registry.example.com/runtimes/"),
            ),
            Case::denied(
                "every offending container of a multi-node runtime is named",
                request(Create, &worker),
                r#"vendor-runtime: ServingRuntime "triton": container images must come from the vendor registry "registry.example.com/runtimes/"; refused: container "worker" image "docker.io/w:1", container "bare" (no image)"#,
            ),
            Case::denied(
                "a min-replicas annotation that is no number",
                request(Create, &bad_annotation),
                r#"vendor-runtime: annotation runtimes.example.com/min-replicas: "-1" is not a non-negative integer"#,
            )
            .code(422),
        ];
        for case in cases {
            case.run(|r| VendorRuntime::validate(r, &cx));
        }
        let delete =
            AdmissionRequest::new(VALIDATE_PATH, gvk::serving_runtime(), Operation::Delete);
        assert!(VendorRuntime::validate(&delete, &cx).unwrap().allowed);
    }

    #[test]
    fn an_update_is_refused_only_for_what_it_introduces() {
        let settings = settings();
        let cluster = FakeCluster::new();
        let cx = Ctx::new(&settings, &cluster);
        // Created before the webhooks were registered.
        let mut old = with_image(runtime("triton"), "docker.io/someone/server:1");
        old.set_annotation(MIN_REPLICAS, "many");
        let update = |new: &Object| {
            AdmissionRequest::for_object(VALIDATE_PATH, Update, new).with_old_object(&old)
        };
        let mut finalized = old.clone();
        finalized.set(&["metadata", "finalizers"], json!(["example.com/cleanup"]));
        let mut deleting = finalized.clone();
        deleting.set(&["metadata", "deletionTimestamp"], "2026-01-01T00:00:00Z");
        deleting.set(&["metadata", "finalizers"], json!([]));
        let mut annotated = old.clone();
        annotated.set_annotation(MIN_REPLICAS, "lots");
        let mut worker = old.clone();
        worker.0["spec"]["workerSpec"] =
            json!({"containers": [{"name": "worker", "image": "docker.io/w:1"}]});
        let refused = |what: &str| {
            format!(
                r#"vendor-runtime: ServingRuntime "triton": container images must come from the vendor registry "registry.example.com/runtimes/"; refused: {what}"#
            )
        };
        for case in [
            Case::allowed("another controller adds a finalizer", update(&finalized)),
            Case::allowed("a runtime being deleted loses its finalizers", update(&deleting)),
            Case::allowed(
                "a runtime being deleted is never refused",
                AdmissionRequest::for_object(VALIDATE_PATH, Update, &deleting),
            ),
            Case::denied(
                "a new foreign image",
                update(&with_image(old.clone(), "docker.io/someone/server:2")),
                &refused(r#"container "kserve-container" image "docker.io/someone/server:2""#),
            ),
            Case::denied(
                "only what the update adds is named",
                update(&worker),
                &refused(r#"container "worker" image "docker.io/w:1""#),
            ),
            Case::denied(
                "a new bad annotation",
                update(&annotated),
                r#"vendor-runtime: annotation runtimes.example.com/min-replicas: "lots" is not a non-negative integer"#,
            )
            .code(422),
        ] {
            case.run(|r| VendorRuntime::validate(r, &cx));
        }
    }

    #[test]
    fn registry_matching_stops_at_a_path_boundary() {
        let registry = "registry.example.com/runtimes";
        assert!(under_registry(
            "registry.example.com/runtimes/s:1",
            registry
        ));
        for image in [
            "registry.example.com/runtimes",
            "registry.example.com/runtimes/",
            "registry.example.com/runtimesx/s:1",
            "registry.example.com.evil.io/runtimes/s:1",
            "",
        ] {
            assert!(!under_registry(image, registry), "{image}");
        }
    }
}
