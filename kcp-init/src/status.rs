//! Writing an InitTarget's status: every change goes through kcp-core's status writer, as a
//! function of the freshly read status with the resourceVersion as precondition, so the
//! supervisor's `Conflict` and a runner's `Ready`, `TemplateError` and counts never undo each
//! other.
//!
//! A write that fails is returned to the caller, which writes again: the runner on its next
//! status tick, the supervisor on its next sync.

use kcp_core::ObjectClient;
use kcp_core::runtime::conditions::now;
use kcp_core::runtime::{ConditionUpdate, set_condition, write_status};

use crate::api::{InitTarget, InitTargetStatus};
use crate::error::{Error, Result};

/// Applies `change` to the status of InitTarget `target` (with `observedGeneration` set), and
/// writes it when it changed.
///
/// # Errors
///
/// [`Error::Core`], naming the InitTarget, when the InitTarget cannot be read or its status
/// cannot be written (after kcp-core's retries on conflicts).
pub async fn update_status<F>(client: &dyn ObjectClient, target: &str, change: F) -> Result<()>
where
    F: Fn(&mut InitTargetStatus) + Send + Sync,
{
    write_status::<InitTarget, _>(client, None, target, |t| {
        let generation = t.metadata.generation;
        let status = t.status.get_or_insert_with(InitTargetStatus::default);
        change(status);
        status.observed_generation = generation;
    })
    .await
    .map(|_| ())
    .map_err(|source| Error::Core {
        context: format!("writing the status of InitTarget {target:?}"),
        source,
    })
}

/// Sets conditions (by type) in the status of `target`.
///
/// # Errors
///
/// As [`update_status`].
pub async fn set_conditions(
    client: &dyn ObjectClient,
    target: &str,
    updates: Vec<ConditionUpdate>,
) -> Result<()> {
    update_status(client, target, |status| {
        for update in &updates {
            set_condition(&mut status.conditions, update.clone(), now());
        }
    })
    .await
}
