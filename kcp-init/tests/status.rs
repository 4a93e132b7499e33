//! Writing an InitTarget's status through `kcp_init::status`, on kcp-sim (injected faults).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kcp_core::ObjectClientExt;
use kcp_init::api::InitTarget;
use kcp_init::status::update_status;
use kcp_sim::{Config, ErrorRule, Verb};

mod support;

use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_write_the_server_refuses_is_returned_naming_the_init_target() {
    let bed = Bed::sim(Config::kcp()).await;
    bed.apply(INIT).await;
    bed.kcp.sim().unwrap().faults().add_error(
        ErrorRule::new(500, 1.0)
            .verbs([Verb::Update, Verb::Patch])
            .resources(["inittargets.initialization.kcp.io"]),
    );
    let refused = update_status(&*bed.root, "init-dev-environment", |s| {
        s.clusters.initialized = 1;
    })
    .await
    .expect_err("the server refuses every write");
    assert!(
        refused.to_string().contains("\"init-dev-environment\""),
        "{refused}"
    );
    let target: InitTarget = bed
        .root
        .get_typed(None, "init-dev-environment")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(target.status.map(|s| s.clusters.initialized), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_write_the_server_accepts_sets_the_change_and_the_observed_generation() {
    let bed = Bed::sim(Config::kcp()).await;
    bed.apply(INIT).await;
    update_status(&*bed.root, "init-dev-environment", |s| {
        s.clusters.initialized = 1;
    })
    .await
    .unwrap();
    let target: InitTarget = bed
        .root
        .get_typed(None, "init-dev-environment")
        .await
        .unwrap()
        .unwrap();
    let status = target.status.unwrap();
    assert_eq!(status.clusters.initialized, 1);
    assert_eq!(status.observed_generation, target.metadata.generation);
}
