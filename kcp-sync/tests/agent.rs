//! The whole agent (publish, export and sync controllers, the APIExportEndpointSlice
//! provider) over HTTP against two kcp-sim servers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Env, STATE_NS, agent, create, crontab_pr, eventually};
use kcp_core::kube::api::{DynamicObject, GroupVersionKind};
use kcp_core::{ListOptions, ObjectClient, ObjectClientExt as _, ObjectRef};
use kcp_sim::PLAIN_CLUSTER;
use kcp_sync::claims_acceptance::{CLAIMS_NOT_ACCEPTED, CONDITION_CLAIMS_ACCEPTED};
use kcp_sync::controller::{Agent, ControllerName, Metrics, ObjectLabels, run};
use serde_json::{Value, json};

/// The CronTabs the service cluster holds (the local copies).
async fn local_crontabs(env: &Env) -> Vec<DynamicObject> {
    let gvk = GroupVersionKind::gvk("example.com", "v1", "CronTab");
    env.service
        .list(&gvk, None, &ListOptions::default())
        .await
        .unwrap()
        .items
}

/// The APIExport `crontabs` in the provider workspace.
async fn crontabs_export(env: &Env) -> DynamicObject {
    let gvk = GroupVersionKind::gvk("apis.kcp.io", "v1alpha2", "APIExport");
    env.provider
        .get(&ObjectRef::cluster_scoped(gvk, "crontabs"))
        .await
        .unwrap()
        .unwrap()
}

/// Writes `resources` into the APIExport by hand, as someone other than the agent.
async fn set_export_resources(env: &Env, resources: Value) {
    let mut export = crontabs_export(env).await;
    export.data["spec"]["resources"] = resources;
    env.provider
        .replace(&export, kcp_core::Subresource::Main)
        .await
        .unwrap();
}

async fn export_resources(env: &Env) -> Value {
    crontabs_export(env).await.data["spec"]["resources"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_object_is_synced_down_and_its_status_up_by_the_running_agent() {
    let env = Env::start().await;
    create(
        &env.service,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": STATE_NS}}),
    )
    .await;
    // kcp (and kcp-sim) create the endpoint slice of the same name as the export.
    env.publish(&crontab_pr("crontabs")).await;
    let metrics = Metrics::default();
    let mut config = agent(&env);
    config.metrics = metrics.clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(run(config, async {
        let _ = stopped.await;
    }));

    eventually("the schema in the export", || async {
        export_resources(&env)
            .await
            .as_array()
            .is_some_and(|r| r.len() == 1)
    })
    .await;
    assert_eq!(metrics.published_resources.get(), 1);

    let root = env.kcp_sim.object_client("root");
    create(&root, json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "team-1"}, "spec": {}})).await;
    let team = env.kcp_sim.object_client("root:team-1");
    let claims: Vec<Value> = ["events", "namespaces"]
        .iter()
        .map(|r| json!({"group": "", "resource": r, "all": true, "state": "Accepted"}))
        .collect();
    create(&team, json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": "crontabs"},
        "spec": {"reference": {"export": {"path": "root:provider", "name": "crontabs"}}, "permissionClaims": claims}})).await;
    create(&team, json!({"apiVersion": "example.com/v1", "kind": "CronTab",
        "metadata": {"name": "my-crontab", "namespace": "default"}, "spec": {"cronSpec": "* * * *"}})).await;

    let gvk = GroupVersionKind::gvk("example.com", "v1", "CronTab");
    eventually("the local copy", || async {
        local_crontabs(&env).await.len() == 1
    })
    .await;
    let mut local = local_crontabs(&env).await.remove(0);
    assert_eq!(local.data["spec"], json!({"cronSpec": "* * * *"}));
    eventually(
        "the synced count and Ready on the PublishedResource",
        || async {
            let status = env.pr("crontabs").await.status.unwrap_or_default();
            status.objects.synced == 1 && status.condition("Ready").is_some_and(|c| c.is_true())
        },
    )
    .await;
    let synced = ObjectLabels::new("crontabs", "synced");
    assert_eq!(metrics.objects.get_or_create(&synced).get(), 1);
    let event_gvk = GroupVersionKind::gvk("", "v1", "Event");
    eventually("the ObjectPlaced Event in kcp", || async {
        let events = team
            .list(&event_gvk, Some("default"), &ListOptions::default())
            .await
            .unwrap()
            .items;
        events.iter().any(|e| e.data["reason"] == "ObjectPlaced")
    })
    .await;
    local.data["status"] = json!({"phase": "Running"});
    env.service
        .replace(&local, kcp_core::Subresource::Status)
        .await
        .unwrap();
    let remote = ObjectRef::namespaced(gvk.clone(), "default", "my-crontab");
    eventually("the status in kcp", || async {
        team.get(&remote)
            .await
            .unwrap()
            .is_some_and(|o| o.data["status"]["phase"] == "Running")
    })
    .await;

    // A status-only update of the PublishedResource restarts nothing (upstream #182 starts a
    // second controller and never stops the first).
    let starts = metrics.sync_controller_starts.get();
    let mut pr = env.pr("crontabs").await;
    pr.status.get_or_insert_default().objects.pending = 7;
    env.service
        .replace(
            &common::object(serde_json::to_value(&pr).unwrap()),
            kcp_core::Subresource::Status,
        )
        .await
        .unwrap();
    // A later PublishedResource of the same kind, refused as the second to publish it: once
    // its refusal is written, the publisher has handled every event of the PublishedResource
    // watch before its creation, this status update too.
    publisher_caught_up(&env).await;
    assert_eq!(metrics.sync_controller_starts.get(), starts);
    // A spec change replaces the controller: one more start, still one running.
    let mut pr = env.pr("crontabs").await;
    pr.spec.naming = Some(kcp_sync::api::ResourceNaming {
        namespace: String::new(),
        name: "$remoteName".into(),
    });
    env.service.replace_typed(&pr).await.unwrap();
    eventually("the controller restart", || async {
        metrics.sync_controller_starts.get() == starts + 1
    })
    .await;
    assert_eq!(metrics.sync_controllers.get(), 1);

    team.delete(&remote, &Default::default()).await.unwrap();
    eventually("the deletion in kcp and of the local copy", || async {
        team.get(&remote).await.unwrap().is_none() && local_crontabs(&env).await.is_empty()
    })
    .await;

    let _ = stop.send(());
    task.await.unwrap().unwrap();
}

