//! The caller of the HTTP API request being handled (the WIT `caller` import).
//!
//! The host authenticates a `bearer` route's request and keeps the token; the plugin asks
//! whether the caller may do something, and the host answers with a `SelfSubjectAccessReview`
//! sent with the caller's own credentials:
//!
//! ```
//! use odh_plugin_sdk::caller::{AccessAttributes, Caller, Fake};
//!
//! let list = AccessAttributes::new("list", "", "configmaps").namespace("ns");
//! let caller = Fake::new().allow(list.clone());
//! assert_eq!(caller.allowed(&list), Ok(true));
//! assert_eq!(caller.allowed(&list.clone().namespace("other")), Ok(false));
//! ```

use std::cell::RefCell;

use crate::Error;
pub use crate::bindings::odh::controller::caller::AccessAttributes;

impl AccessAttributes {
    /// `verb` on `resource` of API `group` (`""` for the core API), cluster-wide.
    pub fn new(verb: &str, group: &str, resource: &str) -> AccessAttributes {
        AccessAttributes {
            namespace: None,
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            subresource: None,
            name: None,
        }
    }

    /// In one namespace, builder style.
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// One object, builder style.
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.into());
        self
    }

    /// A subresource (`status`, `log`), builder style.
    pub fn subresource(mut self, subresource: &str) -> Self {
        self.subresource = Some(subresource.into());
        self
    }
}

/// Access checks for the caller of the request being handled.
pub trait Caller {
    /// Whether the caller may do this. [`Error::Transient`] when the review cannot be made,
    /// [`Error::Denied`] outside `handle` or on a route without authentication.
    fn allowed(&self, attributes: &AccessAttributes) -> Result<bool, Error>;
}

/// The host's `caller` import. Off `wasm32` every check fails with [`Error::Transient`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Host;

impl Caller for Host {
    fn allowed(&self, attributes: &AccessAttributes) -> Result<bool, Error> {
        #[cfg(target_arch = "wasm32")]
        return crate::bindings::odh::controller::caller::allowed(attributes);
        #[cfg(not(target_arch = "wasm32"))]
        {
            let _ = attributes;
            Err(Error::Transient(
                "the caller is only available inside the plugin host".into(),
            ))
        }
    }
}

/// [`Host::allowed`](Caller::allowed): whether the caller may do this.
pub fn allowed(attributes: &AccessAttributes) -> Result<bool, Error> {
    Host.allowed(attributes)
}

/// A caller for native tests: allowed exactly the attributes given to [`Fake::allow`]
/// (compared whole), or failing every check with [`Fake::fail`]'s error. Records what it was
/// asked.
#[derive(Default)]
pub struct Fake {
    allowed: Vec<AccessAttributes>,
    error: Option<Error>,
    asked: RefCell<Vec<AccessAttributes>>,
}

impl Fake {
    /// A caller that may do nothing.
    pub fn new() -> Fake {
        Fake::default()
    }

    /// Allows `attributes`, builder style.
    pub fn allow(mut self, attributes: AccessAttributes) -> Fake {
        self.allowed.push(attributes);
        self
    }

    /// Fails every check with `error` (a review that cannot be made), builder style.
    pub fn fail(mut self, error: Error) -> Fake {
        self.error = Some(error);
        self
    }

    /// Every check so far, in order.
    pub fn asked(&self) -> Vec<AccessAttributes> {
        self.asked.borrow().clone()
    }
}

impl Caller for Fake {
    fn allowed(&self, attributes: &AccessAttributes) -> Result<bool, Error> {
        self.asked.borrow_mut().push(attributes.clone());
        match &self.error {
            Some(error) => Err(error.clone()),
            None => Ok(self.allowed.contains(attributes)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fake_allows_exactly_and_records() {
        let get = AccessAttributes::new("get", "apps", "deployments")
            .namespace("ns")
            .name("d")
            .subresource("status");
        let caller = Fake::new().allow(get.clone());
        assert_eq!(caller.allowed(&get), Ok(true));
        assert_eq!(caller.allowed(&get.clone().name("e")), Ok(false));
        assert_eq!(caller.asked().len(), 2);
        let failing = Fake::new().fail(Error::transient("apiserver down"));
        assert_eq!(
            failing.allowed(&get),
            Err(Error::Transient("apiserver down".into()))
        );
    }

    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn host_is_unavailable_natively() {
        assert!(matches!(
            allowed(&AccessAttributes::new("list", "", "pods")),
            Err(Error::Transient(_))
        ));
    }
}
