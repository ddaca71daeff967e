//! Reading a HardwareProfile: the parts injection uses, parsed as leniently as the Go webhook
//! reads its unstructured object (malformed entries are skipped, only `defaultCount` errors).

use std::collections::BTreeMap;

use odh_plugin_sdk::cluster::Cluster;
use odh_plugin_sdk::serde_json::Map;
use odh_plugin_sdk::{Error, Value};

use crate::quantity::Quantity;
use odh_kinds::gvk;
use odh_plugin_sdk::go;
use odh_plugin_sdk::json::at;

/// The injectable content of a HardwareProfile.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HardwareProfile {
    /// Resources to request (and limit) on the workload's main container.
    pub identifiers: Vec<Identifier>,
    /// Empty when the profile schedules through Kueue.
    pub node_selector: BTreeMap<String, String>,
    /// Empty when the profile schedules through Kueue.
    pub tolerations: Vec<Toleration>,
    /// `spec.scheduling.kueue.localQueueName`; when set, node scheduling is not read at all.
    pub kueue_queue: Option<String>,
}

/// One `spec.identifiers[]` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Identifier {
    /// The resource name (`cpu`, `memory`, `nvidia.com/gpu`).
    pub identifier: String,
    pub default_count: Quantity,
}

/// A toleration as the profile states it; the same fields are read from a workload's own
/// tolerations to match them against the profile's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Toleration {
    pub key: String,
    pub operator: String,
    pub value: String,
    pub effect: String,
    pub toleration_seconds: Option<i64>,
}

impl Toleration {
    /// Reads the fields Go's `corev1.Toleration` has; wrong types read as unset, and
    /// `tolerationSeconds` may be an integer or a float (truncated).
    pub fn from_json(value: &Value) -> Toleration {
        let text = |key| {
            value
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .into()
        };
        let seconds = value
            .get("tolerationSeconds")
            .and_then(|s| s.as_i64().or_else(|| s.as_f64().map(|f| f as i64)));
        Toleration {
            key: text("key"),
            operator: text("operator"),
            value: text("value"),
            effect: text("effect"),
            toleration_seconds: seconds,
        }
    }

    /// The toleration as the API serialises it (empty fields omitted).
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        for (field, value) in [
            ("key", &self.key),
            ("operator", &self.operator),
            ("value", &self.value),
            ("effect", &self.effect),
        ] {
            if !value.is_empty() {
                out.insert(field.into(), value.clone().into());
            }
        }
        if let Some(seconds) = self.toleration_seconds {
            out.insert("tolerationSeconds".into(), seconds.into());
        }
        Value::Object(out)
    }

    /// `key:operator:value:effect:tolerationSeconds` (seconds empty when unset): two
    /// tolerations with the same identity are duplicates when merging and removing.
    pub fn identity(&self) -> String {
        let seconds = self
            .toleration_seconds
            .map(|s| s.to_string())
            .unwrap_or_default();
        format!(
            "{}:{}:{}:{}:{}",
            self.key, self.operator, self.value, self.effect, seconds
        )
    }
}

/// Parses a HardwareProfile object. The error is the text after `failed fetching hardware
/// profile: ` (`failed parsing defaultCount for identifier "cpu": ...`).
pub fn parse(object: &Value) -> Result<HardwareProfile, String> {
    let mut profile = HardwareProfile::default();
    for entry in array_at(object, &["spec", "identifiers"]) {
        let Some(entry) = entry.as_object() else {
            continue;
        };
        let identifier = entry
            .get("identifier")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if identifier.is_empty() {
            continue;
        }
        let default_count = Quantity::from_json(entry.get("defaultCount")).map_err(|e| {
            format!(
                "failed parsing defaultCount for identifier {}: {e}",
                go::quote(identifier)
            )
        })?;
        profile.identifiers.push(Identifier {
            identifier: identifier.into(),
            default_count,
        });
    }
    let queue = at(object, &["spec", "scheduling", "kueue", "localQueueName"])
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !queue.is_empty() {
        profile.kueue_queue = Some(queue.into());
        return Ok(profile);
    }
    let node = ["spec", "scheduling", "node"];
    profile.node_selector = string_map(at(object, &[&node[..], &["nodeSelector"]].concat()));
    profile.tolerations = array_at(object, &[&node[..], &["tolerations"]].concat())
        .iter()
        .filter(|t| t.is_object())
        .map(Toleration::from_json)
        .collect();
    Ok(profile)
}

