//! The Pod controller (docs/plugins/servingruntime.md, "Controller `core-pod`"): a server
//! certificate for each Ray TLS predictor pod, signed by `ray-ca-tls`, stored in its namespace's
//! `ray-tls` under the pod IP, and the entries of IPs no predictor pod has any more pruned.
//!
//! Level-based where upstream is edge-triggered: upstream's predicates (create with an IP,
//! update that changes the IP) become "a Ray TLS pod with an IP whose entry is missing or not
//! a valid certificate of the current CA for that IP". A pod whose entry is good is left
//! alone, so a restart does not rotate every certificate.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use odh_kinds::gvk;
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::log::{Level, log};
use odh_plugin_sdk::{Error, Object, Plan, Value};

use crate::Env;
use crate::certs::Ca;
use crate::entropy::key_error;
use crate::names::*;
use crate::secrets::{self, Data};

/// Whether a pod runs Ray with TLS: a `kserve-container` or `worker-container` whose env has
/// `RAY_USE_TLS` with any value but `"0"` (an empty value or a `valueFrom` counts as on).
pub fn is_ray_tls_pod(pod: &Object) -> bool {
    pod.array_at(&["spec", "containers"]).iter().any(|c| {
        let named = c["name"]
            .as_str()
            .is_some_and(|n| RAY_CONTAINERS.contains(&n));
        named
            && c["env"].as_array().is_some_and(|env| {
                env.iter().any(|e| {
                    e["name"].as_str() == Some(RAY_USE_TLS) && e["value"].as_str() != Some("0")
                })
            })
    })
}

/// Upstream's update predicate: the pod IP changed (to or from empty included).
pub fn ip_changed(old: Option<&Object>, new: &Object) -> bool {
    let ip = |p: &Object| {
        p.str_at(&["status", "podIP"])
            .unwrap_or_default()
            .to_string()
    };
    match old {
        None => !ip(new).is_empty(),
        Some(old) => ip(old) != ip(new),
    }
}

fn not_found(name: &str) -> Error {
    Error::transient(format!("secrets \"{name}\" not found"))
}

/// A managed Secret, as upstream's filtered cache sees it.
fn managed_secret(cluster: &dyn Cluster, namespace: &str, name: &str) -> Result<Object, Error> {
    cluster
        .get_object(&gvk::secret(), Some(namespace), name)?
        .filter(secrets::managed)
        .ok_or_else(|| not_found(name))
}

pub fn reconcile(
    pod: &Object,
    controller_namespace: &str,
    cluster: &dyn Cluster,
    env: &mut Env<'_>,
    plan: &mut Plan,
) -> Result<(), Error> {
    if !is_ray_tls_pod(pod) {
        return Ok(());
    }
    let namespace = pod.namespace().unwrap_or_default();
    let ip = pod.str_at(&["status", "podIP"]).unwrap_or_default();
    if ip.is_empty() {
        log(
            Level::Debug,
            "the pod has no IP yet: its certificate waits for one",
        );
        return Ok(());
    }
    if ip.parse::<Ipv4Addr>().is_err() {
        // Upstream retries forever: such an IP is not a valid Secret data key.
        return Err(Error::invalid(format!(
            "pod {namespace}/{} has IP {ip:?}, which cannot be a key of Secret {RAY_TLS_SECRET} (IPv4 only): no Ray TLS certificate is made for it",
            pod.name()
        )));
    }
    let ca_secret = managed_secret(cluster, controller_namespace, RAY_CA_SECRET)?;
    let ca_data = secrets::data(&ca_secret);
    let ca = Ca::parse(
        &secrets::text(&ca_data, TLS_CRT),
        &secrets::text(&ca_data, TLS_KEY),
    )
    .map_err(Error::transient)?;
    let ray_tls = managed_secret(cluster, namespace, RAY_TLS_SECRET)?;
    let current = secrets::data(&ray_tls);
    let live_ips: BTreeSet<String> = cluster
        .list_objects(&gvk::pod(), Some(namespace), Some(PREDICTOR_SELECTOR))?
        .iter()
        .filter_map(|p| p.str_at(&["status", "podIP"]).map(str::to_string))
        .collect();
    let mut data: Data = current
        .iter()
        .filter(|(k, _)| k.as_str() == CA_CERT_KEY || live_ips.contains(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let valid = current
        .get(ip)
        .is_some_and(|_| ca.issued_for(&secrets::text(&current, ip), ip, env.now));
    if !valid {
        let dns = [format!("*.{namespace}.svc.cluster.local")];
        let entry = ca
            .issue(env.keys, env.now, &[ip], &dns)
            .map_err(|e| key_error("failed to create certificate", e))?;
        data.insert(ip.to_string(), secrets::encode(&entry));
    }
    if data != current {
        // With the resourceVersion read: a concurrent write of another pod's entry makes this
        // apply conflict, and the retry starts from the Secret that holds it.
        plan.apply_unowned(secrets::ray_tls(
            namespace,
            &data,
            ray_tls.resource_version(),
        ));
    }
    Ok(())
}

/// The Ray TLS pods with an IP in the namespace of a changed `ray-tls` (none when it was
/// deleted: its pods would only fail until it is back, and its return is a change too).
pub fn pods_of_ray_tls(
    secret: &Object,
    deleted: bool,
    cluster: &dyn Cluster,
) -> Result<Vec<odh_plugin_sdk::RequestKey>, Error> {
    if deleted || secret.kind() != "Secret" || secret.name() != RAY_TLS_SECRET {
        return Ok(Vec::new());
    }
    let namespace = secret.namespace();
    Ok(cluster
        .list_objects(&gvk::pod(), namespace, Some(PREDICTOR_SELECTOR))?
        .iter()
        .filter(|p| {
            is_ray_tls_pod(p)
                && p.str_at(&["status", "podIP"])
                    .is_some_and(|ip| !ip.is_empty())
        })
        .map(Object::request_key)
        .collect())
}

/// A `ray-tls` value's text, for tests and logs.
pub fn entry_text(secret: &Value, ip: &str) -> String {
    secrets::text(&secrets::data(&Object(secret.clone())), ip)
}
