//! `initialize_cluster` called directly, as the runtime's workers call it (no agent running):
//! its answers are the runtime's contract. A transient error is tried again, a success is done,
//! and a template error is permanent, naming the source, until the template changes. On the
//! backend `KCP_RS_BACKEND` picks.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use kcp_core::apply::ApplierConfig;
use kcp_core::runtime::{Classify, Outcome};
use kcp_core::{ObjectClient, TemplateEngine};
use kcp_init::reconcile::{FIELD_MANAGER, InitContext, Initialization, initialize_cluster};

mod support;

use support::*;

/// The playground's workspace `name`, waiting for the playground's initializer.
struct Waiting {
    initializer: String,
    cluster: String,
    view: Arc<dyn ObjectClient>,
}

async fn waiting_workspace(bed: &Bed, name: &str) -> Waiting {
    bed.apply(WORKSPACE_TYPE).await;
    bed.apply(INIT).await;
    bed.create_workspaces(&[name]).await;
    let initializer = bed.initializer("dev-environment").await;
    let view = bed
        .kcp
        .initializing_client(&initializer, &bed.path(name))
        .await
        .unwrap();
    let cluster = bed.cluster_of(name).await;
    Waiting {
        initializer,
        cluster,
        view,
    }
}

/// Calls `initialize_cluster` again after each transient error, as the workers do (without
/// their backoff), until it answers something else.
async fn until_not_transient(
    bed: &Bed,
    waiting: &Waiting,
) -> Result<Initialization, kcp_init::Error> {
    let engine = TemplateEngine::new();
    let mut applier = ApplierConfig::new(FIELD_MANAGER);
    applier.force = false;
    let ctx = InitContext {
        config: &*bed.root,
        target: "init-dev-environment",
        initializer: &waiting.initializer,
        workspace_type_name: "dev-environment",
        workspace_type_path: bed.kcp.root(),
        engine: &engine,
        applier: &applier,
        templates: None,
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let result = initialize_cluster(&ctx, &waiting.cluster, &*waiting.view, None).await;
        match result {
            Err(err) if err.is_transient() && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => return other,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_cluster_is_initialized_and_the_runtime_is_told_it_is_done() {
    let bed = Bed::start().await;
    let waiting = waiting_workspace(&bed, "direct").await;
    let done = until_not_transient(&bed, &waiting).await.unwrap();
    assert_eq!(done.outcome(), Outcome::Done);
    let Initialization::Completed {
        objects,
        duplicates,
    } = done
    else {
        panic!("the cluster carried the initializer, so it is ours: {done:?}");
    };
    // The playground's four objects (Sandbox, ConfigMap, CRD, Namespace).
    assert_eq!(objects, 4);
    assert!(duplicates.is_empty(), "{duplicates:?}");
    bed.wait_ready(&["direct"], Duration::from_secs(20)).await;
    bed.assert_initialized("direct").await;
    // Asked again, it initializes nothing twice: the cluster is not ours any more (kcp-sim), or
    // the view no longer serves it, which is transient until the view stops announcing it.
    match until_not_transient(&bed, &waiting).await {
        Ok(Initialization::NotOurs) => {}
        Err(err) => assert!(err.is_transient(), "{err}"),
        Ok(again) => panic!("initialized twice: {again:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_error_is_permanent_and_names_the_source() {
    let bed = Bed::start().await;
    let waiting = waiting_workspace(&bed, "broken").await;
    bed.apply(BROKEN_TEMPLATE).await;
    let err = until_not_transient(&bed, &waiting).await.unwrap_err();
    assert!(!err.is_transient(), "{err}");
    assert_eq!(Classify::reason(&err), "TemplateError");
    let message = err.to_string();
    assert!(
        message.contains("source #0") && message.contains("NoSuchField"),
        "{message}"
    );
}
