//! The `serviceaccounts/token` subresource (`kubectl create token`): a TokenRequest for an
//! existing ServiceAccount is answered with a signed JWT and its expiry, as kube-apiserver's
//! token REST answers it: `spec.expirationSeconds` defaults to 3600 and must lie between ten
//! minutes and 2^32 seconds, and `spec.audiences` defaults to the server's issuer.
//!
//! The token carries kube-apiserver's claims (`iss`, `sub` `system:serviceaccount:<ns>:<name>`,
//! `aud`, `exp`, `iat`, `nbf`, `jti` and the `kubernetes.io` claim with the namespace and the
//! ServiceAccount's name and uid), signed ES256 with a key kcp-sim makes when it first signs.
//! A request bearing such a token acts as its ServiceAccount
//! ([`crate::token_review::request_user`]); a `spec.boundObjectRef` binds it to a Secret, Pod
//! or Node ([`crate::token_binding`]).

use std::sync::OnceLock;

use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair,
    UnparsedPublicKey,
};
use serde_json::{Map, Value, json};

use crate::schema::field::{FieldError, invalid_object};
use crate::status::{ApiError, ApiResult};

/// The bearer token of the kubeconfig kcp-sim writes (its admin's).
pub const KUBECONFIG_TOKEN: &str = "kcp-sim";

/// The issuer and default audience of kcp-sim's tokens.
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// `spec.expirationSeconds` when the request leaves it out.
const DEFAULT_EXPIRATION: i64 = 3600;
/// `validation.MinTokenAgeSec`.
const MIN_EXPIRATION: i64 = 600;

/// The answer to a TokenRequest for `account` (a stored ServiceAccount), written by `manager`:
/// as kube answers it, a new object named after the account, its writer's fields recorded
/// under the `token` subresource.
/// `bind` gives the claims of the object the request binds the token to, once the request
/// has been validated.
pub fn issue(
    account: &Value,
    request: &Value,
    manager: &str,
    bind: impl FnOnce(Option<&Value>) -> ApiResult<Map<String, Value>>,
) -> ApiResult<Value> {
    let mut answer = request.clone();
    // The status is the server's: what the request sent there is neither kept nor recorded.
    if let Some(fields) = answer.as_object_mut() {
        fields.remove("status");
    }
    let spec = &mut answer["spec"];
    if !spec.is_object() {
        *spec = json!({});
    }
    let expiration = match spec.get("expirationSeconds").and_then(Value::as_i64) {
        Some(seconds) if seconds != 0 => seconds,
        _ => DEFAULT_EXPIRATION,
    };
    spec["expirationSeconds"] = json!(expiration);
    stamp_metadata(account, &mut answer, manager);
    let spec = &mut answer["spec"];
    let errors = expiration_errors(expiration);
    if !errors.is_empty() {
        return Err(invalid_object(
            "authentication.k8s.io",
            "TokenRequest",
            "",
            &errors,
        ));
    }
    let audiences = match spec.get("audiences").and_then(Value::as_array) {
        Some(list) if !list.is_empty() => list.clone(),
        _ => vec![json!(ISSUER)],
    };
    spec["audiences"] = json!(audiences);
    if spec.get("boundObjectRef").is_none() {
        spec["boundObjectRef"] = Value::Null;
    }
    let bound = bind(spec.get("boundObjectRef"))?;
    let now = jiff::Timestamp::now();
    let expires = now
        .checked_add(jiff::SignedDuration::from_secs(expiration))
        .map_err(|e| ApiError::internal(format!("token expiry: {e}")))?;
    let mut claims = claims(account, &audiences, now, expires);
    claims["kubernetes.io"]
        .as_object_mut()
        .into_iter()
        .for_each(|ours| ours.extend(bound.clone()));
    let token = sign(&claims)?;
    answer["apiVersion"] = json!("authentication.k8s.io/v1");
    answer["kind"] = json!("TokenRequest");
    answer["status"] = json!({
        "token": token,
        "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
    });
    Ok(answer)
}

/// The metadata kube gives a TokenRequest answer: the account's name and namespace, a new uid,
/// the creation time, and the writer's fields (the spec it sent, defaulted).
fn stamp_metadata(account: &Value, answer: &mut Value, manager: &str) {
    let now = crate::semantics::now();
    let meta = |key: &str| account.pointer(&format!("/metadata/{key}")).cloned();
    answer["apiVersion"] = json!("authentication.k8s.io/v1");
    answer["kind"] = json!("TokenRequest");
    answer["metadata"] = json!({
        "name": meta("name").unwrap_or(Value::Null),
        "namespace": meta("namespace").unwrap_or(Value::Null),
        "uid": crate::semantics::new_uid(),
        "creationTimestamp": now,
    });
    let who = crate::managed_fields::FieldManager {
        manager,
        subresource: Some("token"),
        time: &now,
        api_version: "authentication.k8s.io/v1",
    };
    crate::managed_fields::record_update(None, answer, &who);
}

