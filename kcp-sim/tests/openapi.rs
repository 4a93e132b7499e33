//! OpenAPI v3 over HTTP: the index lists every served group-version with a hash, a
//! group-version document describes its kinds under their Kubernetes definition names, a CRD's
//! kind appears once the CRD is established and disappears with it, a kcp workspace shows the
//! kinds an APIBinding bound, the apiexport virtual workspace the exported ones, and
//! `kubectl explain` reads the documents.
//!
//! The kubectl test needs `kubectl` on PATH (or `KUBECTL=/path/to/kubectl`), as `kubectl.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use kcp_sim::{Config, Server};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams};
use serde_json::{Value, json};

fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.io"},
        "spec": {"group": "example.io", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "description": "What a widget should be.",
                        "properties": {"size": {"type": "integer", "description": "How big."}}}}}}}]}})
}

fn crds(sim: &Server, cluster: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition");
    Api::all_with(sim.client(cluster).unwrap(), &ApiResource::from_gvk(&gvk))
}

async fn get(sim: &Server, cluster: &str, path: &str) -> Value {
    let client = sim.client(cluster).unwrap();
    let req = http::Request::get(path).body(Vec::new()).unwrap();
    client.request::<Value>(req).await.unwrap()
}

async fn index_paths(sim: &Server, cluster: &str) -> Vec<String> {
    let index = get(sim, cluster, "/openapi/v3").await;
    index["paths"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

#[tokio::test]
async fn the_index_lists_every_served_group_version() {
    let sim = Server::start(Config::default()).await.unwrap();
    let paths = index_paths(&sim, "").await;
    let apis = get(&sim, "", "/apis").await;
    let mut expected = vec!["api/v1".to_string()];
    for group in apis["groups"].as_array().unwrap() {
        for v in group["versions"].as_array().unwrap() {
            expected.push(format!("apis/{}", v["groupVersion"].as_str().unwrap()));
        }
    }
    expected.sort();
    assert_eq!(paths, expected);
}

#[tokio::test]
async fn the_index_urls_lead_to_the_documents_with_their_hash() {
    let sim = Server::start(Config::kcp()).await.unwrap();
    let index = get(&sim, "root", "/openapi/v3").await;
    let url = index["paths"]["api/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap();
    assert!(
        url.starts_with("/clusters/root/openapi/v3/api/v1?hash="),
        "{url}"
    );
    let client = kube::Client::try_from(kube::Config::new(sim.url().parse().unwrap())).unwrap();
    let req = http::Request::get(url).body(Vec::new()).unwrap();
    let doc: Value = client.request(req).await.unwrap();
    assert!(doc["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"].is_object());
}

#[tokio::test]
async fn the_core_document_describes_configmap_with_its_group_version_kind() {
    let sim = Server::start(Config::default()).await.unwrap();
    let doc = get(&sim, "", "/openapi/v3/api/v1").await;
    let cm = &doc["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"];
    assert_eq!(
        cm["x-kubernetes-group-version-kind"],
        json!([{"group": "", "kind": "ConfigMap", "version": "v1"}])
    );
    assert_eq!(
        cm["properties"]["data"]["additionalProperties"]["type"],
        "string"
    );
}

#[tokio::test]
async fn a_crd_appears_once_established_and_disappears_when_deleted() {
    let sim = Server::start(Config::default()).await.unwrap();
    let api = crds(&sim, "");
    assert!(
        !index_paths(&sim, "")
            .await
            .contains(&"apis/example.io/v1".to_string())
    );
    api.create(
        &PostParams::default(),
        &serde_json::from_value(crd()).unwrap(),
    )
    .await
    .unwrap();
    assert!(
        index_paths(&sim, "")
            .await
            .contains(&"apis/example.io/v1".to_string())
    );
    let doc = get(&sim, "", "/openapi/v3/apis/example.io/v1").await;
    let widget = &doc["components"]["schemas"]["io.example.v1.Widget"];
    assert_eq!(
        widget["properties"]["spec"]["properties"]["size"]["type"],
        "integer"
    );
    assert_eq!(
        widget["x-kubernetes-group-version-kind"],
        json!([{"group": "example.io", "kind": "Widget", "version": "v1"}])
    );
    api.delete("widgets.example.io", &DeleteParams::default())
        .await
        .unwrap();
    assert!(
        !index_paths(&sim, "")
            .await
            .contains(&"apis/example.io/v1".to_string())
    );
    let client = sim.client("").unwrap();
    let req = http::Request::get("/openapi/v3/apis/example.io/v1")
        .body(Vec::new())
        .unwrap();
    let err = client.request::<Value>(req).await.unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 404),
        "{err}"
    );
}

#[tokio::test]
async fn each_kcp_workspace_shows_its_own_custom_kinds() {
    let sim = Server::start(Config::kcp()).await.unwrap();
    crds(&sim, "root")
        .create(
            &PostParams::default(),
            &serde_json::from_value(crd()).unwrap(),
        )
        .await
        .unwrap();
    let root = get(&sim, "root", "/openapi/v3/apis/example.io/v1").await;
    assert!(root["components"]["schemas"]["io.example.v1.Widget"].is_object());
    let paths = index_paths(&sim, "root").await;
    assert!(paths.contains(&"apis/tenancy.kcp.io/v1alpha1".to_string()));
}

async fn create_in(
    sim: &Server,
    cluster: &str,
    group: &str,
    version: &str,
    kind: &str,
    body: Value,
) {
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let api: Api<DynamicObject> =
        Api::all_with(sim.client(cluster).unwrap(), &ApiResource::from_gvk(&gvk));
    api.create(
        &PostParams::default(),
        &serde_json::from_value(body).unwrap(),
    )
    .await
    .unwrap();
}

/// `root:provider` exports Gadgets (`example.io/v1`); `root:consumer` binds them.
async fn exported_gadgets(sim: &Server) -> String {
    for ws in ["provider", "consumer"] {
        create_in(
            sim,
            "root",
            "tenancy.kcp.io",
            "v1alpha1",
            "Workspace",
            json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace",
                "metadata": {"name": ws}, "spec": {}}),
        )
        .await;
    }
    create_in(sim, "root:provider", "apis.kcp.io", "v1alpha1", "APIResourceSchema",
        json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIResourceSchema",
            "metadata": {"name": "v1.gadgets.example.io"},
            "spec": {"group": "example.io", "scope": "Namespaced",
                "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget", "listKind": "GadgetList"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"type": "object", "properties": {"spec": {"type": "object",
                        "properties": {"colour": {"type": "string"}}}}}}]}})).await;
    create_in(
        sim,
        "root:provider",
        "apis.kcp.io",
        "v1alpha1",
        "APIExport",
        json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport",
            "metadata": {"name": "gadgets"},
            "spec": {"latestResourceSchemas": ["v1.gadgets.example.io"]}}),
    )
    .await;
    create_in(
        sim,
        "root:consumer",
        "apis.kcp.io",
        "v1alpha1",
        "APIBinding",
        json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding",
            "metadata": {"name": "gadgets"},
            "spec": {"reference": {"export": {"path": "root:provider", "name": "gadgets"}}}}),
    )
    .await;
    sim.logical_cluster("root:provider").unwrap()
}

