//! One end-to-end test per kcp-init defect fixed by the runtime rebuild (issue 8), named after
//! the behaviour that holds now: status written by two writers is never lost (3), a duplicate
//! object is decided by source order and reported (4), `generateName` objects are created once
//! per cluster however often the attempt is retried (6), and fields another manager owns are
//! never taken (8). On the backend `KCP_RS_BACKEND` picks, except where a test says kcp-sim only.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::runtime::ReconcileResult;
use kcp_core::{ListOptions, PatchOptions, parse_manifests};
use kcp_sim::{Config, ErrorRule, Verb};

mod support;

use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conditions_the_supervisor_writes_keep_the_runners_template_error() {
    let bed = Bed::start().await;
    let root = &*bed.root;
    let agent = bed.start_agent().await;
    bed.apply(WORKSPACE_TYPE).await;
    bed.apply(INIT).await;
    bed.apply(BROKEN_TEMPLATE).await;
    bed.create_workspaces(&["held"]).await;
    // The runner writes TemplateError ...
    wait_condition(root, "init-dev-environment", "TemplateError", "True").await;
    // ... then the supervisor writes Conflict on the same object, and later clears it.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    bed.apply(SECOND_TARGET).await;
    wait_condition(root, "init-dev-environment", "Conflict", "True").await;
    assert!(
        condition_with(root, "init-dev-environment", "TemplateError", "True")
            .await
            .is_some(),
        "the supervisor's write dropped the runner's TemplateError"
    );
    root.delete(
        &playground_target_named("a-later-target"),
        &Default::default(),
    )
    .await
    .unwrap();
    wait_condition(root, "init-dev-environment", "Conflict", "False").await;
    let error = condition_with(root, "init-dev-environment", "TemplateError", "True").await;
    assert!(
        error.is_some_and(|c| c.message.is_some_and(|m| m.contains("NoSuchField"))),
        "TemplateError lost when the Conflict cleared"
    );
    agent.stop().await;
}

fn playground_target_named(name: &str) -> kcp_core::ObjectRef {
    kcp_core::ObjectRef::cluster_scoped(
        GroupVersionKind::gvk("initialization.kcp.io", "v1alpha1", "InitTarget"),
        name,
    )
}

const TWO_SOURCES_ONE_OBJECT: &str = "apiVersion: initialization.kcp.io/v1alpha1
kind: InitTemplate
metadata: {name: first-source}
spec:
  template: |
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: shared, namespace: default}
    data: {from: first}
---
apiVersion: initialization.kcp.io/v1alpha1
kind: InitTemplate
metadata: {name: second-source}
spec:
  template: |
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: shared, namespace: default}
    data: {from: second}
