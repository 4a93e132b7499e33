//! The playground's capi-agent section in-process: after it converged, what a user does with
//! kubectl (deleting a Machine) shows in the Agents as the issue describes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use kcp_bins::playground::{Playground, converge, select};
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::{DeleteOptions, ListOptions, ObjectClient, ObjectRef};

const NS: &str = "clusters-demo";
const MACHINE_LABEL: &str = "agentMachineRef";

fn agent_gvk() -> GroupVersionKind {
    GroupVersionKind::gvk("agent-install.openshift.io", "v1beta1", "Agent")
}

async fn agents(kube: &dyn ObjectClient) -> Vec<DynamicObject> {
    kube.list(&agent_gvk(), Some("agents"), &ListOptions::default())
        .await
        .unwrap()
        .items
}

fn bound_to(agent: &DynamicObject) -> Option<&str> {
    agent
        .metadata
        .labels
        .as_ref()?
        .get(MACHINE_LABEL)
        .map(String::as_str)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_machine_unbinds_its_agent_and_the_machine_goes() {
    let kubeconfig = std::env::temp_dir().join(format!(
        "kcp-playground-{}-agent-unbind.kubeconfig",
        std::process::id()
    ));
    let backend = kcp_bins::playground::Backend::from_env().unwrap();
    let playground = Playground::start(backend, &kubeconfig).await.unwrap();
    let mut sections = select(&["agent".to_owned()]).unwrap();
    converge(&playground, &mut sections, Duration::from_secs(60))
        .await
        .unwrap();
    let kube = playground.kube.object_client("").unwrap();
    let before = agents(kube.as_ref()).await;
    let agent = before
        .iter()
        .find(|a| bound_to(a) == Some("workers-1"))
        .expect("an Agent is bound to workers-1 once converged")
        .metadata
        .name
        .clone()
        .unwrap();
    let machine = ObjectRef::namespaced(
        GroupVersionKind::gvk("cluster.x-k8s.io", "v1beta2", "Machine"),
        NS,
        "workers-1",
    );
    kube.delete(&machine, &DeleteOptions::default())
        .await
        .unwrap();

    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = agents(kube.as_ref()).await;
        let released = now
            .iter()
            .find(|a| a.metadata.name.as_deref() == Some(agent.as_str()))
            .is_some_and(|a| {
                bound_to(a).is_none() && a.data["spec"]["clusterDeploymentName"].is_null()
            });
        let machine_gone = kube.get(&machine).await.unwrap().is_none();
        if released && machine_gone {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "agent {agent} released: {released}, machine gone: {machine_gone}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let still_bound = agents(kube.as_ref())
        .await
        .iter()
        .filter(|a| bound_to(a) == Some("workers-2"))
        .count();
    assert_eq!(still_bound, 1, "the other Machine keeps its Agent");
    for section in sections.iter_mut() {
        section.stop().await;
    }
    playground.shutdown().await;
    let _ = std::fs::remove_file(&kubeconfig);
}
