//! Event filters (`event-filters`, WIT 0.1.4): upstream's predicates as data, attached to the
//! controller they belong to and checked against what it watches when the plugin loads.

use serde::{Deserialize, Serialize};

use super::{ControllerSpec, Manifest};
use crate::bindings::exports::odh::controller::event_filters as ef;
use crate::gvk::Gvk;

/// Which events of one kind reach one controller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventFilter {
    pub gvk: Gvk,
    /// Only these names (empty: every name).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    pub create: bool,
    pub update: UpdateFilter,
    pub delete: bool,
}

/// Which updates pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum UpdateFilter {
    Always,
    Never,
    /// When the value at one of these JSON Pointers differs between the old and new object.
    Changed(Vec<String>),
}

impl EventFilter {
    /// Whether an object of this name may pass at all.
    pub fn admits_name(&self, name: &str) -> bool {
        self.names.is_empty() || self.names.iter().any(|n| n == name)
    }
}

/// One entry of the `event-filters` export: the filter and the controller it is for.
#[derive(Debug, Clone, PartialEq)]
pub struct ControllerFilter {
    pub controller: String,
    pub filter: EventFilter,
}

impl From<ef::EventFilter> for ControllerFilter {
    fn from(f: ef::EventFilter) -> Self {
        ControllerFilter {
            controller: f.controller,
            filter: EventFilter {
                gvk: f.gvk.into(),
                names: f.names,
                create: f.create,
                update: match f.update {
                    ef::UpdateFilter::Always => UpdateFilter::Always,
                    ef::UpdateFilter::Never => UpdateFilter::Never,
                    ef::UpdateFilter::Changed(paths) => UpdateFilter::Changed(paths),
                },
                delete: f.delete,
            },
        }
    }
}

impl ControllerSpec {
    /// The filter of `gvk`'s events, if the plugin declared one.
    pub fn filter_of(&self, gvk: &Gvk) -> Option<&EventFilter> {
        self.filters.iter().find(|f| &f.gvk == gvk)
    }

    fn sees(&self, gvk: &Gvk) -> bool {
        &self.primary == gvk
            || self.owns.contains(gvk)
            || self.watches.iter().any(|w| &w.gvk == gvk)
    }
}

impl Manifest {
    /// Attaches the plugin's `event-filters` to its controllers: each must name a declared
    /// controller and a kind it watches, once, with well-formed JSON Pointers.
    pub fn filter_events(
        &mut self,
        filters: impl IntoIterator<Item = ControllerFilter>,
    ) -> Result<(), String> {
        for ControllerFilter { controller, filter } in filters {
            let Some(c) = self.controllers.iter_mut().find(|c| c.name == controller) else {
                return Err(format!(
                    "event-filters names controller {controller:?}, which the manifest does not declare"
                ));
            };
            if !c.sees(&filter.gvk) {
                return Err(format!(
                    "event-filters: controller {controller:?} does not watch {}",
                    filter.gvk
                ));
            }
            if c.filter_of(&filter.gvk).is_some() {
                return Err(format!(
                    "event-filters names {} of controller {controller:?} twice",
                    filter.gvk
                ));
            }
            if let UpdateFilter::Changed(pointers) = &filter.update
                && let Some(p) = pointers.iter().find(|p| !is_json_pointer(p))
            {
                return Err(format!(
                    "event-filters: {p:?} (controller {controller:?}) is not a JSON Pointer (RFC 6901)"
                ));
            }
            c.filters.push(filter);
        }
        Ok(())
    }
}

/// RFC 6901: empty (the whole document) or `/`-separated tokens where `~` is only ever `~0` or
/// `~1`.
fn is_json_pointer(p: &str) -> bool {
    if p.is_empty() {
        return true;
    }
    p.starts_with('/')
        && p.split('~')
            .skip(1)
            .all(|rest| rest.starts_with('0') || rest.starts_with('1'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn manifest() -> Manifest {
        serde_json::from_value(json!({
            "name": "p", "version": "1", "description": "",
            "controllers": [{"name": "c",
                "primary": {"group": "", "version": "v1", "kind": "ConfigMap"},
                "primaryLabelSelector": null,
                "owns": [{"group": "", "version": "v1", "kind": "Secret"}],
                "watches": [{"gvk": {"group": "", "version": "v1", "kind": "Namespace"},
                    "mapping": "all", "labelSelector": null, "optional": false}],
                "finalizer": null}],
            "webhooks": [], "reads": [], "writes": [], "httpHosts": [],
        }))
        .unwrap()
    }

    fn filter(controller: &str, kind: &str, update: UpdateFilter) -> ControllerFilter {
        ControllerFilter {
            controller: controller.into(),
            filter: EventFilter {
                gvk: Gvk::new("", "v1", kind),
                names: vec!["a".into()],
                create: false,
                update,
                delete: true,
            },
        }
    }

    #[test]
    fn filters_attach_to_a_kind_their_controller_watches_once() {
        let mut m = manifest();
        let changed = UpdateFilter::Changed(vec!["/metadata/labels/a~1b".into(), "".into()]);
        m.filter_events([
            filter("c", "ConfigMap", changed.clone()),
            filter("c", "Namespace", UpdateFilter::Never),
        ])
        .unwrap();
        let c = &m.controllers[0];
        assert_eq!(
            c.filter_of(&Gvk::new("", "v1", "ConfigMap"))
                .unwrap()
                .update,
            changed
        );
        assert!(c.filter_of(&Gvk::new("", "v1", "Secret")).is_none());
        let json = serde_json::to_value(c).unwrap();
        assert_eq!(
            json["filters"][0]["update"],
            json!({"changed": ["/metadata/labels/a~1b", ""]})
        );
        assert_eq!(json["filters"][1]["update"], "never");
        let back: ControllerSpec = serde_json::from_value(json).unwrap();
        assert_eq!(&back, c);

        let refusals = [
            (
                vec![filter("x", "ConfigMap", UpdateFilter::Always)],
                r#"event-filters names controller "x", which the manifest does not declare"#,
            ),
            (
                vec![filter("c", "Pod", UpdateFilter::Always)],
                r#"event-filters: controller "c" does not watch Pod/v1"#,
            ),
            (
                vec![
                    filter("c", "Secret", UpdateFilter::Always),
                    filter("c", "Secret", UpdateFilter::Never),
                ],
                r#"event-filters names Secret/v1 of controller "c" twice"#,
            ),
            (
                vec![filter(
                    "c",
                    "Secret",
                    UpdateFilter::Changed(vec!["data".into()]),
                )],
                r#"event-filters: "data" (controller "c") is not a JSON Pointer (RFC 6901)"#,
            ),
            (
                vec![filter(
                    "c",
                    "Secret",
                    UpdateFilter::Changed(vec!["/a~2".into()]),
                )],
                r#"event-filters: "/a~2" (controller "c") is not a JSON Pointer (RFC 6901)"#,
            ),
        ];
        for (filters, message) in refusals {
            assert_eq!(manifest().filter_events(filters), Err(message.to_string()));
        }
    }

    #[test]
    fn a_filter_without_names_admits_every_name() {
        let mut f = filter("c", "Secret", UpdateFilter::Always).filter;
        assert!(f.admits_name("a") && !f.admits_name("b"));
        f.names.clear();
        assert!(f.admits_name("b"));
    }
}
