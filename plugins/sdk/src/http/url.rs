//! The parts of an absolute `http`/`https` URL a request needs.

use crate::Error;

/// The parts of an absolute URL the request needs.
#[derive(Debug, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub(super) struct Url<'a> {
    pub(super) full: &'a str,
    pub(super) https: bool,
    /// `host[:port]` (user info dropped).
    pub(super) authority: &'a str,
    /// The host alone (no port, IPv6 brackets kept).
    pub(super) host: &'a str,
    /// Path and query, `/` when empty; the fragment dropped.
    pub(super) path_with_query: String,
}

#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
impl<'a> Url<'a> {
    pub(super) fn parse(url: &'a str) -> Result<Url<'a>, Error> {
        let invalid = |why: &str| Error::Invalid(format!("http: invalid URL {url:?}: {why}"));
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| invalid("not absolute"))?;
        let https = match scheme.to_ascii_lowercase().as_str() {
            "https" => true,
            "http" => false,
            _ => return Err(invalid("only http and https are supported")),
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let authority = &rest[..end];
        let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
        let host = if authority.starts_with('[') {
            authority
                .find(']')
                .map(|i| &authority[..=i])
                .ok_or_else(|| invalid("bad IPv6 host"))?
        } else {
            authority.split_once(':').map_or(authority, |(h, _)| h)
        };
        if host.is_empty() {
            return Err(invalid("no host"));
        }
        let tail = &rest[end..];
        let tail = tail.split_once('#').map_or(tail, |(t, _)| t);
        let path_with_query = if tail.starts_with('/') {
            tail.to_string()
        } else {
            format!("/{tail}")
        };
        Ok(Url {
            full: url,
            https,
            authority,
            host,
            path_with_query,
        })
    }

    pub(super) fn denied(&self) -> Error {
        Error::Denied(format!(
            "http: request to {} denied: host {:?} is not among this plugin's granted http hosts",
            self.full, self.host
        ))
    }

    /// The host refused the address the granted host name resolves to (loopback, link-local,
    /// ...): only a grant of the address itself reaches one.
    pub(super) fn reserved(&self) -> Error {
        Error::Denied(format!(
            "http: request to {} denied: host {:?} resolves to a loopback, link-local or other reserved address, which only a grant of that address reaches",
            self.full, self.host
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_parsing() {
        let u = Url::parse("https://user@api.example.com:8443/v1/x?y=1#frag").unwrap();
        assert!(u.https);
        assert_eq!(
            (u.authority, u.host),
            ("api.example.com:8443", "api.example.com")
        );
        assert_eq!(u.path_with_query, "/v1/x?y=1");
        let u = Url::parse("http://127.0.0.1:8080").unwrap();
        assert_eq!(
            (u.authority, u.host, u.path_with_query.as_str()),
            ("127.0.0.1:8080", "127.0.0.1", "/")
        );
        let u = Url::parse("http://[::1]:80?q").unwrap();
        assert_eq!((u.host, u.path_with_query.as_str()), ("[::1]", "/?q"));
        assert!(matches!(Url::parse("ftp://x/"), Err(Error::Invalid(_))));
        assert!(matches!(Url::parse("/relative"), Err(Error::Invalid(_))));
        assert!(matches!(Url::parse("http:///x"), Err(Error::Invalid(_))));
        let Error::Denied(m) = Url::parse("https://evil.example:1/").unwrap().denied() else {
            panic!()
        };
        assert!(m.contains("\"evil.example\""), "{m}");
    }
}