fn array_at<'a>(object: &'a Value, path: &[&str]) -> &'a [Value] {
    at(object, path)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// A map of strings; like Go's `NestedStringMap`, a single non-string value voids the whole map.
fn string_map(value: Option<&Value>) -> BTreeMap<String, String> {
    let Some(map) = value.and_then(Value::as_object) else {
        return BTreeMap::new();
    };
    map.iter()
        .map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect::<Option<_>>()
        .unwrap_or_default()
}

/// Reads and parses the profile `namespace/name`; none (and no read) for an empty name.
///
/// Denied when it does not exist (`hardware profile "<name>" not found in namespace "<ns>"`) or
/// does not parse (`failed fetching hardware profile: <parse error>`); a failing read keeps the
/// host's error case as `failed fetching hardware profile: failed fetching HardwareProfile
/// <ns>/<name>: <err>`.
pub fn resolve(
    cluster: &dyn Cluster,
    name: &str,
    namespace: &str,
) -> Result<Option<HardwareProfile>, Error> {
    if name.is_empty() {
        return Ok(None);
    }
    match cluster.get(&gvk::hardware_profile(), Some(namespace), name) {
        Ok(Some(object)) => parse(&object)
            .map(Some)
            .map_err(|e| Error::Denied(format!("failed fetching hardware profile: {e}"))),
        Ok(None) => Err(Error::Denied(format!(
            "hardware profile {} not found in namespace {}",
            go::quote(name),
            go::quote(namespace)
        ))),
        Err(e) => Err(e.context(format!(
            "failed fetching hardware profile: failed fetching HardwareProfile {namespace}/{name}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use odh_plugin_sdk::json;

    #[test]
    fn parses_leniently() {
        let hwp = json!({"spec": {
            "identifiers": [
                "not-a-map",
                {"identifier": ""},
                {"identifier": "cpu", "defaultCount": 4},
                {"identifier": "memory", "defaultCount": "8Gi"},
                {"identifier": "nvidia.com/gpu", "defaultCount": 2.0},
            ],
            "scheduling": {"node": {
                "nodeSelector": {"zone": "a"},
                "tolerations": [7, {"key": "k", "operator": 3, "tolerationSeconds": 300.0}],
            }},
        }});
        let p = parse(&hwp).unwrap();
        let counts: Vec<_> = p
            .identifiers
            .iter()
            .map(|i| (i.identifier.as_str(), i.default_count.as_str()))
            .collect();
        assert_eq!(
            counts,
            [("cpu", "4"), ("memory", "8Gi"), ("nvidia.com/gpu", "2")]
        );
        assert_eq!(p.node_selector.get("zone").map(String::as_str), Some("a"));
        assert_eq!(p.tolerations.len(), 1);
        assert_eq!(p.tolerations[0].identity(), "k::::300");
        assert_eq!(p.kueue_queue, None);
    }

    #[test]
    fn kueue_skips_node_scheduling() {
        let hwp = json!({"spec": {"scheduling": {
            "kueue": {"localQueueName": "q"},
            "node": {"nodeSelector": {"zone": "a"}},
        }}});
        let p = parse(&hwp).unwrap();
        assert_eq!(p.kueue_queue.as_deref(), Some("q"));
        assert!(p.node_selector.is_empty());
    }

    #[test]
    fn non_string_node_selector_is_ignored() {
        let hwp = json!({"spec": {"scheduling": {"node": {"nodeSelector": {"a": "x", "b": 1}}}}});
        assert!(parse(&hwp).unwrap().node_selector.is_empty());
    }

    #[test]
    fn toleration_round_trip() {
        let t = Toleration::from_json(&json!({"key": "k", "effect": "NoSchedule"}));
        assert_eq!(t.to_json(), json!({"key": "k", "effect": "NoSchedule"}));
        assert_eq!(t.identity(), "k:::NoSchedule:");
    }
}
