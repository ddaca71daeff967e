//! Keeps the cluster's Mutating/ValidatingWebhookConfigurations in step with the webhooks this
//! host serves (`--sync-webhook-configurations`): one entry per plugin webhook, in the two
//! configurations the deploy manifests name, written by server-side apply under a field manager
//! of its own. The `webhooks` lists are keyed by entry name, so entries someone else wrote are
//! never touched and an entry this host no longer declares (its plugin removed) is dropped by
//! the apiserver.
//!
//! Entries stay when the host stops: with `failurePolicy: Fail` a missing entry would let
//! requests through unchecked during a rolling update, and a stopped host's replica set still
//! serves.

use std::path::PathBuf;
use std::time::Duration;

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::registration::WebhookNames;
use super::table::{LiveWebhookTable, WebhookTable};
use odh_plugin_runtime::wire::WebhookType;
use odh_reconcile::kinds::plural;

pub const FIELD_MANAGER: &str = "odh-model-controller/webhook-configurations";

async fn absent(api: &Api<DynamicObject>, name: &str) -> bool {
    matches!(api.get_opt(name).await, Ok(None))
}

/// Where the apiserver sends admission requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// The webhook Service in front of the replicas (in-cluster).
    Service {
        namespace: String,
        name: String,
        port: u16,
    },
    /// A base URL such as `https://127.0.0.1:9443` (a host outside the cluster: `make run`).
    Url(String),
}

/// Where the `caBundle` comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaSource {
    /// The serving certificate's directory: `ca.crt` (cert-manager) if present, else `tls.crt`
    /// (a self-signed certificate is its own authority).
    CertDir(PathBuf),
    /// Injected by OpenShift's service CA or cert-manager's CA injector (the overlay's
    /// annotations); this host leaves the field alone.
    Injected,
}

/// Namespaces no webhook of a plugin added at run time is ever called for, whatever the
/// plugin's selector: the cluster's own. With `failurePolicy: Fail` a broken plugin
/// intercepting Pods there could otherwise stop the control plane from healing itself.
pub const ALWAYS_EXCLUDED_NAMESPACES: &[&str] = &["kube-system", "kube-public", "kube-node-lease"];

pub struct WebhookConfigSync {
    client: kube::Client,
    names: WebhookNames,
    endpoint: Endpoint,
    ca: CaSource,
    /// Besides [`ALWAYS_EXCLUDED_NAMESPACES`]: the controller's own and those the deployment
    /// names (`--webhook-excluded-namespaces`).
    excluded_namespaces: Vec<String>,
    /// Namespaces carrying one of these labels are excluded too (the platform's control plane).
    excluded_labels: Vec<String>,
    /// How often the configurations are applied again although the table did not change.
    pub interval: Duration,
}

impl WebhookConfigSync {
    pub fn new(
        client: kube::Client,
        names: WebhookNames,
        endpoint: Endpoint,
        ca: CaSource,
    ) -> Self {
        Self {
            client,
            names,
            endpoint,
            ca,
            excluded_namespaces: Vec::new(),
            excluded_labels: Vec::new(),
            interval: Duration::from_secs(30),
        }
    }

    /// Also keeps every webhook of a plugin added at run time away from `namespaces` (the
    /// controller's own, the deployment's list). Built-in webhooks keep upstream's selectors.
    pub fn excluding(mut self, namespaces: impl IntoIterator<Item = String>) -> Self {
        self.excluded_namespaces
            .extend(namespaces.into_iter().filter(|ns| !ns.is_empty()));
        self
    }

    /// Also keeps those webhooks away from every namespace carrying one of `labels`.
    pub fn excluding_labelled(mut self, labels: impl IntoIterator<Item = String>) -> Self {
        self.excluded_labels.extend(labels);
        self
    }

    /// The two configurations as this host declares them for `table` (mutating, validating).
    pub fn desired(&self, table: &WebhookTable) -> anyhow::Result<[Value; 2]> {
        let ca = self.ca_bundle()?;
        let mut lists = (Vec::new(), Vec::new());
        for route in table.routes() {
            let plugin = route.plugin.name();
            let r = self.names.registration(plugin, &route.path);
            let mut client_config = match &self.endpoint {
                Endpoint::Service {
                    namespace,
                    name,
                    port,
                } => json!({"service": {
                    "namespace": namespace, "name": name, "port": port, "path": route.path,
                }}),
                Endpoint::Url(base) => {
                    json!({"url": format!("{}{}", base.trim_end_matches('/'), route.path)})
                }
            };
            if let Some(ca) = &ca {
                client_config["caBundle"] = json!(ca);
            }
            let operations: Vec<Value> = route
                .operations
                .iter()
                .map(|o| serde_json::to_value(o).unwrap_or(Value::Null))
                .collect();
            let mut entry = json!({
                "name": r.name,
                "admissionReviewVersions": ["v1"],
                "clientConfig": client_config,
                "failurePolicy": if route.plugin.fail_open() { "Ignore" } else { "Fail" },
                "sideEffects": r.side_effects,
                "rules": [{
                    "apiGroups": [route.gvk.group],
                    "apiVersions": [route.gvk.version],
                    "operations": operations,
                    "resources": [plural(&route.gvk)],
                }],
            });
            for (field, selector) in [
                ("objectSelector", &route.object_selector),
                ("namespaceSelector", &route.namespace_selector),
            ] {
                if let Some(selector) = selector {
                    entry[field] = json!({"matchExpressions": selector.match_expressions()});
                }
            }
            if !self.names.listed.contains_key(&route.path) {
                guard_namespaces(&mut entry, &self.excluded_namespaces, &self.excluded_labels);
            }
            match route.kind {
                WebhookType::Mutating => lists.0.push(entry),
                WebhookType::Validating => lists.1.push(entry),
            }
        }
        let object = |kind: &str, name: &str, webhooks: Vec<Value>| {
            json!({
                "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                "metadata": {"name": name},
                "webhooks": webhooks,
            })
        };
        Ok([
            object(
                "MutatingWebhookConfiguration",
                &self.names.mutating_configuration,
                lists.0,
            ),
            object(
                "ValidatingWebhookConfiguration",
                &self.names.validating_configuration,
                lists.1,
            ),
        ])
    }

