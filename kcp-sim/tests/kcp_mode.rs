//! kcp mode over HTTP with kube-rs: logical clusters by name and path, workspaces, WorkspaceType
//! initializers (also inherited through `extend.with`), the initializingworkspaces virtual
//! workspace, `/clusters/*` wildcard reads, and shards.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kcp_core::kcp::{LogicalCluster, Workspace, WorkspaceType};
use kcp_sim::{Config, Server};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::json;

async fn kcp() -> Server {
    Server::start(Config::kcp()).await.unwrap()
}

fn client_at(url: &str) -> kube::Client {
    kube::Client::try_from(kube::Config::new(url.parse().unwrap())).unwrap()
}

async fn create_type(sim: &Server, name: &str, spec: serde_json::Value) -> WorkspaceType {
    let api: Api<WorkspaceType> = Api::all(sim.client("root").unwrap());
    let wt: WorkspaceType = serde_json::from_value(json!({
        "apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "WorkspaceType",
        "metadata": {"name": name}, "spec": spec}))
    .unwrap();
    api.create(&PostParams::default(), &wt).await.unwrap();
    // kcp's controller publishes the status after the create answered; read it.
    api.get(name).await.unwrap()
}

async fn create_workspace(
    sim: &Server,
    parent: &str,
    name: &str,
    type_name: Option<&str>,
) -> Workspace {
    let api: Api<Workspace> = Api::all(sim.client(parent).unwrap());
    let mut body = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace",
        "metadata": {"name": name}, "spec": {}});
    if let Some(t) = type_name {
        body["spec"]["type"] = json!({"name": t, "path": "root"});
    }
    let ws: Workspace = serde_json::from_value(body).unwrap();
    let created = api.create(&PostParams::default(), &ws).await.unwrap();
    // As kcp: the create answers a workspace still Scheduling; the scheduler's writes follow.
    assert_eq!(created.status.unwrap().phase.as_deref(), Some("Scheduling"));
    api.get(name).await.unwrap()
}

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name}, "data": {"k": "v"}}))
    .unwrap()
}

#[tokio::test]
async fn root_exists_at_start_with_its_logical_cluster_and_default_namespace() {
    let sim = kcp().await;
    let lcs: Api<LogicalCluster> = Api::all(sim.client("root").unwrap());
    let root = lcs.get("cluster").await.unwrap();
    let annotations = root.metadata.annotations.unwrap();
    assert_eq!(annotations["kcp.io/cluster"], "root");
    assert_eq!(annotations["kcp.io/path"], "root");
    assert_eq!(root.status.unwrap().phase.as_deref(), Some("Ready"));
    let cms: Api<ConfigMap> = Api::namespaced(sim.client("root").unwrap(), "default");
    cms.create(&PostParams::default(), &cm("a")).await.unwrap();
}

#[tokio::test]
async fn a_workspace_gets_a_logical_cluster_reachable_by_path_and_by_name() {
    let sim = kcp().await;
    let ws = create_workspace(&sim, "root", "org", None).await;
    let name = ws.spec.cluster.clone().unwrap();
    assert_ne!(name, "org", "logical cluster names are generated");
    assert_eq!(ws.status.unwrap().phase.as_deref(), Some("Ready"));
    assert_eq!(
        sim.logical_cluster("root:org").as_deref(),
        Some(name.as_str())
    );

    let by_path: Api<ConfigMap> = Api::namespaced(sim.client("root:org").unwrap(), "default");
    let created = by_path
        .create(&PostParams::default(), &cm("a"))
        .await
        .unwrap();
    assert_eq!(
        created.metadata.annotations.unwrap()["kcp.io/cluster"],
        name
    );
    let by_name: Api<ConfigMap> = Api::namespaced(sim.client(&name).unwrap(), "default");
    assert!(by_name.get_opt("a").await.unwrap().is_some());

    let lc: Api<LogicalCluster> = Api::all(sim.client(&name).unwrap());
    let lc = lc.get("cluster").await.unwrap();
    assert_eq!(lc.metadata.annotations.unwrap()["kcp.io/path"], "root:org");
}

#[tokio::test]
async fn nested_workspaces_extend_the_path() {
    let sim = kcp().await;
    create_workspace(&sim, "root", "org", None).await;
    create_workspace(&sim, "root:org", "team", None).await;
    assert!(sim.logical_cluster("root:org:team").is_some());
}

