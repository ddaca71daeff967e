//! Registry authentication as the distribution spec and Docker's token protocol define it: a
//! `401` carries `WWW-Authenticate: Basic …` (credentials on every request) or `Bearer
//! realm=…,service=…` (a token from the realm, asked for anonymously or with the credentials,
//! then sent as `Authorization: Bearer`). Credentials come from a
//! `kubernetes.io/dockerconfigjson` Secret (`.dockerconfigjson`) or a Docker `config.json`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// A user name and password (or token) for one registry.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credentials({}, ***)", self.username)
    }
}

impl Credentials {
    pub fn basic_header(&self) -> String {
        format!(
            "Basic {}",
            STANDARD.encode(format!("{}:{}", self.username, self.password))
        )
    }
}

/// The registry a Docker config key names: `https://index.docker.io/v1/` and `quay.io` alike
/// become a bare host[:port]; Docker Hub's aliases are one registry.
fn normalize_registry(key: &str) -> String {
    let key = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let host = key.split('/').next().unwrap_or(key).to_ascii_lowercase();
    match host.as_str() {
        "index.docker.io" | "registry-1.docker.io" | "docker.io" => "docker.io".into(),
        _ => host,
    }
}

/// The credentials a Docker config (`{"auths": {"<registry>": {"auth": base64(user:pass)} |
/// {"username", "password"}}}`) holds for `registry`; `Ok(None)` when it has none for it.
pub fn from_docker_config(json: &[u8], registry: &str) -> Result<Option<Credentials>, String> {
    let config: serde_json::Value =
        serde_json::from_slice(json).map_err(|e| format!("not a Docker config: {e}"))?;
    let auths = config["auths"]
        .as_object()
        .ok_or("not a Docker config: no \"auths\" mapping")?;
    let wanted = normalize_registry(registry);
    let Some((key, entry)) = auths.iter().find(|(k, _)| normalize_registry(k) == wanted) else {
        return Ok(None);
    };
    if let Some(auth) = entry["auth"].as_str().filter(|a| !a.is_empty()) {
        let decoded = STANDARD
            .decode(auth)
            .ok()
            .and_then(|d| String::from_utf8(d).ok())
            .ok_or_else(|| format!("auths[{key:?}].auth is not base64 of user:password"))?;
        let (username, password) = decoded
            .split_once(':')
            .ok_or_else(|| format!("auths[{key:?}].auth is not base64 of user:password"))?;
        return Ok(Some(Credentials {
            username: username.into(),
            password: password.into(),
        }));
    }
    match (entry["username"].as_str(), entry["password"].as_str()) {
        (Some(u), Some(p)) => Ok(Some(Credentials {
            username: u.into(),
            password: p.into(),
        })),
        _ => Err(format!(
            "auths[{key:?}] has neither auth nor username and password"
        )),
    }
}

/// The registries a Docker config has credentials for, for messages.
pub fn registries_in(json: &[u8]) -> Vec<String> {
    serde_json::from_slice::<serde_json::Value>(json)
        .ok()
        .and_then(|c| c["auths"].as_object().map(|a| a.keys().cloned().collect()))
        .unwrap_or_default()
}

/// A parsed `WWW-Authenticate` challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Challenge {
    Basic,
    Bearer {
        realm: String,
        service: Option<String>,
    },
}

/// Parses `Basic realm="x"` or `Bearer realm="…",service="…",scope="…"` (quoted values may
/// hold commas).
pub fn parse_challenge(header: &str) -> Option<Challenge> {
    let header = header.trim();
    let (scheme, rest) = header.split_once(' ').unwrap_or((header, ""));
    if scheme.eq_ignore_ascii_case("basic") {
        return Some(Challenge::Basic);
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let params = parse_params(rest);
    let get = |k: &str| {
        params
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(k))
            .map(|(_, v)| v.clone())
    };
    Some(Challenge::Bearer {
        realm: get("realm")?,
        service: get("service"),
    })
}

fn parse_params(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let name: String = std::iter::from_fn(|| chars.next_if(|c| *c != '=')).collect();
        if name.is_empty() || chars.next() != Some('=') {
            return out;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '"' => break,
                    c => value.push(c),
                }
            }
        } else {
            value = std::iter::from_fn(|| chars.next_if(|c| *c != ',')).collect();
        }
        out.push((name.trim().to_string(), value.trim().to_string()));
    }
}

/// Percent-encodes a query value (RFC 3986 unreserved characters pass).
pub fn query_escape(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The token URL for `scope` at a Bearer challenge's realm.
pub fn token_url(realm: &str, service: Option<&str>, scope: &str) -> String {
    let sep = if realm.contains('?') { '&' } else { '?' };
    let mut url = format!("{realm}{sep}scope={}", query_escape(scope));
    if let Some(service) = service {
        url.push_str(&format!("&service={}", query_escape(service)));
    }
    url
}

/// The token in a token server's answer (`token`, or OAuth2's `access_token`).
pub fn token_from(body: &[u8]) -> Result<String, String> {
    let answer: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("the token answer is not JSON: {e}"))?;
    answer["token"]
        .as_str()
        .or_else(|| answer["access_token"].as_str())
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .ok_or_else(|| "the token answer holds no token".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_parse_with_quoted_commas() {
        assert_eq!(
            parse_challenge(
                r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push""#
            ),
            Some(Challenge::Bearer {
                realm: "https://auth.example/token".into(),
                service: Some("registry.example".into()),
            })
        );
        assert_eq!(
            parse_challenge(r#"Basic realm="Registry Realm""#),
            Some(Challenge::Basic)
        );
        assert_eq!(parse_challenge("Bearer service=x"), None, "no realm");
        assert_eq!(parse_challenge("Negotiate abc"), None);
    }

    #[test]
    fn docker_config_credentials_by_registry() {
        let config = serde_json::json!({"auths": {
            "https://index.docker.io/v1/": {"auth": STANDARD.encode("hub:secret:with:colons")},
            "quay.io": {"username": "robot", "password": "tok"},
            "127.0.0.1:5000": {"auth": STANDARD.encode("u:p")},
            "broken.example": {"auth": "%%%"},
        }})
        .to_string();
        let creds = |r| from_docker_config(config.as_bytes(), r);
        let hub = creds("registry-1.docker.io").unwrap().unwrap();
        assert_eq!(
            (hub.username.as_str(), hub.password.as_str()),
            ("hub", "secret:with:colons")
        );
        assert_eq!(creds("quay.io").unwrap().unwrap().username, "robot");
        assert_eq!(creds("127.0.0.1:5000").unwrap().unwrap().password, "p");
        assert_eq!(creds("ghcr.io").unwrap(), None);
        assert!(creds("broken.example").unwrap_err().contains("base64"));
        assert!(
            from_docker_config(b"{}", "quay.io")
                .unwrap_err()
                .contains("auths")
        );
        assert!(!format!("{hub:?}").contains("secret"));
    }

    #[test]
    fn token_urls_and_answers() {
        assert_eq!(
            token_url(
                "https://a.example/token",
                Some("reg"),
                "repository:o/p:pull"
            ),
            "https://a.example/token?scope=repository%3Ao%2Fp%3Apull&service=reg"
        );
        assert_eq!(token_from(br#"{"access_token":"t"}"#).unwrap(), "t");
        assert_eq!(
            token_from(br#"{"token":"t1","access_token":"t2"}"#).unwrap(),
            "t1"
        );
        assert!(token_from(br#"{"token":""}"#).is_err());
    }
}
