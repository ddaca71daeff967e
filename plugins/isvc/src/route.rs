//! The OpenShift Route of an exposed InferenceService (docs/plugins/isvc.md, "Controller
//! `inferenceservice`", the route step).

use odh_kinds::{InferenceService, annotation, gvk, label};
use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::{Error, Object, Plan, Value, json};

/// Seconds each component gets when it names no timeout (`DefaultOpenshiftRouteTimeout`).
const DEFAULT_TIMEOUT: i64 = 30;

/// The Route's `spec.port.targetPort`: a port name, or a number when no port is named.
pub fn target_port(ssl: bool, service: &Object) -> Result<Value, Error> {
    let ports = service.array_at(&["spec", "ports"]);
    let name_of = |p: &Value| {
        p.get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let wanted = if ssl { "https" } else { "http" };
    if let Some(p) = ports.iter().find(|p| name_of(p) == wanted) {
        return Ok(json!(name_of(p)));
    }
    if let Some(p) = ports.iter().find(|p| !name_of(p).is_empty()) {
        return Ok(json!(name_of(p)));
    }
    match ports.first() {
        Some(p) => Ok(p.get("port").cloned().unwrap_or(json!(0))),
        None => Err(Error::Transient(format!(
            "service \"{}\" has no ports defined",
            service.name()
        ))),
    }
}

/// The Service a Route sends traffic to: a transformer if there is one, else the predictor.
/// `None` when KServe has not created the InferenceService's Services (yet).
pub fn target_service(isvc: &Object, cluster: &dyn Cluster) -> Result<Option<Object>, Error> {
    let selector = format!("{}={}", label::INFERENCE_SERVICE_NAME, isvc.name());
    let mut services = cluster.list_objects(&gvk::service(), isvc.namespace(), Some(&selector))?;
    if services.is_empty() {
        return Ok(None);
    }
    services.sort_by(|a, b| a.name().cmp(b.name()));
    let component = |s: &Object, c: &str| s.label(label::COMPONENT) == Some(c);
    let predictor_name = format!("{}-predictor", isvc.name());
    let chosen = services
        .iter()
        .rev()
        .find(|s| component(s, "transformer"))
        .or_else(|| services.iter().find(|s| s.name() == predictor_name))
        .or_else(|| services.iter().find(|s| component(s, "predictor")));
    match chosen {
        Some(s) => Ok(Some(s.clone())),
        None => Err(Error::Transient(format!(
            "no predictor or transformer Service found for InferenceService \"{}\"",
            isvc.name()
        ))),
    }
}

/// `<N>s` summed over the components, or the InferenceService's own annotation verbatim.
pub fn timeout(isvc: &Object) -> String {
    if let Some(t) = isvc.annotation(annotation::ROUTE_TIMEOUT) {
        return t.to_string();
    }
    let isvc = InferenceService::of(isvc);
    let component_timeout = |c: &str| isvc.component_timeout(c).unwrap_or(DEFAULT_TIMEOUT);
    let mut total = component_timeout("predictor");
    for optional in ["transformer", "explainer"] {
        if isvc.has_component(optional) {
            total += component_timeout(optional);
        }
    }
    format!("{total}s")
}

/// The desired Route, or `None` when the InferenceService is not exposed or has no Services.
pub fn desired(isvc: &Object, cluster: &dyn Cluster) -> Result<Option<Value>, Error> {
    let view = InferenceService::of(isvc);
    if !view.is_exposed() {
        return Ok(None);
    }
    let Some(service) = target_service(isvc, cluster)? else {
        return Ok(None);
    };
    // The Route's TLS choice reads the annotation with Go's `strconv.ParseBool`.
    let ssl = view.auth_enabled_lenient();
    let mut port = target_port(ssl, &service)?;
    let mut route = json!({
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {
            "name": isvc.name(),
            "namespace": isvc.namespace(),
            "labels": {"inferenceservice-name": isvc.name()},
            "annotations": {annotation::ROUTE_TIMEOUT: timeout(isvc)},
        },
        "spec": {
            "to": {"kind": "Service", "name": service.name(), "weight": 100},
            "tls": {
                "termination": if ssl { "reencrypt" } else { "edge" },
                "insecureEdgeTerminationPolicy": "Redirect",
            },
            "wildcardPolicy": "None",
        },
    });
    let canaries = view.canaries();
    if !canaries.is_empty() {
        if let Some(name) = port.as_str().map(str::to_string) {
            port = service_target_port(&service, &name)?;
        }
        let sum: i64 = canaries
            .iter()
            .map(|c| c.get("trafficPercent").and_then(Value::as_i64).unwrap_or(0))
            .sum();
        let stable = 100 - sum;
        if stable < 0 {
            return Err(Error::Transient(format!(
                "canary traffic percents sum to {sum} which exceeds 100; stable backend weight would be {stable}"
            )));
        }
        route["spec"]["to"]["weight"] = json!(stable);
        let mut backends = Vec::new();
        for c in canaries {
            let predictor = c
                .pointer("/predictor/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let name = format!("{}-{predictor}-predictor", isvc.name());
            let found = cluster
                .get(&gvk::service(), isvc.namespace(), &name)
                .map_err(|e| e.context(format_args!("canary service \"{name}\" not found")))?;
            match found {
                Some(_) => {}
                None => {
                    return Err(Error::Transient(format!(
                        "canary service \"{name}\" not found: services \"{name}\" not found"
                    )));
                }
            }
            let weight = c.get("trafficPercent").cloned().unwrap_or(json!(0));
            backends.push(json!({"kind": "Service", "name": name, "weight": weight}));
        }
        route["spec"]["alternateBackends"] = Value::Array(backends);
    }
    route["spec"]["port"] = json!({"targetPort": port});
    check_target_port(&mut route, cluster)?;
    Ok(Some(route))
}

/// The `targetPort` of the Service port named `name` (a canary Route addresses pods directly).
fn service_target_port(service: &Object, name: &str) -> Result<Value, Error> {
    service
        .array_at(&["spec", "ports"])
        .iter()
        .find(|p| p.get("name").and_then(Value::as_str) == Some(name))
        .map(|p| p.get("targetPort").cloned().unwrap_or(Value::Null))
        .ok_or_else(|| {
            Error::Transient(format!(
                "port \"{name}\" not found on service \"{}\"; cannot resolve numeric targetPort for canary route",
                service.name()
            ))
        })
}

/// Fills an empty `spec.port.targetPort` from the target Service (`checkRouteTargetPort`).
pub fn check_target_port(route: &mut Value, cluster: &dyn Cluster) -> Result<(), Error> {
    let set = match route.pointer("/spec/port/targetPort") {
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Number(n)) => n.as_i64() != Some(0),
        _ => false,
    };
    if set {
        return Ok(());
    }
    let namespace = route
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .map(str::to_string);
    let target = route
        .pointer("/spec/to/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let service = cluster
        .get_object(&gvk::service(), namespace.as_deref(), &target)?
        .ok_or_else(|| Error::Transient(format!("services \"{target}\" not found")))?;
    let ssl = route
        .pointer("/spec/tls/termination")
        .and_then(Value::as_str)
        == Some("reencrypt");
    let port = target_port(ssl, &service)?;
    route["spec"]["port"] = json!({"targetPort": port});
    Ok(())
}

pub fn reconcile(isvc: &Object, cluster: &dyn Cluster, plan: &mut Plan) -> Result<(), Error> {
    match desired(isvc, cluster)? {
        Some(route) => plan.apply_owned(route),
        None => {
            // A cluster without Routes (not OpenShift) has nothing to remove; any other failed
            // read is an error that retries, as upstream's.
            match plan.delete_existing(cluster, &gvk::route(), isvc.namespace(), isvc.name()) {
                Err(e) if e.is_no_match() => {}
                other => other?,
            }
        }
    }
    Ok(())
}
