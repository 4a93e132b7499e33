//! What the kcp-init end-to-end tests share: an agent over HTTP against kcp-sim, applying
//! manifests, creating workspaces and waiting for conditions.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use kcp_core::apply::{Applier, ApplierConfig, ApplyPlan, RuleSet};
use kcp_core::kcp::Workspace;
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::{Backoff, ObjectClient, ObjectClientExt, ObjectRef, parse_manifests};
use kcp_init::{AgentConfig, Metrics, run};
use kcp_sim::{Server, SimClient};
use tokio::sync::watch;

/// The playground's WorkspaceType with an initializer.
pub const WORKSPACE_TYPE: &str =
    include_str!("../../../examples/playground/01-workspace-type.yaml");
/// The playground's InitTemplate and InitTarget.
pub const INIT: &str = include_str!("../../../examples/playground/02-init.yaml");

/// A second InitTarget for the playground's WorkspaceType, created after the first.
pub const SECOND_TARGET: &str = "apiVersion: initialization.kcp.io/v1alpha1
kind: InitTarget
metadata:
  name: a-later-target
spec:
  workspaceTypeRef: {path: root, name: dev-environment}
  sources:
  - template: {name: dev-environment-basics}
";

/// The playground's InitTemplate with a field the template context lacks.
pub const BROKEN_TEMPLATE: &str = "apiVersion: initialization.kcp.io/v1alpha1
kind: InitTemplate
metadata:
  name: dev-environment-basics
spec:
  template: |
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: cluster-info
      namespace: default
    data:
      cluster: \"{{ .NoSuchField }}\"
";

/// The agent running in a task, and how to stop it.
pub struct Agent {
    pub stop: watch::Sender<bool>,
    pub task: tokio::task::JoinHandle<Result<(), kcp_init::Error>>,
    pub metrics: Arc<Metrics>,
}

impl Agent {
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        tokio::time::timeout(Duration::from_secs(30), self.task)
            .await
            .expect("the agent drains and stops")
            .unwrap()
            .unwrap();
    }
}

pub async fn apply(client: &dyn ObjectClient, yaml: &str) {
    let objects = parse_manifests("test.yaml", yaml).unwrap();
    apply_objects(client, objects).await;
}

pub async fn apply_objects(client: &dyn ObjectClient, objects: Vec<DynamicObject>) {
    let plan = ApplyPlan::build(objects, &RuleSet::default()).unwrap();
    let report = Applier::new(client, ApplierConfig::new("test"))
        .apply(&plan)
        .await;
    assert!(report.is_complete(), "{report}");
}

pub async fn install_crds(root: &SimClient) {
    let crds = kcp_init::api::crd_objects().unwrap();
    apply_objects(root, crds).await;
}

pub fn start_agent(sim: &Server) -> Agent {
    start_agent_with(sim, None)
}

pub fn start_agent_with(sim: &Server, selector: Option<&str>) -> Agent {
    let mut config = AgentConfig::new(sim.kube_config("root").unwrap(), "root");
    config.backoff = Backoff::new(Duration::from_millis(50), Duration::from_millis(500));
    config.selector = selector.map(String::from);
    let metrics = config.metrics.clone();
    let (stop, mut rx) = watch::channel(false);
    let task = tokio::spawn(run(config, async move {
        let _ = rx.wait_for(|s| *s).await;
    }));
    Agent {
        stop,
        task,
        metrics,
    }
}

pub async fn create_workspaces(root: &SimClient, names: &[&str]) {
    let docs: Vec<String> = names
        .iter()
        .map(|n| {
            format!(
                "apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata: {{name: {n}}}\nspec:\n  type: {{name: dev-environment, path: root}}\n"
            )
        })
        .collect();
    apply(root, &docs.join("---\n")).await;
}

pub async fn phase_of(root: &SimClient, name: &str) -> Option<String> {
    let ws: Option<Workspace> = root.get_typed(None, name).await.unwrap();
    ws.and_then(|w| w.status).and_then(|s| s.phase)
}

pub async fn wait_ready(root: &SimClient, names: &[&str], within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let mut all = true;
        for n in names {
            all &= phase_of(root, n).await.as_deref() == Some("Ready");
        }
        if all {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "workspaces {names:?} not Ready in time"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub async fn until<F, Fut>(what: &str, within: Duration, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    while !f().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The InitTarget of the playground manifests.
pub fn playground_target() -> ObjectRef {
    ObjectRef::cluster_scoped(
        GroupVersionKind::gvk("initialization.kcp.io", "v1alpha1", "InitTarget"),
        "init-dev-environment",
    )
}

pub fn cm_ref(ns: &str, name: &str) -> ObjectRef {
    ObjectRef::namespaced(GroupVersionKind::gvk("", "v1", "ConfigMap"), ns, name)
}

/// Every object the playground template renders exists in the workspace.
pub async fn assert_initialized(sim: &Server, workspace: &str) {
    let client = sim.object_client(&format!("root:{workspace}"));
    let cm = client.get(&cm_ref("team", "cluster-info")).await.unwrap();
    let cm = cm.unwrap_or_else(|| panic!("ConfigMap team/cluster-info missing in {workspace}"));
    let cluster = sim.logical_cluster(&format!("root:{workspace}")).unwrap();
    assert_eq!(cm.data["data"]["cluster"], cluster.as_str());
    assert_eq!(cm.data["data"]["workspace"], format!("root:{workspace}"));
    let sandbox = ObjectRef::namespaced(
        GroupVersionKind::gvk("example.kcp-rs.io", "v1", "Sandbox"),
        "team",
        "default-sandbox",
    );
    assert!(
        client.get(&sandbox).await.unwrap().is_some(),
        "Sandbox missing in {workspace}"
    );
}
