//! What the kcp-init end-to-end tests share: an agent over HTTP against either backend
//! (`KCP_RS_BACKEND`: kcp-sim, or the real kcp of the test bed, where the test's root is a fresh
//! workspace), applying manifests, creating workspaces and waiting for conditions.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use kcp_core::apply::{Applier, ApplierConfig, ApplyPlan, RuleSet};
use kcp_core::kcp::Workspace;
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::{Backoff, ObjectClient, ObjectClientExt, ObjectRef, parse_manifests};
use kcp_init::{AgentConfig, Metrics, run};
use kcp_testbed::KcpBed;
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

/// Applies until complete (kcp-core's `apply_until_settled`: on a real server a CRD's kind is
/// served a moment after the CRD is created).
pub async fn apply_objects(client: &dyn ObjectClient, objects: Vec<DynamicObject>) {
    let plan = ApplyPlan::build(objects, &RuleSet::default()).unwrap();
    let report = Applier::new(client, ApplierConfig::new("test"))
        .apply_until_settled(&plan, Duration::from_secs(30))
        .await;
    assert!(report.is_complete(), "{report}: {:?}", report.unfinished());
}

pub async fn install_crds(root: &dyn ObjectClient) {
    let crds = kcp_init::api::crd_objects().unwrap();
    apply_objects(root, crds).await;
}

/// A bed on the backend the environment picks, with its root client and the agent's CRDs.
pub struct Bed {
    pub kcp: KcpBed,
    pub root: Arc<dyn ObjectClient>,
}

impl Bed {
    pub async fn start() -> Bed {
        Bed::on(KcpBed::start().await.unwrap()).await
    }

    /// A bed on kcp-sim, for behaviour only kcp-sim can produce (faults, several shards, a
    /// WorkspaceType status written by hand).
    pub async fn sim(config: kcp_sim::Config) -> Bed {
        Bed::on(KcpBed::start_sim(config).await.unwrap()).await
    }

    /// A bed on a given kcp (the real one, say), with the agent's CRDs installed.
    pub async fn on_kcp(kcp: KcpBed) -> Bed {
        Bed::on(kcp).await
    }

    async fn on(kcp: KcpBed) -> Bed {
        let root = kcp.object_client(kcp.root()).await.unwrap();
        install_crds(&*root).await;
        Bed { kcp, root }
    }

    /// The path of the test's child workspace `name`.
    pub fn path(&self, name: &str) -> String {
        self.kcp.path(name)
    }

    /// A manifest with every `path: root` pointing at the test's root workspace.
    pub fn localize(&self, yaml: &str) -> String {
        yaml.replace("path: root", &format!("path: {}", self.kcp.root()))
    }

    /// Applies a manifest (localized) in the test's root workspace.
    pub async fn apply(&self, yaml: &str) {
        apply(&*self.root, &self.localize(yaml)).await;
    }

    /// An admin client inside the child workspace `name` (or a logical cluster name).
    pub async fn inside(&self, path: &str) -> Arc<dyn ObjectClient> {
        self.kcp.object_client(path).await.unwrap()
    }

    /// The logical cluster of the child workspace `name`.
    pub async fn cluster_of(&self, name: &str) -> String {
        self.kcp.scheduled_cluster(&self.path(name)).await.unwrap()
    }

    /// The initializer of a WorkspaceType in the test's root, as kcp names it:
    /// `<logical cluster of the type's workspace>:<type name>`.
    pub async fn initializer(&self, workspace_type: &str) -> String {
        let cluster = self
            .kcp
            .logical_cluster(self.kcp.root())
            .await
            .unwrap()
            .unwrap();
        format!("{cluster}:{workspace_type}")
    }

    pub async fn start_agent(&self) -> Agent {
        self.start_agent_with(None).await
    }

    pub async fn start_agent_with(&self, selector: Option<&str>) -> Agent {
        let config = self.kcp.config(self.kcp.root()).await.unwrap();
        start_agent_on(config, self.kcp.root(), selector)
    }

    /// Creates workspaces of the playground's WorkspaceType in the test's root.
    pub async fn create_workspaces(&self, names: &[&str]) {
        self.create_workspaces_of("dev-environment", names).await;
    }

