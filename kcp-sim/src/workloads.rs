//! Workload simulation, as KWOK does for clusters without kubelets: Deployments and
//! StatefulSets report their replicas ready and available, with `observedGeneration` and an
//! `Available` condition, a configurable delay after each spec change. Off by default
//! ([`crate::Config::simulate_workloads`]); the playground turns it on so that operators that
//! wait for their workloads converge.
//!
//! It runs as a controller outside the API semantics: it follows the store's change stream and
//! writes the status subresource through the in-process client, with a resourceVersion
//! precondition, like any other client would.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::{ObjectClient, ObjectRef};
use serde_json::{Value, json};
use tokio::sync::{broadcast, watch};

use crate::api::{Endpoint, Sim};
use crate::client::SimClient;
use crate::store::{Change, ChangeKind};

/// The kinds whose status is simulated: (plural, kind).
const WORKLOADS: [(&str, &str); 2] = [
    ("deployments", "Deployment"),
    ("statefulsets", "StatefulSet"),
];

/// The status a workload of `kind` with `object`'s spec reports once its pods are running.
pub fn settled_status(kind: &str, object: &Value, now: &str) -> Value {
    let replicas = object
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let generation = object
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let mut status = json!({
        "observedGeneration": generation,
        "replicas": replicas,
        "readyReplicas": replicas,
        "availableReplicas": replicas,
        "updatedReplicas": replicas,
    });
    if kind == "Deployment" {
        status["conditions"] = json!([
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
             "message": "Deployment has minimum availability.",
             "lastUpdateTime": now, "lastTransitionTime": now},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
             "message": "ReplicaSet has successfully progressed.",
             "lastUpdateTime": now, "lastTransitionTime": now},
        ]);
    } else {
        status["currentReplicas"] = json!(replicas);
    }
    status
}

/// Whether `object`'s status already reflects its spec.
pub fn is_settled(object: &Value) -> bool {
    let generation = object
        .pointer("/metadata/generation")
        .and_then(Value::as_i64);
    let observed = object
        .pointer("/status/observedGeneration")
        .and_then(Value::as_i64);
    let replicas = object
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let ready = object
        .pointer("/status/readyReplicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    generation.is_some() && generation == observed && ready == replicas
}

/// Follows the store and settles workloads `delay` after each change, until `stop`.
pub(crate) async fn run(
    sim: Arc<Sim>,
    kcp: bool,
    delay: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let mut changes = sim.read().subscribe();
    let mut scheduled: HashSet<SettleKey> = HashSet::new();
    loop {
        let change = tokio::select! {
            _ = stop.changed() => return,
            change = changes.recv() => change,
        };
        let change = match change {
            Ok(change) => change,
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => return,
        };
        if let Some((key, task)) = settle_later(&sim, kcp, delay, &change) {
            if scheduled.insert(key.clone()) {
                tokio::spawn(task);
            }
            if scheduled.len() > 10_000 {
                scheduled.clear();
            }
        }
    }
}

type SettleKey = (Arc<str>, String, String, i64);

/// The delayed status write a change calls for, if any.
fn settle_later(
    sim: &Arc<Sim>,
    kcp: bool,
    delay: Duration,
    change: &Change,
) -> Option<(
    SettleKey,
    impl std::future::Future<Output = ()> + Send + 'static,
)> {
    if change.kind == ChangeKind::Deleted || change.resource.group != "apps" {
        return None;
    }
    let (_, kind) = WORKLOADS
        .iter()
        .find(|(plural, _)| change.resource.resource == *plural)?;
    let value = change.object.value().ok()?;
    if is_settled(&value) {
        return None;
    }
    let generation = value
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let key = (
        change.cluster.clone(),
        change.namespace.to_string(),
        change.name.to_string(),
        generation,
    );
    let endpoint = if kcp {
        Endpoint::Cluster(change.cluster.to_string())
    } else {
        Endpoint::Plain
    };
    let client = SimClient::new(sim.clone(), endpoint);
    let target = ObjectRef::namespaced(
        GroupVersionKind::gvk("apps", "v1", kind),
        change.namespace.to_string(),
        change.name.to_string(),
    );
    Some((key, async move {
        tokio::time::sleep(delay).await;
        settle(&client, &target).await;
    }))
}

/// Writes the settled status on the current object, unless it is settled or gone.
async fn settle(client: &SimClient, target: &ObjectRef) {
    let Ok(Some(current)) = client.get(target).await else {
        return;
    };
    let value = match serde_json::to_value(&current) {
        Ok(v) => v,
        Err(_) => return,
    };
    if is_settled(&value) {
        return;
    }
    let now = crate::semantics::now();
    let mut updated: DynamicObject = current;
    updated.data["status"] = settled_status(&target.gvk.kind, &value, &now);
    // A newer spec in between: the precondition fails, and its own change schedules again.
    if let Err(err) = client.update_status(&updated).await {
        tracing::debug!(kind = %target.gvk.kind, name = %target.name, error = %err, "workload status not settled");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_workload_is_not_settled() {
        let object = json!({"metadata": {"generation": 1}, "spec": {"replicas": 2}});
        assert!(!is_settled(&object));
    }

    #[test]
    fn the_settled_status_observes_the_generation_and_readies_every_replica() {
        let object = json!({"metadata": {"generation": 3}, "spec": {"replicas": 2}});
        let status = settled_status("Deployment", &object, "t");
        assert_eq!(status["observedGeneration"], 3);
        assert_eq!(status["availableReplicas"], 2);
        assert_eq!(status["conditions"][0]["type"], "Available");
        let mut settled = object.clone();
        settled["status"] = status;
        assert!(is_settled(&settled));
    }

    #[test]
    fn replicas_default_to_one() {
        let object = json!({"metadata": {"generation": 1}, "spec": {}});
        assert_eq!(
            settled_status("StatefulSet", &object, "t")["readyReplicas"],
            1
        );
    }

    #[test]
    fn a_spec_change_unsettles_a_settled_workload() {
        let object = json!({"metadata": {"generation": 2}, "spec": {"replicas": 1},
            "status": {"observedGeneration": 1, "readyReplicas": 1}});
        assert!(!is_settled(&object));
    }
}
