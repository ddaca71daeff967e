//! Builders for the manifest records: [`Manifest`], [`Controller`], [`Watch`], [`Webhook`],
//! [`WebhookSelector`] for [`Plugin::webhook_selectors`](crate::Plugin::webhook_selectors) and
//! [`EventFilter`] for [`Plugin::event_filters`](crate::Plugin::event_filters).
//!
//! The manifest the host receives lists every kind explicitly (the WIT's `reads` and `writes`
//! imply nothing). The builder derives what follows from the controllers so a plugin lists
//! only the extra kinds: [`Manifest::controller`] adds the primary, owned and watched kinds to
//! `reads` and the owned kinds to `writes`.

use crate::{
    Controller, EventFilter, Gvk, Manifest, Mapping, Operation, UpdateFilter, Watch, Webhook,
    WebhookSelector, WebhookType,
};

fn push_unique(kinds: &mut Vec<Gvk>, kind: Gvk) {
    if !kinds.contains(&kind) {
        kinds.push(kind);
    }
}

impl Manifest {
    /// A manifest with a name (`[a-z0-9-]+`) and a semver version, nothing else declared.
    pub fn new(name: &str, version: &str) -> Manifest {
        Manifest {
            name: name.into(),
            version: version.into(),
            description: String::new(),
            controllers: Vec::new(),
            webhooks: Vec::new(),
            reads: Vec::new(),
            writes: Vec::new(),
            http_hosts: Vec::new(),
        }
    }

    /// The one-line description shown by `plugin inspect`.
    pub fn description(mut self, description: &str) -> Self {
        self.description = description.into();
        self
    }

    /// Adds a reconcile loop. Its primary, owned and watched kinds join `reads` (the host
    /// reads them for the plugin anyway), its owned kinds join `writes` (a controller creates
    /// what it owns). A kind that is only watched by owner reference and never written belongs
    /// in a [`Watch`] with [`Mapping::Owner`], not in `owns`.
    pub fn controller(mut self, controller: Controller) -> Self {
        let mut reads = vec![controller.primary.clone()];
        reads.extend(controller.owns.iter().cloned());
        reads.extend(controller.watches.iter().map(|w| w.gvk.clone()));
        let writes = controller.owns.clone();
        self.controllers.push(controller);
        self.reads(reads).writes(writes)
    }

    /// Adds an admission webhook endpoint.
    pub fn webhook(mut self, webhook: Webhook) -> Self {
        self.webhooks.push(webhook);
        self
    }

    /// Adds kinds the plugin reads through `cluster` beyond those its controllers imply
    /// (duplicates are dropped).
    pub fn reads(mut self, kinds: impl IntoIterator<Item = Gvk>) -> Self {
        for kind in kinds {
            push_unique(&mut self.reads, kind);
        }
        self
    }

    /// Adds kinds the plugin may ask the host to create, update or delete beyond the owned
    /// ones (duplicates are dropped).
    pub fn writes(mut self, kinds: impl IntoIterator<Item = Gvk>) -> Self {
        for kind in kinds {
            push_unique(&mut self.writes, kind);
        }
        self
    }

    /// Adds hosts (`api.example.com`, `api.example.com:8443`) for outgoing HTTP.
    pub fn http_hosts<S: Into<String>>(mut self, hosts: impl IntoIterator<Item = S>) -> Self {
        self.http_hosts.extend(hosts.into_iter().map(Into::into));
        self
    }
}

impl Controller {
    /// A controller reconciling objects of `primary`.
    pub fn new(name: &str, primary: Gvk) -> Controller {
        Controller {
            name: name.into(),
            primary,
            primary_label_selector: None,
            owns: Vec::new(),
            watches: Vec::new(),
            finalizer: None,
        }
    }

    /// Only primary objects with these labels (`key=value,key2=value2`) are reconciled.
    pub fn primary_label_selector(mut self, selector: &str) -> Self {
        self.primary_label_selector = Some(selector.into());
        self
    }

    /// A kind this controller creates with an owner reference to the primary (and so writes).
    pub fn owns(mut self, kind: Gvk) -> Self {
        self.owns.push(kind);
        self
    }

    /// Another kind whose changes trigger reconciles.
    pub fn watches(mut self, watch: Watch) -> Self {
        self.watches.push(watch);
        self
    }

    /// The finalizer the host keeps on primary objects when the outcome asks for it.
    pub fn finalizer(mut self, finalizer: &str) -> Self {
        self.finalizer = Some(finalizer.into());
        self
    }
}

impl Watch {
    /// A required watch on `gvk` mapped to primaries with `mapping`.
    pub fn new(gvk: Gvk, mapping: Mapping) -> Watch {
        Watch {
            gvk,
            mapping,
            label_selector: None,
            optional: false,
        }
    }