    pub async fn wait_ready(&self, names: &[&str], within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            self.kcp.check_alive().unwrap();
            let mut all = true;
            for n in names {
                all &= phase_of(&*self.root, n).await.as_deref() == Some("Ready");
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

    /// Creates workspaces of the WorkspaceType `workspace_type` in the test's root.
    pub async fn create_workspaces_of(&self, workspace_type: &str, names: &[&str]) {
        let docs: Vec<String> = names
            .iter()
            .map(|n| {
                format!(
                    "apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata: {{name: {n}}}\nspec:\n  type: {{name: {workspace_type}, path: root}}\n"
                )
            })
            .collect();
        self.apply(&docs.join("---\n")).await;
    }

    /// Starts a witness: a WorkspaceType `name` with an initializer and an InitTarget `name` for
    /// it with the given `labels` (a YAML map, e.g. `{agent: blue}`) and the playground's
    /// template, and waits until the agent runs it (its `Ready` condition is True). The agent
    /// handles InitTarget changes in the order its watch delivers them, so when this returns it
    /// has handled every InitTarget change the test made before (a deletion, a relabelling).
    pub async fn start_witness(&self, name: &str, labels: &str) {
        self.apply(&format!(
            "apiVersion: tenancy.kcp.io/v1alpha1\nkind: WorkspaceType\nmetadata: {{name: {name}}}\nspec: {{initializer: true}}\n---\napiVersion: initialization.kcp.io/v1alpha1\nkind: InitTarget\nmetadata: {{name: {name}, labels: {labels}}}\nspec:\n  workspaceTypeRef: {{path: root, name: {name}}}\n  sources:\n  - template: {{name: dev-environment-basics}}\n"
        ))
        .await;
        wait_condition(&*self.root, name, "Ready", "True").await;
    }

    /// Creates a workspace `name` of the witness's type and waits until it is Ready. The agent
    /// then has initialized, with the same template, a workspace created after every workspace
    /// the test created before: a test asserts that the agent did *not* act on one of those
    /// after this, not after a sleep.
    pub async fn witness_initializes(&self, witness: &str, name: &str) {
        self.create_workspaces_of(witness, &[name]).await;
        self.wait_ready(&[name], Duration::from_secs(30)).await;
    }

    /// Every object the playground template renders exists in the workspace.
    pub async fn assert_initialized(&self, workspace: &str) {
        let path = self.path(workspace);
        let client = self.inside(&path).await;
        let cm = client.get(&cm_ref("team", "cluster-info")).await.unwrap();
        let cm = cm.unwrap_or_else(|| panic!("ConfigMap team/cluster-info missing in {workspace}"));
        let cluster = self.cluster_of(workspace).await;
        assert_eq!(cm.data["data"]["cluster"], cluster.as_str());
        assert_eq!(cm.data["data"]["workspace"], path);
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
}

pub fn start_agent_on(kube: kcp_core::kube::Config, root: &str, selector: Option<&str>) -> Agent {
    let mut config = AgentConfig::new(kube, root);
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

pub async fn phase_of(root: &dyn ObjectClient, name: &str) -> Option<String> {
    let ws: Option<Workspace> = root.get_typed(None, name).await.unwrap();
    ws.and_then(|w| w.status).and_then(|s| s.phase)
}

/// The condition `type_` of the InitTarget `target`, when the InitTarget has it with `status`.
pub async fn condition_with(
    root: &dyn ObjectClient,
    target: &str,
    type_: &str,
    status: &str,
) -> Option<kcp_core::kcp::Condition> {
    let t: kcp_init::api::InitTarget = root.get_typed(None, target).await.unwrap()?;
    t.status
        .and_then(|s| s.condition(type_).cloned())
        .filter(|c| c.status == status)
}

/// Waits (up to 20 s) until the InitTarget `target` has the condition `type_` with `status`.
pub async fn wait_condition(root: &dyn ObjectClient, target: &str, type_: &str, status: &str) {
    until(
        &format!("{target}: {type_}={status}"),
        Duration::from_secs(20),
        || async { condition_with(root, target, type_, status).await.is_some() },
    )
    .await;
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

/// The clusters `metrics` counted as initialized for `target`, read once the count reaches
/// `expected` (or after 10 s). A workspace turns Ready as soon as the initializer is removed,
/// a moment before the reconcile that removed it returns and counts it; reading at once races
/// that moment.
pub async fn initialized_count_settled(
    metrics: &kcp_init::metrics::Metrics,
    target: &str,
    expected: u64,
) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    while metrics.initialized_count(target) < expected && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    metrics.initialized_count(target)
}

/// The InitTarget of the playground manifests, as the server holds it now.
pub async fn playground_init_target(root: &dyn ObjectClient) -> kcp_init::api::InitTarget {
    root.get_typed(None, "init-dev-environment")
        .await
        .unwrap()
        .expect("the playground InitTarget exists")
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
