//! The workloads' optional PodDisruptionBudgets: ensured next to the Deployment when the
//! source enables one, deleted when it no longer does (only a budget this source controls: a
//! PodDisruptionBudget someone else created under the same name is left alone).

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kcp_core::client::DeleteOptions;
use kcp_core::{ObjectClient, ObjectClientExt as _};

use super::core;
use super::ensure::ensure;
use crate::error::Result;

/// Makes the budget `name` in `namespace` match `desired`: ensured (owned by `owner`) when
/// `Some`, deleted when `None` and `owner` controls the live one. A cluster that does not serve
/// `policy/v1` is fine as long as no budget is wanted.
pub async fn ensure_pdb(
    client: &dyn ObjectClient,
    namespace: &str,
    name: &str,
    desired: Option<PodDisruptionBudget>,
    owner: &OwnerReference,
) -> Result<()> {
    if let Some(desired) = desired {
        ensure(client, &desired, Some(owner)).await?;
        return Ok(());
    }
    let context = || format!("reading PodDisruptionBudget {namespace}/{name}");
    let live = match client
        .get_typed::<PodDisruptionBudget>(Some(namespace), name)
        .await
    {
        Ok(live) => live,
        Err(kcp_core::Error::KindNotServed { .. }) => None,
        Err(err) => return Err(core(context())(err)),
    };
    let controlled = live.is_some_and(|pdb| {
        pdb.metadata
            .owner_references
            .iter()
            .flatten()
            .any(|r| r.controller == Some(true) && r.uid == owner.uid)
    });
    if controlled {
        tracing::debug!(pdb = %name, %namespace, "PodDisruptionBudget disabled, deleting it");
        match client
            .delete_typed::<PodDisruptionBudget>(Some(namespace), name, &DeleteOptions::default())
            .await
        {
            Ok(_) => {}
            Err(err) if err.is_not_found() => {}
            Err(err) => {
                return Err(core(format!(
                    "deleting PodDisruptionBudget {namespace}/{name}"
                ))(err));
            }
        }
    }
    Ok(())
}
