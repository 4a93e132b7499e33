//! Permission claim verbs through the apiexport virtual workspace, with v1alpha2 APIBindings
//! that accept explicit verbs, held to what kcp v0.30.0 answers in the conformance cases of
//! `kcp-testbed/conformance/cases/kcp-claims.yaml`: kcp's authorizer intersects the export's
//! and the binding's verb lists literally, and allows a request whose verb (or `*`) is in the
//! intersection; `*` on one side and explicit verbs on the other allow nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kcp_core::kcp::Workspace;
use kcp_sim::{Config, Server};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use serde_json::{Value, json};

fn client_at(url: &str) -> kube::Client {
    kube::Client::try_from(kube::Config::new(url.parse().unwrap())).unwrap()
}

fn kind(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apis.kcp.io", "v1alpha2", kind),
        plural,
    )
}

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name}}))
    .unwrap()
}

async fn workspace(sim: &Server, name: &str) -> String {
    let api: Api<Workspace> = Api::all(sim.client("root").unwrap());
    let ws: Workspace = serde_json::from_value(json!({"apiVersion": "tenancy.kcp.io/v1alpha1",
        "kind": "Workspace", "metadata": {"name": name}, "spec": {}}))
    .unwrap();
    api.create(&PostParams::default(), &ws).await.unwrap();
    sim.logical_cluster(&format!("root:{name}")).unwrap()
}

async fn create(sim: &Server, ws: &str, resource: &ApiResource, body: Value) {
    let api: Api<DynamicObject> = Api::all_with(sim.client(ws).unwrap(), resource);
    let obj: DynamicObject = serde_json::from_value(body).unwrap();
    api.create(&PostParams::default(), &obj).await.unwrap();
}

/// The ConfigMaps of the consumer's `default` namespace, seen through the virtual workspace of
/// an export `claims` claiming ConfigMaps with `export_verbs`, bound by a v1alpha2 binding
/// accepting `binding_verbs`; the consumer has a ConfigMap `claimed`.
async fn view(sim: &Server, export_verbs: Value, binding_verbs: Value) -> Api<ConfigMap> {
    let provider = workspace(sim, "provider").await;
    create(sim, "root:provider", &kind("APIExport", "apiexports"),
        json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIExport",
            "metadata": {"name": "claims"},
            "spec": {"permissionClaims": [{"group": "", "resource": "configmaps", "verbs": export_verbs}]}}))
    .await;
    let consumer = workspace(sim, "consumer").await;
    create(
        sim,
        "root:consumer",
        &kind("APIBinding", "apibindings"),
        json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIBinding",
            "metadata": {"name": "claims"},
            "spec": {"reference": {"export": {"path": "root:provider", "name": "claims"}},
                "permissionClaims": [{"group": "", "resource": "configmaps", "verbs": binding_verbs,
                    "state": "Accepted", "selector": {"matchAll": true}}]}}),
    )
    .await;
    let own: Api<ConfigMap> = Api::namespaced(sim.client("root:consumer").unwrap(), "default");
    own.create(&PostParams::default(), &cm("claimed"))
        .await
        .unwrap();
    let url = format!(
        "{}/services/apiexport/{provider}/claims/clusters/{consumer}",
        sim.url()
    );
    Api::namespaced(client_at(&url), "default")
}

fn code<T: std::fmt::Debug>(answer: Result<T, kube::Error>) -> u16 {
    match answer {
        Ok(_) => 200,
        Err(kube::Error::Api(s)) => s.code,
        Err(other) => panic!("not an API error: {other:?}"),
    }
}

/// get, list, create through the view.
async fn answers(inside: &Api<ConfigMap>) -> [u16; 3] {
    [
        code(inside.get("claimed").await),
        code(inside.list(&ListParams::default()).await),
        code(inside.create(&PostParams::default(), &cm("made")).await),
    ]
}

// Conformance kcp-claims/all-verbs-on-both-sides-allow-everything.
#[tokio::test]
async fn all_verbs_on_both_sides_allow_everything() {
    let sim = Server::start(Config::kcp()).await.unwrap();
    let inside = view(&sim, json!(["*"]), json!(["*"])).await;
    assert_eq!(answers(&inside).await, [200, 200, 200]);
}

// Conformance kcp-claims/fewer-verbs-on-the-binding-than-the-export-claims.
#[tokio::test]
async fn a_binding_accepting_fewer_verbs_allows_only_those() {
    let sim = Server::start(Config::kcp()).await.unwrap();
    let inside = view(
        &sim,
        json!(["get", "list", "watch", "create"]),
        json!(["get"]),
    )
    .await;
    assert_eq!(answers(&inside).await, [200, 403, 403]);
}

// Conformance kcp-claims/all-verbs-on-the-binding-and-some-on-the-export: `*` on the binding
// does not stand for the export's explicit verbs.
#[tokio::test]
async fn all_verbs_on_the_binding_allow_nothing_the_export_names() {
    let sim = Server::start(Config::kcp()).await.unwrap();
    let inside = view(&sim, json!(["get", "list"]), json!(["*"])).await;
    assert_eq!(answers(&inside).await, [403, 403, 403]);
}