---
apiVersion: initialization.kcp.io/v1alpha1
kind: InitTarget
metadata: {name: init-dev-environment}
spec:
  workspaceTypeRef: {path: root, name: dev-environment}
  sources:
  - template: {name: first-source}
  - template: {name: second-source}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sources_rendering_one_object_differently_keep_the_first_and_report_the_duplicate() {
    let bed = Bed::start().await;
    let root = &*bed.root;
    let agent = bed.start_agent().await;
    bed.apply(WORKSPACE_TYPE).await;
    bed.apply(TWO_SOURCES_ONE_OBJECT).await;
    let names = ["dup-1", "dup-2", "dup-3", "dup-4"];
    bed.create_workspaces(&names).await;
    bed.wait_ready(&names, Duration::from_secs(30)).await;
    for ws in names {
        let cm = bed
            .inside(&bed.path(ws))
            .await
            .get(&cm_ref("default", "shared"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(cm.data["data"]["from"], "first", "in {ws}");
    }
    until(
        "a DuplicateObjects condition",
        Duration::from_secs(20),
        || async {
            condition_with(root, "init-dev-environment", "DuplicateObjects", "True")
                .await
                .and_then(|c| c.message)
                .is_some_and(|m| m.contains("shared") && m.contains("second-source"))
        },
    )
    .await;
    agent.stop().await;
}

const GENERATED_WELCOME: &str = "apiVersion: initialization.kcp.io/v1alpha1
kind: InitTemplate
metadata: {name: welcome}
spec:
  template: |
    apiVersion: v1
    kind: ConfigMap
    metadata: {generateName: welcome-, namespace: default}
    data: {cluster: \"{{ .ClusterName }}\"}
---
apiVersion: initialization.kcp.io/v1alpha1
kind: InitTarget
metadata: {name: init-dev-environment}
spec:
  workspaceTypeRef: {path: root, name: dev-environment}
  sources:
  - template: {name: welcome}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generate_name_object_is_created_once_however_often_the_attempt_is_retried() {
    // kcp-sim only: injected 500s on the LogicalCluster.
    let bed = Bed::sim(Config::kcp()).await;
    let sim = bed.kcp.sim().unwrap();
    bed.apply(WORKSPACE_TYPE).await;
    bed.create_workspaces(&["generated"]).await;
    // Removing the initializer (the attempt's last step) fails until the rule is cleared, so
    // every attempt reaches the generateName object again.
    sim.faults().add_error(
        ErrorRule::new(500, 1.0)
            .verbs([Verb::Update, Verb::Patch])
            .resources(["logicalclusters.core.kcp.io"]),
    );
    let agent = bed.start_agent().await;
    bed.apply(GENERATED_WELCOME).await;
    until("three failed attempts", Duration::from_secs(20), || async {
        agent
            .metrics
            .controllers()
            .reconciles("inittarget/init-dev-environment", ReconcileResult::Error)
            >= 3
    })
    .await;
    sim.faults().clear();
    bed.wait_ready(&["generated"], Duration::from_secs(20))
        .await;
    let inside = bed.inside(&bed.path("generated")).await;
    let all = inside
        .list(
            &GroupVersionKind::gvk("", "v1", "ConfigMap"),
            Some("default"),
            &ListOptions::default(),
        )
        .await
        .unwrap();
    let welcomes: Vec<&DynamicObject> = all
        .items
        .iter()
        .filter(|cm| {
            cm.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("welcome-"))
        })
        .collect();
    assert_eq!(welcomes.len(), 1, "{welcomes:#?}");
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fields_another_manager_owns_are_not_taken_and_the_error_names_field_and_manager() {
    let bed = Bed::start().await;
    let root = &*bed.root;
    bed.apply(WORKSPACE_TYPE).await;
    bed.create_workspaces(&["contested"]).await;
    // Another initializer got there first and owns `data.cluster` (on real kcp it writes through
    // the initializingworkspaces virtual workspace, as initializers do).
    let initializer = bed.initializer("dev-environment").await;
    let inside = bed
        .kcp
        .initializing_client(&initializer, &bed.path("contested"))
        .await
        .unwrap();
    let theirs = parse_manifests(
        "theirs.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cluster-info, namespace: team}\ndata: {cluster: set-by-another-initializer}\n",
    )
    .unwrap();
    for obj in &theirs {
        inside
            .apply(obj, &PatchOptions::apply("another-initializer"))
            .await
            .unwrap();
    }
    let agent = bed.start_agent().await;
    bed.apply(INIT).await;
    until(
        "a field conflict reported",
        Duration::from_secs(20),
        || async {
            condition_with(root, "init-dev-environment", "TemplateError", "True")
                .await
                .and_then(|c| c.message)
                .is_some_and(|m| m.contains("another-initializer") && m.contains(".data.cluster"))
        },
    )
    .await;
    let cm = inside
        .get(&cm_ref("team", "cluster-info"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(cm.data["data"]["cluster"], "set-by-another-initializer");
    assert_eq!(
        phase_of(root, "contested").await.as_deref(),
        Some("Initializing")
    );
    agent.stop().await;
}

/// Security audit finding 8: `workspaceTypeRef.path` went into the request URL as written, so a
/// path with `/` or `?` made the agent GET other URLs with its own credentials.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_type_path_that_is_not_a_path_is_refused_before_any_request() {
    let bed = Bed::start().await;
    let root = &*bed.root;
    let agent = bed.start_agent().await;
    bed.apply(WORKSPACE_TYPE).await;
    let hostile = INIT.replace(
        "    path: root\n",
        "    path: \"root/../../api/v1/secrets?x=\"\n",
    );
    assert_ne!(hostile, INIT, "the playground target names its type's path");
    apply(root, &hostile).await;
    wait_condition(root, "init-dev-environment", "Ready", "False").await;
    until(
        "the refusal naming the path",
        Duration::from_secs(20),
        || async {
            let c = condition_with(root, "init-dev-environment", "Ready", "False").await;
            c.is_some_and(|c| {
                c.reason.as_deref() == Some("InvalidWorkspaceTypeRef")
                    && c.message
                        .is_some_and(|m| m.contains("neither a logical cluster name"))
            })
        },
    )
    .await;
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removal_the_server_took_while_its_answer_was_lost_is_counted_once() {
    // kcp-sim only: the answer to the initializer's removal is lost after the server took it.
    let bed = Bed::sim(Config::kcp()).await;
    let sim = bed.kcp.sim().unwrap();
    bed.apply(WORKSPACE_TYPE).await;
    bed.apply(INIT).await;
    let agent = bed.start_agent().await;
    sim.faults().add_error(
        ErrorRule::new(503, 1.0)
            .verbs([Verb::Update])
            .resources(["logicalclusters.core.kcp.io"])
            .after_the_write(),
    );
    bed.create_workspaces(&["lost-answer"]).await;
    bed.wait_ready(&["lost-answer"], Duration::from_secs(30))
        .await;
    bed.assert_initialized("lost-answer").await;
    let counted = initialized_count_settled(&agent.metrics, "init-dev-environment", 1).await;
    assert_eq!(
        counted, 1,
        "the initialization whose answer was lost is counted once"
    );
    agent.stop().await;
}
