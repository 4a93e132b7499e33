//! TokenReviews (`authentication.k8s.io/v1`), answered as kube-apiserver's authenticators answer
//! them, for the two kinds of token kcp-sim knows: the admin token of the kubeconfig it writes,
//! and the ServiceAccount tokens it signed ([`crate::tokens`]). A ServiceAccount token is
//! accepted while it has not expired, one of its audiences is asked for (the issuer when the
//! review names none) and its ServiceAccount still exists with the same uid; the user is the
//! ServiceAccount's, with its groups and the token's id as `credential-id`. Any other string is
//! an `invalid bearer token`.
//!
//! kcp-sim authenticates its own requests' ServiceAccount tokens the same way
//! ([`request_user`]): a request bearing one acts as its ServiceAccount, and one that no longer
//! authenticates is `401 Unauthorized`. Any other bearer token (its kubeconfig's among them)
//! acts as the admin, as kcp-sim has no other users to check it against. The review itself is
//! for clients that authenticate their callers through it (webhooks, aggregated servers,
//! kube-rbac-proxy).

use serde_json::{Value, json};

use crate::authorization::User;
use crate::resource::GroupResource;
use crate::status::{ApiError, ApiResult};
use crate::store::State;
use crate::tokens::{ISSUER, KUBECONFIG_TOKEN, verified_claims};

/// What every failure's message starts with: the token-file authenticator's refusal.
const INVALID: &str = "invalid bearer token";

/// The answer to a TokenReview posted to `cluster`.
pub fn answer(state: &State, cluster: &str, review: &Value) -> ApiResult<Value> {
    let token = review
        .pointer("/spec/token")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if token.is_empty() {
        return Err(ApiError::bad_request(
            "token is required for TokenReview in authentication",
        ));
    }
    let asked: Vec<String> = match review.pointer("/spec/audiences").and_then(Value::as_array) {
        Some(list) if !list.is_empty() => list
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
        _ => vec![ISSUER.to_string()],
    };
    let status = match authenticate(state, cluster, token, &asked) {
        Ok((user, audiences)) => {
            json!({"authenticated": true, "user": user, "audiences": audiences})
        }
        Err(why) => json!({"user": {}, "error": why}),
    };
    let mut answer = review.clone();
    answer["apiVersion"] = json!("authentication.k8s.io/v1");
    answer["kind"] = json!("TokenReview");
    answer["status"] = status;
    Ok(answer)
}

/// The user a request's bearer `token` acts as in `cluster`: `None` (the admin) for the
/// kubeconfig's token, and for any other token kcp-sim did not sign unless it refuses those
/// ([`State::refuse_unknown_tokens`], kube's `401 Unauthorized`); the ServiceAccount's user for
/// one it signed while that authenticates (audience the issuer, not expired, its ServiceAccount
/// there with the same uid), and the 401 once it does not.
pub fn request_user(state: &State, cluster: &str, token: &str) -> ApiResult<Option<User>> {
    let unauthorized = || ApiError::new(401, "Unauthorized", "Unauthorized");
    if token == KUBECONFIG_TOKEN {
        return Ok(None);
    }
    if verified_claims(token).is_none() {
        return match state.refuse_unknown_tokens {
            true => Err(unauthorized()),
            false => Ok(None),
        };
    }
    let (user, _) = authenticate(state, cluster, token, &[ISSUER.to_string()]).map_err(|why| {
        tracing::debug!(%why, "a ServiceAccount token no longer authenticates");
        unauthorized()
    })?;
    let name = user["username"].as_str().ok_or_else(unauthorized)?;
    let mut extra: std::collections::BTreeMap<String, Vec<String>> = user["extra"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(key, values)| (key.clone(), strings(values)))
        .collect();
    // kcp names the workspace a ServiceAccount of it acts in (seen on kcp v0.30.0).
    if state.flavor == crate::resource::Flavor::Kcp {
        extra.insert(
            "authentication.kcp.io/cluster-name".into(),
            vec![cluster.to_string()],
        );
    }
    Ok(Some(User {
        name: name.to_string(),
        groups: strings(&user["groups"]),
        uid: user["uid"].as_str().unwrap_or_default().to_string(),
        extra,
    }))
}

/// The strings of a JSON array (none for anything else).
fn strings(list: &Value) -> Vec<String> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(String::from)
        .collect()
}

/// The user a token authenticates and the audiences it holds of those asked, or why not.
fn authenticate(
    state: &State,
    cluster: &str,
    token: &str,
    asked: &[String],
) -> Result<(Value, Vec<String>), String> {
    if token == KUBECONFIG_TOKEN {
        let admin = User::admin();
        return Ok((
            json!({"username": admin.name, "groups": admin.groups}),
            asked.to_vec(),
        ));
    }
    let claims = verified_claims(token).ok_or_else(|| INVALID.to_string())?;
    let refused = |why: String| format!("[{INVALID}, {why}]");
    let held = strings(&claims["aud"]);
    let audiences: Vec<String> = asked.iter().filter(|a| held.contains(a)).cloned().collect();
    if audiences.is_empty() {
        return Err(refused(format!(
            "token audiences {} is invalid for the target audiences {}",
            crate::go_quote::quoted_list(&held),
            crate::go_quote::quoted_list(asked)
        )));
    }
    if claims["exp"].as_i64().unwrap_or(0) <= jiff::Timestamp::now().as_second() {
        return Err(refused("service account token has expired".to_string()));
    }
    let user = service_account_user(state, cluster, &claims).map_err(refused)?;
    Ok((user, audiences))
}

/// The ServiceAccount user of verified claims, if the ServiceAccount is still there.
fn service_account_user(state: &State, cluster: &str, claims: &Value) -> Result<Value, String> {
    let text = |pointer: &str| {
        claims
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let (namespace, name) = (
        text("/kubernetes.io/namespace"),
        text("/kubernetes.io/serviceaccount/name"),
    );
    let uid = text("/kubernetes.io/serviceaccount/uid");
    let account = state
        .lookup(
            cluster,
            &GroupResource::new("", "serviceaccounts"),
            namespace,
            name,
        )
        .and_then(|stored| stored.value().ok())
        .ok_or_else(|| format!("serviceaccounts \"{name}\" not found"))?;
    let current = account
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if current != uid {
        return Err(format!(
            "service account UID ({current}) does not match claim ({uid})"
        ));
    }
    let mut extra =
        crate::token_binding::check(state, cluster, namespace, &claims["kubernetes.io"])?;
    extra.insert(
        "authentication.kubernetes.io/credential-id".into(),
        vec![format!("JTI={}", text("/jti"))],
    );
    Ok(json!({
        "username": format!("system:serviceaccount:{namespace}:{name}"),
        "uid": uid,
        "groups": [
            "system:serviceaccounts",
            format!("system:serviceaccounts:{namespace}"),
            "system:authenticated",
        ],
        "extra": extra,
    }))
}
