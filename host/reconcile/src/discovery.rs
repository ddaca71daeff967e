//! What the API server's discovery answers mean.

/// Whether a discovery error means "not served". A group the apiserver does not know answers
/// a plain-text `404 page not found`, not a `Status`, so kube reports no `NotFound` reason:
/// the code decides.
pub fn not_served(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(s) if s.is_not_found() || s.code == 404)
}
