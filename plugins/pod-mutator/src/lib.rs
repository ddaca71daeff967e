//! The Pod plugin (docs/plugins/pod-mutator.md; its place in the Ray TLS flow:
//! docs/plugins/servingruntime.md, "The Ray TLS flow"): the Pod mutating webhook `/mutate--v1-pod`,
//! which prepares Pods that run Ray with TLS. Such a Pod gets the volumes `ray-tls`
//! (emptyDir) and `ray-tls-secret` (the namespace's `ray-tls` Secret), a mount of `ray-tls`
//! on its first `kserve-container`/`worker-container`, and the `ray-tls-generator` init
//! container, which copies the CA and the Pod's own certificate into place.

pub mod image;
pub mod mutation;
pub mod names;
pub mod script;
pub mod settings;

use odh_kinds::gvk;
use odh_plugin_sdk::admission::Expect;
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{
    AdmissionDecision, AdmissionRequest, Ctx, Error, Manifest, Operation, Plugin, Webhook,
    WebhookSelector,
};

use settings::Settings;

pub struct PodMutator;

impl Plugin for PodMutator {
    type Settings = Settings;

    fn manifest() -> Manifest {
        Manifest::new("pod-mutator", env!("CARGO_PKG_VERSION"))
            .description("Pod mutating webhook: Ray TLS volumes, mount and the ray-tls-generator init container for Pods that run Ray with TLS")
            .webhook(Webhook::mutating(
                names::PATH,
                gvk::pod(),
                [Operation::Create],
            ))
            // The parameters ConfigMap in the controller's namespace.
            .reads([gvk::config_map()])
    }

    /// Upstream's object selector (its kustomize patch of the webhook configuration).
    fn webhook_selectors() -> Vec<WebhookSelector> {
        vec![WebhookSelector::new(names::PATH).object_selector(&mutation::OBJECT_SELECTOR)]
    }

    fn mutate(request: &AdmissionRequest, cx: &Ctx<Settings>) -> Result<AdmissionDecision, Error> {
        Ok(mutate(request, cx.settings, cx.cluster))
    }
}

odh_plugin_sdk::plugin!(PodMutator);

/// The webhook's answer: unchanged unless the Pod is selected and runs Ray with TLS; then the
/// mutated Pod, or upstream's denial when the image cannot be found.
pub fn mutate(
    request: &AdmissionRequest,
    settings: &Settings,
    cluster: &dyn Cluster,
) -> AdmissionDecision {
    // controller-runtime answers an object it cannot decode into a Pod with a 400 (upstream's
    // text says "an Pod").
    let pod = match request.decode_as(&Expect::kind("Pod", "an Pod")) {
        Ok(Some(decoded)) => decoded.object,
        Ok(None) => return AdmissionDecision::allow(),
        Err(refused) => return refused,
    };
    if !mutation::selected(&pod) || !mutation::needs_ray_tls_generator(&pod) {
        return AdmissionDecision::allow();
    }
    let image = match image::ray_tls_generator_image(settings.pod_namespace.as_deref(), cluster) {
        Ok(image) => image,
        Err(missing) => return missing.denial(),
    };
    let mut pod = pod.into_value();
    mutation::add_ray_tls(&mut pod, &image);
    AdmissionDecision::mutated(pod)
}
