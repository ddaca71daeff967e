//! Outgoing HTTP: the [`Client`] trait, the host's client ([`Host`], over
//! `wasi:http/outgoing-handler`) and a recording [`Fake`] for native tests.
//!
//! Only hosts listed in the manifest's `http-hosts` (and granted by the admin) are reachable; a
//! request to any other host fails with [`Error::Denied`] naming the host. Connection and
//! protocol failures are [`Error::Transient`]; a malformed URL or header is [`Error::Invalid`].
//! Any HTTP status, 4xx and 5xx included, is an `Ok` [`Response`]. In a shadow call and in an
//! offline `plugin eval` the host lets only `GET` and `HEAD` out; other methods fail as a
//! transport error, so a plugin that writes over HTTP must tolerate that failure.
//!
//! Take the client from the [`Ctx`](crate::Ctx) so tests can hand in a [`Fake`]:
//!
//! ```
//! use odh_plugin_sdk::http::{Client, Fake, Request, Response};
//! use odh_plugin_sdk::{Error, Value, json};
//!
//! fn models(http: &dyn Client) -> Result<Value, Error> {
//!     let response = http.request(&Request::get("https://api.example.com/v1/models"))?;
//!     response.json()
//! }
//!
//! let fake = Fake::new().respond("GET", "https://api.example.com/v1/models", Response::with_json(200, &json!([])));
//! assert_eq!(models(&fake).unwrap(), json!([]));
//! assert_eq!(fake.summary(), ["GET https://api.example.com/v1/models"]);
//! ```

mod fake;
mod url;
#[cfg(target_arch = "wasm32")]
mod wasi;

pub use fake::Fake;

/// The header a request asks the host to send the controller's own identity with. The host
/// replaces it with `Authorization: Bearer <the controller's ServiceAccount token>` only for a
/// Service of the cluster (`<service>.<namespace>.svc[.cluster.local]`) in a namespace the
/// plugin is granted (`grants.serviceAccountNamespaces`), and refuses the request otherwise
/// (a transport error saying why). The plugin never sees the token.
pub const SERVICE_ACCOUNT_HEADER: (&str, &str) = ("Odh-Authorization", "service-account");

use crate::Error;

/// One outgoing request. Header names are sent as given; HTTP treats them case-insensitively.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Request {
    /// `GET`, `POST`, ... (any token).
    pub method: String,
    /// An absolute `http` or `https` URL.
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
}

impl Request {
    /// A request without headers or body.
    pub fn new(method: &str, url: &str) -> Request {
        Request {
            method: method.into(),
            url: url.into(),
            ..Request::default()
        }
    }

    /// `GET url`.
    pub fn get(url: &str) -> Request {
        Request::new("GET", url)
    }

    /// `POST url`.
    pub fn post(url: &str) -> Request {
        Request::new("POST", url)
    }

    /// Adds a header, builder style.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the body, builder style.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = Some(body.into());
        self
    }

    /// Sets a JSON body and `Content-Type: application/json`, builder style.
    pub fn json_body(self, body: &impl serde::Serialize) -> Result<Self, Error> {
        let body = serde_json::to_vec(body)
            .map_err(|e| Error::Internal(format!("http: body does not serialize: {e}")))?;
        Ok(self.header("Content-Type", "application/json").body(body))
    }

    /// The first value of a header (case-insensitive).
    pub fn header_value(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    /// The body parsed as JSON (handy in fakes); none without a body.
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<Option<T>, Error> {
        Ok(self
            .body
            .as_deref()
            .map(serde_json::from_slice)
            .transpose()?)
    }
}

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
    /// A response with a status and a body, no headers.
    pub fn new(status: u16, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// A JSON response (`content-type: application/json`), for fakes.
    pub fn with_json(status: u16, body: &impl serde::Serialize) -> Response {
        Response {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: serde_json::to_vec(body).expect("the body serializes to JSON"),
        }
    }

    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The first value of a header (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
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

fn find_header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Sends requests. Blocks until the whole response body has been read.
pub trait Client {
    /// One request; any HTTP status is an `Ok` response, transport failures are errors.
    fn request(&self, request: &Request) -> Result<Response, Error>;
}

/// The plugin host's outgoing HTTP (`wasi:http/outgoing-handler`).
///
/// Off `wasm32` every request fails with [`Error::Transient`] (after the URL is checked); use
/// a [`Fake`] in tests.
#[derive(Clone, Copy, Debug, Default)]
pub struct Host;

impl Client for Host {
    fn request(&self, request: &Request) -> Result<Response, Error> {
        let url = url::Url::parse(&request.url)?;
        #[cfg(target_arch = "wasm32")]
        return wasi::send(
            &request.method,
            &url,
            &request.headers,
            request.body.as_deref(),
        );
        #[cfg(not(target_arch = "wasm32"))]
        {
            let _ = url;
            Err(Error::Transient(
                "http is only available inside the plugin host".into(),
            ))
        }
    }
}

/// The client of a plugin whose [`Plugin::USES_HTTP`](crate::Plugin::USES_HTTP) is false:
/// every request is refused with [`Error::Denied`] saying how to turn HTTP on.
#[derive(Clone, Copy, Debug, Default)]
pub struct Off;

impl Client for Off {
    fn request(&self, request: &Request) -> Result<Response, Error> {
        Err(Error::Denied(format!(
            "http: {} {} refused: this plugin does not send HTTP requests (set `const USES_HTTP: bool = true` in its Plugin impl)",
            request.method, request.url
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn off_refuses_and_says_why() {
        let Err(Error::Denied(m)) = Off.request(&Request::get("https://x/")) else {
            panic!("expected a refusal")
        };
        assert!(m.starts_with("http: GET https://x/ refused:"), "{m}");
        assert!(m.contains("USES_HTTP"), "{m}");
    }

    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn natively_unavailable() {
        assert_eq!(
            Host.request(&Request::get("http://127.0.0.1/")),
            Err(Error::Transient(
                "http is only available inside the plugin host".into()
            ))
        );
        assert!(matches!(
            Host.request(&Request::get("nope")),
            Err(Error::Invalid(_))
        ));
    }

    #[test]
    fn request_builders() {
        let r = Request::post("https://x/y")
            .header("Accept", "application/json")
            .json_body(&json!({"a": 1}))
            .unwrap();
        assert_eq!(r.method, "POST");
        assert_eq!(r.header_value("content-type"), Some("application/json"));
        assert_eq!(r.header_value("ACCEPT"), Some("application/json"));
        assert_eq!(r.json::<Value>().unwrap(), Some(json!({"a": 1})));
        assert_eq!(Request::get("https://x").json::<Value>().unwrap(), None);
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
        assert_eq!(r.json::<Value>().unwrap()["a"], 1);
        assert_eq!(r.text(), r#"{"a":1}"#);
        assert!(!Response::new(404, "no").is_success());
        assert!(matches!(
            Response::new(200, "no").json::<Value>(),
            Err(Error::Invalid(_))
        ));
        assert_eq!(Response::with_json(201, &json!([1])).body, b"[1]");
    }
}