/// Waits until the publisher has handled the PublishedResource events so far: a
/// PublishedResource created now, publishing the CronTabs again, is refused (its `Syncing`
/// False), and is deleted again.
async fn publisher_caught_up(env: &Env) {
    env.publish(&crontab_pr("crontabs-marker")).await;
    eventually("the later PublishedResource refused", || async {
        let status = env.pr("crontabs-marker").await.status.unwrap_or_default();
        status
            .condition("Syncing")
            .is_some_and(|c| c.status == "False")
    })
    .await;
    env.service
        .delete_typed::<kcp_sync::api::PublishedResource>(
            None,
            "crontabs-marker",
            &Default::default(),
        )
        .await
        .unwrap();
}

/// Starts the agent for `pr` and a bound consumer `root:team-1` (claims: events, namespaces,
/// secrets); answers the consumer's client, the stop switch and the agent task.
async fn agent_with_consumer(
    env: &Env,
    pr: kcp_sync::api::PublishedResource,
) -> (
    kcp_sim::SimClient,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<kcp_sync::Result<()>>,
) {
    agent_with_consumer_using(env, pr, agent(env)).await
}

/// [`agent_with_consumer`] with the agent `config`.
async fn agent_with_consumer_using(
    env: &Env,
    pr: kcp_sync::api::PublishedResource,
    config: Agent,
) -> (
    kcp_sim::SimClient,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<kcp_sync::Result<()>>,
) {
    agent_with_consumer_accepting(env, pr, config, &["events", "namespaces", "secrets"]).await
}

