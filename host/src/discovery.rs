//! Start-up discovery of optional kinds (upstream `IsCrdAvailable`).
//!
//! A kind is available when `GET /apis/<group>/<version>` lists a resource of exactly that kind.
//! A 404 means the group-version is not served (absent, not an error); any other failure is an
//! error. Results are computed once at start-up: installing a CRD later needs a restart, as upstream.

use std::collections::BTreeMap;

use kube::Client;

/// A kind the controller uses only when the cluster serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct OptionalKind {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
}

impl OptionalKind {
    pub const fn new(group: &'static str, version: &'static str, kind: &'static str) -> Self {
        Self {
            group,
            version,
            kind,
        }
    }

    pub fn group_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// The kinds upstream probes at start-up (spec part 2, §2.8), plus the OpenShift and monitoring
/// kinds that full mode needs: we probe them too so a missing one is reported, not looped on.
pub const OPTIONAL_KINDS: &[OptionalKind] = &[
    OptionalKind::new("keda.sh", "v1alpha1", "TriggerAuthentication"),
    OptionalKind::new("gateway.networking.k8s.io", "v1", "Gateway"),
    OptionalKind::new("networking.istio.io", "v1alpha3", "EnvoyFilter"),
    OptionalKind::new("kuadrant.io", "v1", "AuthPolicy"),
    OptionalKind::new("kuadrant.io", "v1beta1", "Kuadrant"),
    OptionalKind::new("operator.authorino.kuadrant.io", "v1beta1", "Authorino"),
    OptionalKind::new("monitoring.coreos.com", "v1", "PodMonitor"),
    OptionalKind::new("monitoring.coreos.com", "v1", "ServiceMonitor"),
    OptionalKind::new("route.openshift.io", "v1", "Route"),
    OptionalKind::new("template.openshift.io", "v1", "Template"),
    OptionalKind::new("serving.kserve.io", "v1beta1", "InferenceService"),
    OptionalKind::new("serving.kserve.io", "v1alpha1", "ServingRuntime"),
    OptionalKind::new("serving.kserve.io", "v1alpha2", "LLMInferenceService"),
    OptionalKind::new("nim.opendatahub.io", "v1", "Account"),
];

/// Which optional kinds the cluster serves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Discovered {
    available: BTreeMap<OptionalKind, bool>,
}

impl Discovered {
    pub fn is_available(&self, kind: &OptionalKind) -> bool {
        self.available.get(kind).copied().unwrap_or(false)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&OptionalKind, bool)> {
        self.available.iter().map(|(k, v)| (k, *v))
    }
}

/// Probes each distinct group-version once.
pub async fn discover(client: &Client, kinds: &[OptionalKind]) -> anyhow::Result<Discovered> {
    let mut served: BTreeMap<String, Option<Vec<String>>> = BTreeMap::new();
    let mut out = Discovered::default();
    for kind in kinds {
        let gv = kind.group_version();
        if !served.contains_key(&gv) {
            let listed = list_kinds(client, &gv).await?;
            served.insert(gv.clone(), listed);
        }
        let available = served[&gv]
            .as_ref()
            .is_some_and(|kinds| kinds.iter().any(|k| k == kind.kind));
        out.available.insert(*kind, available);
    }
    Ok(out)
}

/// Whether a discovery error means "not served". A group the apiserver does not know answers
/// a plain-text `404 page not found`, not a `Status`, so kube reports no `NotFound` reason:
/// the code decides.
pub fn not_served(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(s) if s.is_not_found() || s.code == 404)
}

/// Kinds served in a group-version, or `None` when the group-version is not served.
async fn list_kinds(client: &Client, group_version: &str) -> anyhow::Result<Option<Vec<String>>> {
    let result = if group_version.contains('/') {
        client.list_api_group_resources(group_version).await
    } else {
        client.list_core_api_resources(group_version).await
    };
    match result {
        Ok(list) => Ok(Some(list.resources.into_iter().map(|r| r.kind).collect())),
        Err(e) if not_served(&e) => Ok(None),
        Err(e) => Err(anyhow::anyhow!("discovery of {group_version} failed: {e}")),
    }
}
