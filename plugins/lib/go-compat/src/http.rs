//! Go's `net/http` spellings.

/// Go's `resp.Status` for a code: `404 Not Found` (the code alone when Go has no text for it
/// in this table of the common ones).
pub fn status_line(status: u16) -> String {
    let reason = match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    };
    format!("{status} {reason}").trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::status_line;

    #[test]
    fn status_lines() {
        assert_eq!(status_line(404), "404 Not Found");
        assert_eq!(status_line(200), "200 OK");
        assert_eq!(status_line(599), "599");
    }
}
