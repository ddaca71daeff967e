//! The controller's own identity (its ServiceAccount token) never enters a plugin. A plugin that
//! must call an in-cluster service as the controller asks for it per request with the header
//! `Odh-Authorization: service-account`; the host removes that header and adds
//! `Authorization: Bearer <token>` itself, only when the request goes to a Service of a
//! namespace the plugin's grant names (`grants.serviceAccountNamespaces`) by its cluster DNS name
//! (`<service>.<namespace>.svc[.cluster.local]`). An address a user object chose (a URL in an
//! annotation) gets no token: the request is refused with a message saying why.

use std::sync::Arc;

/// The request header a plugin asks for the controller's identity with.
pub const REQUEST_HEADER: &str = "odh-authorization";
/// Its one value.
pub const SERVICE_ACCOUNT: &str = "service-account";

/// Where the host's bearer token comes from, read at each request (a projected ServiceAccount
/// token is rotated while the process runs).
#[derive(Clone, Default)]
pub struct Identity(Option<Arc<dyn Fn() -> Option<String> + Send + Sync>>);

impl Identity {
    /// No identity: every request asking for one is refused.
    pub fn none() -> Self {
        Self(None)
    }

    pub fn from_fn(token: impl Fn() -> Option<String> + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(token)))
    }

    /// The token now, if the host has one.
    pub fn token(&self) -> Option<String> {
        self.0
            .as_ref()
            .and_then(|token| token())
            .filter(|t| !t.is_empty())
    }
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Identity(<token source>)"
        } else {
            "Identity(none)"
        })
    }
}

/// The (service, namespace) an authority names by its cluster DNS name: `<service>.<namespace>.svc`
/// or `<service>.<namespace>.svc.cluster.local`, with or without a port. Any other name (an
/// external address, an IP, another cluster domain a DNS server outside the cluster could
/// answer for) is none.
pub fn service_of(authority: &str) -> Option<(String, String)> {
    // User info, IPv6 brackets or a bad port leave characters no DNS label holds.
    let authority = authority.to_ascii_lowercase();
    let host = crate::capabilities::host_of(&authority);
    let names = host
        .strip_suffix(".svc.cluster.local")
        .or_else(|| host.strip_suffix(".svc"))?;
    let (service, namespace) = names.split_once('.')?;
    let label = |s: &str| {
        !s.is_empty()
            && s.len() <= 63
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !s.starts_with('-')
            && !s.ends_with('-')
    };
    (label(service) && label(namespace)).then(|| (service.to_string(), namespace.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_cluster_service_names_are_services() {
        let of = |a: &str| service_of(a);
        assert_eq!(
            of("mr.odh-model-registries.svc.cluster.local:8080"),
            Some(("mr".into(), "odh-model-registries".into()))
        );
        assert_eq!(
            of("MR.Registries.svc"),
            Some(("mr".into(), "registries".into()))
        );
        for not_a_service in [
            "mr.example.com",
            "mr.registries.svc.cluster.local.evil.example",
            "mr.registries.svc.evil.example",
            "registries.svc",
            "a.b.registries.svc",
            "user@mr.registries.svc",
            "10.96.0.1:8080",
            "[fd00::1]:80",
            "mr.registries.svc:http",
            "-mr.registries.svc",
            "",
        ] {
            assert_eq!(of(not_a_service), None, "{not_a_service}");
        }
    }

    #[test]
    fn the_token_is_read_at_each_request_and_empty_is_none() {
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = calls.clone();
        let identity = Identity::from_fn(move || {
            let n = counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Some(if n == 0 { "t0".into() } else { String::new() })
        });
        assert_eq!(identity.token().as_deref(), Some("t0"));
        assert_eq!(identity.token(), None);
        assert_eq!(Identity::none().token(), None);
        assert_eq!(format!("{identity:?}"), "Identity(<token source>)");
    }
}