#[tokio::test]
async fn same_named_objects_in_two_workspaces_do_not_collide() {
    let sim = kcp().await;
    create_workspace(&sim, "root", "a", None).await;
    create_workspace(&sim, "root", "b", None).await;
    for (ws, value) in [("root:a", "1"), ("root:b", "2")] {
        let api: Api<ConfigMap> = Api::namespaced(sim.client(ws).unwrap(), "default");
        let mut obj = cm("same");
        obj.data = Some([("k".to_string(), value.to_string())].into());
        api.create(&PostParams::default(), &obj).await.unwrap();
    }
    let a: Api<ConfigMap> = Api::namespaced(sim.client("root:a").unwrap(), "default");
    assert_eq!(a.get("same").await.unwrap().data.unwrap()["k"], "1");
}

#[tokio::test]
async fn a_wildcard_list_and_watch_of_the_shard_admin_span_every_cluster_with_cluster_annotations()
{
    let sim = kcp().await;
    create_workspace(&sim, "root", "a", None).await;
    create_workspace(&sim, "root", "b", None).await;
    for ws in ["root:a", "root:b"] {
        let api: Api<ConfigMap> = Api::namespaced(sim.client(ws).unwrap(), "default");
        api.create(&PostParams::default(), &cm("same"))
            .await
            .unwrap();
    }
    let all: Api<ConfigMap> = Api::all(sim.shard_admin_client("*").unwrap());
    // Every namespace also holds the CA kcp publishes (`kube-root-ca.crt`).
    let same = ListParams::default().fields("metadata.name=same");
    let list = all.list(&same).await.unwrap();
    let mut clusters: Vec<String> = list
        .items
        .iter()
        .map(|c| c.metadata.annotations.as_ref().unwrap()["kcp.io/cluster"].clone())
        .collect();
    clusters.sort();
    let mut expected = vec![
        sim.logical_cluster("root:a").unwrap(),
        sim.logical_cluster("root:b").unwrap(),
    ];
    expected.sort();
    assert_eq!(clusters, expected);

    let events = watcher(all, watcher::Config::default().fields("metadata.name=same")).boxed();
    let mut applied = events
        .try_filter_map(|e| async move {
            Ok(match e {
                watcher::Event::InitApply(o) | watcher::Event::Apply(o) => Some(o),
                _ => None,
            })
        })
        .boxed();
    let mut seen = 0;
    while seen < 2 {
        tokio::time::timeout(Duration::from_secs(5), applied.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        seen += 1;
    }
}

#[tokio::test]
async fn kcp_admin_may_not_list_every_workspace_at_once() {
    let sim = kcp().await;
    let all: Api<ConfigMap> = Api::all(sim.client("*").unwrap());
    let err = all.list(&ListParams::default()).await.unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("{err}")
    };
    assert_eq!(status.code, 403);
    assert_eq!(
        status.message,
        "configmaps is forbidden: User \"kcp-admin\" cannot list resource \"configmaps\" in API \
         group \"\" at the cluster scope: access denied"
    );
}

#[tokio::test]
async fn writes_of_the_shard_admin_to_the_wildcard_are_not_allowed() {
    let sim = kcp().await;
    let all: Api<ConfigMap> = Api::namespaced(sim.shard_admin_client("*").unwrap(), "default");
    let err = all
        .create(&PostParams::default(), &cm("a"))
        .await
        .unwrap_err();
    assert!(matches!(err, kube::Error::Api(s) if s.code == 405));
}

#[tokio::test]
async fn writes_of_kcp_admin_to_the_wildcard_are_forbidden_before_that() {
    // kcp authorizes a request before its wildcard guard looks at the verb.
    let sim = kcp().await;
    let all: Api<ConfigMap> = Api::namespaced(sim.client("*").unwrap(), "default");
    let err = all
        .create(&PostParams::default(), &cm("a"))
        .await
        .unwrap_err();
    assert!(matches!(err, kube::Error::Api(s) if s.code == 403));
}

