//! [`Case`]: one row of a table-driven admission test.

use crate::{AdmissionDecision, AdmissionRequest, Error};

/// An admission request and the decision expected for it, in the style of Kubewarden's
/// `Testcase`: a table of cases reads as the specification, and a failure names its row.
///
/// ```
/// use odh_plugin_sdk::testing::Case;
/// use odh_plugin_sdk::{AdmissionDecision, AdmissionRequest, Object, Operation, core_gvk};
///
/// fn no_default_namespace(r: &AdmissionRequest) -> Result<AdmissionDecision, odh_plugin_sdk::Error> {
///     Ok(match r.namespace.as_deref() {
///         Some("default") => AdmissionDecision::deny("not in default"),
///         _ => AdmissionDecision::allow(),
///     })
/// }
///
/// let cm = |ns: &str| Object::new(&core_gvk("ConfigMap"), Some(ns), "c");
/// for case in [
///     Case::allowed("elsewhere", AdmissionRequest::for_object("/v", Operation::Create, &cm("ns"))),
///     Case::denied("default", AdmissionRequest::for_object("/v", Operation::Create, &cm("default")), "not in default"),
/// ] {
///     case.run(no_default_namespace);
/// }
/// ```
#[derive(Clone, Debug)]
pub struct Case {
    pub name: String,
    pub request: AdmissionRequest,
    pub allowed: bool,
    /// The message to expect (none: not checked).
    pub message: Option<String>,
    /// The HTTP code to expect for a denial (none: not checked).
    pub code: Option<u16>,
}

impl Case {
    /// A request that must be allowed.
    pub fn allowed(name: &str, request: AdmissionRequest) -> Case {
        Case {
            name: name.into(),
            request,
            allowed: true,
            message: None,
            code: None,
        }
    }

    /// A request that must be denied with exactly this message.
    pub fn denied(name: &str, request: AdmissionRequest, message: &str) -> Case {
        Case {
            allowed: false,
            message: Some(message.into()),
            ..Case::allowed(name, request)
        }
    }

    /// Expects this HTTP code as well, builder style.
    pub fn code(mut self, code: u16) -> Case {
        self.code = Some(code);
        self
    }

    /// Runs `decide` on the request and panics, naming the case, unless the decision is as
    /// expected. Returns the decision for further checks.
    pub fn run(
        self,
        decide: impl FnOnce(&AdmissionRequest) -> Result<AdmissionDecision, Error>,
    ) -> AdmissionDecision {
        let decision = decide(&self.request)
            .unwrap_or_else(|e| panic!("case {:?}: the call failed: {e}", self.name));
        assert_eq!(
            decision.allowed, self.allowed,
            "case {:?}: allowed; {decision:?}",
            self.name
        );
        if let Some(message) = &self.message {
            assert_eq!(
                decision.message.as_deref(),
                Some(message.as_str()),
                "case {:?}: message",
                self.name
            );
        }
        if self.code.is_some() {
            assert_eq!(decision.code, self.code, "case {:?}: code", self.name);
        }
        decision
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Object, Operation, core_gvk};

    fn request() -> AdmissionRequest {
        AdmissionRequest::for_object(
            "/v",
            Operation::Create,
            &Object::new(&core_gvk("Pod"), Some("ns"), "p"),
        )
    }

    #[test]
    fn matching_cases_pass() {
        Case::allowed("ok", request()).run(|_| Ok(AdmissionDecision::allow()));
        let d = Case::denied("no", request(), "nope")
            .code(422)
            .run(|_| Ok(AdmissionDecision::deny_with_code("nope", 422)));
        assert_eq!(d.code, Some(422));
    }

    #[test]
    #[should_panic(expected = "case \"wrong\": message")]
    fn a_wrong_message_names_the_case() {
        Case::denied("wrong", request(), "expected").run(|_| Ok(AdmissionDecision::deny("other")));
    }

    #[test]
    #[should_panic(expected = "case \"fails\": the call failed: transient: down")]
    fn a_failed_call_names_the_case() {
        Case::allowed("fails", request()).run(|_| Err(Error::transient("down")));
    }
}