// Conformance kcp-claims/all-verbs-on-the-export-and-some-on-the-binding: nor the other way.
#[tokio::test]
async fn all_verbs_on_the_export_allow_nothing_the_binding_names() {
    let sim = Server::start(Config::kcp()).await.unwrap();
    let inside = view(&sim, json!(["*"]), json!(["get", "list"])).await;
    assert_eq!(answers(&inside).await, [403, 403, 403]);
}

// Conformance kcp-claims/some-verbs-on-the-export-and-all-on-the-binding-of-other-verbs.
#[tokio::test]
async fn only_the_verbs_on_both_sides_are_allowed() {
    let sim = Server::start(Config::kcp()).await.unwrap();
    let inside = view(
        &sim,
        json!(["get", "list"]),
        json!(["get", "list", "create"]),
    )
    .await;
    assert_eq!(answers(&inside).await, [200, 200, 403]);
}

// Conformance kcp-claims (every case): a claimed object carries kcp's claim label.
#[tokio::test]
async fn a_claimed_object_carries_the_claim_label() {
    let sim = Server::start(Config::kcp()).await.unwrap();
    view(&sim, json!(["get"]), json!(["get"])).await;
    let own: Api<ConfigMap> = Api::namespaced(sim.client("root:consumer").unwrap(), "default");
    let labels = own.get("claimed").await.unwrap().metadata.labels.unwrap();
    let (key, value) = labels.iter().next().unwrap();
    assert!(key.starts_with("claimed.internal.apis.kcp.io/"));
    assert_eq!(value, "3QVjs6pfBjMpLEVYYhysJnroYGsQGlWm05E4qe");
}

#[tokio::test]
async fn a_v1alpha2_binding_reads_as_v1alpha1_with_its_verbs_kept() {
    let sim = Server::start(Config::kcp()).await.unwrap();
    view(&sim, json!(["get"]), json!(["get"])).await;
    let client = sim.client("root:consumer").unwrap();
    let v1 = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apis.kcp.io", "v1alpha1", "APIBinding"),
        "apibindings",
    );
    let old: Api<DynamicObject> = Api::all_with(client.clone(), &v1);
    let read = old.get("claims").await.unwrap();
    assert_eq!(
        read.data["spec"]["permissionClaims"],
        json!([{"resource": "configmaps", "all": true, "state": "Accepted"}])
    );
    let annotations = read.metadata.annotations.clone().unwrap();
    let kept = &annotations["apis.v1alpha2.kcp.io/acceptable-permission-claims"];
    assert!(kept.contains("\"verbs\":[\"get\"]"), "{kept}");
    // Written back at v1alpha1, the binding keeps its verbs.
    old.replace("claims", &PostParams::default(), &read)
        .await
        .unwrap();
    let new: Api<DynamicObject> = Api::all_with(client, &kind("APIBinding", "apibindings"));
    let stored = new.get("claims").await.unwrap();
    assert_eq!(
        stored.data["spec"]["permissionClaims"][0]["verbs"],
        json!(["get"])
    );
    assert_eq!(
        stored.data["status"]["appliedPermissionClaims"][0]["verbs"],
        json!(["get"])
    );
}

// As kcp v0.30.0 answers (a claim on Secrets selecting `a: "2", b: "1"`): the view shows only
// the objects the claim's selector selects, which carry the claim label.
#[tokio::test]
async fn a_claim_selector_chooses_the_objects_the_view_shows() {
    let sim = Server::start(Config::kcp()).await.unwrap();
    let provider = workspace(&sim, "provider").await;
    create(
        &sim,
        "root:provider",
        &kind("APIExport", "apiexports"),
        json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIExport",
            "metadata": {"name": "claims"},
            "spec": {"permissionClaims": [{"group": "", "resource": "secrets", "verbs": ["*"]}]}}),
    )
    .await;
    let consumer = workspace(&sim, "consumer").await;
    create(
        &sim,
        "root:consumer",
        &kind("APIBinding", "apibindings"),
        json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIBinding",
            "metadata": {"name": "claims"},
            "spec": {"reference": {"export": {"path": "root:provider", "name": "claims"}},
                "permissionClaims": [{"group": "", "resource": "secrets", "verbs": ["*"],
                    "state": "Accepted", "selector": {"matchLabels": {"a": "2", "b": "1"}}}]}}),
    )
    .await;
    let own: Api<Secret> = Api::namespaced(sim.client("root:consumer").unwrap(), "default");
    for (name, labels) in [
        ("match", json!({"a": "2", "b": "1"})),
        ("nomatch", json!({"a": "2"})),
    ] {
        let secret = serde_json::from_value(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "labels": labels}}))
        .unwrap();
        own.create(&PostParams::default(), &secret).await.unwrap();
    }
    let url = format!(
        "{}/services/apiexport/{provider}/claims/clusters/{consumer}",
        sim.url()
    );
    let inside: Api<Secret> = Api::namespaced(client_at(&url), "default");
    let names: Vec<String> = inside
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|s| s.metadata.name)
        .collect();
    assert_eq!(names, ["match"]);
    assert_eq!(code(inside.get("nomatch").await), 404);
}