#[tokio::test]
async fn a_workspace_type_with_an_initializer_keeps_new_workspaces_initializing() {
    let sim = kcp().await;
    let wt = create_type(&sim, "example", json!({"initializer": true})).await;
    let urls: Vec<String> = wt
        .status
        .unwrap()
        .virtual_workspaces
        .unwrap()
        .into_iter()
        .map(|v| v.url)
        .collect();
    // kcp publishes an initializing and a terminating URL for every type.
    assert_eq!(
        urls,
        [
            format!("{}/services/initializingworkspaces/root:example", sim.url()),
            format!("{}/services/terminatingworkspaces/root:example", sim.url()),
        ]
    );
    let ws = create_workspace(&sim, "root", "w1", Some("example")).await;
    let status = ws.status.unwrap();
    assert_eq!(status.phase.as_deref(), Some("Initializing"));
    assert_eq!(status.initializers.unwrap(), ["root:example"]);
    let lc: Api<LogicalCluster> = Api::all(sim.client("root:w1").unwrap());
    let lc = lc.get("cluster").await.unwrap();
    assert_eq!(lc.status.unwrap().initializers.unwrap(), ["root:example"]);
}

#[tokio::test]
async fn initializers_are_inherited_through_extend_with() {
    let sim = kcp().await;
    create_type(&sim, "base", json!({"initializer": true})).await;
    create_type(
        &sim,
        "derived",
        json!({"initializer": true, "extend": {"with": [{"name": "base", "path": "root"}]}}),
    )
    .await;
    let ws = create_workspace(&sim, "root", "w", Some("derived")).await;
    // kcp lists the extended types' initializers first.
    assert_eq!(
        ws.status.unwrap().initializers.unwrap(),
        ["root:base", "root:derived"]
    );
}

#[tokio::test]
async fn a_workspace_of_a_missing_type_is_invalid() {
    let sim = kcp().await;
    let api: Api<Workspace> = Api::all(sim.client("root").unwrap());
    let ws: Workspace = serde_json::from_value(json!({"apiVersion": "tenancy.kcp.io/v1alpha1",
        "kind": "Workspace", "metadata": {"name": "w"}, "spec": {"type": {"name": "nope", "path": "root"}}}))
    .unwrap();
    let err = api.create(&PostParams::default(), &ws).await.unwrap_err();
    assert!(
        // kcp's admission refuses it: 403.
        matches!(&err, kube::Error::Api(s) if s.code == 403 && s.message == "workspaces.tenancy.kcp.io \"w\" is forbidden: Internal error occurred: workspacetypes.tenancy.kcp.io \"root:nope\" not found"),
        "{err:?}"
    );
}

#[tokio::test]
async fn the_initializing_view_lists_and_watches_only_clusters_carrying_the_initializer() {
    let sim = kcp().await;
    create_type(&sim, "example", json!({"initializer": true})).await;
    create_type(&sim, "other", json!({"initializer": true})).await;
    create_workspace(&sim, "root", "w1", Some("example")).await;
    create_workspace(&sim, "root", "w2", Some("other")).await;
    create_workspace(&sim, "root", "w3", None).await;
    let vw = format!("{}/services/initializingworkspaces/root:example", sim.url());
    let view: Api<LogicalCluster> = Api::all(client_at(&format!("{vw}/clusters/*")));
    let listed = view.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    let w1 = sim.logical_cluster("root:w1").unwrap();
    assert_eq!(
        listed.items[0].metadata.annotations.as_ref().unwrap()["kcp.io/cluster"],
        w1
    );

    // Finishing the initialization makes the cluster leave the view: the watch sees it deleted.
    let mut events = watcher(view, watcher::Config::default()).boxed();
    loop {
        if let watcher::Event::InitDone = events.try_next().await.unwrap().unwrap() {
            break;
        }
    }
    let one: Api<LogicalCluster> = Api::all(client_at(&format!("{vw}/clusters/{w1}")));
    one.patch_status(
        "cluster",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"initializers": []}})),
    )
    .await
    .unwrap();
    let event = tokio::time::timeout(Duration::from_secs(5), events.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(matches!(event, watcher::Event::Delete(_)), "{event:?}");
}

