//! A minimal blocking HTTP client over `wasi:http/outgoing-handler`.
//!
//! Only hosts listed in the manifest's `http-hosts` (and granted by the admin) are reachable; a
//! request to any other host fails with [`Error::Denied`] naming the host. Connection and
//! protocol failures are [`Error::Transient`]; a malformed URL or header is [`Error::Invalid`].
//! Any HTTP status, 4xx and 5xx included, is an `Ok` [`Response`].
//!
//! ```no_run
//! let response = odh_plugin_sdk::http::get("https://api.example.com/v1/models", &[("accept", "application/json")])?;
//! if response.is_success() {
//!     let models: odh_plugin_sdk::Value = response.json()?;
//! }
//! # Ok::<(), odh_plugin_sdk::Error>(())
//! ```
//!
//! Off `wasm32` every request fails with [`Error::Transient`] (after the URL is checked).

use crate::Error;

/// A complete response.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Response {
    /// The HTTP status code.
    pub status: u16,
    /// Header names (lower case, as received) and values (lossy UTF-8).
    pub headers: Vec<(String, String)>,
    /// The whole body.
    pub body: Vec<u8>,
}

impl Response {
    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The first value of a header (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body parsed as JSON; a parse failure is [`Error::Invalid`].
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, Error> {
        serde_json::from_slice(&self.body).map_err(|e| {
            Error::Invalid(format!("http: response body is not the expected JSON: {e}"))
        })
    }
}

/// `GET url` with extra headers.
pub fn get(url: &str, headers: &[(&str, &str)]) -> Result<Response, Error> {
    request("GET", url, headers, None)
}

/// `POST url` with a JSON body (and `content-type: application/json`).
pub fn post_json(
    url: &str,
    headers: &[(&str, &str)],
    body: &impl serde::Serialize,
) -> Result<Response, Error> {
    let body = serde_json::to_vec(body)
        .map_err(|e| Error::Internal(format!("http: body does not serialize: {e}")))?;
    let mut all = vec![("content-type", "application/json")];
    all.extend_from_slice(headers);
    request("POST", url, &all, Some(&body))
}

/// One request: `method` (`GET`, `POST`, ... or any token), an absolute `http`/`https` URL,
/// headers and an optional body. Blocks until the whole response body has been read.
pub fn request(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> Result<Response, Error> {
    let url = Url::parse(url)?;
    imp::request(method, &url, headers, body)
}

/// The parts of an absolute URL the request needs.
#[derive(Debug, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct Url<'a> {
    full: &'a str,
    https: bool,
    /// `host[:port]` (user info dropped).
    authority: &'a str,
    /// The host alone (no port, IPv6 brackets kept).
    host: &'a str,
    /// Path and query, `/` when empty; the fragment dropped.
    path_with_query: String,
}

#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
impl<'a> Url<'a> {
    fn parse(url: &'a str) -> Result<Url<'a>, Error> {
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

    fn denied(&self) -> Error {
        Error::Denied(format!(
            "http: request to {} denied: host {:?} is not among this plugin's granted http hosts",
            self.full, self.host
        ))
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use super::{Response, Url};
    use crate::Error;

    pub(super) fn request(
        _: &str,
        _: &Url<'_>,
        _: &[(&str, &str)],
        _: Option<&[u8]>,
    ) -> Result<Response, Error> {
        Err(Error::Transient(
            "http is only available inside the plugin host".into(),
        ))
    }
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use super::{Response, Url};
    use crate::Error;
    use wasip2::http::outgoing_handler;
    use wasip2::http::types::{
        ErrorCode, Fields, IncomingBody, Method, OutgoingBody, OutgoingRequest, Scheme,
    };
    use wasip2::io::streams::StreamError;

    pub(super) fn request(
        method: &str,
        url: &Url<'_>,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Result<Response, Error> {
        let context = || format!("http: {method} {}", url.full);
        let fail = |code: ErrorCode| match code {
            ErrorCode::HttpRequestDenied => url.denied(),
            other => Error::Transient(format!("{}: {other:?}", context())),
        };
        let stream_fail = |e: StreamError| match e {
            StreamError::LastOperationFailed(err) => {
                match wasip2::http::types::http_error_code(&err) {
                    Some(code) => fail(code),
                    None => Error::Transient(format!("{}: {}", context(), err.to_debug_string())),
                }
            }
            StreamError::Closed => Error::Transient(format!("{}: stream closed", context())),
        };

        let entries: Vec<(String, Vec<u8>)> = headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
            .collect();
        let fields = Fields::from_list(&entries)
            .map_err(|e| Error::Invalid(format!("{}: invalid header: {e:?}", context())))?;
        let request = OutgoingRequest::new(fields);
        let invalid = |what: &str| Error::Invalid(format!("{}: invalid {what}", context()));
        request
            .set_method(&to_method(method))
            .map_err(|()| invalid("method"))?;
        let scheme = if url.https {
            Scheme::Https
        } else {
            Scheme::Http
        };
        request
            .set_scheme(Some(&scheme))
            .map_err(|()| invalid("scheme"))?;
        request
            .set_authority(Some(url.authority))
            .map_err(|()| invalid("authority"))?;
        request
            .set_path_with_query(Some(&url.path_with_query))
            .map_err(|()| invalid("path"))?;
        let outgoing_body = request.body().map_err(|()| invalid("body"))?;

        let future = outgoing_handler::handle(request, None).map_err(fail)?;

        if let Some(body) = body {
            let stream = outgoing_body.write().map_err(|()| invalid("body stream"))?;
            for chunk in body.chunks(4096) {
                stream
                    .blocking_write_and_flush(chunk)
                    .map_err(stream_fail)?;
            }
            drop(stream);
        }
        OutgoingBody::finish(outgoing_body, None).map_err(fail)?;

        let response = loop {
            match future.get() {
                Some(Ok(Ok(response))) => break response,
                Some(Ok(Err(code))) => return Err(fail(code)),
                Some(Err(())) => {
                    return Err(Error::Internal(format!(
                        "{}: response taken twice",
                        context()
                    )));
                }
                None => future.subscribe().block(),
            }
        };

        let status = response.status();
        let headers = response
            .headers()
            .entries()
            .into_iter()
            .map(|(n, v)| (n, String::from_utf8_lossy(&v).into_owned()))
            .collect();
        let incoming = response.consume().map_err(|()| invalid("response body"))?;
        let stream = incoming
            .stream()
            .map_err(|()| invalid("response body stream"))?;
        let mut body = Vec::new();
        loop {
            match stream.blocking_read(64 * 1024) {
                Ok(chunk) => body.extend_from_slice(&chunk),
                Err(StreamError::Closed) => break,
                Err(e) => return Err(stream_fail(e)),
            }
        }
        drop(stream);
        drop(IncomingBody::finish(incoming));
        Ok(Response {
            status,
            headers,
            body,
        })
    }

    fn to_method(method: &str) -> Method {
        match method.to_ascii_uppercase().as_str() {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            "DELETE" => Method::Delete,
            "CONNECT" => Method::Connect,
            "OPTIONS" => Method::Options,
            "TRACE" => Method::Trace,
            "PATCH" => Method::Patch,
            _ => Method::Other(method.to_string()),
        }
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

    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn natively_unavailable() {
        assert_eq!(
            get("http://127.0.0.1/", &[]),
            Err(Error::Transient(
                "http is only available inside the plugin host".into()
            ))
        );
        assert!(matches!(get("nope", &[]), Err(Error::Invalid(_))));
    }

    #[test]
    fn response_helpers() {
        let r = Response {
            status: 200,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: br#"{"a":1}"#.to_vec(),
        };
        assert!(r.is_success());
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(r.json::<serde_json::Value>().unwrap()["a"], 1);
        assert_eq!(r.text(), r#"{"a":1}"#);
    }
}