/// [`agent_with_consumer_using`], the consumer's binding accepting (`all: true`) only the
/// core resources `accepted`.
async fn agent_with_consumer_accepting(
    env: &Env,
    pr: kcp_sync::api::PublishedResource,
    config: Agent,
    accepted: &[&str],
) -> (
    kcp_sim::SimClient,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<kcp_sync::Result<()>>,
) {
    create(
        &env.service,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": STATE_NS}}),
    )
    .await;
    env.publish(&pr).await;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(run(config, async {
        let _ = stopped.await;
    }));
    eventually("the schema in the export", || async {
        export_resources(env)
            .await
            .as_array()
            .is_some_and(|r| r.len() == 1)
    })
    .await;
    let root = env.kcp_sim.object_client("root");
    create(&root, json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "team-1"}, "spec": {}})).await;
    let team = env.kcp_sim.object_client("root:team-1");
    create(&team, json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": "crontabs"},
        "spec": {"reference": {"export": {"path": "root:provider", "name": "crontabs"}}, "permissionClaims": accepting(accepted)}})).await;
    (team, stop, task)
}

/// v1alpha1 binding claims accepting the core resources `resources` for all verbs.
fn accepting(resources: &[&str]) -> Vec<Value> {
    resources
        .iter()
        .map(|r| json!({"group": "", "resource": r, "all": true, "state": "Accepted"}))
        .collect()
}

/// With the watches feeding the caches, syncing an object reads nothing twice: kcp sees per
/// object one finalizer patch, one status update and Events created without a read; the
/// service cluster one create of the copy and one of its state Secret, and no reads of either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_synced_object_costs_its_writes_and_no_reads() {
    let env = Env::start().await;
    let service = common::CountingClient::new(env.service_sim.object_client(PLAIN_CLUSTER));
    let mut config = agent(&env);
    config.service = Arc::new(service.clone());
    let (team, stop, task) = agent_with_consumer_using(&env, crontab_pr("crontabs"), config).await;
    let gvk = GroupVersionKind::gvk("example.com", "v1", "CronTab");
    eventually("the CronTab kind served in the consumer", || async {
        team.list(&gvk, None, &ListOptions::default()).await.is_ok()
    })
    .await;
    // Publishing has settled: the events of its own writes (the CRD it made becoming
    // established) came back and were handled, each such pass listing CRDs. Only then are the
    // objects' costs counted: no CRD list for 15 polls in a row (300 ms).
    let (mut seen, mut quiet) = (usize::MAX, 0);
    eventually("publishing settled", || {
        let now = service.calls("list CustomResourceDefinition");
        quiet = if now == seen { quiet + 1 } else { 0 };
        seen = now;
        let settled = quiet >= 15;
        async move { settled }
    })
    .await;
    service.reset();
    env.kcp_sim.requests().reset();
    for i in 0..10 {
        create(
            &team,
            json!({"apiVersion": "example.com/v1", "kind": "CronTab",
            "metadata": {"name": format!("c{i}"), "namespace": "default"}, "spec": {"n": i}}),
        )
        .await;
    }
    let local_copies = || async { local_crontabs(&env).await };
    eventually("10 local copies", || async {
        local_copies().await.len() == 10
    })
    .await;
    for mut local in local_copies().await {
        local.data["status"] = json!({"phase": "Running"});
        env.service
            .replace(&local, kcp_core::Subresource::Status)
            .await
            .unwrap();
    }
    eventually("every status in kcp and 10 objects synced", || async {
        let remotes = team
            .list(&gvk, None, &ListOptions::default())
            .await
            .unwrap()
            .items;
        let synced = env
            .pr("crontabs")
            .await
            .status
            .unwrap_or_default()
            .objects
            .synced;
        synced == 10
            && remotes
                .iter()
                .all(|o| o.data["status"]["phase"] == "Running")
    })
    .await;
    // The watch events of the agent's own writes come back and are reconciled too: a later
    // CronTab, synced, shows the agent has handled the kcp watch up to it. Its own writes (one
    // finalizer patch, ObjectAccepted and ObjectPlaced, its copy and state Secret; no status)
    // are counted apart.
    create(
        &team,
        json!({"apiVersion": "example.com/v1", "kind": "CronTab",
        "metadata": {"name": "later", "namespace": "default"}, "spec": {"n": 10}}),
    )
    .await;
    eventually("the later CronTab synced", || async {
        let status = env.pr("crontabs").await.status.unwrap_or_default();
        status.objects.synced == 11
    })
    .await;
    let kcp = env.kcp_sim.requests().snapshot();
    let kcp_calls = |label: &str| kcp.get(label).map(|c| c.count).unwrap_or_default();
    assert_eq!(kcp_calls("get crontabs"), 0, "{kcp:?}");
    assert_eq!(kcp_calls("patch crontabs") - 1, 10, "{kcp:?}");
    assert_eq!(kcp_calls("update crontabs/status"), 10, "{kcp:?}");
    assert_eq!(kcp_calls("get events"), 0, "{kcp:?}");
    assert_eq!(kcp_calls("create events") - 2, 30, "{kcp:?}");
    // The PublishedResource's status was written meanwhile: publishing did not run again.
    for call in [
        "get CronTab",
        "list CronTab",
        "get Secret",
        "patch Secret",
        "get CustomResourceDefinition",
        "list CustomResourceDefinition",
    ] {
        assert_eq!(service.calls(call), 0, "{call}");
    }
    assert_eq!(service.calls("create CronTab") - 1, 10);
    assert_eq!(service.calls("create Secret") - 1, 10);
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_related_secret_created_later_reaches_kcp_through_its_owner_watch() {
    let env = Env::start().await;
    let mut pr = crontab_pr("crontabs");
    pr.spec.related = Some(vec![
        serde_json::from_value(json!({
            "identifier": "creds", "origin": "service", "kind": "Secret",
            "object": {"reference": {"path": "spec.secretName"}},
            "watch": {"byOwner": {}},
        }))
        .unwrap(),
    ]);
    let (team, stop, task) = agent_with_consumer(&env, pr).await;
    create(
        &team,
        json!({"apiVersion": "example.com/v1", "kind": "CronTab",
        "metadata": {"name": "db", "namespace": "default"}, "spec": {"secretName": "db-creds"}}),
    )
    .await;
    eventually("the local copy", || async {
        local_crontabs(&env).await.len() == 1
    })
    .await;
    let local = local_crontabs(&env).await.remove(0);
    // The service-side controller creates the Secret later, owned by the local copy.
    create(
        &env.service,
        json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "db-creds", "namespace": local.metadata.namespace,
            "ownerReferences": [{"apiVersion": "example.com/v1", "kind": "CronTab",
                "name": local.metadata.name, "uid": local.metadata.uid}]},
        "data": {"password": "c2VjcmV0"}}),
    )
    .await;
    let secret = ObjectRef::namespaced(
        GroupVersionKind::gvk("", "v1", "Secret"),
        "default",
        "db-creds",
    );
    eventually("the Secret in kcp", || async {
        team.get(&secret).await.unwrap().is_some()
    })
    .await;
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}