#[tokio::test]
async fn a_cluster_is_reachable_through_the_view_only_while_it_initializes() {
    let sim = kcp().await;
    create_type(&sim, "example", json!({"initializer": true})).await;
    create_workspace(&sim, "root", "w1", Some("example")).await;
    create_workspace(&sim, "root", "plain", None).await;
    let vw = format!("{}/services/initializingworkspaces/root:example", sim.url());
    let w1 = sim.logical_cluster("root:w1").unwrap();
    let plain = sim.logical_cluster("root:plain").unwrap();

    // As on kcp, a workspace still initializing has no namespace yet, not even `default`: an
    // initializer creates what it needs.
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> =
        Api::all(client_at(&format!("{vw}/clusters/{w1}")));
    assert!(namespaces.get_opt("default").await.unwrap().is_none());
    let default: k8s_openapi::api::core::v1::Namespace =
        serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap();
    namespaces
        .create(&PostParams::default(), &default)
        .await
        .unwrap();
    let inside: Api<ConfigMap> =
        Api::namespaced(client_at(&format!("{vw}/clusters/{w1}")), "default");
    inside
        .create(&PostParams::default(), &cm("seeded"))
        .await
        .unwrap();

    let outside: Api<ConfigMap> =
        Api::namespaced(client_at(&format!("{vw}/clusters/{plain}")), "default");
    let err = outside.list(&ListParams::default()).await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(s) if s.code == 403));

    let lc: Api<LogicalCluster> = Api::all(client_at(&format!("{vw}/clusters/{w1}")));
    lc.patch_status(
        "cluster",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"initializers": []}})),
    )
    .await
    .unwrap();
    let err = inside.list(&ListParams::default()).await.unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(s) if s.code == 403),
        "closed once initialized"
    );
}

#[tokio::test]
async fn a_universal_workspace_has_its_namespaces_while_it_initializes() {
    // As kcp v0.30.0 answered (conformance kcp-views/an-initializer-sees-its-initializing-
    // workspaces): the universal type's bootstrap creates them before other initializers run.
    let sim = kcp().await;
    let extends_universal = json!({"initializer": true,
        "extend": {"with": [{"name": "universal", "path": "root"}]}});
    create_type(&sim, "example", extends_universal).await;
    create_workspace(&sim, "root", "early", Some("example")).await;
    let vw = format!("{}/services/initializingworkspaces/root:example", sim.url());
    let cluster = sim.logical_cluster("root:early").unwrap();
    let through_view: Api<k8s_openapi::api::core::v1::Namespace> =
        Api::all(client_at(&format!("{vw}/clusters/{cluster}")));
    for name in ["default", "kube-system"] {
        let ns = through_view.get(name).await.unwrap();
        let annotations = ns.metadata.annotations.unwrap_or_default();
        assert_eq!(
            annotations
                .get("bootstrap.kcp.io/create-only")
                .map(String::as_str),
            Some("true"),
            "{name}"
        );
    }
}

#[tokio::test]
async fn a_workspace_whose_type_does_not_extend_universal_gets_no_namespaces() {
    let sim = kcp().await;
    create_type(&sim, "example", json!({"initializer": true})).await;
    create_workspace(&sim, "root", "later", Some("example")).await;
    let vw = format!("{}/services/initializingworkspaces/root:example", sim.url());
    let cluster = sim.logical_cluster("root:later").unwrap();
    let lc: Api<LogicalCluster> = Api::all(client_at(&format!("{vw}/clusters/{cluster}")));
    lc.patch_status(
        "cluster",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"initializers": []}})),
    )
    .await
    .unwrap();
    let inside: Api<k8s_openapi::api::core::v1::Namespace> =
        Api::all(sim.client("root:later").unwrap());
    assert!(
        inside
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn an_initializing_logical_cluster_carries_a_label_per_initializer() {
    let sim = kcp().await;
    create_type(&sim, "example", json!({"initializer": true})).await;
    create_workspace(&sim, "root", "labelled", Some("example")).await;
    let lc: Api<LogicalCluster> = Api::all(sim.client("root:labelled").unwrap());
    let labels = lc.get("cluster").await.unwrap().metadata.labels.unwrap();
    // kcp's InitializerToLabel: the SHA-224 of "root:example" (`sha224sum` gives
    // 38e7732c...abb16), its first 35 hex digits in the key, all of it the value.
    let key = "initializer.internal.kcp.io/38e7732cde2d692db77aa02ff9191566864";
    assert_eq!(
        labels.get(key).map(String::as_str),
        Some("38e7732cde2d692db77aa02ff9191566864333f33580d861066abb16")
    );
}

#[tokio::test]
async fn an_initializer_may_remove_only_its_own_initializer() {
    let sim = kcp().await;
    create_type(&sim, "base", json!({"initializer": true})).await;
    create_type(
        &sim,
        "derived",
        json!({"initializer": true, "extend": {"with": [{"name": "base"}]}}),
    )
    .await;
    create_workspace(&sim, "root", "w", Some("derived")).await;
    let lc_name = sim.logical_cluster("root:w").unwrap();
    let vw = format!(
        "{}/services/initializingworkspaces/root:derived/clusters/{lc_name}",
        sim.url()
    );
    let lc: Api<LogicalCluster> = Api::all(client_at(&vw));
    let err = lc
        .patch_status(
            "cluster",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"initializers": ["root:derived"]}})),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, kube::Error::Api(s) if s.code == 403));
    lc.patch_status(
        "cluster",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"initializers": ["root:base"]}})),
    )
    .await
    .unwrap();
    let ws: Api<Workspace> = Api::all(sim.client("root").unwrap());
    let ws = ws.get("w").await.unwrap().status.unwrap();
    assert_eq!(ws.phase.as_deref(), Some("Initializing"));
    assert_eq!(ws.initializers.unwrap(), ["root:base"]);
}

