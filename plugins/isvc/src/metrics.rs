//! Metrics plumbing that follows the ServingRuntime: the `<isvc>-metrics` Service and
//! ServiceMonitor and the metrics-dashboard ConfigMap (docs/plugins/isvc.md, "Controller
//! `inferenceservice`", the metrics and dashboard steps).

use odh_kinds::annotation::{PROMETHEUS_PATH, PROMETHEUS_PORT};
use odh_kinds::label::{INFERENCE_SERVICE_NAME, SCRAPE};
use odh_kinds::{InferenceService, NO_SUITABLE_RUNTIME, ServingRuntime, gvk};
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{Error, Gvk, Object, Plan, Value, go, json};

use crate::dashboard;

pub fn metrics_name(isvc: &Object) -> String {
    format!("{}-metrics", isvc.name())
}

/// The metrics Service, when the runtime declares a Prometheus port.
pub fn desired_service(isvc: &Object, sr: &Object) -> Result<Option<Value>, Error> {
    let Some(port) = ServingRuntime::of(sr)
        .spec_annotation(PROMETHEUS_PORT)
        .filter(|p| !p.is_empty())
    else {
        return Ok(None);
    };
    // Go's `strconv.ParseInt(s, 10, 64)` (whose error text upstream returns as is), then
    // `int32(…)`, which wraps a larger value (the API server then refuses the port).
    let port = go::parse_int(port, 64)? as i32;
    let name = metrics_name(isvc);
    Ok(Some(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "namespace": isvc.namespace(),
            "labels": {"name": name, SCRAPE: "true"},
        },
        "spec": {
            "type": "ClusterIP",
            "ports": [{
                "name": format!("{}-metrics", sr.name()),
                "protocol": "TCP",
                "port": port,
                "targetPort": port,
            }],
            "selector": {INFERENCE_SERVICE_NAME: isvc.name()},
        },
    })))
}

/// The ServiceMonitor scraping the metrics Service.
pub fn desired_service_monitor(isvc: &Object, sr: &Object) -> Value {
    let mut endpoint = json!({"port": format!("{}-metrics", sr.name()), "scheme": "http"});
    let path = ServingRuntime::of(sr)
        .spec_annotation(PROMETHEUS_PATH)
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
            "labels": {SCRAPE: "true"},
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
    let model = InferenceService::of(isvc).predictor_model();
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

/// A cluster without the kind (no monitoring CRDs) has nothing to remove; any other failed
/// read is an error that retries, as upstream's.
fn remove_if_present(
    gvk: &Gvk,
    isvc: &Object,
    cluster: &dyn Cluster,
    plan: &mut Plan,
) -> Result<(), Error> {
    match plan.delete_existing(cluster, gvk, isvc.namespace(), &metrics_name(isvc)) {
        Err(e) if e.is_no_match() => Ok(()),
        other => other,
    }
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
        Some(service) => {
            plan.apply_owned(service);
            Ok(())
        }
        None => remove_if_present(&gvk::service(), isvc, cluster, plan),
    }
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
        Ok(None) => remove_if_present(&gvk::service_monitor(), isvc, cluster, plan),
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
