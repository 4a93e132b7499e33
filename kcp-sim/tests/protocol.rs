//! More of the Kubernetes protocol over HTTP with kube-rs: field selectors, bookmarks, delete
//! preconditions, foreground deletion, the builtin kinds, latency faults and shutdown.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Node};
use k8s_openapi::api::events::v1::Event as EventV1;
use kcp_sim::{Config, FaultConfig, Server};
use kube::api::{
    Api, DeleteParams, ListParams, PostParams, Preconditions, WatchEvent, WatchParams,
};
use serde_json::json;

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).unwrap()
}

#[tokio::test]
async fn field_selectors_match_name_and_namespace() {
    let sim = Server::start(Config::default()).await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(sim.client("").unwrap(), "default");
    for n in ["a", "b"] {
        api.create(&PostParams::default(), &cm(n)).await.unwrap();
    }
    let list = api
        .list(&ListParams::default().fields("metadata.name=b"))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 1);
    let all: Api<ConfigMap> = Api::all(sim.client("").unwrap());
    let other = all
        .list(&ListParams::default().fields("metadata.namespace!=default"))
        .await
        .unwrap();
    let names: Vec<_> = other
        .items
        .iter()
        .map(|c| (c.metadata.namespace.as_deref(), c.metadata.name.as_deref()))
        .collect();
    // What is left is the ConfigMap kube-apiserver writes for itself in kube-system.
    assert_eq!(
        names,
        [(
            Some("kube-system"),
            Some("kube-apiserver-legacy-service-account-token-tracking")
        )]
    );
}

#[tokio::test]
async fn watches_that_allow_bookmarks_receive_them() {
    let sim = Server::start(Config {
        bookmark_interval: Duration::from_millis(100),
        ..Config::default()
    })
    .await
    .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(sim.client("").unwrap(), "default");
    let rv = api
        .create(&PostParams::default(), &cm("a"))
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = api
        .watch(
            &WatchParams {
                bookmarks: true,
                ..WatchParams::default().timeout(10)
            },
            &rv,
        )
        .await
        .unwrap()
        .boxed();
    let event = tokio::time::timeout(Duration::from_secs(5), stream.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let WatchEvent::Bookmark(b) = event else {
        panic!("expected a bookmark, got {event:?}")
    };
    assert!(b.metadata.resource_version.parse::<u64>().unwrap() >= rv.parse::<u64>().unwrap());
}

#[tokio::test]
async fn a_watch_from_a_compacted_version_is_gone() {
    let sim = Server::start(Config::default()).await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(sim.client("").unwrap(), "default");
    let rv = api
        .create(&PostParams::default(), &cm("a"))
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    api.create(&PostParams::default(), &cm("b")).await.unwrap();
    sim.compact();
    let mut stream = api
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    // The watch starts and its one event is the 410 Status; kube-rs surfaces it as an error.
    let event = stream.try_next().await;
    let gone = match &event {
        Ok(Some(WatchEvent::Error(e))) => e.code == 410,
        Err(kube::Error::Api(s)) => s.code == 410,
        _ => false,
    };
    assert!(gone, "{event:?}");
}

/// GET `path` as kcp-sim's admin: the answer's JSON, whatever its status.
async fn get_json(sim: &Server, path: &str) -> serde_json::Value {
    use http_body_util::BodyExt as _;
    let request = http::Request::get(path).body(Vec::new().into()).unwrap();
    let response = sim.client("").unwrap().send(request).await.unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&body).unwrap()
}

/// A list's first page, `limit` 1, of ConfigMaps `a`, `b` and `c` in `default`.
async fn first_page_of_three(sim: &Server) -> (Api<ConfigMap>, String) {
    let api: Api<ConfigMap> = Api::namespaced(sim.client("").unwrap(), "default");
    for name in ["a", "b", "c"] {
        api.create(&PostParams::default(), &cm(name)).await.unwrap();
    }
    let first = api.list(&ListParams::default().limit(1)).await.unwrap();
    (api, first.metadata.continue_.unwrap())
}

#[tokio::test]
async fn a_continue_token_past_the_history_is_expired_with_a_token_for_the_latest() {
    let sim = Server::start(Config::default()).await.unwrap();
    let (api, token) = first_page_of_three(&sim).await;
    api.create(&PostParams::default(), &cm("d")).await.unwrap();
    sim.compact();
    let next = api
        .list(&ListParams::default().limit(1).continue_token(&token))
        .await;
    let Err(kube::Error::Api(status)) = next else {
        panic!("{next:?}");
    };
    assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
    assert!(
        status
            .message
            .starts_with("The provided continue parameter is too old")
    );
}

#[tokio::test]
async fn an_expired_lists_token_continues_at_the_latest_revision() {
    let sim = Server::start(Config::default()).await.unwrap();
    let (api, token) = first_page_of_three(&sim).await;
    api.create(&PostParams::default(), &cm("d")).await.unwrap();
    sim.compact();
    let path = "/api/v1/namespaces/default/configmaps?limit=5&continue=";
    let expired = get_json(&sim, &format!("{path}{token}")).await;
    assert_eq!(expired["code"], 410);
    let latest = expired["metadata"]["continue"].as_str().unwrap();
    let rest = get_json(&sim, &format!("{path}{latest}")).await;
    let names: Vec<_> = rest["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    // Not a consistent list any more: `d` was written after the first page.
    assert_eq!(names, ["b", "c", "d"]);
}

#[tokio::test]
async fn a_delete_with_a_stale_precondition_is_a_conflict() {
    let sim = Server::start(Config::default()).await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(sim.client("").unwrap(), "default");
    api.create(&PostParams::default(), &cm("a")).await.unwrap();
    let dp = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some("not-the-uid".into()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    let err = api.delete("a", &dp).await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(s) if s.code == 409));
    assert!(api.get_opt("a").await.unwrap().is_some());
}

