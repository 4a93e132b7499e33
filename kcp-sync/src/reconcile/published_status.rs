//! The one writer of a PublishedResource's status.
//!
//! Three parts of the agent report on a PublishedResource: the schema reconcile
//! (`SchemaReady`, the schema name, the generation observed), the publish reconcile (`Syncing`,
//! and `Ready` when a PublishedResource is refused) and its running sync controller (the object
//! counts and `Ready`). Each describes what it writes as a [`StatusChange`]; [`write()`] applies
//! it through kcp-core's [`kcp_core::runtime::write_status`], which writes only a changed
//! status and starts again from a fresh read on a conflict, so the writers never undo one
//! another's fields. A failed write is returned naming the PublishedResource, or, by
//! [`write_or_warn`], logged at warn with its name.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kcp_core::ObjectClient;
use kcp_core::runtime::conditions::now;
use kcp_core::runtime::{ConditionUpdate, StatusWrite, set_condition, write_status};

use crate::api::{ObjectCounts, PublishedResource, PublishedResourceStatus};
use crate::error::{Error, Result};

/// What one writer changes in a PublishedResource's status; every other field is kept.
#[derive(Debug, Clone, PartialEq)]
pub enum StatusChange {
    /// One condition (the publish reconcile's `Syncing`, or `Ready` of a refused one).
    Condition(ConditionUpdate),
    /// The schema reconcile's result.
    Schema {
        /// The `SchemaReady` condition.
        condition: ConditionUpdate,
        /// The APIResourceSchema's name; `None` keeps the name written before.
        schema_name: Option<String>,
        /// The `metadata.generation` the reconcile saw, written as `observedGeneration`.
        generation: Option<i64>,
    },
    /// The sync controller's progress.
    Progress {
        /// The object counts.
        objects: ObjectCounts,
        /// The `Ready` condition.
        ready: ConditionUpdate,
    },
}

impl StatusChange {
    /// Applies the change to `status`, `now` being the time of a condition's transition.
    pub fn apply(&self, status: &mut PublishedResourceStatus, now: &Time) {
        let condition = match self {
            StatusChange::Condition(condition) => condition,
            StatusChange::Schema {
                condition,
                schema_name,
                generation,
            } => {
                if let Some(name) = schema_name {
                    status.resource_schema_name = Some(name.clone());
                }
                status.observed_generation = *generation;
                condition
            }
            StatusChange::Progress { objects, ready } => {
                status.objects = *objects;
                ready
            }
        };
        set_condition(&mut status.conditions, condition.clone(), now.clone());
    }
}

/// Writes `change` into the status of PublishedResource `name` on the service cluster (only
/// when it changes the status). A failure is returned, naming the PublishedResource.
pub async fn write(
    service: &dyn ObjectClient,
    name: &str,
    change: &StatusChange,
) -> Result<StatusWrite<PublishedResource>> {
    let now = now();
    write_status::<PublishedResource, _>(service, None, name, |pr| {
        let status = pr
            .status
            .get_or_insert_with(PublishedResourceStatus::default);
        change.apply(status, &now);
    })
    .await
    .map_err(|e| {
        Error::core(
            format!("writing the status of PublishedResource {name:?}"),
            e,
        )
    })
}

/// [`write()`], for writers with no caller to return the error to: a failure is logged at warn
/// with the PublishedResource's name, and `false` returned.
pub async fn write_or_warn(service: &dyn ObjectClient, name: &str, change: &StatusChange) -> bool {
    match write(service, name, change).await {
        Ok(_) => true,
        Err(e) => {
            tracing::warn!(
                error = %e,
                published_resource = name,
                "writing the PublishedResource's status failed"
            );
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{CONDITION_READY, CONDITION_SCHEMA_READY, CONDITION_SYNCING};

    fn time() -> Time {
        now()
    }

    /// The status and reason of the condition `type_`.
    fn written(status: &PublishedResourceStatus, type_: &str) -> (String, String) {
        let condition = status.condition(type_);
        let condition = condition.map(|c| (c.status.clone(), c.reason.clone().unwrap_or_default()));
        condition.unwrap_or_default()
    }

    #[test]
    fn a_condition_change_keeps_the_other_conditions_and_fields() {
        let mut status = PublishedResourceStatus {
            resource_schema_name: Some("v1.things.example.com".into()),
            observed_generation: Some(3),
            objects: ObjectCounts {
                synced: 2,
                failing: 0,
                pending: 1,
            },
            ..PublishedResourceStatus::default()
        };
        let ready = ConditionUpdate::new(CONDITION_READY, true, "ObjectsSynced");
        StatusChange::Condition(ready).apply(&mut status, &time());
        let syncing = ConditionUpdate::new(CONDITION_SYNCING, true, "ControllerRunning");
        StatusChange::Condition(syncing).apply(&mut status, &time());

        assert_eq!(written(&status, CONDITION_READY).1, "ObjectsSynced");
        assert_eq!(written(&status, CONDITION_SYNCING).1, "ControllerRunning");
        assert_eq!(
            status.resource_schema_name.as_deref(),
            Some("v1.things.example.com")
        );
        assert_eq!(status.observed_generation, Some(3));
        assert_eq!(status.objects.synced, 2);
    }

    #[test]
    fn a_failed_schema_keeps_the_name_written_before_and_observes_the_generation() {
        let mut status = PublishedResourceStatus {
            resource_schema_name: Some("v1.things.example.com".into()),
            ..PublishedResourceStatus::default()
        };
        let change = StatusChange::Schema {
            condition: ConditionUpdate::new(CONDITION_SCHEMA_READY, false, "InvalidSpec"),
            schema_name: None,
            generation: Some(4),
        };
        change.apply(&mut status, &time());

        assert_eq!(
            status.resource_schema_name.as_deref(),
            Some("v1.things.example.com")
        );
        assert_eq!(status.observed_generation, Some(4));
        let schema_ready = written(&status, CONDITION_SCHEMA_READY);
        assert_eq!(schema_ready, ("False".into(), "InvalidSpec".into()));
    }

    #[test]
    fn progress_replaces_the_counts_and_sets_ready() {
        let mut status = PublishedResourceStatus::default();
        let objects = ObjectCounts {
            synced: 1,
            failing: 1,
            pending: 0,
        };
        let ready = ConditionUpdate::new(CONDITION_READY, false, "ObjectsFailing");
        StatusChange::Progress { objects, ready }.apply(&mut status, &time());

        assert_eq!(status.objects, objects);
        let ready = written(&status, CONDITION_READY);
        assert_eq!(ready, ("False".into(), "ObjectsFailing".into()));
    }
}