/// `ValidateTokenRequest`.
fn expiration_errors(seconds: i64) -> Vec<FieldError> {
    let at = "spec.expirationSeconds";
    if seconds < MIN_EXPIRATION {
        return vec![FieldError::invalid(
            at,
            json!(seconds),
            "may not specify a duration less than 10 minutes",
        )];
    }
    if seconds > 1 << 32 {
        return vec![FieldError::invalid(
            at,
            json!(seconds),
            "may not specify a duration larger than 2^32 seconds",
        )];
    }
    Vec::new()
}

/// kube-apiserver's ServiceAccount token claims.
fn claims(
    account: &Value,
    audiences: &[Value],
    now: jiff::Timestamp,
    expires: jiff::Timestamp,
) -> Value {
    let meta = |field: &str| {
        account
            .pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let (namespace, name) = (meta("namespace"), meta("name"));
    json!({
        "aud": audiences,
        "exp": expires.as_second(),
        "iat": now.as_second(),
        "iss": ISSUER,
        "jti": token_id(),
        "kubernetes.io": {
            "namespace": namespace,
            "serviceaccount": {"name": name, "uid": meta("uid")},
        },
        "nbf": now.as_second(),
        "sub": format!("system:serviceaccount:{namespace}:{name}"),
    })
}

/// A random token id, written as a UUID as kube-apiserver writes it.
fn token_id() -> String {
    let hex = format!("{:032x}", fastrand::u128(..));
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// The claims of a token this process signed, or `None` for any other string.
pub fn verified_claims(token: &str) -> Option<Value> {
    let (signing_input, signature) = token.rsplit_once('.')?;
    let (_, payload) = signing_input.split_once('.')?;
    let decode = |part: &str| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(part)
            .ok()
    };
    let public = key().ok()?.public_key().as_ref().to_vec();
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, public)
        .verify(signing_input.as_bytes(), &decode(signature)?)
        .ok()?;
    serde_json::from_slice(&decode(payload)?).ok()
}

/// The process's token key: an ECDSA P-256 key made on first use.
fn key() -> ApiResult<&'static EcdsaKeyPair> {
    static KEY: OnceLock<Option<EcdsaKeyPair>> = OnceLock::new();
    KEY.get_or_init(|| {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).ok()?;
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).ok()
    })
    .as_ref()
    .ok_or_else(|| ApiError::internal("no ServiceAccount token key could be made"))
}

/// `claims` as a compact JWS signed ES256.
fn sign(claims: &Value) -> ApiResult<String> {
    let encode = |value: &Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string().as_bytes())
    };
    let signing_input = format!(
        "{}.{}",
        encode(&json!({"alg": "ES256", "typ": "JWT"})),
        encode(claims)
    );
    let signature = key()?
        .sign(&SystemRandom::new(), signing_input.as_bytes())
        .map_err(|_| ApiError::internal("signing a ServiceAccount token failed"))?;
    let signature = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(signature.as_ref());
    Ok(format!("{signing_input}.{signature}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn account() -> Value {
        json!({"metadata": {"name": "bot", "namespace": "ns", "uid": "u-1"}})
    }

    fn claims_of(token: &str) -> Value {
        let part = token.split('.').nth(1).unwrap();
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(part)
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn a_token_names_its_service_account_and_audience() {
        let request = json!({"spec": {"audiences": ["example.com"]}});
        let answer = issue(&account(), &request, "kubectl", |_| Ok(Map::new())).unwrap();
        assert_eq!(answer["spec"]["expirationSeconds"], 3600);
        let claims = claims_of(answer["status"]["token"].as_str().unwrap());
        assert_eq!(claims["sub"], "system:serviceaccount:ns:bot");
        assert_eq!(claims["aud"], json!(["example.com"]));
        assert_eq!(claims["kubernetes.io"]["serviceaccount"]["uid"], "u-1");
        assert_eq!(
            claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
            3600
        );
    }

    #[test]
    fn a_token_kcp_sim_signed_is_verified_and_a_changed_one_is_not() {
        let answer = issue(&account(), &json!({}), "kubectl", |_| Ok(Map::new())).unwrap();
        let token = answer["status"]["token"].as_str().unwrap();
        assert_eq!(
            verified_claims(token).unwrap()["sub"],
            "system:serviceaccount:ns:bot"
        );
        let mut forged = token.to_string();
        forged.insert(token.find('.').unwrap() + 2, 'x');
        assert!(verified_claims(&forged).is_none());
        assert!(verified_claims("nope").is_none());
    }

    #[test]
    fn a_token_without_audiences_is_for_the_issuer() {
        let answer = issue(&account(), &json!({}), "kubectl", |_| Ok(Map::new())).unwrap();
        assert_eq!(answer["spec"]["audiences"], json!([ISSUER]));
    }

    #[test]
    fn a_token_shorter_than_ten_minutes_is_refused() {
        let request = json!({"spec": {"expirationSeconds": 1}});
        let error = issue(&account(), &request, "kubectl", |_| Ok(Map::new())).unwrap_err();
        assert!(
            error.message.contains(
                "spec.expirationSeconds: Invalid value: 1: may not specify a duration less than \
                 10 minutes"
            ),
            "{}",
            error.message
        );
    }
}