#[tokio::test]
async fn removing_the_last_initializer_makes_cluster_and_workspace_ready() {
    let sim = kcp().await;
    create_type(&sim, "example", json!({"initializer": true})).await;
    create_workspace(&sim, "root", "w", Some("example")).await;
    let lc_name = sim.logical_cluster("root:w").unwrap();
    let vw = format!(
        "{}/services/initializingworkspaces/root:example/clusters/{lc_name}",
        sim.url()
    );
    let lc: Api<LogicalCluster> = Api::all(client_at(&vw));
    let current = lc.get("cluster").await.unwrap();
    let mut updated = current.clone();
    updated.status.as_mut().unwrap().initializers = Some(vec![]);
    // An optimistic-concurrency status update, as an initializer does it.
    lc.replace_status("cluster", &PostParams::default(), &updated)
        .await
        .unwrap();
    let lcs: Api<LogicalCluster> = Api::all(sim.client("root:w").unwrap());
    assert_eq!(
        lcs.get("cluster")
            .await
            .unwrap()
            .status
            .unwrap()
            .phase
            .as_deref(),
        Some("Ready")
    );
    let ws: Api<Workspace> = Api::all(sim.client("root").unwrap());
    assert_eq!(
        ws.get("w").await.unwrap().status.unwrap().phase.as_deref(),
        Some("Ready")
    );

    // The stale copy cannot write back the removed initializer.
    let err = lc
        .replace_status("cluster", &PostParams::default(), &current)
        .await
        .unwrap_err();
    assert!(matches!(err, kube::Error::Api(s) if s.code == 409 || s.code == 403));
}

#[tokio::test]
async fn shards_each_publish_a_view_of_their_own_clusters() {
    let sim = Server::start(Config {
        shards: 2,
        ..Config::kcp()
    })
    .await
    .unwrap();
    let wt = create_type(&sim, "example", json!({"initializer": true})).await;
    let urls: Vec<String> = wt
        .status
        .unwrap()
        .virtual_workspaces
        .unwrap()
        .into_iter()
        .map(|v| v.url)
        .filter(|u| u.contains("/initializingworkspaces/"))
        .collect();
    assert_eq!(urls.len(), 2);
    for i in 0..4 {
        create_workspace(&sim, "root", &format!("w{i}"), Some("example")).await;
    }
    let mut total = 0;
    for url in &urls {
        let view: Api<LogicalCluster> = Api::all(client_at(&format!("{url}/clusters/*")));
        let n = view.list(&ListParams::default()).await.unwrap().items.len();
        assert!(n > 0, "every shard holds some of the clusters");
        total += n;
    }
    assert_eq!(total, 4, "each cluster is on exactly one shard");
}

