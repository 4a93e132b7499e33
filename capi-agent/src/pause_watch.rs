//! The Cluster watch that wakes an AgentCluster and its AgentMachines when their Cluster is
//! paused or unpaused (`spec.paused`; a Cluster's own pause annotation does not pause its
//! objects, see [`crate::context::paused`]).
//!
//! A paused object is reconciled to "paused" and then left alone, so without this watch an
//! unpause would go unnoticed: the AgentCluster would keep `Paused=True` and its orphaned
//! ClusterDeployment would never be adopted again (and leak on a later delete). Cluster API
//! writes a Cluster's status often, so only changes of what pausing reads pass
//! ([`pause_changes`]).

use std::collections::HashMap;

use futures::{Stream, StreamExt as _};
use kube::ResourceExt as _;
use kube::api::DynamicObject;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;

use crate::api::{AgentCluster, AgentMachine, CLUSTER_NAME_LABEL};

/// What pausing reads from a Cluster: `spec.paused`.
type PauseState = Option<bool>;

/// A Cluster's namespace and name.
type ClusterKey = (Option<String>, String);

/// What pausing reads from a Cluster.
fn pause_state(cluster: &DynamicObject) -> PauseState {
    cluster
        .data
        .pointer("/spec/paused")
        .and_then(|v| v.as_bool())
}

/// The Clusters of `clusters` whose pause state differs from the last one seen (the first
/// sight of a Cluster passes).
pub fn pause_changes(
    clusters: impl Stream<Item = Result<DynamicObject, watcher::Error>> + Send + 'static,
) -> impl Stream<Item = Result<DynamicObject, watcher::Error>> + Send + 'static {
    let mut seen: HashMap<ClusterKey, PauseState> = HashMap::new();
    clusters.filter(move |event| {
        let pass = match event {
            Ok(cluster) => {
                let key = (cluster.namespace(), cluster.name_any());
                let state = pause_state(cluster);
                seen.insert(key, state) != Some(state)
            }
            Err(_) => true,
        };
        std::future::ready(pass)
    })
}

/// Cluster -> the AgentCluster its `spec.infrastructureRef` names.
pub fn infrastructure_of(cluster: &DynamicObject) -> Option<ObjectRef<AgentCluster>> {
    let reference = cluster.data.pointer("/spec/infrastructureRef")?;
    if reference.get("kind").and_then(|k| k.as_str()) != Some("AgentCluster") {
        return None;
    }
    let name = reference.get("name")?.as_str()?;
    let namespace = reference
        .get("namespace")
        .and_then(|n| n.as_str())
        .map(str::to_owned)
        .or_else(|| cluster.namespace())?;
    Some(ObjectRef::new(name).within(&namespace))
}

/// Cluster -> the AgentMachines Cluster API labelled as its (`cluster.x-k8s.io/cluster-name`).
pub fn machines_of(
    store: &Store<AgentMachine>,
    cluster: &DynamicObject,
) -> Vec<ObjectRef<AgentMachine>> {
    let name = cluster.name_any();
    let namespace = cluster.namespace();
    store
        .state()
        .iter()
        .filter(|am| am.namespace() == namespace)
        .filter(|am| am.labels().get(CLUSTER_NAME_LABEL) == Some(&name))
        .map(|am| ObjectRef::from_obj(am.as_ref()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cluster(spec: serde_json::Value, annotations: serde_json::Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": {"name": "hc", "namespace": "ns", "annotations": annotations},
            "spec": spec,
        }))
        .unwrap()
    }

    #[tokio::test]
    async fn only_changes_of_the_pause_state_pass() {
        let infra = json!({"infrastructureRef": {"kind": "AgentCluster", "name": "hc"}});
        let mut paused = infra.clone();
        paused["paused"] = json!(true);
        let events = vec![
            Ok(cluster(infra.clone(), json!({}))),
            Ok(cluster(infra.clone(), json!({}))),
            Ok(cluster(paused.clone(), json!({}))),
            Ok(cluster(paused, json!({}))),
            Ok(cluster(infra.clone(), json!({}))),
            Ok(cluster(infra, json!({"cluster.x-k8s.io/paused": "true"}))),
        ];
        let passed: Vec<_> = pause_changes(futures::stream::iter(events))
            .collect::<Vec<_>>()
            .await;
        // First sight, paused, unpaused; the Cluster's own annotation pauses nothing.
        assert_eq!(passed.len(), 3);
    }

    #[test]
    fn a_cluster_maps_to_the_agent_cluster_of_its_infrastructure_ref() {
        let c = cluster(
            json!({"infrastructureRef": {"kind": "AgentCluster", "name": "hc"}}),
            json!({}),
        );
        assert_eq!(
            infrastructure_of(&c),
            Some(ObjectRef::new("hc").within("ns"))
        );
        let other = cluster(
            json!({"infrastructureRef": {"kind": "KindCluster", "name": "hc"}}),
            json!({}),
        );
        assert_eq!(infrastructure_of(&other), None);
    }
}
