//! Who may read `/metrics` under `--metrics-secure`, as controller-runtime's
//! `WithAuthenticationAndAuthorization` filter decides it: the request's bearer token is
//! authenticated with a TokenReview and the user it names is authorized with a
//! SubjectAccessReview for `get` on the non-resource URL (`/metrics`). So the usual
//! `metrics-reader` ClusterRole and a Prometheus ServiceAccount token work unchanged. The
//! binary's own identity needs `create` on `tokenreviews` and `subjectaccessreviews`.
//!
//! Decisions are cached for [`CACHE_FOR`] per token and path (the token itself is never kept,
//! only its SHA-256), so a scraper every few seconds costs the API server two requests per
//! cache period, not per scrape.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use http::StatusCode;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use sha2::{Digest, Sha256};

/// How long a decision is reused.
pub const CACHE_FOR: Duration = Duration::from_secs(10);

/// Decisions kept at most (the cache is emptied when full).
const CACHE_ENTRIES: usize = 1024;

/// A refusal: the status and a short text for the client.
pub type Refusal = (StatusCode, String);

/// Admits or refuses one request to a protected path.
#[async_trait]
pub trait RequestGuard: Send + Sync {
    /// `Ok` to serve `path` to the request carrying `authorization` (the header's value).
    async fn admit(&self, authorization: Option<&str>, path: &str) -> Result<(), Refusal>;
}

/// A decision and when it was made, by the SHA-256 of token and path.
type Decisions = HashMap<[u8; 32], (Result<(), Refusal>, Instant)>;

/// The guard that asks the API server, as controller-runtime's filter does.
pub struct KubeAuthorizer {
    client: kube::Client,
    decisions: Mutex<Decisions>,
}

impl KubeAuthorizer {
    /// A guard asking the API server `client` talks to.
    pub fn new(client: kube::Client) -> Self {
        KubeAuthorizer {
            client,
            decisions: Mutex::new(HashMap::new()),
        }
    }

    fn key(token: &str, path: &str) -> [u8; 32] {
        let mut hash = Sha256::new();
        hash.update(token.as_bytes());
        hash.update([0]);
        hash.update(path.as_bytes());
        hash.finalize().into()
    }

    fn cached(&self, key: &[u8; 32]) -> Option<Result<(), Refusal>> {
        let decisions = self.decisions.lock().ok()?;
        decisions
            .get(key)
            .filter(|(_, at)| at.elapsed() < CACHE_FOR)
            .map(|(decision, _)| decision.clone())
    }

    fn remember(&self, key: [u8; 32], decision: &Result<(), Refusal>) {
        if let Ok(mut decisions) = self.decisions.lock() {
            if decisions.len() >= CACHE_ENTRIES {
                decisions.clear();
            }
            decisions.insert(key, (decision.clone(), Instant::now()));
        }
    }

    async fn decide(&self, token: &str, path: &str) -> Result<(), Refusal> {
        let user = self.authenticate(token).await?;
        self.authorize(&user, path).await
    }

    async fn authenticate(&self, token: &str) -> Result<UserInfo, Refusal> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_owned()),
                ..TokenReviewSpec::default()
            },
            ..TokenReview::default()
        };
        let answer = Api::<TokenReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| server_error("authenticating the request (TokenReview)", &e))?;
        let status = answer.status.unwrap_or_default();
        match (status.authenticated, status.user) {
            (Some(true), Some(user)) => Ok(user),
            _ => Err((StatusCode::UNAUTHORIZED, "Unauthorized\n".into())),
        }
    }

    async fn authorize(&self, user: &UserInfo, path: &str) -> Result<(), Refusal> {
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username.clone(),
                groups: user.groups.clone(),
                uid: user.uid.clone(),
                extra: user.extra.clone(),
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(path.to_owned()),
                    verb: Some("get".into()),
                }),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        let answer = Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| server_error("authorizing the request (SubjectAccessReview)", &e))?;
        if answer.status.is_some_and(|s| s.allowed) {
            return Ok(());
        }
        let name = user.username.as_deref().unwrap_or("the user");
        Err((
            StatusCode::FORBIDDEN,
            format!("Forbidden: {name} may not get {path}\n"),
        ))
    }
}

fn server_error(what: &str, err: &kube::Error) -> Refusal {
    tracing::warn!(error = %err, "{what} failed");
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        format!("{what} failed\n"),
    )
}

/// The token of an `Authorization: Bearer <token>` header.
pub fn bearer_token(authorization: Option<&str>) -> Option<&str> {
    let value = authorization?.trim();
    let (scheme, token) = value.split_once(' ')?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty()).then(|| token.trim())
}

#[async_trait]
impl RequestGuard for KubeAuthorizer {
    async fn admit(&self, authorization: Option<&str>, path: &str) -> Result<(), Refusal> {
        let Some(token) = bearer_token(authorization) else {
            return Err((StatusCode::UNAUTHORIZED, "Unauthorized\n".into()));
        };
        let key = Self::key(token, path);
        if let Some(decision) = self.cached(&key) {
            return decision;
        }
        let decision = self.decide(token, path).await;
        // A failing API server is asked again next time, not remembered.
        if !matches!(&decision, Err((StatusCode::INTERNAL_SERVER_ERROR, _))) {
            self.remember(key, &decision);
        }
        decision
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_bearer_token_is_taken() {
        assert_eq!(bearer_token(Some("Bearer abc")), Some("abc"));
        assert_eq!(bearer_token(Some("bearer  abc ")), Some("abc"));
        assert_eq!(bearer_token(Some("Basic dXNlcjpwYXNz")), None);
        assert_eq!(bearer_token(Some("Bearer ")), None);
        assert_eq!(bearer_token(None), None);
    }

    #[test]
    fn the_cache_key_separates_tokens_and_paths() {
        let a = KubeAuthorizer::key("t", "/metrics");
        assert_ne!(a, KubeAuthorizer::key("t", "/other"));
        assert_ne!(a, KubeAuthorizer::key("u", "/metrics"));
        assert_eq!(a, KubeAuthorizer::key("t", "/metrics"));
    }
}
