//! Writing an InitTarget's status: every change goes through kcp-core's status writer, as a
//! function of the freshly read status with the resourceVersion as precondition, so the
//! supervisor's `Conflict` and a runner's `Ready`, `TemplateError` and counts never undo each
//! other.

use kcp_core::ObjectClient;
use kcp_core::runtime::conditions::now;
use kcp_core::runtime::{ConditionUpdate, set_condition, write_status};

use crate::api::{InitTarget, InitTargetStatus};

/// Applies `change` to the status of InitTarget `target` (with `observedGeneration` set), and
/// writes it when it changed. Failures are logged: the next change writes again from a fresh
/// read.
pub async fn update_status<F>(client: &dyn ObjectClient, target: &str, change: F)
where
    F: Fn(&mut InitTargetStatus) + Send + Sync,
{
    let result = write_status::<InitTarget, _>(client, None, target, |t| {
        let generation = t.metadata.generation;
        let status = t.status.get_or_insert_with(InitTargetStatus::default);
        change(status);
        status.observed_generation = generation;
    })
    .await;
    if let Err(err) = result {
        tracing::warn!(target, error = %err, "could not update the InitTarget status");
    }
}

/// Sets conditions (by type) in the status of `target`.
pub async fn set_conditions(
    client: &dyn ObjectClient,
    target: &str,
    updates: Vec<ConditionUpdate>,
) {
    update_status(client, target, |status| {
        for update in &updates {
            set_condition(&mut status.conditions, update.clone(), now());
        }
    })
    .await;
}
