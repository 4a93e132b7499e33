//! The identity of an APIExport: a secret holding a random key (generated as
//! `kcp-system/<export name>` unless `spec.identity.secretRef` names one), whose SHA-256 is
//! `status.identityHash`. Claims on an export's resources from other exports carry that hash.

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use super::conditions::{self, Condition};
use super::str_at;
use crate::resource::GroupResource;
use crate::semantics::{self, WriteOptions};
use crate::status::ApiResult;
use crate::store::State;

/// The namespace of generated identity secrets.
pub const SECRET_NAMESPACE: &str = "kcp-system";

/// The key of the identity in the secret's data.
pub const SECRET_KEY: &str = "key";

/// The condition saying whether the identity is known.
pub const IDENTITY_VALID: &str = "IdentityValid";

fn secrets() -> GroupResource {
    GroupResource::new("", "secrets")
}

/// Gives an export its identity: defaults the secret reference (creating the secret), then sets
/// `status.identityHash` from the secret and the `IdentityValid` condition.
pub fn ensure(state: &mut State, cluster: &str, export: &mut Value) -> ApiResult<()> {
    let name = str_at(export, "/metadata/name").to_string();
    if export.pointer("/spec/identity/secretRef/name").is_none() {
        if state
            .lookup(cluster, &secrets(), SECRET_NAMESPACE, &name)
            .is_none()
        {
            create_secret(state, cluster, &name)?;
        }
        export["spec"]["identity"] =
            json!({"secretRef": {"namespace": SECRET_NAMESPACE, "name": name}});
    }
    let namespace = str_at(export, "/spec/identity/secretRef/namespace").to_string();
    let secret = str_at(export, "/spec/identity/secretRef/name").to_string();
    let Some(hash) = hash_of_secret(state, cluster, &namespace, &secret) else {
        let why = format!("identity secret {namespace}/{secret} not found or without data.key");
        conditions::set(
            export,
            Condition::failed(IDENTITY_VALID, "IdentityVerificationFailed", &why),
        );
        return Ok(());
    };
    let current = str_at(export, "/status/identityHash").to_string();
    if current.is_empty() {
        export["status"]["identityHash"] = json!(hash);
    } else if current != hash {
        let why = format!(
            "hash mismatch: identity secret hash {hash:?} must match status.identityHash {current:?}"
        );
        conditions::set(
            export,
            Condition::failed(IDENTITY_VALID, "IdentityVerificationFailed", &why),
        );
        return Ok(());
    }
    conditions::set(export, Condition::ok(IDENTITY_VALID));
    Ok(())
}

fn create_secret(state: &mut State, cluster: &str, name: &str) -> ApiResult<()> {
    semantics::ensure_namespace(state, cluster, SECRET_NAMESPACE)?;
    let Some(rt) = state
        .clusters
        .get(cluster)
        .and_then(|c| c.registry.by_plural("", "v1", "secrets"))
        .cloned()
    else {
        return Ok(());
    };
    let key: String = (0..32)
        .map(|_| format!("{:02x}", fastrand::u8(..)))
        .collect();
    let body = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": SECRET_NAMESPACE},
        "data": {SECRET_KEY: base64::engine::general_purpose::STANDARD.encode(key)}});
    let opts = WriteOptions {
        default_manager: "kcp-sim".into(),
        ..WriteOptions::default()
    };
    semantics::create(
        state,
        cluster,
        &rt,
        "v1",
        Some(SECRET_NAMESPACE),
        body,
        &opts,
    )?;
    Ok(())
}

fn hash_of_secret(state: &State, cluster: &str, namespace: &str, name: &str) -> Option<String> {
    let secret = state
        .lookup(cluster, &secrets(), namespace, name)?
        .value()
        .ok()?;
    let encoded = secret.pointer("/data/key")?.as_str()?;
    let key = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()
        .filter(|k| !k.is_empty())?;
    Some(hex::encode(Sha256::digest(&key)))
}