#[tokio::test]
async fn foreground_deletion_removes_dependents_before_the_owner() {
    let sim = Server::start(Config::default()).await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(sim.client("").unwrap(), "default");
    let owner = api
        .create(&PostParams::default(), &cm("owner"))
        .await
        .unwrap();
    let mut child = cm("child");
    child.metadata.finalizers = Some(vec!["example.io/hold".into()]);
    child.metadata.owner_references = Some(vec![
        serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
        "uid": owner.metadata.uid.unwrap()}))
        .unwrap(),
    ]);
    api.create(&PostParams::default(), &child).await.unwrap();
    api.delete("owner", &DeleteParams::foreground())
        .await
        .unwrap();
    // The dependent holds on, so the owner waits with the foregroundDeletion finalizer.
    let waiting = api.get("owner").await.unwrap();
    assert!(
        waiting
            .metadata
            .finalizers
            .unwrap()
            .contains(&"foregroundDeletion".to_string())
    );
    api.patch(
        "child",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(api.get_opt("child").await.unwrap().is_none());
    assert!(api.get_opt("owner").await.unwrap().is_none());
}

#[tokio::test]
async fn both_event_apis_share_one_store_and_leases_and_nodes_are_served() {
    let sim = Server::start(Config::default()).await.unwrap();
    let client = sim.client("").unwrap();
    let core: Api<Event> = Api::namespaced(client.clone(), "default");
    core.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
        "metadata": {"name": "e1"}, "involvedObject": {"kind": "ConfigMap", "name": "a"},
        "reason": "Test", "message": "hello", "type": "Normal"}))
        .unwrap(),
    )
    .await
    .unwrap();
    let v1: Api<EventV1> = Api::namespaced(client.clone(), "default");
    v1.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
        "metadata": {"name": "e2"}, "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "test", "reportingInstance": "test-1",
        "action": "Testing", "reason": "Test", "type": "Warning", "note": "hi"}))
        .unwrap(),
    )
    .await
    .unwrap();
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-system");
    leases
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
        "metadata": {"name": "leader"}, "spec": {"holderIdentity": "me"}}))
            .unwrap(),
        )
        .await
        .unwrap();
    let nodes: Api<Node> = Api::all(client);
    nodes
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
        "metadata": {"name": "n1"}}))
            .unwrap(),
        )
        .await
        .unwrap();
    // One store under both APIs, as kube-apiserver keeps them (conformance case
    // events/an-event-recorded-through-events-k8s-io-is-a-core-event).
    let names = |items: Vec<Option<String>>| -> Vec<String> {
        items.into_iter().map(Option::unwrap_or_default).collect()
    };
    let core_items = core.list(&ListParams::default()).await.unwrap().items;
    let v1_items = v1.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(
        names(core_items.into_iter().map(|e| e.metadata.name).collect()),
        ["e1", "e2"]
    );
    assert_eq!(
        names(v1_items.into_iter().map(|e| e.metadata.name).collect()),
        ["e1", "e2"]
    );
    assert_eq!(core.get("e2").await.unwrap().message.as_deref(), Some("hi"));
    assert_eq!(v1.get("e1").await.unwrap().note.as_deref(), Some("hello"));
}

#[tokio::test]
async fn injected_latency_delays_every_request() {
    let sim = Server::start(Config {
        faults: FaultConfig {
            latency: Duration::from_millis(50),
            ..FaultConfig::default()
        },
        ..Config::default()
    })
    .await
    .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(sim.client("").unwrap(), "default");
    let start = Instant::now();
    api.get_opt("a").await.unwrap();
    assert!(start.elapsed() >= Duration::from_millis(50));
    sim.faults().set_latency(Duration::ZERO, Duration::ZERO);
    assert_eq!(sim.faults().config(), FaultConfig::default());
}

#[tokio::test]
async fn shutdown_ends_open_watches_and_closes_the_port() {
    let sim = Server::start(Config::default()).await.unwrap();
    let url = sim.url().to_string();
    let api: Api<ConfigMap> = Api::namespaced(sim.client("").unwrap(), "default");
    let mut stream = api
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    sim.shutdown().await;
    let end = tokio::time::timeout(Duration::from_secs(5), stream.try_next())
        .await
        .unwrap();
    assert!(matches!(end, Ok(None) | Err(_)), "{end:?}");
    let addr = url.trim_start_matches("http://");
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn the_kubeconfig_names_every_requested_cluster() {
    let sim = Server::start(Config::kcp()).await.unwrap();
    let config = sim.kubeconfig(&["root", "root:org"]);
    assert!(config.contains(&format!("server: {}/clusters/root:org", sim.url())));
    assert!(config.contains("current-context: root\n"));
    let parsed = kube::config::Kubeconfig::from_yaml(&config).unwrap();
    assert_eq!(parsed.contexts.len(), 2);
}