#[tokio::test]
async fn deleting_a_workspace_removes_its_logical_cluster() {
    let sim = kcp().await;
    create_workspace(&sim, "root", "gone", None).await;
    let api: Api<Workspace> = Api::all(sim.client("root").unwrap());
    api.delete("gone", &Default::default()).await.unwrap();
    assert!(sim.logical_cluster("root:gone").is_none());
    let cms: Api<ConfigMap> = Api::namespaced(sim.client("root:gone").unwrap(), "default");
    let err = cms.list(&ListParams::default()).await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(s) if s.code == 403));
}

#[tokio::test]
async fn a_request_into_a_missing_workspace_is_denied_as_kcp_denies_it() {
    let sim = kcp().await;
    let cms: Api<ConfigMap> = Api::namespaced(sim.client("root:nothing").unwrap(), "default");
    let err = cms.get("a").await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 403 && s.message == "configmaps \"a\" is forbidden: User \"kcp-admin\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"default\": access denied"),
        "{err:?}"
    );
}

#[tokio::test]
async fn workspace_types_limit_the_children_they_allow() {
    let sim = kcp().await;
    // root's children are organizations, which allow only universal children.
    let org = create_workspace(&sim, "root", "org", None).await;
    assert_eq!(org.spec.type_.unwrap().name, "organization");
    create_type(&sim, "plain", json!({})).await;
    let api: Api<Workspace> = Api::all(sim.client("root:org").unwrap());
    let ws: Workspace = serde_json::from_value(json!({"apiVersion": "tenancy.kcp.io/v1alpha1",
        "kind": "Workspace", "metadata": {"name": "child"},
        "spec": {"type": {"name": "plain", "path": "root"}}}))
    .unwrap();
    let err = api.create(&PostParams::default(), &ws).await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 403 && s.message == "workspaces.tenancy.kcp.io \"child\" is forbidden: workspace type root:organization only allows [root:universal] child workspaces, but child type root:plain only implements [root:plain]"),
        "{err:?}"
    );
    // A type extending universal is allowed, and its initializers follow universal's (done).
    create_type(
        &sim,
        "held",
        json!({"initializer": true, "extend": {"with": [{"name": "universal", "path": "root"}]}}),
    )
    .await;
    let held: Workspace = serde_json::from_value(json!({"apiVersion": "tenancy.kcp.io/v1alpha1",
        "kind": "Workspace", "metadata": {"name": "held"},
        "spec": {"type": {"name": "held", "path": "root"}}}))
    .unwrap();
    api.create(&PostParams::default(), &held).await.unwrap();
    let status = api.get("held").await.unwrap().status.unwrap();
    assert_eq!(status.phase.as_deref(), Some("Initializing"));
    assert_eq!(status.initializers.unwrap(), ["root:held"]);
    let lc: Api<LogicalCluster> = Api::all(sim.client("root:org:held").unwrap());
    let spec = lc.get("cluster").await.unwrap().spec;
    assert_eq!(
        spec.initializers.unwrap(),
        ["root:universal", "root:held", "system:apibindings"]
    );
}

#[tokio::test]
async fn a_terminator_holds_a_deleted_workspace_until_it_removes_itself() {
    let sim = kcp().await;
    create_type(&sim, "guarded", json!({"terminator": true})).await;
    create_workspace(&sim, "root", "kept", Some("guarded")).await;
    let cluster = sim.logical_cluster("root:kept").unwrap();
    let workspaces: Api<Workspace> = Api::all(sim.client("root").unwrap());
    workspaces
        .delete("kept", &Default::default())
        .await
        .unwrap();
    // Held: still there, and its LogicalCluster is in the terminator's view.
    assert!(workspaces.get_opt("kept").await.unwrap().is_some());
    let vw = format!("{}/services/terminatingworkspaces/root:guarded", sim.url());
    let held: Api<LogicalCluster> = Api::all(client_at(&format!("{vw}/clusters/*")));
    assert_eq!(
        held.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );

    let lc: Api<LogicalCluster> = Api::all(client_at(&format!("{vw}/clusters/{cluster}")));
    lc.patch_status(
        "cluster",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"terminators": []}})),
    )
    .await
    .unwrap();
    assert!(workspaces.get_opt("kept").await.unwrap().is_none());
    assert!(sim.logical_cluster("root:kept").is_none());
}
