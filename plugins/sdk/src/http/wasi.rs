//! Sending a request through `wasi:http/outgoing-handler` (inside the host only).

use super::Response;
use super::url::Url;
use crate::Error;
use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, IncomingBody, Method, OutgoingBody, OutgoingRequest, Scheme,
};
use wasip2::io::streams::StreamError;

pub(super) fn send(
    method: &str,
    url: &Url<'_>,
    headers: &[(String, String)],
    body: Option<&[u8]>,
) -> Result<Response, Error> {
    let context = || format!("http: {method} {}", url.full);
    let fail = |code: ErrorCode| match code {
        ErrorCode::HttpRequestDenied => url.denied(),
        ErrorCode::DestinationIpProhibited => url.reserved(),
        other => Error::Transient(format!("{}: {other:?}", context())),
    };
    let stream_fail = |e: StreamError| match e {
        StreamError::LastOperationFailed(err) => match wasip2::http::types::http_error_code(&err) {
            Some(code) => fail(code),
            None => Error::Transient(format!("{}: {}", context(), err.to_debug_string())),
        },
        StreamError::Closed => Error::Transient(format!("{}: stream closed", context())),
    };

    let mut entries: Vec<(String, Vec<u8>)> = headers
        .iter()
        .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
        .collect();
    // The length is known: say so, as Go's client does (some servers and gateways refuse a
    // chunked body with 411 Length Required).
    if let Some(body) = body
        && !headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-length"))
    {
        entries.push(("content-length".into(), body.len().to_string().into_bytes()));
    }
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

    let wait = || loop {
        match future.get() {
            Some(Ok(Ok(response))) => return Ok(response),
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
    let sent = (|| {
        if let Some(body) = body {
            let stream = outgoing_body.write().map_err(|()| invalid("body stream"))?;
            for chunk in body.chunks(4096) {
                stream
                    .blocking_write_and_flush(chunk)
                    .map_err(stream_fail)?;
            }
            drop(stream);
        }
        OutgoingBody::finish(outgoing_body, None).map_err(fail)
    })();
    if let Err(write_error) = sent {
        // A request the host refused before its body went out closes the body stream: the
        // response's error says why, the stream's would only say "closed".
        return Err(wait().err().unwrap_or(write_error));
    }
    let response = wait()?;

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
