//! The agent as the restricted user `kcp-init-agent`, bound only by the RBAC this project ships
//! (`deploy/kcp-init-agent/rbac.yaml`), on a real kcp: authorization exists only there, so these
//! tests always use the real backend, whatever `KCP_RS_BACKEND` says.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use kcp_testbed::KcpBed;

mod support;

use support::*;

const RBAC: &str = include_str!("../../deploy/kcp-init-agent/rbac.yaml");
const AGENT_USER: &str = "kcp-init-agent";

/// A real bed with the agent's CRDs, the playground's type and InitTarget, and `rbac` applied in
/// the test's root (config workspace and WorkspaceType workspace at once).
async fn bed_with_rbac(rbac: &str) -> Bed {
    let bed = Bed::on_kcp(KcpBed::start_real().await.unwrap()).await;
    bed.apply(WORKSPACE_TYPE).await;
    bed.apply(INIT).await;
    bed.apply(rbac).await;
    bed
}

async fn start_restricted_agent(bed: &Bed) -> Agent {
    let ids = &kcp_testbed::real::credentials().unwrap().identities;
    let token = &ids.user(AGENT_USER).unwrap().token;
    let endpoint = bed.kcp.real_endpoint(bed.kcp.root()).unwrap();
    let config = endpoint.with_token(token).config().unwrap();
    start_agent_on(config, bed.kcp.root(), None)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_initializes_workspaces_with_only_the_shipped_rbac() {
    let bed = bed_with_rbac(RBAC).await;
    let agent = start_restricted_agent(&bed).await;
    bed.create_workspaces(&["restricted"]).await;
    bed.wait_ready(&["restricted"], Duration::from_secs(60))
        .await;
    bed.assert_initialized("restricted").await;
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_initialize_rule_the_failure_names_the_resource_and_verb() {
    let without_initialize = RBAC.replace("  verbs: [\"initialize\"]\n", "  verbs: [\"get\"]\n");
    assert_ne!(
        without_initialize, RBAC,
        "the shipped RBAC has an initialize rule"
    );
    let bed = bed_with_rbac(&without_initialize).await;
    let agent = start_restricted_agent(&bed).await;
    bed.create_workspaces(&["refused"]).await;
    let root = &*bed.root;
    until(
        "the InitTarget to report the refusal",
        Duration::from_secs(60),
        || async {
            let t = playground_init_target(root).await;
            let text = serde_json::to_string(&t.status).unwrap_or_default();
            // kcp's words: `403 Forbidden: logicalclusters.core.kcp.io is forbidden: User
            // "kcp-init-agent" cannot list resource "logicalclusters" ...`
            text.contains("VirtualWorkspaceUnavailable")
                && text.contains("403 Forbidden")
                && text.contains(AGENT_USER)
                && text.contains("cannot list resource")
                && text.contains("logicalclusters")
        },
    )
    .await;
    // The workspace waits for its initializer (it may still be scheduling when the refusal
    // is first reported).
    until(
        "the workspace to be Initializing",
        Duration::from_secs(30),
        || async { phase_of(root, "refused").await.as_deref() == Some("Initializing") },
    )
    .await;
    agent.stop().await;
}

/// The Deployment runs with `--enable-leader-election`: the shipped RBAC must let the agent take
/// and renew its Lease (`default/kcp-init-agent` in the config workspace), which needs `patch`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shipped_rbac_lets_the_agent_lead() {
    let bed = bed_with_rbac(RBAC).await;
    let ids = &kcp_testbed::real::credentials().unwrap().identities;
    let token = &ids.user(AGENT_USER).unwrap().token;
    let endpoint = bed.kcp.real_endpoint(bed.kcp.root()).unwrap();
    let client = endpoint.with_token(token).client().unwrap();
    let election = kcp_manager::leader::LeaderElection::new("default", "kcp-init-agent");
    let leadership = tokio::time::timeout(Duration::from_secs(30), election.acquire(client))
        .await
        .expect("the agent leads within 30 s")
        .expect("the Lease is taken with only the shipped RBAC");
    leadership.release().await;
}
