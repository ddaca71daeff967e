//! The ServingRuntime controller's Ray TLS part (docs/plugins/servingruntime.md, "Controller
//! `servingruntime`", steps 3–6): the CA Secret
//! `ray-ca-tls` in the controller namespace, its fan-out to every multi-node namespace, and
//! `ray-tls` in the request's namespace while it has a multi-node runtime.

use std::collections::BTreeMap;

use odh_kinds::claim::claim_and_delete;
use odh_kinds::gvk;
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::log::{Level, log};
use odh_plugin_sdk::{Error, Object, Plan};

use crate::Env;
use crate::certs::{self, generate_ca};
use crate::entropy::key_error;
use crate::names::*;
use crate::secrets::{self, Data};

const CA_FAILED: &str = "failed update self-signed ca certificate secret";

/// Whether a ServingRuntime runs on several nodes: upstream's only test, a non-null
/// `spec.workerSpec`.
pub fn is_multi_node(runtime: &Object) -> bool {
    runtime
        .at(&["spec", "workerSpec"])
        .is_some_and(|w| !w.is_null())
}

/// What step A decided about the CA.
enum CaState {
    /// The CA certificate (PEM) to hand out.
    Ready(String),
    /// The wrong-typed Secret is being deleted; it is created again by the reconcile its
    /// deletion triggers.
    Replacing,
}

/// Steps A–F for the request `request_name` in `namespace`.
pub fn reconcile(
    request_name: &str,
    namespace: &str,
    multi_node_here: bool,
    controller_namespace: &str,
    cluster: &dyn Cluster,
    env: &mut Env<'_>,
    plan: &mut Plan,
) -> Result<(), Error> {
    let ca_pem = match ensure_ca(controller_namespace, cluster, env, plan)? {
        CaState::Ready(pem) => pem,
        CaState::Replacing => {
            return Err(Error::transient(format!(
                "{CA_FAILED}: deleted {RAY_CA_SECRET} (not of type {TLS_SECRET_TYPE}) to create it again"
            )));
        }
    };
    // Each ray-tls is applied once per outcome: a second apply of the same resourceVersion
    // would conflict with the first.
    let mut planned: BTreeMap<String, Object> = BTreeMap::new();
    if namespace == controller_namespace {
        fan_out(&ca_pem, cluster, &mut planned)?;
    }
    if multi_node_here {
        ensure_ray_tls(namespace, &ca_pem, cluster, &mut planned)?;
    } else if !RAY_SECRET_NAMES.contains(&request_name) {
        // The request name, whatever kind it came from, spares ray-tls (upstream's quirk).
        if let Some(existing) =
            cluster.get_object(&gvk::secret(), Some(namespace), RAY_TLS_SECRET)?
        {
            claim_and_delete(plan, &existing);
        }
    }
    for (_, secret) in planned {
        plan.apply_unowned(secret);
    }
    Ok(())
}

const RAY_SECRET_NAMES: [&str; 2] = [RAY_CA_SECRET, RAY_TLS_SECRET];

