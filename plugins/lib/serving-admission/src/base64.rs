//! Standard base64 decoding for Secret `data` values.
//!
//! The host hands Secrets over as API JSON, where `data` values are base64; a dependency for
//! this one decoder would cost more plugin size than these few lines.

/// Decodes standard (RFC 4648, `+/`) base64; padding is optional. `None` when malformed.
pub(crate) fn decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    if text.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for byte in text.bytes() {
        buffer = (buffer << 6) | sextet(byte)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    Some(out)
}

fn sextet(byte: u8) -> Option<u32> {
    let value = match byte {
        b'A'..=b'Z' => byte - b'A',
        b'a'..=b'z' => byte - b'a' + 26,
        b'0'..=b'9' => byte - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    };
    Some(value.into())
}

#[cfg(test)]
mod tests {
    use super::decode;

    #[test]
    fn decodes() {
        assert_eq!(decode("").unwrap(), b"");
        assert_eq!(decode("Zg==").unwrap(), b"f");
        assert_eq!(decode("Zm8=").unwrap(), b"fo");
        assert_eq!(decode("Zm9v").unwrap(), b"foo");
        assert_eq!(decode("Zm9vYg").unwrap(), b"foob");
        assert_eq!(
            decode("aHR0cHM6Ly9leGFtcGxlLmNvbS9tb2RlbA==").unwrap(),
            b"https://example.com/model"
        );
        assert_eq!(decode("/+8=").unwrap(), [0xff, 0xef]);
        assert_eq!(decode("Zm9v!"), None);
        assert_eq!(decode("Z"), None);
    }
}
