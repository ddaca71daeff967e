//! Metrics plumbing that follows the ServingRuntime: the `<isvc>-metrics` Service and
//! ServiceMonitor (spec §2.4, §2.5) and the metrics-dashboard ConfigMap (§2.6).

use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{Error, Object, Value, json};

use crate::dashboard;
use crate::kinds;
use crate::plan::Plan;
use crate::runtime::{self, NO_SUITABLE_RUNTIME};

pub fn metrics_name(isvc: &Object) -> String {
    format!("{}-metrics", isvc.name())
}

/// Go's `strconv.ParseInt(s, 10, 32)` error text, which upstream returns as is.
fn parse_port(value: &str) -> Result<i64, Error> {
    let digits = value.strip_prefix(['+', '-']).unwrap_or(value);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::Transient(format!(
            "strconv.ParseInt: parsing \"{value}\": invalid syntax"
        )));
    }
    match value.parse::<i32>() {
        Ok(p) => Ok(i64::from(p)),
        Err(_) => Err(Error::Transient(format!(
            "strconv.ParseInt: parsing \"{value}\": value out of range"
        ))),
    }
}

/// The metrics Service, when the runtime declares a Prometheus port.
pub fn desired_service(isvc: &Object, sr: &Object) -> Result<Option<Value>, Error> {
    let Some(port) = runtime::spec_annotation(sr, "prometheus.io/port").filter(|p| !p.is_empty())
    else {
        return Ok(None);
    };
    let port = parse_port(port)?;
    let name = metrics_name(isvc);
    Ok(Some(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "namespace": isvc.namespace(),
            "labels": {"name": name, kinds::SCRAPE_LABEL: "true"},
        },
        "spec": {
            "type": "ClusterIP",
            "ports": [{
                "name": format!("{}-metrics", sr.name()),
                "protocol": "TCP",
                "port": port,
                "targetPort": port,
            }],
            "selector": {kinds::ISVC_NAME_LABEL: isvc.name()},
        },
    })))
}

/// The ServiceMonitor scraping the metrics Service.
pub fn desired_service_monitor(isvc: &Object, sr: &Object) -> Value {
    let mut endpoint = json!({"port": format!("{}-metrics", sr.name()), "scheme": "http"});
    let path = runtime::spec_annotation(sr, "prometheus.io/path")
        .map(str::trim)
        .unwrap_or_default();
    if !path.is_empty() {
        let path = if path.starts_with('/') {
            path.to_string()
        } else {
            format!("/{path}")
        };
        endpoint["path"] = json!(path);
    }
    json!({
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {
            "name": metrics_name(isvc),
            "namespace": isvc.namespace(),
            "labels": {kinds::SCRAPE_LABEL: "true"},
        },
        "spec": {
            "endpoints": [endpoint],
            "namespaceSelector": {},
            "selector": {"matchLabels": {"name": metrics_name(isvc)}},
        },
    })
}

/// The dashboard ConfigMap; `runtime` is the resolution result (resolved once per reconcile).
pub fn desired_dashboard(
    isvc: &Object,
    runtime: &Result<Option<Object>, Error>,
) -> Result<Value, Error> {
    let namespace = isvc.namespace().unwrap_or_default();
    let model = isvc
        .at(&["spec", "predictor", "model"])
        .filter(|m| !m.is_null());
    let sr = match (model, runtime) {
        (None, _) => None,
        (Some(_), Ok(sr)) => sr.as_ref(),
        (Some(_), Err(e)) if e.message() == NO_SUITABLE_RUNTIME => None,
        (Some(_), Err(e)) => return Err(e.clone()),
    };
    let data = dashboard::dashboard_data(namespace, isvc.name(), sr.map(Object::as_value));
    Ok(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": format!("{}{}", isvc.name(), dashboard::DASHBOARD_SUFFIX),
            "namespace": namespace,
            "labels": dashboard::dashboard_labels(),
        },
        "data": data,
    }))
}

/// A cluster without the kind (no monitoring CRDs) fails the read: nothing to remove.
fn remove_if_present(
    gvk: &odh_plugin_sdk::Gvk,
    isvc: &Object,
    cluster: &dyn Cluster,
    plan: &mut Plan,
) {
    let _ = plan.delete_existing(cluster, gvk, isvc.namespace(), &metrics_name(isvc));
}

pub fn reconcile_service(
    isvc: &Object,
    runtime: &Result<Option<Object>, Error>,
    cluster: &dyn Cluster,
    plan: &mut Plan,
) -> Result<(), Error> {
    let desired = match runtime {
        Err(e) => return Err(e.clone()),
        Ok(None) => None,
        Ok(Some(sr)) => desired_service(isvc, sr)?,
    };
    match desired {
        Some(service) => plan.apply_owned(service),
        None => remove_if_present(&kinds::service(), isvc, cluster, plan),
    }
    Ok(())
}

pub fn reconcile_service_monitor(
    isvc: &Object,
    runtime: &Result<Option<Object>, Error>,
    cluster: &dyn Cluster,
    plan: &mut Plan,
) -> Result<(), Error> {
    match runtime {
        Err(e) => Err(e.clone()),
        Ok(Some(sr)) => {
            plan.apply_owned(desired_service_monitor(isvc, sr));
            Ok(())
        }
        Ok(None) => {
            remove_if_present(&kinds::service_monitor(), isvc, cluster, plan);
            Ok(())
        }
    }
}

pub fn reconcile_dashboard(
    isvc: &Object,
    runtime: &Result<Option<Object>, Error>,
    plan: &mut Plan,
) -> Result<(), Error> {
    plan.apply_owned(desired_dashboard(isvc, runtime)?);
    Ok(())
}