/// A kcp object a primary names may become visible only after the primary was synced (on a
/// real kcp, claimed objects are labelled into the virtual workspace a moment later): without
/// any `watch` configured, it is still copied once it appears, not only at the primary's next
/// change as upstream does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_related_kcp_object_appearing_later_is_copied_without_a_watch() {
    let env = Env::start().await;
    let pr = crontabs_relating_secret("kcp");
    let (team, stop, task) = agent_with_consumer(&env, pr).await;
    create(
        &team,
        json!({"apiVersion": "example.com/v1", "kind": "CronTab",
        "metadata": {"name": "db", "namespace": "default"}, "spec": {"secretName": "db-creds"}}),
    )
    .await;
    eventually("the CronTab synced and settled", || async {
        let status = env.pr("crontabs").await.status.unwrap_or_default();
        local_crontabs(&env).await.len() == 1 && status.objects.synced == 1
    })
    .await;
    // The watch events of the agent's own writes come back and are reconciled too.
    tokio::time::sleep(Duration::from_millis(500)).await;
    create(
        &team,
        json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "db-creds", "namespace": "default"},
        "data": {"password": "c2VjcmV0"}}),
    )
    .await;
    let secrets = GroupVersionKind::gvk("", "v1", "Secret");
    eventually("the Secret copied to the service cluster", || async {
        env.service
            .list(&secrets, None, &ListOptions::default())
            .await
            .unwrap()
            .items
            .iter()
            .any(|s| s.metadata.name.as_deref() == Some("db-creds"))
    })
    .await;
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_injected_500s_and_dropped_watches_every_object_converges_once() {
    let env = Env::start().await;
    let (team, stop, task) = agent_with_consumer(&env, crontab_pr("crontabs")).await;
    let gvk = GroupVersionKind::gvk("example.com", "v1", "CronTab");
    for i in 0..20 {
        create(
            &team,
            json!({"apiVersion": "example.com/v1", "kind": "CronTab",
            "metadata": {"name": format!("c{i}"), "namespace": "default"}, "spec": {"n": i}}),
        )
        .await;
    }
    for sim in [&env.service_sim, &env.kcp_sim] {
        sim.faults().add_error(kcp_sim::ErrorRule::new(500, 0.1));
    }
    // Every 300 ms every watch of both servers is dropped; 10% of all requests fail with 500.
    let mut converged = false;
    for poll in 0..3000 {
        if poll % 15 == 14 {
            env.service_sim.faults().drop_watches();
            env.kcp_sim.faults().drop_watches();
        }
        if let Ok(list) = env.service.list(&gvk, None, &ListOptions::default()).await {
            let mut specs: Vec<i64> = list
                .items
                .iter()
                .filter_map(|o| o.data["spec"]["n"].as_i64())
                .collect();
            specs.sort_unstable();
            if specs == (0..20).collect::<Vec<_>>() {
                converged = true;
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(converged, "20 local copies with their specs");
    for sim in [&env.service_sim, &env.kcp_sim] {
        sim.faults().clear();
    }
    let copies = local_crontabs(&env).await;
    assert_eq!(copies.len(), 20, "every object exactly once");
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}

/// An object that cannot be synced gets upstream's Warning, word for word (its text is in
/// api-syncagent v0.7.0's `internal/controller/sync/controller.go`): consumers' alerts on it
/// keep matching after a takeover.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_that_cannot_be_synced_gets_upstreams_reconciling_error() {
    let env = Env::start().await;
    let mut pr = crontab_pr("crontabs");
    pr.spec.naming = Some(kcp_sync::api::ResourceNaming {
        name: "{{ .Object.metadata.name }}_not-a-dns-name".into(),
        namespace: String::new(),
    });
    let (team, stop, task) = agent_with_consumer(&env, pr).await;
    let gvk = GroupVersionKind::gvk("example.com", "v1", "CronTab");
    eventually("the CronTab kind served in the consumer", || async {
        team.list(&gvk, None, &ListOptions::default()).await.is_ok()
    })
    .await;
    create(
        &team,
        json!({"apiVersion": "example.com/v1", "kind": "CronTab",
        "metadata": {"name": "broken", "namespace": "default"}, "spec": {}}),
    )
    .await;
    let events = GroupVersionKind::gvk("", "v1", "Event");
    let warning = || async {
        team.list(&events, Some("default"), &ListOptions::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .find(|e| e.data["reason"] == "ReconcilingError")
    };
    eventually("a ReconcilingError Event", || async {
        warning().await.is_some()
    })
    .await;
    let event = warning().await.unwrap();
    assert_eq!(event.data["type"], "Warning");
    assert_eq!(
        event.data["message"],
        "Failed to process object: a provider-side issue has occurred."
    );
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}

/// The APIExport is watched: a schema someone removed from it by hand is back at once, not
/// at the next resync (five minutes in the agent under test).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_edited_apiexport_is_repaired_at_once() {
    let env = Env::start().await;
    let (_team, stop, task) = agent_with_consumer(&env, crontab_pr("crontabs")).await;
    set_export_resources(&env, json!([])).await;
    eventually("the schema back in the export", || async {
        export_resources(&env)
            .await
            .as_array()
            .is_some_and(|r| r.len() == 1)
    })
    .await;
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}

/// A watch of a kind its URL does not serve yet would fail and back off ever longer (the
/// first object then syncs up to half a minute late): the agent asks discovery first, watches
/// once the kind is served, and syncs within a second of that.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kind_is_watched_once_its_url_serves_it_and_not_before() {
    let env = Env::start().await;
    let mut config = agent(&env);
    config.disabled.insert(ControllerName::ApiExport);
    create(
        &env.service,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": STATE_NS}}),
    )
    .await;
    env.publish(&crontab_pr("crontabs")).await;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(run(config, async {
        let _ = stopped.await;
    }));
    let team = bound_consumer(&env, "team-1").await;
    let schema = loop {
        let status = env.pr("crontabs").await.status.unwrap_or_default();
        if let Some(name) = status.resource_schema_name {
            break name;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // The agent asks discovery whether the kind is served; two more answers after the schema
    // was written show it looked (and found it unserved) before the assertion.
    let discovery = |r: &std::collections::BTreeMap<String, kcp_sim::requests::RequestCount>| {
        r.get("get discovery").map_or(0, |c| c.count)
    };
    let asked = discovery(&env.kcp_sim.requests().snapshot());
    eventually("the agent to ask discovery twice more", || async {
        discovery(&env.kcp_sim.requests().snapshot()) >= asked + 2
    })
    .await;
    let requests = env.kcp_sim.requests().snapshot();
    assert!(
        !requests.contains_key("list crontabs") && !requests.contains_key("watch crontabs"),
        "{requests:?}"
    );

    let resources = json!([{"group": "example.com", "name": "crontabs",
        "schema": schema, "storage": {"crd": {}}}]);
    set_export_resources(&env, resources).await;
    create(
        &team,
        json!({"apiVersion": "example.com/v1", "kind": "CronTab",
        "metadata": {"name": "first", "namespace": "default"}, "spec": {}}),
    )
    .await;
    common::eventually_within("the local copy within two seconds", 100, || async {
        local_crontabs(&env).await.len() == 1
    })
    .await;
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}

/// A workspace `root:<name>` bound to the export `crontabs` (no claims).
async fn bound_consumer(env: &Env, name: &str) -> kcp_sim::SimClient {
    let root = env.kcp_sim.object_client("root");
    create(&root, json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": name}, "spec": {}})).await;
    let consumer = env.kcp_sim.object_client(&format!("root:{name}"));
    create(&consumer, json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": "crontabs"},
        "spec": {"reference": {"export": {"path": "root:provider", "name": "crontabs"}}}})).await;
    consumer
}

/// Upstream watches a kind once per virtual-workspace URL, not once per consumer: with five
/// consumers on one shard, the agent opens one watch of the kind in kcp.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumers_on_one_shard_share_one_watch_of_the_kind() {
    let env = Env::start().await;
    let (team, stop, task) = agent_with_consumer(&env, crontab_pr("crontabs")).await;
    let mut consumers = vec![team];
    for i in 2..=5 {
        consumers.push(bound_consumer(&env, &format!("team-{i}")).await);
    }
    for consumer in &consumers {
        create(
            consumer,
            json!({"apiVersion": "example.com/v1", "kind": "CronTab",
            "metadata": {"name": "same", "namespace": "default"}, "spec": {}}),
        )
        .await;
    }
    eventually("a local copy per workspace", || async {
        local_crontabs(&env).await.len() == 5
    })
    .await;
    let requests = env.kcp_sim.requests().snapshot();
    let watches = requests.get("watch crontabs").map(|c| c.count);
    assert_eq!(watches, Some(1), "{requests:?}");
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumers_on_two_shards_are_both_served() {
    let env = Env::start_with(kcp_sim::Config {
        shards: 2,
        ..kcp_sim::Config::kcp()
    })
    .await;
    let (team, stop, task) = agent_with_consumer(&env, crontab_pr("crontabs")).await;
    let team2 = bound_consumer(&env, "team-2").await;
    for client in [&team, &team2] {
        create(
            client,
            json!({"apiVersion": "example.com/v1", "kind": "CronTab",
            "metadata": {"name": "same", "namespace": "default"}, "spec": {}}),
        )
        .await;
    }
    eventually("a local copy per workspace", || async {
        local_crontabs(&env).await.len() == 2
    })
    .await;
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_agent_resumes_from_the_state_secrets_without_duplicates() {
    let env = Env::start().await;
    let (team, stop, task) = agent_with_consumer(&env, crontab_pr("crontabs")).await;
    let gvk = GroupVersionKind::gvk("example.com", "v1", "CronTab");
    for i in 0..5 {
        create(
            &team,
            json!({"apiVersion": "example.com/v1", "kind": "CronTab",
            "metadata": {"name": format!("c{i}"), "namespace": "default"}, "spec": {"n": i}}),
        )
        .await;
    }
    eventually("5 local copies", || async {
        local_crontabs(&env).await.len() == 5
    })
    .await;
    let _ = stop.send(());
    task.await.unwrap().unwrap();
    // While the agent is down, a local change and a kcp change to different fields.
    let mut local = local_crontabs(&env).await;
    local.sort_by_key(|o| o.data["spec"]["n"].as_i64());
    let mut first = local.remove(0);
    first.data["spec"]["local"] = json!(true);
    env.service
        .replace(&first, kcp_core::Subresource::Main)
        .await
        .unwrap();
    let target = ObjectRef::namespaced(gvk.clone(), "default", "c0");
    let mut remote = team.get(&target).await.unwrap().unwrap();
    remote.data["spec"]["kcp"] = json!(true);
    team.replace(&remote, kcp_core::Subresource::Main)
        .await
        .unwrap();

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(run(agent(&env), async {
        let _ = stopped.await;
    }));
    eventually(
        "the kcp change on the local copy, the local change kept",
        || async {
            let list = local_crontabs(&env).await;
            list.len() == 5
                && list
                    .iter()
                    .any(|o| o.data["spec"] == json!({"n": 0, "local": true, "kcp": true}))
        },
    )
    .await;
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}

/// The CronTabs PublishedResource relating the Secret its `spec.secretName` names, of `origin`
/// (`service` or `kcp`).
fn crontabs_relating_secret(origin: &str) -> kcp_sync::api::PublishedResource {
    let mut pr = crontab_pr("crontabs");
    pr.spec.related = Some(vec![
        serde_json::from_value(json!({
            "identifier": "creds", "origin": origin, "kind": "Secret",
            "object": {"reference": {"path": "spec.secretName"}},
        }))
        .unwrap(),
    ]);
    pr
}

/// The `ClaimsAccepted` condition of PublishedResource `name`: (status, message).
async fn claims_accepted(env: &Env, name: &str) -> Option<(String, String)> {
    let pr = env.pr(name).await;
    let condition = pr.status?.condition(CONDITION_CLAIMS_ACCEPTED)?.clone();
    Some((condition.status, condition.message.unwrap_or_default()))
}

/// A claim the export gains (a related Secret) that a consumer has not accepted is named in
/// the PublishedResource's status, with a Warning Event, until the consumer accepts it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_that_has_not_accepted_a_needed_claim_is_named_in_the_status_until_it_does() {
    let env = Env::start().await;
    let pr = crontabs_relating_secret("service");
    // The resync is 5 minutes: the consumer's engagement and its binding's change are what
    // the agent acts on.
    let (team, stop, task) =
        agent_with_consumer_accepting(&env, pr, agent(&env), &["events", "namespaces"]).await;
    let cluster = env.kcp_sim.logical_cluster("root:team-1").unwrap();
    eventually(
        "ClaimsAccepted False naming the consumer and secrets",
        || async {
            claims_accepted(&env, "crontabs")
                .await
                .is_some_and(|(status, message)| {
                    status == "False" && message.contains(&format!("{cluster} (secrets)"))
                })
        },
    )
    .await;
    let events = env
        .service
        .list(
            &GroupVersionKind::gvk("", "v1", "Event"),
            None,
            &ListOptions::default(),
        )
        .await
        .unwrap()
        .items;
    assert!(
        events
            .iter()
            .any(|e| e.data["reason"] == CLAIMS_NOT_ACCEPTED
                && e.data["type"] == "Warning"
                && e.data["involvedObject"]["name"] == "crontabs"),
        "a ClaimsNotAccepted Warning on the PublishedResource"
    );
    team.patch(
        &ObjectRef::cluster_scoped(
            GroupVersionKind::gvk("apis.kcp.io", "v1alpha1", "APIBinding"),
            "crontabs",
        ),
        kcp_core::Subresource::Main,
        &kcp_core::ObjectPatch::Merge(
            json!({"spec": {"permissionClaims": accepting(&["events", "namespaces", "secrets"])}}),
        ),
        &kcp_core::PatchOptions::default(),
    )
    .await
    .unwrap();
    eventually("ClaimsAccepted True once the consumer accepts", || async {
        claims_accepted(&env, "crontabs")
            .await
            .is_some_and(|(status, _)| status == "True")
    })
    .await;
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}
