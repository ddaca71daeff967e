//! [`Fake`]: a recording HTTP client for native tests.

use std::cell::RefCell;

use super::{Client, Request, Response};
use crate::Error;

type Handler = Box<dyn Fn(&Request) -> Result<Response, Error>>;

/// A recording [`Client`]: canned answers by method and exact URL, else an optional handler
/// (a small in-memory server), else a [`Error::Transient`] naming the request. Every request
/// is recorded, answered or not.
#[derive(Default)]
pub struct Fake {
    canned: Vec<(String, String, Result<Response, Error>)>,
    handler: Option<Handler>,
    requests: RefCell<Vec<Request>>,
}

impl Fake {
    /// A fake without answers: every request fails (and is recorded).
    pub fn new() -> Fake {
        Fake::default()
    }

    /// Answers `method url` (exact URL, query included) with `response`, builder style.
    pub fn respond(mut self, method: &str, url: &str, response: Response) -> Fake {
        self.canned.push((method.into(), url.into(), Ok(response)));
        self
    }

    /// Fails `method url` with `error` (a transport failure), builder style.
    pub fn fail(mut self, method: &str, url: &str, error: Error) -> Fake {
        self.canned.push((method.into(), url.into(), Err(error)));
        self
    }

    /// Answers the requests no canned answer matches, builder style.
    pub fn handler(
        mut self,
        handler: impl Fn(&Request) -> Result<Response, Error> + 'static,
    ) -> Fake {
        self.handler = Some(Box::new(handler));
        self
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.borrow().clone()
    }

    /// `METHOD url` of every request so far.
    pub fn summary(&self) -> Vec<String> {
        self.requests
            .borrow()
            .iter()
            .map(|r| format!("{} {}", r.method, r.url))
            .collect()
    }

    /// Forgets the requests recorded so far.
    pub fn clear(&self) {
        self.requests.borrow_mut().clear();
    }
}

impl Client for Fake {
    fn request(&self, request: &Request) -> Result<Response, Error> {
        self.requests.borrow_mut().push(request.clone());
        let canned = self
            .canned
            .iter()
            .find(|(m, u, _)| m.eq_ignore_ascii_case(&request.method) && *u == request.url);
        match (canned, &self.handler) {
            (Some((_, _, answer)), _) => answer.clone(),
            (None, Some(handler)) => handler(request),
            (None, None) => Err(Error::Transient(format!(
                "http::Fake: no response for {} {}",
                request.method, request.url
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canned_handler_and_unanswered() {
        let fake = Fake::new()
            .respond(
                "GET",
                "http://x/a",
                Response::with_json(200, &json!({"a": 1})),
            )
            .fail("POST", "http://x/a", Error::transient("refused"))
            .handler(|r| Ok(Response::new(404, r.url.clone())));
        assert_eq!(
            fake.request(&Request::get("http://x/a")).unwrap().status,
            200
        );
        assert_eq!(
            fake.request(&Request::post("http://x/a")),
            Err(Error::Transient("refused".into()))
        );
        let other = fake.request(&Request::get("http://x/b")).unwrap();
        assert_eq!((other.status, other.text().as_str()), (404, "http://x/b"));
        assert_eq!(
            fake.summary(),
            ["GET http://x/a", "POST http://x/a", "GET http://x/b"]
        );
        fake.clear();
        assert!(fake.requests().is_empty());

        let bare = Fake::new();
        assert_eq!(
            bare.request(&Request::get("http://y/")),
            Err(Error::Transient(
                "http::Fake: no response for GET http://y/".into()
            ))
        );
        assert_eq!(bare.requests().len(), 1);
    }
}
