//! The required Secrets of a Compiled* object (`spec.requiredSecrets`, the contract of
//! [`crate::api::compiled`]): when the workload group could not write a Deployment, it says
//! which of them are missing instead of leaving a bare "Deployment does not exist".
//!
//! The Secrets are read only on that path: a pass whose Deployment was written costs nothing
//! extra.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use kcp_core::runtime::conditions::ConditionUpdate;
use kcp_core::{ObjectClient, ObjectClientExt as _};

use super::core;
use crate::error::Result;
use crate::render::compiled::RequiredSecrets;
use crate::status;

/// The names in `required` that have no Secret in `namespace`.
pub async fn missing_secrets(
    client: &dyn ObjectClient,
    namespace: &str,
    required: &[String],
) -> Result<Vec<String>> {
    let mut missing = Vec::new();
    for name in required {
        let secret: Option<Secret> = client
            .get_typed(Some(namespace), name)
            .await
            .map_err(core(format!("reading Secret {namespace}/{name}")))?;
        if secret.is_none() {
            missing.push(name.clone());
        }
    }
    Ok(missing)
}

/// `Available` of the Compiled* object `compiled` from its Deployment `namespace/name` (`live`,
/// `None` when it was not written): the Deployment's state, or the required Secrets that are
/// missing (only then are they listed and read).
pub async fn workload_available<C: RequiredSecrets + Sync>(
    client: &dyn ObjectClient,
    namespace: &str,
    name: &str,
    live: Option<&Deployment>,
    compiled: &C,
) -> Result<ConditionUpdate> {
    if live.is_none() {
        let required = compiled.required_secrets();
        let missing = missing_secrets(client, namespace, &required).await?;
        if !missing.is_empty() {
            return Ok(status::required_secrets_missing(namespace, name, &missing));
        }
    }
    Ok(status::deployment_available(live, namespace, name))
}