/// Step A: `ray-ca-tls` exists, is of type `kubernetes.io/tls` and is not (nearly) expired.
fn ensure_ca(
    controller_namespace: &str,
    cluster: &dyn Cluster,
    env: &mut Env<'_>,
    plan: &mut Plan,
) -> Result<CaState, Error> {
    if controller_namespace.is_empty() {
        return Err(Error::invalid(format!(
            "{CA_FAILED}: failed creating new certificate secret: the controller namespace (podNamespace, POD_NAMESPACE) is not set"
        )));
    }
    let existing = cluster
        .get_object(&gvk::secret(), Some(controller_namespace), RAY_CA_SECRET)
        .map_err(|e| e.context(format!("{CA_FAILED}: failed getting certificate secret")))?;
    let replace = match &existing {
        None => false,
        // Upstream's cache cannot see it, and its create fails.
        Some(s) if !secrets::managed(s) => {
            return Err(Error::transient(format!(
                "{CA_FAILED}: failed creating new certificate secret: secrets \"{RAY_CA_SECRET}\" already exists"
            )));
        }
        Some(s) => {
            let data = secrets::data(s);
            let cert = certs::parse_certificate(&secrets::text(&data, TLS_CRT))
                .map_err(|e| Error::transient(format!("{CA_FAILED}: {e}")))?;
            if s.str_at(&["type"]) != Some(TLS_SECRET_TYPE) {
                // The type is immutable: delete now, create on the next reconcile.
                claim_and_delete(plan, s);
                return Ok(CaState::Replacing);
            }
            if !certs::ca_expired(&cert, env.now) {
                return Ok(CaState::Ready(secrets::text(&data, TLS_CRT)));
            }
            true
        }
    };
    let pair = generate_ca(env.keys, env.now).map_err(|e| {
        key_error(
            &format!("{CA_FAILED}: failed generating self-signed ca certificate"),
            e,
        )
    })?;
    log(
        Level::Info,
        if replace {
            "re-creating the expired Ray CA certificate"
        } else {
            "creating the Ray CA certificate"
        },
    );
    // An expired CA is replaced in place (same type): the end state of upstream's delete and
    // create, new key pair included.
    plan.apply_unowned(secrets::ray_ca(controller_namespace, &pair));
    Ok(CaState::Ready(pair.cert_pem))
}

/// Step D: every multi-node namespace's `ray-tls` gets exactly `{ca.crt}` (upstream replaces
/// the whole data map, dropping the per-pod entries).
fn fan_out(
    ca_pem: &str,
    cluster: &dyn Cluster,
    planned: &mut BTreeMap<String, Object>,
) -> Result<(), Error> {
    let runtimes = cluster.list_objects(&gvk::serving_runtime(), None, None)?;
    let mut namespaces: Vec<String> = runtimes
        .iter()
        .filter(|r| is_multi_node(r))
        .filter_map(|r| r.namespace().map(str::to_string))
        .collect();
    namespaces.sort();
    namespaces.dedup();
    for ns in namespaces {
        if planned.contains_key(&ns) {
            continue;
        }
        let Some(existing) = cluster.get_object(&gvk::secret(), Some(&ns), RAY_TLS_SECRET)? else {
            continue;
        };
        if !secrets::managed(&existing) {
            continue;
        }
        let data = Data::from([(CA_CERT_KEY.to_string(), secrets::encode(ca_pem))]);
        log(
            Level::Info,
            &format!("Secret({RAY_TLS_SECRET}) in namespace({ns}) updated successfully"),
        );
        planned.insert(
            ns.clone(),
            secrets::ray_tls(&ns, &data, existing.resource_version()),
        );
    }
    Ok(())
}

/// Step E: `ray-tls` exists in `namespace` and its `ca.crt` is the CA's (other keys kept).
fn ensure_ray_tls(
    namespace: &str,
    ca_pem: &str,
    cluster: &dyn Cluster,
    planned: &mut BTreeMap<String, Object>,
) -> Result<(), Error> {
    if planned.contains_key(namespace) {
        return Ok(());
    }
    let existing = cluster.get_object(&gvk::secret(), Some(namespace), RAY_TLS_SECRET)?;
    let desired = match existing {
        None => secrets::ray_tls(
            namespace,
            &Data::from([(CA_CERT_KEY.into(), secrets::encode(ca_pem))]),
            None,
        ),
        Some(s) if !secrets::managed(&s) => {
            return Err(Error::transient(format!(
                "secrets \"{RAY_TLS_SECRET}\" already exists"
            )));
        }
        Some(s) => {
            let mut data = secrets::data(&s);
            if secrets::text(&data, CA_CERT_KEY) == ca_pem {
                return Ok(());
            }
            data.insert(CA_CERT_KEY.into(), secrets::encode(ca_pem));
            secrets::ray_tls(namespace, &data, s.resource_version())
        }
    };
    planned.insert(namespace.to_string(), desired);
    Ok(())
}