    fn ca_bundle(&self) -> anyhow::Result<Option<String>> {
        use base64::Engine as _;
        let CaSource::CertDir(dir) = &self.ca else {
            return Ok(None);
        };
        let ca = dir.join("ca.crt");
        let path = if ca.exists() {
            ca
        } else {
            dir.join(crate::tls::CERT_FILE)
        };
        let pem = std::fs::read(&path).map_err(|e| {
            anyhow::anyhow!("reading the webhook CA bundle {}: {e}", path.display())
        })?;
        Ok(Some(base64::engine::general_purpose::STANDARD.encode(pem)))
    }

    /// Applies both configurations made by [`Self::desired`].
    async fn apply(&self, desired: &[Value; 2]) -> anyhow::Result<()> {
        for object in desired {
            let kind = object["kind"].as_str().unwrap_or_default().to_string();
            let name = object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let gvk = GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", &kind);
            let api: Api<DynamicObject> =
                Api::all_with(self.client.clone(), &ApiResource::from_gvk(&gvk));
            let applied = api
                .patch(
                    &name,
                    &PatchParams::apply(FIELD_MANAGER).force(),
                    &Patch::Apply(object),
                )
                .await;
            match applied {
                Ok(_) => {}
                // The deployed RBAC lets the controller patch the configurations the manifests
                // create, not create them: one not created yet is applied once it exists.
                Err(kube::Error::Api(s)) if s.code == 403 && absent(&api, &name).await => {
                    tracing::info!(
                        kind,
                        name,
                        "the webhook configuration does not exist yet and this controller may only patch it; it is synced once it exists"
                    );
                }
                Err(e) => anyhow::bail!("applying {kind} {name}: {e}"),
            }
        }
        Ok(())
    }

    /// Syncs now, whenever the table changes and every [`Self::interval`] (restoring an
    /// entry deleted by hand, a rotated CA), until `shutdown`.
    pub async fn run(self, table: LiveWebhookTable, shutdown: CancellationToken) {
        let mut changed = table.changes();
        let mut last: Option<String> = None;
        let mut tick = tokio::time::interval(self.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.reset();
        loop {
            let current = table.current();
            // One read of the CA and one rendering per round, for the write and the log.
            let synced = match self.desired(&current) {
                Ok(desired) => self
                    .apply(&desired)
                    .await
                    .map(|()| serde_json::to_string(&desired).unwrap_or_default()),
                Err(e) => Err(e),
            };
            match synced {
                Ok(digest) => {
                    let digest = Some(digest);
                    if digest != last {
                        tracing::info!(webhooks = current.len(), "webhook configurations in sync");
                        last = digest;
                    }
                }
                Err(e) => tracing::warn!("syncing the webhook configurations failed: {e:#}"),
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tick.tick() => {}
                r = changed.changed() => if r.is_err() { return },
            }
        }
    }
}

/// Narrows `entry`'s namespace selector so that it never matches the cluster's own namespaces
/// ([`ALWAYS_EXCLUDED_NAMESPACES`]), `also`, nor a namespace carrying one of `labels`.
fn guard_namespaces(entry: &mut Value, also: &[String], labels: &[String]) {
    let mut names: Vec<&str> = ALWAYS_EXCLUDED_NAMESPACES.to_vec();
    for name in also {
        if !names.contains(&name.as_str()) {
            names.push(name);
        }
    }
    let mut guards =
        vec![json!({"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": names})];
    guards.extend(
        labels
            .iter()
            .map(|label| json!({"key": label, "operator": "DoesNotExist"})),
    );
    let selector = entry
        .as_object_mut()
        .map(|e| e.entry("namespaceSelector").or_insert_with(|| json!({})));
    let Some(selector) = selector else { return };
    let expressions = &mut selector["matchExpressions"];
    if !expressions.is_array() {
        *expressions = json!([]);
    }
    if let Some(list) = expressions.as_array_mut() {
        list.extend(guards);
    }
}

#[cfg(test)]
mod guard_tests {
    use super::*;

    #[test]
    fn a_run_time_plugins_webhook_never_reaches_the_clusters_own_namespaces() {
        let mut entry = json!({"name": "w", "namespaceSelector": {"matchExpressions": [
            {"key": "team", "operator": "In", "values": ["a"]}]}});
        guard_namespaces(
            &mut entry,
            &["controllers".to_string(), "kube-system".to_string()],
            &["platform/control-plane".to_string()],
        );
        assert_eq!(
            entry["namespaceSelector"]["matchExpressions"],
            json!([
                {"key": "team", "operator": "In", "values": ["a"]},
                {"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                 "values": ["kube-system", "kube-public", "kube-node-lease", "controllers"]},
                {"key": "platform/control-plane", "operator": "DoesNotExist"},
            ])
        );
        // A webhook without a selector (every namespace) gets one.
        let mut entry = json!({"name": "w"});
        guard_namespaces(&mut entry, &[], &[]);
        assert_eq!(
            entry["namespaceSelector"]["matchExpressions"][0]["values"],
            json!(["kube-system", "kube-public", "kube-node-lease"])
        );
    }
}