fn gadget_colour(doc: &Value) -> &Value {
    &doc["components"]["schemas"]["io.example.v1.Gadget"]["properties"]["spec"]["properties"]["colour"]
}

#[tokio::test]
async fn a_workspace_shows_the_kinds_its_bindings_bound() {
    let sim = Server::start(Config::kcp()).await.unwrap();
    exported_gadgets(&sim).await;
    let doc = get(&sim, "root:consumer", "/openapi/v3/apis/example.io/v1").await;
    assert_eq!(gadget_colour(&doc)["type"], "string");
    assert!(
        !index_paths(&sim, "root")
            .await
            .contains(&"apis/example.io/v1".to_string())
    );
}

#[tokio::test]
async fn the_apiexport_virtual_workspace_shows_the_exported_kinds() {
    let sim = Server::start(Config::kcp()).await.unwrap();
    let provider = exported_gadgets(&sim).await;
    let url = format!(
        "{}/services/apiexport/{provider}/gadgets/clusters/*",
        sim.url()
    );
    let client = kube::Client::try_from(kube::Config::new(url.parse().unwrap())).unwrap();
    let req = http::Request::get("/openapi/v3/apis/example.io/v1")
        .body(Vec::new())
        .unwrap();
    let doc: Value = client.request(req).await.unwrap();
    assert_eq!(gadget_colour(&doc)["type"], "string");
}

fn kubectl_explain(sim: &Server, what: &str) -> String {
    let dir = std::env::temp_dir().join(format!("kcp-sim-openapi-{}", fastrand::u64(..)));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig, &[]).unwrap();
    let kubectl = std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".to_string());
    let out = Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["explain", what])
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "kubectl explain {what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_explain_reads_builtin_and_custom_kinds() {
    let sim = Server::start(Config::default()).await.unwrap();
    crds(&sim, "")
        .create(
            &PostParams::default(),
            &serde_json::from_value(crd()).unwrap(),
        )
        .await
        .unwrap();
    let configmap = tokio::task::block_in_place(|| kubectl_explain(&sim, "configmap.data"));
    assert!(
        configmap.contains("Data contains the configuration data"),
        "{configmap}"
    );
    let widget = tokio::task::block_in_place(|| kubectl_explain(&sim, "widgets.spec"));
    assert!(widget.contains("What a widget should be."), "{widget}");
    assert!(widget.contains("How big."), "{widget}");
}
