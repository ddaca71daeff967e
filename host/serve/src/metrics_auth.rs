//! `--metrics-secure`: who may read `/metrics`, decided as controller-runtime's
//! `filters.WithAuthenticationAndAuthorization` decides it: the bearer token is authenticated
//! by the API server (TokenReview) and the user authorized for `get` on the non-resource URL
//! (SubjectAccessReview). Answers are cached as its delegating authenticator and authorizer
//! cache them (a token for a minute; an allow for five, a deny for thirty seconds), so a
//! scrape every 30 s costs the API server nothing most of the time.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use sha2::{Digest, Sha256};

const TOKEN_TTL: Duration = Duration::from_secs(60);
const ALLOW_TTL: Duration = Duration::from_secs(300);
const DENY_TTL: Duration = Duration::from_secs(30);
/// Entries kept per cache; past it the cache starts over (a flood of made-up tokens must not
/// grow it without bound).
const MAX_ENTRIES: usize = 1024;

/// Answers remembered by key, each with when it was given.
type Cache<K, V> = Mutex<HashMap<K, (V, Instant)>>;

/// The checks, with their caches.
pub struct MetricsAuth {
    client: kube::Client,
    /// By the token's sha256: the user it authenticates as, `None` when it does not.
    users: Cache<[u8; 32], Option<UserInfo>>,
    /// By user, verb and path: allowed or not.
    decisions: Cache<String, bool>,
}

/// Why a request is not served.
#[derive(Debug, PartialEq, Eq)]
pub struct Refusal {
    pub status: StatusCode,
    pub message: String,
}

impl MetricsAuth {
    pub fn new(client: kube::Client) -> Self {
        Self {
            client,
            users: Mutex::default(),
            decisions: Mutex::default(),
        }
    }

    /// Whether the request with `authorization` may `verb` `path`.
    pub async fn check(
        &self,
        authorization: Option<&str>,
        verb: &str,
        path: &str,
    ) -> Result<(), Refusal> {
        let unauthorized = || Refusal {
            status: StatusCode::UNAUTHORIZED,
            message: "Unauthorized".into(),
        };
        let token = authorization
            .and_then(|v| {
                let (scheme, token) = v.trim().split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
            })
            .filter(|t| !t.is_empty())
            .ok_or_else(unauthorized)?;
        let user = self.authenticate(token).await.map_err(|e| {
            tracing::error!("Authentication failed: {e}");
            Refusal {
                status: StatusCode::INTERNAL_SERVER_ERROR,
                message: "Authentication failed".into(),
            }
        })?;
        let user = user.ok_or_else(unauthorized)?;
        let name = user.username.clone().unwrap_or_default();
        match self.authorize(&user, verb, path).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(Refusal {
                status: StatusCode::FORBIDDEN,
                message: format!("Authorization denied for user {name}"),
            }),
            Err(e) => {
                let message = format!("Authorization for user {name} failed");
                tracing::error!("{message}: {e}");
                Err(Refusal {
                    status: StatusCode::INTERNAL_SERVER_ERROR,
                    message,
                })
            }
        }
    }

    async fn authenticate(&self, token: &str) -> kube::Result<Option<UserInfo>> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some((user, at)) = self.users.lock().expect("users lock").get(&key)
            && at.elapsed() < TOKEN_TTL
        {
            return Ok(user.clone());
        }
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_string()),
                ..Default::default()
            },
            ..Default::default()
        };
        let answer = Api::<TokenReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await?;
        let user = answer
            .status
            .filter(|s| s.authenticated == Some(true))
            .and_then(|s| s.user);
        remember(&self.users, key, user.clone());
        Ok(user)
    }

    async fn authorize(&self, user: &UserInfo, verb: &str, path: &str) -> kube::Result<bool> {
        let key = format!(
            "{}\u{0}{}\u{0}{verb}\u{0}{path}",
            user.username.as_deref().unwrap_or_default(),
            user.groups.clone().unwrap_or_default().join(",")
        );
        if let Some((allowed, at)) = self.decisions.lock().expect("decisions lock").get(&key)
            && at.elapsed() < if *allowed { ALLOW_TTL } else { DENY_TTL }
        {
            return Ok(*allowed);
        }
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username.clone(),
                uid: user.uid.clone(),
                groups: user.groups.clone(),
                extra: user.extra.clone(),
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(path.to_string()),
                    verb: Some(verb.to_string()),
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let answer = Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await?;
        let allowed = answer.status.is_some_and(|s| s.allowed);
        remember(&self.decisions, key, allowed);
        Ok(allowed)
    }
}

fn remember<K: std::hash::Hash + Eq, V>(cache: &Cache<K, V>, key: K, value: V) {
    let mut cache = cache.lock().expect("auth cache lock");
    if cache.len() >= MAX_ENTRIES {
        cache.clear();
    }
    cache.insert(key, (value, Instant::now()));
}

/// The middleware: a request goes on only when [`MetricsAuth::check`] allows it.
pub async fn require(auth: std::sync::Arc<MetricsAuth>, request: Request, next: Next) -> Response {
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let verb = request.method().as_str().to_ascii_lowercase();
    let path = request.uri().path().to_string();
    match auth.check(authorization.as_deref(), &verb, &path).await {
        Ok(()) => next.run(request).await,
        Err(Refusal { status, message }) => (
            status,
            [
                (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            format!("{message}\n"),
        )
            .into_response(),
    }
}