    /// Only objects with these labels are watched. The host's cache of a kind holds the union
    /// of what the plugins' watches and primaries select, so a selector here also narrows
    /// what `cluster` reads of that kind see from the cache.
    pub fn label_selector(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Skip the watch (instead of disabling the controller) when the kind is not served.
    pub fn optional(mut self) -> Self {
        self.optional = true;
        self
    }
}

impl Webhook {
    /// A mutating webhook at `path` (exactly as the webhook configuration names it).
    pub fn mutating(
        path: &str,
        gvk: Gvk,
        operations: impl IntoIterator<Item = Operation>,
    ) -> Webhook {
        Self::of_type(WebhookType::Mutating, path, gvk, operations)
    }

    /// A validating webhook at `path`.
    pub fn validating(
        path: &str,
        gvk: Gvk,
        operations: impl IntoIterator<Item = Operation>,
    ) -> Webhook {
        Self::of_type(WebhookType::Validating, path, gvk, operations)
    }

    fn of_type(
        type_: WebhookType,
        path: &str,
        gvk: Gvk,
        operations: impl IntoIterator<Item = Operation>,
    ) -> Webhook {
        Webhook {
            path: path.into(),
            type_,
            gvk,
            operations: operations.into_iter().collect(),
        }
    }
}

impl WebhookSelector {
    /// The selectors of the webhook at `path` (as the manifest declares it); add at least one.
    pub fn new(path: &str) -> WebhookSelector {
        WebhookSelector {
            path: path.into(),
            object_selector: None,
            namespace_selector: None,
        }
    }

    /// Only objects whose labels match are reviewed (`key=value,key2!=value2,key3,!key4`).
    pub fn object_selector(mut self, selector: &str) -> Self {
        self.object_selector = Some(selector.into());
        self
    }

    /// Only objects in namespaces whose labels match are reviewed (the API server decides).
    pub fn namespace_selector(mut self, selector: &str) -> Self {
        self.namespace_selector = Some(selector.into());
        self
    }
}

impl EventFilter {
    /// The filter of `kind` (the primary, an owned or a watched kind) of the controller named
    /// `controller`; as built it passes every event: narrow it with the other methods.
    pub fn new(controller: &str, kind: Gvk) -> EventFilter {
        EventFilter {
            controller: controller.into(),
            gvk: kind,
            names: Vec::new(),
            create: true,
            update: UpdateFilter::Always,
            delete: true,
        }
    }

    /// Only objects of these names pass (upstream's name predicates).
    pub fn names<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.names = names.into_iter().map(Into::into).collect();
        self
    }

    /// Creations (and the initial list at start) do not pass.
    pub fn no_create(mut self) -> Self {
        self.create = false;
        self
    }

    /// Deletions do not pass.
    pub fn no_delete(mut self) -> Self {
        self.delete = false;
        self
    }

    /// Updates do not pass.
    pub fn no_update(mut self) -> Self {
        self.update = UpdateFilter::Never;
        self
    }

    /// An update passes only when the value at one of these JSON Pointers changed
    /// (`/metadata/labels/opendatahub.io~1managed`: `/` in a key is written `~1`).
    pub fn update_when_changed<S: Into<String>>(
        mut self,
        pointers: impl IntoIterator<Item = S>,
    ) -> Self {
        self.update = UpdateFilter::Changed(pointers.into_iter().map(Into::into).collect());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{core_gvk, gvk};

    #[test]
    fn manifest_builder() {
        let cm = core_gvk("ConfigMap");
        let m = Manifest::new("p", "1.0.0")
            .description("d")
            .controller(
                Controller::new("c", cm.clone())
                    .primary_label_selector("a=b")
                    .owns(cm.clone())
                    .watches(Watch::new(core_gvk("Secret"), Mapping::SameName).optional())
                    .finalizer("p/f"),
            )
            .webhook(Webhook::validating("/v", cm.clone(), [Operation::Create]))
            .http_hosts(["example.com"]);
        assert_eq!(
            m.controllers[0].primary_label_selector.as_deref(),
            Some("a=b")
        );
        assert!(m.controllers[0].watches[0].optional);
        assert_eq!(m.controllers[0].finalizer.as_deref(), Some("p/f"));
        assert_eq!(m.webhooks[0].type_, WebhookType::Validating);
        assert_eq!(m.http_hosts, vec!["example.com".to_string()]);
    }

    #[test]
    fn reads_and_writes_follow_the_controllers() {
        let (isvc, route, secret, dsc) = (
            gvk("serving.kserve.io", "v1beta1", "InferenceService"),
            gvk("route.openshift.io", "v1", "Route"),
            core_gvk("Secret"),
            gvk(
                "datasciencecluster.opendatahub.io",
                "v1",
                "DataScienceCluster",
            ),
        );
        let m = Manifest::new("p", "1.0.0")
            .reads([dsc.clone(), route.clone()])
            .controller(
                Controller::new("c", isvc.clone())
                    .owns(route.clone())
                    .watches(Watch::new(secret.clone(), Mapping::Owner))
                    .watches(Watch::new(secret.clone(), Mapping::Custom)),
            )
            .writes([secret.clone(), route.clone()]);
        assert_eq!(m.reads, [dsc, route.clone(), isvc, secret.clone()]);
        assert_eq!(m.writes, [route, secret]);
    }
}
