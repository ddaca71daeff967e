//! A stand-in for NVIDIA's APIs, as upstream's test double answers (docs/plugins/nim-account.md,
//! "Tests"): the answers the native tests'
//! `http::Fake` and the integration tests' local TLS server both give. Plain functions over a
//! request's parts, so either transport can use them; no dependency beyond `serde_json`.

#![allow(dead_code)]

/// A legacy (non-`nvapi-`) key NVIDIA accepts here.
pub const LEGACY_KEY: &str = "bGVnYWN5LXRlc3Qta2V5LWZvci1uaW0tYWNjb3VudC10ZXN0cw";
/// A personal key NVIDIA accepts here.
pub const PERSONAL_KEY: &str = "nvapi-bGVnYWN5LXRlc3Qta2V5LWZvci1uaW0tYWNjb3VudC10ZXN0cw";
/// The registry pull token of `registry_token.json`.
pub const REGISTRY_TOKEN: &str = "registry-pull-token-for-tests";
/// The model-data token of `ngc_token.json`.
pub const NGC_TOKEN: &str = "ngc-model-data-token-for-tests";

pub const CATALOG_PAGE_0: &str = include_str!("../fixtures/catalog_page_0.json");
pub const CATALOG_PAGE_1: &str = include_str!("../fixtures/catalog_page_1.json");
pub const MODEL_PHI: &str = include_str!("../fixtures/model_phi.json");
pub const MODEL_LLAMA: &str = include_str!("../fixtures/model_llama.json");
pub const REGISTRY_TOKEN_JSON: &str = include_str!("../fixtures/registry_token.json");
pub const NGC_TOKEN_JSON: &str = include_str!("../fixtures/ngc_token.json");
pub const CALLER_INFO_JSON: &str = include_str!("../fixtures/caller_info.json");

/// One request as the stand-in sees it.
pub struct Call<'a> {
    pub method: &'a str,
    /// `https://host/path?query`.
    pub url: &'a str,
    pub header: &'a dyn Fn(&str) -> Option<String>,
    pub body: &'a [u8],
}

/// The answer (status, body), or none for a request nothing is stubbed for.
pub fn answer(call: &Call) -> Option<(u16, String)> {
    let rest = call.url.strip_prefix("https://")?;
    let (host, path_query) = rest.split_at(rest.find('/')?);
    let host = host.split(':').next()?;
    let (path, query) = path_query.split_once('?').unwrap_or((path_query, ""));
    let auth = (call.header)("authorization").unwrap_or_default();
    let ok = |body: &str| Some((200, body.to_string()));
    match (call.method, host, path) {
        ("GET", "api.ngc.nvidia.com", "/v2/search/catalog/resources/CONTAINER") => {
            let q = query_param(query, "q")?;
            let q: serde_json::Value = serde_json::from_str(&q).ok()?;
            if q["query"] != "orgName:nim" {
                return None;
            }
            match q["page"].as_i64()? {
                0 => ok(CATALOG_PAGE_0),
                1 => ok(CATALOG_PAGE_1),
                _ => None,
            }
        }
        ("GET", "nvcr.io", "/proxy_auth") => {
            let basic = base64(format!("$oauthtoken:{LEGACY_KEY}").as_bytes());
            (query
                == "account=$oauthtoken&offline_token=true&scope=repository:nim/microsoft/phi-3-mini-4k-instruct:pull"
                && auth == format!("Basic {basic}"))
            .then(|| (200, REGISTRY_TOKEN_JSON.to_string()))
        }
        ("GET", "nvcr.io", "/v2/nim/microsoft/phi-3-mini-4k-instruct/manifests/1.2.3") => {
            let accept = (call.header)("accept").unwrap_or_default();
            (auth == format!("Bearer {REGISTRY_TOKEN}")
                && accept == "application/vnd.oci.image.index.v1+json")
                .then(|| (200, String::new()))
        }
        ("POST", "api.ngc.nvidia.com", "/v3/keys/get-caller-info") => {
            let token = auth.strip_prefix("Bearer ")?;
            let form = (call.header)("content-type").unwrap_or_default()
                == "application/x-www-form-urlencoded";
            let body = String::from_utf8_lossy(call.body);
            if !(form && token.starts_with("nvapi-") && body == format!("credentials={token}")) {
                return None;
            }
            // NVIDIA refuses personal keys it does not know.
            if token == PERSONAL_KEY {
                ok(CALLER_INFO_JSON)
            } else {
                Some((
                    401,
                    r#"{"requestStatus":{"statusCode":"UNAUTHORIZED"}}"#.to_string(),
                ))
            }
        }
        ("GET", "authn.nvidia.com", "/token") => (query_param(query, "service").as_deref()
            == Some("ngc")
            && auth == format!("ApiKey {LEGACY_KEY}"))
        .then(|| (200, NGC_TOKEN_JSON.to_string())),
        ("GET", "api.ngc.nvidia.com", repo) if repo.starts_with("/v2/org/") => {
            let bearer = auth.strip_prefix("Bearer ")?;
            if bearer != NGC_TOKEN && !bearer.starts_with("nvapi-") {
                return None;
            }
            match repo {
                "/v2/org/nim/team/microsoft/repos/phi-3-mini-4k-instruct" => ok(MODEL_PHI),
                "/v2/org/nim/team/meta/repos/llama-3.1-8b-instruct" => ok(MODEL_LLAMA),
                _ => None,
            }
        }
        _ => None,
    }
}

fn query_param(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == name).then(|| query_unescape(v))
    })
}

// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (*b as u32) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

// Form decoding: `+` is a space, `%XX` a byte.
fn query_unescape(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn helpers_decode_and_encode() {
        assert_eq!(super::base64(b"$oauthtoken:k"), "JG9hdXRodG9rZW46aw==");
        assert_eq!(super::base64(b"ab"), "YWI=");
        assert_eq!(super::query_unescape("%7B%22a%22%3A1%7D+x"), "{\"a\":1} x");
    }
}
