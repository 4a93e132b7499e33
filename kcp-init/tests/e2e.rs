//! The init-agent end to end over HTTP, through the library's `run`, on the backend
//! `KCP_RS_BACKEND` picks (kcp-sim, or the test bed's real kcp). Tests of behaviour only kcp-sim
//! can produce (injected faults, three shards, a WorkspaceType status written by hand) run on
//! kcp-sim whatever the variable says, and say so in their name's comment.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use kcp_core::apply::{Applier, ApplierConfig, ApplyPlan, RuleSet};
use kcp_core::kcp::LogicalCluster;
use kcp_core::kube::api::GroupVersionKind;
use kcp_core::{ListOptions, ObjectClientExt, ObjectRef, parse_manifests};
use kcp_init::api::InitTarget;
use kcp_sim::{Config, ErrorRule, Verb};

mod support;

use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workspaces_become_ready_with_their_objects_in_any_listed_order() {
    let bed = Bed::start().await;
    let root = &*bed.root;
    let agent = bed.start_agent().await;
    bed.apply(WORKSPACE_TYPE).await;
    bed.apply(INIT).await;
    bed.create_workspaces(&["alpha", "beta", "gamma"]).await;
    bed.wait_ready(&["alpha", "beta", "gamma"], Duration::from_secs(30))
        .await;
    for ws in ["alpha", "beta", "gamma"] {
        bed.assert_initialized(ws).await;
    }
    assert_eq!(
        initialized_count_settled(&agent.metrics, "init-dev-environment", 3).await,
        3
    );
    let target = playground_init_target(root).await;
    let status = target.status.unwrap();
    assert_eq!(
        status.initializer,
        Some(bed.initializer("dev-environment").await)
    );
    assert_eq!(status.virtual_workspaces.len(), 1);
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_shard_url_is_watched() {
    // kcp-sim only: three shards.
    let bed = Bed::sim(Config {
        shards: 3,
        ..Config::kcp()
    })
    .await;
    let root = &*bed.root;
    let agent = bed.start_agent().await;
    bed.apply(WORKSPACE_TYPE).await;
    bed.apply(INIT).await;
    let names = ["s1", "s2", "s3", "s4", "s5", "s6"];
    bed.create_workspaces(&names).await;
    bed.wait_ready(&names, Duration::from_secs(30)).await;
    let target = playground_init_target(root).await;
    assert_eq!(target.status.unwrap().virtual_workspaces.len(), 3);
    agent.stop().await;
}

const FIXED_TEMPLATE: &str = "apiVersion: initialization.kcp.io/v1alpha1
kind: InitTemplate
metadata:
  name: dev-environment-basics
spec:
  template: |
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: cluster-info
    data:
      cluster: \"{{ .ClusterName }}\"
";

/// A workspace `broken` held by a template error: the agent, the playground's InitTarget and a
/// template naming a field the template context lacks, once the InitTarget's `TemplateError`
/// condition is True (the agent has tried the workspace and failed permanently). Returns the
/// bed, the agent and the workspace's logical cluster.
async fn held_by_a_template_error() -> (Bed, Agent, String) {
    let bed = Bed::start().await;
    let agent = bed.start_agent().await;
    bed.apply(WORKSPACE_TYPE).await;
    bed.apply(INIT).await;
    bed.apply(BROKEN_TEMPLATE).await;
    bed.create_workspaces(&["broken"]).await;
    let cluster = bed.cluster_of("broken").await;
    wait_condition(&*bed.root, "init-dev-environment", "TemplateError", "True").await;
    (bed, agent, cluster)
}

/// Applies the fixed template and waits for the held workspace to be Ready.
async fn fix_the_template(bed: &Bed) {
    bed.apply(FIXED_TEMPLATE).await;
    bed.wait_ready(&["broken"], Duration::from_secs(20)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_error_sets_template_error_naming_the_cluster_and_the_missing_field() {
    let (bed, agent, cluster) = held_by_a_template_error().await;
    let condition = condition_with(&*bed.root, "init-dev-environment", "TemplateError", "True")
        .await
        .expect("TemplateError=True");
    let message = condition.message.unwrap_or_default();
    assert!(
        message.contains(&cluster) && message.contains("NoSuchField"),
        "{message}"
    );
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_error_records_a_warning_event_on_the_init_target_naming_the_cluster() {
    // On the InitTarget: a workspace still initializing has no namespace to hold an Event on
    // real kcp.
    let (bed, agent, cluster) = held_by_a_template_error().await;
    let root = &*bed.root;
    let failed_event = || async {
        let events = root
            .list(
                &GroupVersionKind::gvk("", "v1", "Event"),
                Some("default"),
                &ListOptions::default(),
            )
            .await
            .unwrap();
        events
            .items
            .into_iter()
            .find(|e| e.data["reason"] == "ReconcilingFailed")
    };
    until(
        "a Warning event with upstream's reason",
        Duration::from_secs(20),
        || async { failed_event().await.is_some() },
    )
    .await;
    let warning = failed_event().await.unwrap();
    assert_eq!(warning.data["type"], "Warning");
    let prefix = format!("Failed to initialize cluster {cluster}: ");
    assert!(
        warning.data["message"]
            .as_str()
            .is_some_and(|m| m.starts_with(&prefix) && m.ends_with('.')),
        "{}",
        warning.data["message"]
    );
    assert_eq!(warning.data["involvedObject"]["kind"], "InitTarget");
    assert_eq!(
        warning.data["involvedObject"]["name"],
        "init-dev-environment"
    );
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_error_holds_the_workspace_initializing() {
    let (bed, agent, _) = held_by_a_template_error().await;
    assert_eq!(
        phase_of(&*bed.root, "broken").await.as_deref(),
        Some("Initializing")
    );
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixing_the_template_makes_the_held_workspace_ready() {
    let (bed, agent, _) = held_by_a_template_error().await;
    fix_the_template(&bed).await;
    assert_eq!(
        phase_of(&*bed.root, "broken").await.as_deref(),
        Some("Ready")
    );
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_the_fixed_template_gives_no_namespace_is_created_in_default() {
    let (bed, agent, cluster) = held_by_a_template_error().await;
    fix_the_template(&bed).await;
    let cm = bed
        .inside(&cluster)
        .await
        .get(&cm_ref("default", "cluster-info"))
        .await
        .unwrap()
        .expect("ConfigMap default/cluster-info");
    assert_eq!(cm.data["data"]["cluster"], cluster.as_str());
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixing_the_template_clears_the_template_error() {
    let (bed, agent, _) = held_by_a_template_error().await;
    fix_the_template(&bed).await;
    wait_condition(&*bed.root, "init-dev-environment", "TemplateError", "False").await;
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_init_target_stops_its_machinery() {
    let bed = Bed::start().await;
    let root = &*bed.root;
    let agent = bed.start_agent().await;
    bed.apply(WORKSPACE_TYPE).await;
    bed.apply(INIT).await;
    bed.create_workspaces(&["first"]).await;
    bed.wait_ready(&["first"], Duration::from_secs(20)).await;

    let target = playground_target();
    root.delete(&target, &Default::default()).await.unwrap();
    // A workspace created once the agent has handled the deletion stays waiting, while a later
    // one of another type is initialized.
    bed.start_witness("after-delete", "{}").await;
    bed.create_workspaces(&["second"]).await;
    bed.witness_initializes("after-delete", "witnessed").await;
    assert_eq!(
        phase_of(root, "second").await.as_deref(),
        Some("Initializing")
    );
    assert_eq!(agent.metrics.initialized_count("init-dev-environment"), 1);

    // Re-creating the target starts it again and the waiting workspace completes.
    bed.apply(INIT).await;
    bed.wait_ready(&["second"], Duration::from_secs(20)).await;
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_targets_for_one_workspace_type_conflict_and_only_the_oldest_acts() {
    let bed = Bed::start().await;
    let root = &*bed.root;
    bed.apply(WORKSPACE_TYPE).await;
    bed.apply(INIT).await;
    // Created a second later, so the playground target is the oldest.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    bed.apply(SECOND_TARGET).await;
    let agent = bed.start_agent().await;
    for name in ["init-dev-environment", "a-later-target"] {
        wait_condition(root, name, "Conflict", "True").await;
    }
    bed.create_workspaces(&["only-once"]).await;
    bed.wait_ready(&["only-once"], Duration::from_secs(20))
        .await;
    assert_eq!(
        initialized_count_settled(&agent.metrics, "init-dev-environment", 1).await,
        1
    );
    assert_eq!(agent.metrics.initialized_count("a-later-target"), 0);
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_injected_503s_and_dropped_watches_every_workspace_initializes_exactly_once() {
    // kcp-sim only: injected 503s and dropped watches.
    let bed = Bed::sim(Config::kcp()).await;
    let root = &*bed.root;
    let sim = bed.kcp.sim().unwrap();
    bed.apply(WORKSPACE_TYPE).await;
    bed.apply(INIT).await;
    let agent = bed.start_agent().await;
    sim.faults().add_error(ErrorRule::new(503, 0.10));
    let names: Vec<String> = (0..8).map(|i| format!("flaky-{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    // The test's own in-process writes suffer the faults too: retry until applied.
    for name in &refs {
        loop {
            let doc = format!(
                "apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}}}\nspec:\n  type: {{name: dev-environment, path: root}}\n"
            );
            let objects = parse_manifests("ws.yaml", &doc).unwrap();
            let plan = ApplyPlan::build(objects, &RuleSet::default()).unwrap();
            if Applier::new(root, ApplierConfig::new("test"))
                .apply(&plan)
                .await
                .is_complete()
            {
                break;
            }
        }
    }
    // Drop every watch a few times while the agent works.
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        sim.faults().drop_watches();
    }
    // No initializer goes early: whenever a workspace is Ready, its objects are all there.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        sim.faults().clear();
        let mut ready = 0;
        for name in &refs {
            if phase_of(root, name).await.as_deref() == Some("Ready") {
                bed.assert_initialized(name).await;
                ready += 1;
            }
        }
        if ready == refs.len() {
            break;
        }
        sim.faults().add_error(ErrorRule::new(503, 0.10));
        assert!(
            Instant::now() < deadline,
            "only {ready} of {} workspaces Ready",
            refs.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    sim.faults().clear();
    // Every workspace is Ready with its objects (checked above); none was counted twice. The
    // count is of the attempts this process saw complete, so it can only fall short of the
    // workspaces, never exceed them, unless one was initialized twice. CI once read 7 of 8
    // here after every workspace was Ready; the InitTarget's status is printed so the next
    // such run shows which cluster the count missed.
    let expected = refs.len() as u64;
    let counted = initialized_count_settled(&agent.metrics, "init-dev-environment", expected).await;
    if counted != expected {
        let target: Option<InitTarget> =
            root.get_typed(None, "init-dev-environment").await.unwrap();
        eprintln!(
            "counted {counted} initializations of {expected} Ready workspaces; InitTarget status: {:?}",
            target.and_then(|t| t.status)
        );
    }
    assert!(
        counted <= expected,
        "a workspace was initialized twice: {counted} initializations of {expected} workspaces"
    );
    for name in &refs {
        let lc: LogicalCluster = bed
            .inside(&bed.path(name))
            .await
            .get_typed(None, "cluster")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(lc.status.unwrap().phase.as_deref(), Some("Ready"));
    }
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_targets_matching_the_selector_act_and_labels_can_start_and_stop_them() {
    let bed = Bed::start().await;
    let root = &*bed.root;
    bed.apply(WORKSPACE_TYPE).await;
    bed.apply(INIT).await;
    let agent = bed.start_agent_with(Some("agent=blue")).await;
    bed.start_witness("blue-before", "{agent: blue}").await;
    bed.create_workspaces(&["unlabelled"]).await;
    bed.witness_initializes("blue-before", "witnessed-before")
        .await;
    assert_eq!(
        phase_of(root, "unlabelled").await.as_deref(),
        Some("Initializing")
    );

    // Labelling the target brings it into the agent's selection: it starts.
    let target = playground_target();
    let label = |value: &str| {
        kcp_core::ObjectPatch::Merge(serde_json::json!({"metadata": {"labels": {"agent": value}}}))
    };
    root.patch(
        &target,
        Default::default(),
        &label("blue"),
        &Default::default(),
    )
    .await
    .unwrap();
    bed.wait_ready(&["unlabelled"], Duration::from_secs(20))
        .await;

    // Relabelling takes it out again: it stops.
    root.patch(
        &target,
        Default::default(),
        &label("green"),
        &Default::default(),
    )
    .await
    .unwrap();
    bed.start_witness("blue-after", "{agent: blue}").await;
    bed.create_workspaces(&["after-relabel"]).await;
    bed.witness_initializes("blue-after", "witnessed-after")
        .await;
    assert_eq!(
        phase_of(root, "after-relabel").await.as_deref(),
        Some("Initializing")
    );
    agent.stop().await;
}

const OTHER_TYPE: &str = "apiVersion: tenancy.kcp.io/v1alpha1
kind: WorkspaceType
metadata:
  name: other-environment
spec:
  initializer: true
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changing_the_workspace_type_ref_restarts_the_target_on_the_new_type() {
    let bed = Bed::start().await;
    let root = &*bed.root;
    bed.apply(WORKSPACE_TYPE).await;
    bed.apply(OTHER_TYPE).await;
    bed.apply(INIT).await;
    let agent = bed.start_agent().await;
    let target = playground_target();
    let retarget = kcp_core::ObjectPatch::Merge(
        serde_json::json!({"spec": {"workspaceTypeRef": {"name": "other-environment"}}}),
    );
    root.patch(&target, Default::default(), &retarget, &Default::default())
        .await
        .unwrap();
    bed.apply(
        "apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata: {name: other}\nspec:\n  type: {name: other-environment, path: root}\n",
    )
    .await;
    bed.wait_ready(&["other"], Duration::from_secs(20)).await;
    let initializer = bed.initializer("other-environment").await;
    until(
        "the new initializer in the status",
        Duration::from_secs(10),
        || async {
            let t = playground_init_target(root).await;
            t.status.and_then(|s| s.initializer) == Some(initializer.clone())
        },
    )
    .await;
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn virtual_workspace_urls_removed_and_added_at_runtime_are_followed() {
    // kcp-sim only: the test writes the WorkspaceType's status, which real kcp owns.
    let bed = Bed::sim(Config::kcp()).await;
    let root = &*bed.root;
    bed.apply(WORKSPACE_TYPE).await;
    bed.apply(INIT).await;
    let agent = bed.start_agent().await;
    let wst = ObjectRef::cluster_scoped(
        GroupVersionKind::gvk("tenancy.kcp.io", "v1alpha1", "WorkspaceType"),
        "dev-environment",
    );
    let published =
        root.get(&wst).await.unwrap().unwrap().data["status"]["virtualWorkspaces"].clone();
    // As kcp: an initializing and a terminating URL per shard; the agent follows the first.
    let initializing = published
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["type"] == "initializing")
        .count();
    assert_eq!(initializing, 1);
    let set_urls = |urls: serde_json::Value| {
        kcp_core::ObjectPatch::Merge(serde_json::json!({"status": {"virtualWorkspaces": urls}}))
    };
    until(
        "the agent to follow the type",
        Duration::from_secs(10),
        || async {
            let t = playground_init_target(root).await;
            t.status.is_some_and(|s| s.virtual_workspaces.len() == 1)
        },
    )
    .await;

    // The shard's URL goes away: the agent stops watching it and new workspaces wait.
    root.patch_status(&wst, &set_urls(serde_json::json!([])))
        .await
        .unwrap();
    until("the URL to be dropped", Duration::from_secs(10), || async {
        let t = playground_init_target(root).await;
        t.status.is_some_and(|s| s.virtual_workspaces.is_empty())
    })
    .await;
    bed.start_witness("unpublished", "{}").await;
    bed.create_workspaces(&["waiting"]).await;
    bed.witness_initializes("unpublished", "witnessed").await;
    assert_eq!(
        phase_of(root, "waiting").await.as_deref(),
        Some("Initializing")
    );

    // It comes back: the agent watches it again and the workspace completes.
    root.patch_status(&wst, &set_urls(published)).await.unwrap();
    bed.wait_ready(&["waiting"], Duration::from_secs(20)).await;
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_restarted_halfway_through_a_batch_initializes_every_workspace_once() {
    let bed = Bed::start().await;
    bed.apply(WORKSPACE_TYPE).await;
    bed.apply(INIT).await;
    let names: Vec<String> = (0..6).map(|i| format!("batch-{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let first = bed.start_agent().await;
    bed.create_workspaces(&refs).await;
    until(
        "the first workspace Ready",
        Duration::from_secs(60),
        || async { first.metrics.initialized_count("init-dev-environment") >= 1 },
    )
    .await;
    let first_metrics = first.metrics.clone();
    first.stop().await;
    // Counted after the stop: a drain may finish what was in flight.
    let done_by_first = first_metrics.initialized_count("init-dev-environment");
    let second = bed.start_agent().await;
    bed.wait_ready(&refs, Duration::from_secs(60)).await;
    for name in &refs {
        bed.assert_initialized(name).await;
    }
    let left = (refs.len() as u64).saturating_sub(done_by_first);
    assert_eq!(
        done_by_first
            + initialized_count_settled(&second.metrics, "init-dev-environment", left).await,
        refs.len() as u64,
        "no workspace was initialized twice or skipped"
    );
    second.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_writes_that_failed_are_written_again_once_the_server_accepts_them() {
    // kcp-sim only: injected 500s on writes of InitTargets.
    let bed = Bed::sim(Config::kcp()).await;
    let root = &*bed.root;
    let sim = bed.kcp.sim().unwrap();
    bed.apply(WORKSPACE_TYPE).await;
    bed.apply(INIT).await;
    sim.faults().add_error(
        ErrorRule::new(500, 1.0)
            .verbs([Verb::Update, Verb::Patch])
            .resources(["inittargets.initialization.kcp.io"]),
    );
    let agent = bed.start_agent().await;
    bed.create_workspaces(&["unreported"]).await;
    bed.wait_ready(&["unreported"], Duration::from_secs(20))
        .await;
    initialized_count_settled(&agent.metrics, "init-dev-environment", 1).await;
    // Writes of the final counts fail for a few status ticks.
    let refused = sim.faults().injected();
    until("more refused writes", Duration::from_secs(10), || async {
        sim.faults().injected() >= refused + 4
    })
    .await;
    sim.faults().clear();
    until(
        "the URLs and the count in the status",
        Duration::from_secs(10),
        || async {
            let t = playground_init_target(root).await;
            t.status.is_some_and(|s| {
                s.clusters.initialized == 1
                    && s.virtual_workspaces.len() == 1
                    && s.initializer.is_some()
            })
        },
    )
    .await;
    agent.stop().await;
}
